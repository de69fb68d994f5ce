//! Fused device kernels (temporal blocking): several iterations of one
//! [`DeviceKernel`] in one launch, from the same body.
//!
//! Each work group owns a tile of the final region. It loads the tile and
//! `steps` reaches of ghost cells around it (clipped to what the first step
//! reads) from `src` into two arrays of work-group memory, both, so the cells
//! no step writes (global boundary cells) read their source values whichever
//! array a step reads. Step `j` then computes, from one array into the other,
//! its region intersected with the tile's cone (the tile widened by the reach
//! of the steps after `j`), with a work-group barrier between steps; cells a
//! step leaves alone keep what they held. The last step's cells, the tile
//! itself, go to `dst`. Every cell is computed by the body from the values
//! the step before left at its neighbours, as a step-by-step run computes it,
//! so the results are bit-identical.
//!
//! The body runs unchanged in a per-cell function whose `src` and `dst` are
//! the work-group arrays: the names it sees describe the tile's array as if
//! it were the launch's allocation and region (`c` the cell's element in it,
//! `s0..s2` its strides, `n0..n3` its extents, `base` 0, `i3`, `i2`, `z` the
//! cell's position in it, `o0..o3` the global index of its first cell), so
//! `o + i` is still the cell's global index. Kernels with auxiliary fields
//! do not fuse: their buffers have the grid's geometry, not the tile's.
//!
//! Arguments ([`FusedArgs`]): `src`, `dst`, then 64-bit integers: the
//! allocation's strides `as0..` (all but the contiguous last), the global
//! index of its first cell `og0..`, and per step `j` its region in the
//! allocation's indices, `r{j}b{d}` (first) and `r{j}e{d}` (one past the
//! last) per dimension. The tile, the reach, the step count and the work
//! group are constants of the source ([`FusedShape`]); the source's first
//! line states them.

use super::emit::parameters_named;
use super::{DeviceKernel, Dialect};
use std::fmt::Write as _;
use std::ops::Range;

/// The entry point of every fused kernel.
pub const FUSED_KERNEL_NAME: &str = "epsilod_stencil_fused";

/// The most steps one fused kernel takes. Its step regions are kernel
/// arguments: at 8 steps of a 4-D kernel they and the rest come to 78
/// 64-bit integers and two pointers, 640 bytes, under the 1024 bytes of
/// arguments every OpenCL device accepts (`CL_DEVICE_MAX_PARAMETER_SIZE`).
pub const MAX_FUSED_STEPS: usize = 8;

/// What a fused kernel's source is generated for: the step count, the
/// output tile of a work group, the kernel's reach and the work group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusedShape {
    /// Iterations per launch (2 to [`MAX_FUSED_STEPS`]).
    pub steps: usize,
    /// Final cells per work group along each kernel dimension.
    pub tile: Vec<usize>,
    /// The kernel's reach below each cell, per dimension.
    pub low: Vec<usize>,
    /// Its reach above, per dimension.
    pub high: Vec<usize>,
    /// Work-items along the last dimension and across rows; the group is
    /// one-dimensional, of `group[0] * group[1]` work-items.
    pub group: [usize; 2],
}

impl FusedShape {
    /// Dimensions of the kernel.
    pub fn ndims(&self) -> usize {
        self.tile.len()
    }

    /// Extents of a work group's arrays: the tile and `steps` reaches each
    /// side.
    pub fn local_extents(&self) -> Vec<usize> {
        (0..self.ndims())
            .map(|d| self.tile[d] + self.steps * (self.low[d] + self.high[d]))
            .collect()
    }

    /// Cells of one of a work group's two arrays.
    pub fn local_cells(&self) -> usize {
        self.local_extents().iter().product()
    }

    /// Work-group memory the kernel declares, for cells of `cell_bytes`.
    pub fn local_bytes(&self, cell_bytes: usize) -> usize {
        2 * self.local_cells() * cell_bytes
    }

    /// Work-items per group.
    pub fn group_size(&self) -> usize {
        self.group[0] * self.group[1]
    }

    /// Work groups along the three launch axes for a final region of these
    /// extents: x over tiles of the last dimension, y of the one before, z
    /// of the others (dimension 0 slowest).
    pub fn groups(&self, final_extents: &[usize]) -> [usize; 3] {
        let nd = self.ndims();
        let tiles: Vec<usize> = (0..nd)
            .map(|d| final_extents[d].div_ceil(self.tile[d]))
            .collect();
        let y = if nd >= 2 { tiles[nd - 2] } else { 1 };
        let z = tiles[..nd.saturating_sub(2)].iter().product();
        [tiles[nd - 1], y, z]
    }

    /// The first line of the source: the shape, readable by
    /// [`FusedShape::from_source`].
    pub fn header(&self) -> String {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "// epsilod fused: steps={} tile={} low={} high={} group={}\n",
            self.steps,
            list(&self.tile),
            list(&self.low),
            list(&self.high),
            list(&self.group)
        )
    }

    /// The shape a fused source was generated for, from its first line
    /// (for runtimes that run kernels on the host, such as the tests' mock).
    pub fn from_source(source: &str) -> Option<FusedShape> {
        let line = source.lines().next()?.strip_prefix("// epsilod fused: ")?;
        let mut shape = FusedShape {
            steps: 0,
            tile: Vec::new(),
            low: Vec::new(),
            high: Vec::new(),
            group: [0; 2],
        };
        for field in line.split(' ') {
            let (key, value) = field.split_once('=')?;
            let list = value
                .split(',')
                .map(|x| x.parse().ok())
                .collect::<Option<Vec<usize>>>()?;
            match (key, &list[..]) {
                ("steps", [k]) => shape.steps = *k,
                ("tile", _) => shape.tile = list,
                ("low", _) => shape.low = list,
                ("high", _) => shape.high = list,
                ("group", [x, y]) => shape.group = [*x, *y],
                _ => return None,
            }
        }
        let nd = shape.tile.len();
        (nd > 0 && shape.low.len() == nd && shape.high.len() == nd && shape.steps > 0)
            .then_some(shape)
    }
}

/// A fused launch's integer arguments, in the order the kernel declares
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusedArgs {
    /// The allocation's element strides, one per dimension (the last is 1).
    pub strides: Vec<usize>,
    /// Global index of the allocation's first cell.
    pub origin: Vec<i64>,
    /// Each step's region in the allocation's (local) indices.
    pub steps: Vec<Vec<Range<usize>>>,
}

impl FusedArgs {
    /// How many integers a kernel of `nd` dimensions fused `steps` times
    /// takes.
    pub fn arg_count(nd: usize, steps: usize) -> usize {
        2 * nd - 1 + 2 * nd * steps
    }

    /// The integers in argument order.
    pub fn index_args(&self) -> Vec<i64> {
        let nd = self.strides.len();
        let mut v: Vec<i64> = self.strides[..nd - 1].iter().map(|&s| s as i64).collect();
        v.extend(&self.origin);
        for region in &self.steps {
            for r in region {
                v.push(r.start as i64);
                v.push(r.end as i64);
            }
        }
        v
    }

    /// The inverse of [`FusedArgs::index_args`] for a kernel of `nd` dimensions
    /// (the contiguous last stride is 1), or `None` for a list of the wrong
    /// length.
    pub fn from_index_args(index_args: &[i64], nd: usize) -> Option<FusedArgs> {
        let fixed = 2 * nd - 1;
        if nd == 0 || index_args.len() < fixed || !(index_args.len() - fixed).is_multiple_of(2 * nd)
        {
            return None;
        }
        let mut strides: Vec<usize> = index_args[..nd - 1].iter().map(|&s| s as usize).collect();
        strides.push(1);
        let origin = index_args[nd - 1..fixed].to_vec();
        let steps = index_args[fixed..]
            .chunks(2 * nd)
            .map(|c| c.chunks(2).map(|p| p[0] as usize..p[1] as usize).collect())
            .collect();
        Some(FusedArgs {
            strides,
            origin,
            steps,
        })
    }
}

/// The names of a fused kernel's integer arguments, in order.
fn arg_names(nd: usize, steps: usize) -> Vec<String> {
    let mut v: Vec<String> = (0..nd - 1).map(|d| format!("as{d}")).collect();
    v.extend((0..nd).map(|d| format!("og{d}")));
    for j in 0..steps {
        for d in 0..nd {
            v.push(format!("r{j}b{d}"));
            v.push(format!("r{j}e{d}"));
        }
    }
    v
}

/// `(a > b ? a : b)` and its minimum twin, in any dialect.
fn max(a: &str, b: &str) -> String {
    format!("({a} > {b} ? {a} : {b})")
}
fn min(a: &str, b: &str) -> String {
    format!("({a} < {b} ? {a} : {b})")
}

/// Statements running `body` once per cell of the box `[f_b{d}, f_e{d})`
/// (allocation indices, variables already declared), spread over the work
/// group: work-item `f_lx` along the row, `f_ly` across rows. The body
/// sees `f_x{d}`, the cell's allocation index per dimension, and `f_l`,
/// its element in the work group's arrays.
///
/// Where the arrays' rows are no wider than the group (a GPU's groups),
/// `f_lx` meets at most one cell of each row, and the loop across rows is
/// the inner one: nested in a loop along the row, it paid that loop's
/// setup for every cell (on an H100 the fused 2d4 kernel issued
/// instructions 75% of its cycles, about 64 a cell-step, and ran 2.4x
/// slower). Narrow groups (a CPU implementation's single work-item) walk
/// each row in order instead, as memory lies.
fn box_loop(shape: &FusedShape, body: &str) -> String {
    let nd = shape.ndims();
    let ext = shape.local_extents();
    let [gx, gy] = shape.group;
    let last = nd - 1;
    let mut s = String::new();
    for d in 0..nd {
        // Empty boxes (begin past end) count zero.
        let _ = writeln!(
            s,
            "        const int f_n{d} = f_e{d} > f_b{d} ? (int)(f_e{d} - f_b{d}) : 0;"
        );
    }
    let rows: Vec<String> = (0..last).map(|d| format!("f_n{d}")).collect();
    let rows = if rows.is_empty() {
        "1".to_string()
    } else {
        rows.join(" * ")
    };
    let _ = writeln!(s, "        const int f_rows = {rows};");
    let row_loop = format!("for (int f_r = f_ly; f_r < f_rows; f_r += {gy}) {{");
    let col_loop = format!("for (int f_i = f_lx; f_i < f_n{last}; f_i += {gx}) {{");
    let col = vec![
        format!("const index_t f_x{last} = f_b{last} + f_i;"),
        format!("const int f_col = (int)(f_x{last} - f_la{last});"),
    ];
    let mut row = vec!["int f_q = f_r;".to_string()];
    for d in (0..last).rev() {
        row.push(if d == 0 {
            "const index_t f_x0 = f_b0 + f_q;".to_string()
        } else {
            format!("const index_t f_x{d} = f_b{d} + f_q % f_n{d}; f_q /= f_n{d};")
        });
    }
    // The row's first element in the arrays.
    let mut terms = Vec::new();
    let mut stride = 1usize;
    for d in (0..last).rev() {
        stride *= ext[d + 1];
        terms.push(format!("(int)(f_x{d} - f_la{d}) * {stride}"));
    }
    if terms.is_empty() {
        terms.push("0".to_string());
    }
    row.push(format!("const int f_row = {};", terms.join(" + ")));
    let (outer, outer_lines, inner, inner_lines) = if ext[last] <= gx {
        (col_loop, col, row_loop, row)
    } else {
        (row_loop, row, col_loop, col)
    };
    let _ = writeln!(s, "        {outer}");
    for l in outer_lines {
        let _ = writeln!(s, "            {l}");
    }
    let _ = writeln!(s, "            {inner}");
    for l in inner_lines {
        let _ = writeln!(s, "                {l}");
    }
    let _ = writeln!(s, "                const int f_l = f_row + f_col;");
    s += body;
    s += "            }\n        }\n";
    s
}

impl DeviceKernel {
    /// The kernel fused `shape.steps` times, in `dialect`, entry point
    /// [`FUSED_KERNEL_NAME`] (see the [module docs](self)); `None` for
    /// kernels that do not fuse (auxiliary fields) and shapes it cannot take
    /// (no dimensions or more than four, mismatched lengths, fewer than two
    /// or more than [`MAX_FUSED_STEPS`] steps, an empty group).
    pub fn fused_source(&self, dialect: Dialect, shape: &FusedShape) -> Option<String> {
        let nd = shape.ndims();
        let k = shape.steps;
        if self.aux > 0
            || !(1..=super::abi::DIMS).contains(&nd)
            || shape.low.len() != nd
            || shape.high.len() != nd
            || shape.tile.contains(&0)
            || !(2..=MAX_FUSED_STEPS).contains(&k)
            || shape.group.contains(&0)
        {
            return None;
        }
        let ext = shape.local_extents();
        let cells = shape.local_cells();
        let (lp, g, r) = (
            dialect.local_pointer(),
            dialect.global(),
            dialect.restrict(),
        );
        let mut s = shape.header();
        s += &dialect.preamble(self.fp64);
        s += &format!("typedef {} index_t;\n", dialect.long_type());
        s += &self.cell.declaration();
        // Work-group arrays of cells: the cell layout's accessors.
        s += &self.cell.accessors(dialect, super::CellLayout::Cells);
        for t in &self.tables {
            s += &t.declaration(dialect);
        }
        // The body, once per cell, over a work group's arrays.
        let cell_params =
            parameters_named(&format!("{lp}const cell* "), &format!("{lp}cell* "), 0, "");
        let _ = write!(
            s,
            "{} void {FUSED_KERNEL_NAME}_cell({cell_params}, const index_t i3, const index_t i2, \
             const index_t z, const index_t c)\n{{\n    const index_t s3 = 1;\n",
            dialect.cell_function_qualifier()
        );
        s += &self.body;
        if !self.body.ends_with('\n') {
            s.push('\n');
        }
        s += "}\n";
        // The entry point.
        let integer_params: Vec<String> = arg_names(nd, k)
            .iter()
            .map(|n| format!("const index_t {n}"))
            .collect();
        let _ = write!(
            s,
            "{} void {FUSED_KERNEL_NAME}({g}const cell* {r}src, {g}cell* {r}dst, {})\n{{\n",
            dialect.kernel_qualifier(),
            integer_params.join(", ")
        );
        let la = dialect.local_array();
        let _ = writeln!(s, "    {la} cell f_a[{cells}];");
        let _ = writeln!(s, "    {la} cell f_b[{cells}];");
        let _ = writeln!(s, "    const int f_lid = {};", dialect.local_id());
        let _ = writeln!(
            s,
            "    const int f_lx = f_lid % {gx}, f_ly = f_lid / {gx};",
            gx = shape.group[0]
        );
        // The tile's indices per dimension: x the last, y the one before,
        // z the others folded (dimension 0 slowest).
        let last = k - 1;
        let tiles = |d: usize| {
            format!(
                "(int)((r{last}e{d} - r{last}b{d} + {t} - 1) / {t})",
                t = shape.tile[d]
            )
        };
        let _ = writeln!(s, "    const int f_t{} = {};", nd - 1, dialect.group_id(0));
        if nd >= 2 {
            let _ = writeln!(s, "    const int f_t{} = {};", nd - 2, dialect.group_id(1));
        }
        if nd >= 3 {
            let _ = writeln!(s, "    int f_gz = {};", dialect.group_id(2));
            for d in (0..nd - 2).rev() {
                if d == 0 {
                    let _ = writeln!(s, "    const int f_t0 = f_gz;");
                } else {
                    let _ = writeln!(
                        s,
                        "    const int f_t{d} = f_gz % {}; f_gz /= {};",
                        tiles(d),
                        tiles(d)
                    );
                }
            }
        }
        for d in 0..nd {
            let t = shape.tile[d];
            let _ = writeln!(
                s,
                "    const index_t f_ob{d} = r{last}b{d} + (index_t)f_t{d} * {t};"
            );
            let _ = writeln!(
                s,
                "    const index_t f_oe{d} = {};",
                min(&format!("f_ob{d} + {t}"), &format!("r{last}e{d}"))
            );
            let _ = writeln!(
                s,
                "    const index_t f_la{d} = f_ob{d} - {};",
                k * shape.low[d]
            );
        }
        // The source cells the tile's cone reads, into both arrays.
        let global = |d: usize| {
            if d == nd - 1 {
                format!("f_x{d}")
            } else {
                format!("f_x{d} * as{d}")
            }
        };
        let at: Vec<String> = (0..nd).map(global).collect();
        s += "    {\n";
        for d in 0..nd {
            let _ = writeln!(
                s,
                "        const index_t f_b{d} = {};",
                max(&format!("f_la{d}"), &format!("r0b{d} - {}", shape.low[d]))
            );
            let _ = writeln!(
                s,
                "        const index_t f_e{d} = {};",
                min(
                    &format!("f_oe{d} + {}", k * shape.high[d]),
                    &format!("r0e{d} + {}", shape.high[d])
                )
            );
        }
        s += &box_loop(
            shape,
            &format!(
                "                const cell f_v = src[{}];\n                f_a[f_l] = f_v;\n                f_b[f_l] = f_v;\n",
                at.join(" + ")
            ),
        );
        s += "    }\n";
        // The body's view of the arrays, in the ABI's normalised
        // dimensions: padding dimensions of extent 1 and stride 0.
        let pad = super::abi::DIMS - nd;
        let mut strides = vec!["0".to_string(); 3];
        let mut extents = vec!["1".to_string(); 4];
        let mut origins = vec!["0".to_string(); 4];
        let mut stride = 1usize;
        for d in (0..nd).rev() {
            let n = pad + d;
            if n < 3 {
                strides[n] = stride.to_string();
            }
            stride *= ext[d];
            extents[n] = ext[d].to_string();
            origins[n] = format!("og{d} + f_la{d}");
        }
        let local = |d: usize| format!("(f_x{d} - f_la{d})");
        let i3 = local(nd - 1);
        let i2 = if nd >= 2 {
            local(nd - 2)
        } else {
            "0".to_string()
        };
        let z = match nd {
            4 => format!("{} * {} + {}", local(0), ext[1], local(1)),
            3 => local(0),
            _ => "0".to_string(),
        };
        for j in 0..k {
            let (from, to) = if j % 2 == 0 {
                ("f_a", "f_b")
            } else {
                ("f_b", "f_a")
            };
            let reach = k - 1 - j;
            let _ = writeln!(s, "    {}\n    {{", dialect.group_barrier());
            for d in 0..nd {
                let _ = writeln!(
                    s,
                    "        const index_t f_b{d} = {};",
                    max(
                        &format!("r{j}b{d}"),
                        &format!("f_ob{d} - {}", reach * shape.low[d])
                    )
                );
                let _ = writeln!(
                    s,
                    "        const index_t f_e{d} = {};",
                    min(
                        &format!("r{j}e{d}"),
                        &format!("f_oe{d} + {}", reach * shape.high[d])
                    )
                );
            }
            let mut body = format!(
                "                {FUSED_KERNEL_NAME}_cell({from}, {to}, 0, {}, {}, {}, 0, {i3}, {i2}, {z}, f_l);\n",
                strides.join(", "),
                extents.join(", "),
                origins.join(", ")
            );
            if j == last {
                // The work-item reads back its own write: no barrier.
                let _ = writeln!(s, "        // The last step's cells are the tile: to dst.");
                body += &format!("                dst[{}] = {to}[f_l];\n", at.join(" + "));
            }
            s += &box_loop(shape, &body);
            s += "    }\n";
        }
        s += "}\n";
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::exprs;
    use crate::Library;

    fn shape(nd: usize, steps: usize) -> FusedShape {
        FusedShape {
            steps,
            tile: vec![6; nd],
            low: vec![1; nd],
            high: vec![2; nd],
            group: [8, 4],
        }
    }

    /// A GPU's group spans the arrays' rows: each work-item loops over
    /// rows only, in a loop set up once per column (the fused 2d4 kernel
    /// ran 2.4x faster on an H100 so, the same bits). A narrower group, a
    /// CPU implementation's, walks each row in order. Every step of both
    /// has one loop of each.
    #[test]
    fn groups_as_wide_as_the_rows_loop_over_rows_inside() {
        let k = exprs::library::<f32>(Library::S2d4);
        let first_loop = |group: [usize; 2]| {
            let sh = FusedShape {
                group,
                ..shape(2, 4)
            };
            // The arrays' rows: 6 + 4 * (1 + 2) = 18 cells.
            assert_eq!(sh.local_extents(), [18, 18]);
            let s = k.fused_source(Dialect::Cuda, &sh).unwrap();
            assert_eq!(s.matches("for (int f_r = f_ly;").count(), 5, "{s}");
            assert_eq!(s.matches("for (int f_i = f_lx;").count(), 5, "{s}");
            let (r, i) = (
                s.find("for (int f_r").unwrap(),
                s.find("for (int f_i").unwrap(),
            );
            if r < i {
                "rows"
            } else {
                "columns"
            }
        };
        assert_eq!(first_loop([18, 4]), "columns");
        assert_eq!(first_loop([32, 8]), "columns");
        assert_eq!(first_loop([17, 4]), "rows");
        assert_eq!(first_loop([1, 1]), "rows");
    }

    #[test]
    fn the_shape_round_trips_through_the_header() {
        for nd in 1..=4 {
            let sh = shape(nd, 3);
            let k = exprs::library::<f32>(Library::S2d4);
            let src = k.fused_source(Dialect::OpenCl, &sh).unwrap();
            assert_eq!(FusedShape::from_source(&src), Some(sh.clone()));
            assert_eq!(sh.local_extents(), vec![6 + 9; nd]);
            assert_eq!(sh.local_bytes(4), 2 * 4 * 15usize.pow(nd as u32));
        }
        assert_eq!(FusedShape::from_source("__kernel void f()"), None);
    }

    #[test]
    fn arguments_round_trip_and_match_the_signature() {
        let a = FusedArgs {
            strides: vec![40, 8, 1],
            origin: vec![-1, 0, 3],
            steps: vec![vec![1..5, 2..7, 3..6], vec![2..4, 3..6, 4..5]],
        };
        let index_args = a.index_args();
        assert_eq!(index_args[..5], [40, 8, -1, 0, 3]);
        assert_eq!(index_args.len(), 2 + 3 + 2 * 6);
        assert_eq!(index_args.len(), FusedArgs::arg_count(3, 2));
        assert_eq!(FusedArgs::from_index_args(&index_args, 3), Some(a));
        assert_eq!(FusedArgs::from_index_args(&index_args[1..], 3), None);
        let k = exprs::library::<f64>(Library::S3d27);
        let src = k
            .fused_source(Dialect::OpenCl, &shape(3, 2))
            .expect("fuses");
        let sig = src
            .lines()
            .find(|l| l.contains(&format!("void {FUSED_KERNEL_NAME}(")))
            .unwrap();
        let names: Vec<&str> = sig
            .split(", ")
            .skip(2)
            .map(|p| p.trim_end_matches(')').rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(names, arg_names(3, 2));
        assert_eq!(names.len(), index_args.len());
    }

    #[test]
    fn opencl_tiles_live_in_local_memory_between_barriers() {
        let k = exprs::library::<f32>(Library::S2d4);
        let sh = shape(2, 4);
        let s = k.fused_source(Dialect::OpenCl, &sh).unwrap();
        assert!(
            s.contains("__local cell f_a[324];") && s.contains("__local cell f_b[324];"),
            "{s}"
        );
        assert!(s.contains("inline void epsilod_stencil_fused_cell(__local const cell* src, __local cell* dst, const index_t base"), "{s}");
        assert!(s.contains(
            "__kernel void epsilod_stencil_fused(__global const cell* src, __global cell* dst, const index_t as0, const index_t og0"
        ), "{s}");
        // One barrier before each step: after the loads, then between steps.
        assert_eq!(s.matches("barrier(CLK_LOCAL_MEM_FENCE);").count(), 4, "{s}");
        assert!(s.contains(k.body()), "the body, unchanged");
        assert!(s.contains("get_group_id(1)") && s.contains("get_local_id(0)"));
        // Steps alternate arrays; only the last writes dst.
        assert!(s.contains("epsilod_stencil_fused_cell(f_a, f_b, 0, "));
        assert!(s.contains("epsilod_stencil_fused_cell(f_b, f_a, 0, "));
        assert_eq!(s.matches("dst[f_x").count(), 1, "{s}");
        assert!(s.contains("dst[f_x0 * as0 + f_x1] = f_a[f_l];"), "{s}");
        assert!(s.contains("#pragma OPENCL FP_CONTRACT OFF"));
    }

    #[test]
    fn cuda_tiles_live_in_shared_memory_between_syncthreads() {
        let k = exprs::library::<f64>(Library::S3d27);
        let sh = shape(3, 3);
        let s = k.fused_source(Dialect::Cuda, &sh).unwrap();
        let n = 15usize.pow(3);
        assert!(s.contains(&format!("__shared__ cell f_a[{n}];")), "{s}");
        assert!(s.contains(&format!("__shared__ cell f_b[{n}];")), "{s}");
        assert_eq!(s.matches("__syncthreads();").count(), 3, "{s}");
        assert!(s.contains("static __device__ __forceinline__ void epsilod_stencil_fused_cell(const cell* src, cell* dst, const index_t base"), "{s}");
        assert!(s.contains("extern \"C\" __global__ void epsilod_stencil_fused(const cell* __restrict__ src, cell* __restrict__ dst, const index_t as0, const index_t as1, const index_t og0"), "{s}");
        assert!(s.contains("(int)blockIdx.z") && s.contains("(int)threadIdx.x"));
        assert!(!s.contains("__local") && !s.contains("barrier(") && !s.contains("#pragma OPENCL"));
        assert!(s.contains("typedef long long index_t;") && s.contains(k.body()));
    }

    #[test]
    fn kernels_that_cannot_fuse_have_no_fused_source() {
        let k = exprs::library::<f32>(Library::S2d4);
        assert!(k.fused_source(Dialect::OpenCl, &shape(2, 1)).is_none());
        assert!(k
            .fused_source(Dialect::OpenCl, &shape(2, MAX_FUSED_STEPS + 1))
            .is_none());
        assert!(k.fused_source(Dialect::OpenCl, &shape(5, 2)).is_none());
        let mut bad = shape(2, 2);
        bad.low.pop();
        assert!(k.fused_source(Dialect::OpenCl, &bad).is_none());
        let aux = k.clone().with_aux(1);
        assert!(aux.fused_source(Dialect::Cuda, &shape(2, 2)).is_none());
    }
}

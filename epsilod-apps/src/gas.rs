//! EPSILOD's gas simulation: D3Q19 lattice Boltzmann (BGK), reference.md §2.
//!
//! Cells are 19 f32 populations. The global array is the user domain plus a
//! one-cell all-zero border that is never written. Coordinates follow the
//! original: for array index `(g0, g1, g2)`, `x = g1 - 1`, `y = g0 - 1`,
//! `z = g2 - 1`; each coordinate is compared with the extent of the axis it
//! runs along (the original's sizes coincide for the cubic runs it reports).

use crate::{App, AppOutcome};
use epsilod::{
    for_each_row, CellDecl, Cluster, DeviceKernel, DeviceScalar, Footprint, Frame, Kernel,
    Neighbourhood, RunOptions, Shape, Skeleton, Stencil, Table,
};
use std::ops::Range;
use std::sync::Arc;

/// One lattice site: its 19 populations.
pub type GasCell = [f32; 19];

/// Lattice velocities `(x, y, z)`.
pub const E: [[i64; 3]; 19] = [
    [0, 0, 0],
    [-1, 0, 0],
    [1, 0, 0],
    [0, -1, 0],
    [0, 1, 0],
    [0, 0, -1],
    [0, 0, 1],
    [-1, -1, 0],
    [-1, 1, 0],
    [1, -1, 0],
    [1, 1, 0],
    [-1, 0, -1],
    [-1, 0, 1],
    [1, 0, -1],
    [1, 0, 1],
    [0, -1, -1],
    [0, -1, 1],
    [0, 1, -1],
    [0, 1, 1],
];

/// The population opposite each (bounce-back swaps them).
pub const OPPOSITE: [usize; 19] = [
    0, 2, 1, 4, 3, 6, 5, 10, 9, 8, 7, 14, 13, 12, 11, 18, 17, 16, 15,
];

const C: f32 = 1.0;
const TAU: f32 = 0.65;
const DELTA_T: f32 = 1.0;

const fn weight(i: usize) -> f32 {
    match i {
        0 => 1.0f32 / 3.0,
        1..=6 => 1.0f32 / 18.0,
        _ => 1.0f32 / 36.0,
    }
}

/// Each direction's weight, and its velocity times `C` as floats: the
/// factors of the update, computed once rather than per cell.
const W: [f32; 19] = {
    let mut w = [0.0; 19];
    let mut q = 0;
    while q < 19 {
        w[q] = weight(q);
        q += 1;
    }
    w
};
const CE: [[f32; 3]; 19] = {
    let mut ce = [[0.0; 3]; 19];
    let mut q = 0;
    while q < 19 {
        let mut a = 0;
        while a < 3 {
            ce[q][a] = C * E[q][a] as f32;
            a += 1;
        }
        q += 1;
    }
    ce
};

/// The equilibrium population `i` for density `p` and velocity `v`, in f32,
/// left to right as the reference writes it.
pub fn feq(i: usize, p: f32, v: [f32; 3]) -> f32 {
    feq_with(i, p, v, v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
}

/// [`feq`] given `vv = |v|^2`, which depends on the cell alone.
#[inline(always)]
fn feq_with(i: usize, p: f32, v: [f32; 3], vv: f32) -> f32 {
    let e = CE[i];
    let d = e[0] * v[0] + e[1] * v[1] + e[2] * v[2];
    W[i] * p * (1.0 + (1.0 / (C * C)) * (3.0 * d + (9.0 / (2.0 * C * C)) * d * d - 1.5 * vv))
}

/// The array offset of lattice velocity `q`: `(e.y, e.x, e.z)`.
fn offset(q: usize) -> [i64; 3] {
    [E[q][1], E[q][0], E[q][2]]
}

/// The global array size for a user domain: the domain and its 1-cell
/// border. Saturating, as `gaussian::global_size`: a side near usize::MAX
/// is refused as too large by the skeleton, not wrapped into a small one.
pub fn global_size(user: [usize; 3]) -> [usize; 3] {
    user.map(|s| s.saturating_add(2))
}

/// The user domain inside the global array (the border excluded).
pub fn user_domain(user: [usize; 3]) -> Shape {
    Shape::from_ranges(&user.map(|s| (1, s as i64 + 1)))
}

/// Initial cell at a global index: the border all zeros; inside, the
/// equilibrium of density 1 and velocity (0.1, 0, 0), then inflow ("keep",
/// +inf) walls, bounce-back (-inf) walls and the obstacle sphere.
pub fn init(user: [usize; 3]) -> impl Fn(&[i64]) -> GasCell + Send + Sync + Clone {
    move |g: &[i64]| {
        let inside = (0..3).all(|d| g[d] >= 1 && g[d] <= user[d] as i64);
        if !inside {
            return [0.0; 19];
        }
        let (x, y, z) = (g[1] - 1, g[0] - 1, g[2] - 1);
        let (sx, sy, sz) = (user[1] as i64, user[0] as i64, user[2] as i64);
        let mut cell: GasCell = std::array::from_fn(|i| feq(i, 1.0, [0.1, 0.0, 0.0]));
        let wall = x <= 1 || y <= 1 || z <= 1 || x >= sx - 2 || y >= sy - 2 || z >= sz - 2;
        let sphere = (x - 50).pow(2) + (y - 50).pow(2) + (z - 8).pow(2) <= 225;
        if wall || sphere {
            let keep = x <= 1 || x >= sx - 1 || y <= 1 || y >= sy - 1 || z <= 1 || z >= sz - 1;
            cell[0] = if keep {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            };
        }
        cell
    }
}

/// One lattice update of a cell: keep, or stream then bounce back or collide.
pub fn step(nb: &Neighbourhood<'_, GasCell>) -> GasCell {
    step_with(|o| nb.get(&[o[0] as isize, o[1] as isize, o[2] as isize]))
}

/// The update over any neighbour lookup (`at(offset)` gives the previous cell
/// at an array offset): the skeleton's kernel and the serial reference share
/// it, so each can be checked against the other.
#[inline(always)]
pub fn step_with(at: impl Fn(&[i64]) -> GasCell) -> GasCell {
    let me = at(&[0, 0, 0]);
    if me[0] == f32::INFINITY {
        return me;
    }
    let mut d = me;
    for (q, dq) in d.iter_mut().enumerate().skip(1) {
        *dq = at(&offset(q))[q];
    }
    relax(d)
}

/// The rest of the update once the populations have streamed in (`d[0]`
/// the cell's own): bounce back, or collide.
#[inline(always)]
fn relax(mut d: GasCell) -> GasCell {
    if d[0] == f32::NEG_INFINITY {
        let streamed = d;
        for q in 1..19 {
            d[q] = streamed[OPPOSITE[q]];
        }
        return d;
    }
    let mut p = 0.0f32;
    for x in d {
        p += x;
    }
    let mut v = [0.0f32; 3];
    for q in 0..19 {
        for a in 0..3 {
            v[a] += CE[q][a] * d[q];
        }
    }
    if p != 0.0 {
        let r = 1.0 / p;
        v = v.map(|c| c * r);
    }
    let k = DELTA_T / TAU;
    let vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    for (q, dq) in d.iter_mut().enumerate() {
        *dq += k * (feq_with(q, p, v, vv) - *dq);
    }
    d
}

/// One row of the update: `nb[q]` is the row of cells that population `q`
/// streams from (`nb[0]` the row itself), each as long as `out`. Slices in
/// place of a neighbourhood leave no index arithmetic or bounds check per
/// read; `out` as an argument is known not to alias them.
#[inline(never)]
fn row(out: &mut [GasCell], nb: [&[GasCell]; 19]) {
    let len = out.len();
    let mut rows = nb;
    for r in rows.iter_mut() {
        *r = &r[..len];
    }
    for (j, o) in out.iter_mut().enumerate() {
        let me = rows[0][j];
        *o = if me[0] == f32::INFINITY {
            me
        } else {
            let mut d = me;
            for q in 1..19 {
                d[q] = rows[q][j][q];
            }
            relax(d)
        };
    }
}

/// The gas update as a CPU kernel over whole rows (see [`row`]), and as
/// device code ([`device_kernel`]); [`step`] is the same update a cell at a
/// time.
struct GasKernel {
    footprint: Footprint,
    device: DeviceKernel,
}

impl Kernel<GasCell> for GasKernel {
    fn name(&self) -> &str {
        "gas-sim"
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn device_kernel(&self) -> Option<DeviceKernel> {
        Some(self.device.clone())
    }

    fn apply(&self, src: &[GasCell], dst: &mut [GasCell], frame: &Frame, region: &[Range<usize>]) {
        let lin: [isize; 19] = std::array::from_fn(|q| frame.linear(&offset(q)));
        for_each_row(frame, region, |s, d, len| {
            let mut nb: [&[GasCell]; 19] = [&[]; 19];
            for (r, l) in nb.iter_mut().zip(lin) {
                let start = (s as isize + l) as usize;
                *r = &src[start..start + len];
            }
            row(&mut dst[d..d + len], nb);
        });
    }
}

/// The 19 offsets the update reads.
pub fn footprint() -> Footprint {
    Footprint::new(3, (0..19).map(|q| offset(q).to_vec()).collect())
}

/// The update as device code, operation for operation as [`step_with`] (f32,
/// no contraction, the same order), so device runs are bit-identical. The
/// tables and constants are written from the Rust ones; the body serves
/// every dialect.
#[allow(unsafe_code)]
pub fn device_kernel() -> DeviceKernel {
    let axis = |a: usize| E.map(|e| e[a] as i32);
    let body = format!(
        r#"    const float C = {c};
    const float me = PART_AT(src, c, 0);
    if (me == INFINITY) {{ CELL_PUT(dst, c, CELL_AT(src, c)); return; }}
    cell d;
    d.d[0] = me;
    for (int q = 1; q < 19; q++) {{
        const index_t off = (index_t)EY[q] * s1 + (index_t)EX[q] * s2 + (index_t)EZ[q] * s3;
        d.d[q] = PART_AT(src, c + off, q);
    }}
    if (d.d[0] == -INFINITY) {{
        const cell streamed = d;
        for (int q = 1; q < 19; q++) d.d[q] = streamed.d[OPP[q]];
        CELL_PUT(dst, c, d);
        return;
    }}
    float p = 0.0f;
    for (int q = 0; q < 19; q++) p += d.d[q];
    float vx = 0.0f, vy = 0.0f, vz = 0.0f;
    for (int q = 0; q < 19; q++) {{
        vx += (C * (float)EX[q]) * d.d[q];
        vy += (C * (float)EY[q]) * d.d[q];
        vz += (C * (float)EZ[q]) * d.d[q];
    }}
    if (p != 0.0f) {{
        const float r = 1.0f / p;
        vx = vx * r; vy = vy * r; vz = vz * r;
    }}
    const float k = {k};
    const float vv = vx * vx + vy * vy + vz * vz;
    for (int q = 0; q < 19; q++) {{
        const float e = (C * (float)EX[q]) * vx + (C * (float)EY[q]) * vy + (C * (float)EZ[q]) * vz;
        const float feq = W[q] * p * (1.0f + (1.0f / (C * C)) * (3.0f * e + (9.0f / (2.0f * C * C)) * e * e - 1.5f * vv));
        d.d[q] += k * (feq - d.d[q]);
    }}
    CELL_PUT(dst, c, d);
"#,
        c = C.literal(),
        k = (DELTA_T / TAU).literal(),
    );
    let opposite = OPPOSITE.map(|q| q as i32);
    // SAFETY: the body reads `src` at `c` and at the offsets of `offset(q)`
    // (EY, EX, EZ on dimensions 0, 1, 2, normalised to s1, s2, s3), which
    // are exactly `footprint()`, and writes only cell `c` of `dst`; `cell`
    // is 19 floats like `GasCell`. It reaches cells only through the
    // accessors, so it runs with the cells' components in planes, where a
    // GPU's loads of one component over neighbouring cells coalesce.
    unsafe { DeviceKernel::new(CellDecl::array::<f32>(19), body) }
        .with_planes()
        .with_table(Table::ints("EX", &axis(0)))
        .with_table(Table::ints("EY", &axis(1)))
        .with_table(Table::ints("EZ", &axis(2)))
        .with_table(Table::ints("OPP", &opposite))
        .with_table(Table::reals("W", &W))
}

/// The gas update as a skeleton stencil (boundary one cell wide), on CPU and
/// device backends.
pub fn stencil() -> Stencil<GasCell> {
    let kernel = GasKernel {
        footprint: footprint(),
        device: device_kernel(),
    };
    Stencil::custom(Arc::new(kernel), vec![1; 3], vec![1; 3])
}

/// gas-sim as an [`App`]: `--size` is the user domain plus 2 per dimension.
pub struct GasSim;

impl App for GasSim {
    fn name(&self) -> &'static str {
        "gas-sim"
    }
    fn about(&self) -> &'static str {
        "3-d  D3Q19 lattice Boltzmann, 19 x f32 cells; --size is the user domain + 2"
    }
    fn ndims(&self) -> usize {
        3
    }
    fn run(
        &self,
        size: &[usize],
        _params: &crate::Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, crate::AppError> {
        let user = [0, 1, 2].map(|d| size[d] - 2);
        let skeleton = Skeleton::new(size, stencil()).init(init(user));
        crate::run_to_output(skeleton, options, cluster, Some(user_domain(user)))
    }
}

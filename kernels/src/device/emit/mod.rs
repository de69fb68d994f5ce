//! The one C emitter: a [`DeviceKernel`] written out in a [`Dialect`]
//! (preamble, cell and table declarations, the signature from the ABI, the
//! prologue that finds the thread's cell), and the expressions and
//! formulas kernel bodies are made of ([`expression`]). Only
//! [`dialect`](super::dialect) knows how the dialects differ.

pub mod expression;

use super::abi::{ArgKind, BufferArg, ARGS, KERNEL_NAME};
use super::dialect::Dialect;
use super::kernel::{CellDecl, CellLayout, DeviceKernel, Table};

impl CellDecl {
    /// The accessors of the [module docs](super) for an array cell in
    /// `layout` (none for a scalar cell: its bodies index buffers directly).
    pub(super) fn accessors(&self, dialect: Dialect, layout: CellLayout) -> String {
        let Some(n) = self.len else {
            return String::new();
        };
        match layout {
            CellLayout::Cells => "#define CELL_AT(p, i) ((p)[i])\n\
                                  #define PART_AT(p, i, q) ((p)[i].d[q])\n\
                                  #define CELL_PUT(p, i, v) ((p)[i] = (v))\n"
                .to_string(),
            CellLayout::Planes => {
                let (f, g, t) = (
                    dialect.cell_function_qualifier(),
                    dialect.global(),
                    self.scalar,
                );
                format!(
                    "#define PART_AT(p, i, q) ((p)[(i) + (index_t)(q) * np])\n\
                     #define CELL_AT(p, i) epsilod_cell_at(p, i, np)\n\
                     #define CELL_PUT(p, i, v) epsilod_cell_put(p, i, np, v)\n\
                     {f} cell epsilod_cell_at({g}const {t}* p, const index_t i, const index_t np)\n\
                     {{\n    cell v;\n    \
                     for (int q = 0; q < {n}; q++) v.d[q] = p[i + (index_t)q * np];\n    \
                     return v;\n}}\n\
                     {f} void epsilod_cell_put({g}{t}* p, const index_t i, const index_t np, const cell v)\n\
                     {{\n    for (int q = 0; q < {n}; q++) p[i + (index_t)q * np] = v.d[q];\n}}\n"
                )
            }
        }
    }

    /// The C type a buffer of these cells is a pointer to in `layout`.
    fn element(&self, layout: CellLayout) -> &'static str {
        match (layout, self.len) {
            (CellLayout::Planes, Some(_)) => self.scalar,
            _ => "cell",
        }
    }

    /// `typedef ... cell;`
    pub(super) fn declaration(&self) -> String {
        match self.len {
            None => format!("typedef {} cell;\n", self.scalar),
            Some(n) => format!("typedef struct {{ {} d[{n}]; }} cell;\n", self.scalar),
        }
    }
}

impl Table {
    /// The table at file scope, read-only.
    pub(super) fn declaration(&self, dialect: Dialect) -> String {
        format!(
            "{} {} {}[{}] = {{{}}};\n",
            dialect.constant(),
            self.c_type,
            self.name,
            self.values.len(),
            self.values.join(", ")
        )
    }
}

impl DeviceKernel {
    /// The complete source of a kernel named [`KERNEL_NAME`] in `dialect`,
    /// over buffers of cells ([`CellLayout::Cells`]).
    pub fn source(&self, dialect: Dialect) -> String {
        self.written(dialect, CellLayout::Cells)
    }

    /// The source over buffers in `layout`, or `None` where the kernel
    /// does not run in it ([`DeviceKernel::runs_in`]).
    pub fn source_in(&self, dialect: Dialect, layout: CellLayout) -> Option<String> {
        self.runs_in(layout).then(|| self.written(dialect, layout))
    }

    fn written(&self, dialect: Dialect, layout: CellLayout) -> String {
        let mut s = dialect.preamble(self.fp64);
        s += &format!("typedef {} index_t;\n", dialect.long_type());
        s += &self.cell.declaration();
        s += &self.cell.accessors(dialect, layout);
        for t in &self.tables {
            s += &t.declaration(dialect);
        }
        let element = self.cell.element(layout);
        // A row-run kernel's body is a function its loop calls per cell.
        s += &if dialect.row_runs() {
            cell_function(dialect, element, self.aux)
        } else {
            prologue(dialect, element, self.aux)
        };
        s += &self.body;
        if !self.body.ends_with('\n') {
            s.push('\n');
        }
        s += "}\n";
        if dialect.row_runs() {
            s += &row_run_kernel(dialect, element, self.aux);
        }
        s
    }
}

/// The kernel's arguments as a C parameter list, written from the ABI
/// (buffers of `element`), then `aux` auxiliary field buffers.
fn parameters(dialect: Dialect, element: &str, aux: usize) -> String {
    let (g, r) = (dialect.global(), dialect.restrict());
    let input = format!("{g}const {element}* {r}");
    parameters_named(&input, &format!("{g}{element}* {r}"), aux, &input)
}

/// The ABI's parameter list with the given types (each with its trailing
/// space) for the source, the destination and the auxiliary fields: a
/// fused kernel's cell function takes work-group arrays for the first two.
pub(super) fn parameters_named(src: &str, dst: &str, aux: usize, aux_type: &str) -> String {
    ARGS.iter()
        .map(|(name, kind)| match kind {
            ArgKind::Buffer(BufferArg::Src) => format!("{src}{name}"),
            ArgKind::Buffer(BufferArg::Dst) => format!("{dst}{name}"),
            ArgKind::Long(_) => format!("const index_t {name}"),
        })
        .chain((0..aux).map(|i| format!("{aux_type}aux{i}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The signature, written from the ABI, and the opening of the body: the
/// thread's cell `c`, after the bounds guard.
fn prologue(dialect: Dialect, element: &str, aux: usize) -> String {
    format!(
        "{} void {}({})\n{{\n    \
         const index_t i3 = {};\n    \
         const index_t i2 = {};\n    \
         const index_t z = {};\n    \
         const index_t s3 = 1;\n    \
         {}\n    \
         const index_t c = base + (z / n1) * s0 + (z % n1) * s1 + i2 * s2 + i3 * s3;\n",
        dialect.kernel_qualifier(),
        KERNEL_NAME,
        parameters(dialect, element, aux),
        dialect.global_id(0),
        dialect.global_id(1),
        dialect.global_id(2),
        dialect
            .bounds_guard()
            .unwrap_or("// The launch covers the region exactly."),
    )
}

/// The opening of the per-cell function of a row-run kernel: the kernel's
/// arguments and the names the body may use besides (`i3`, `i2`, `z`, `c`).
/// A body's `return` ends its cell, not the run.
fn cell_function(dialect: Dialect, element: &str, aux: usize) -> String {
    format!(
        "{} void {KERNEL_NAME}_cell({}, const index_t i3, const index_t i2, const index_t z, \
         const index_t c)\n{{\n    const index_t s3 = 1;\n",
        dialect.cell_function_qualifier(),
        parameters(dialect, element, aux),
    )
}

/// The entry point of a row-run kernel: each thread computes `rows`
/// consecutive rows of one column, `rows` spreading the region's `n2` rows
/// over the grid's y threads (the launch picks the grid for the run length
/// it wants). The column's first cell is found once, in 32-bit arithmetic:
/// `z` and `n1` are bounded by CUDA's grid limits (65535 blocks of at most
/// 1024 threads), and 64-bit division costs dozens of instructions.
fn row_run_kernel(dialect: Dialect, element: &str, aux: usize) -> String {
    let names: Vec<String> = ARGS
        .iter()
        .map(|(name, _)| name.to_string())
        .chain((0..aux).map(|i| format!("aux{i}")))
        .collect();
    format!(
        "{} void {KERNEL_NAME}({})\n{{\n    \
         const index_t i3 = {};\n    \
         const index_t z = {};\n    \
         {}\n    \
         const unsigned int ny = gridDim.y * blockDim.y;\n    \
         const unsigned int rows = ((unsigned int)n2 + ny - 1) / ny;\n    \
         const index_t first = {} * (index_t)rows;\n    \
         const index_t last = first + (index_t)rows < n2 ? first + (index_t)rows : n2;\n    \
         const unsigned int zu = (unsigned int)z, n1u = (unsigned int)n1;\n    \
         const index_t column = base + (index_t)(zu / n1u) * s0 + (index_t)(zu % n1u) * s1 + i3;\n    \
         #pragma unroll 4\n    \
         for (index_t i2 = first; i2 < last; i2++)\n        \
         {KERNEL_NAME}_cell({}, i3, i2, z, column + i2 * s2);\n}}\n",
        dialect.kernel_qualifier(),
        parameters(dialect, element, aux),
        dialect.global_id(0),
        dialect.global_id(2),
        dialect.bounds_guard().unwrap_or(""),
        dialect.global_id(1),
        names.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::exprs;
    use crate::device::DeviceScalar;

    #[test]
    fn the_signature_follows_the_abi_in_every_dialect() {
        let k = exprs::library::<f32>(crate::Library::S2d4);
        for d in Dialect::ALL {
            let s = k.source(d);
            let sig = s
                .lines()
                .find(|l| l.contains(&format!("void {KERNEL_NAME}(")))
                .expect("a signature");
            let mut at = 0;
            for (name, _) in ARGS {
                let found = sig[at..]
                    .find(&format!(" {name},"))
                    .or_else(|| sig[at..].find(&format!(" {name})")));
                at += found.unwrap_or_else(|| panic!("{name} missing or out of order: {sig}"));
            }
            assert!(sig.starts_with(d.kernel_qualifier()), "{sig}");
            assert_eq!(
                s.contains("if (i3 >= n3 || z >= n0 * n1) return;"),
                d == Dialect::Cuda,
                "{s}"
            );
            // A row-run kernel passes every argument on to its cell function.
            let call = format!(
                "{KERNEL_NAME}_cell({}, i3, i2, z, ",
                ARGS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            );
            assert_eq!(s.contains(&call), d.row_runs(), "{s}");
        }
    }

    #[test]
    fn a_body_return_ends_one_cell_of_a_run() {
        // SAFETY: a test of the emitted text; the kernel never runs.
        let k = unsafe {
            DeviceKernel::new(
                CellDecl::scalar::<f32>(),
                "    if (src[c] > 0.0f) { dst[c] = 1.0f; return; }\n    dst[c] = 0.0f;",
            )
        };
        let s = k.source(Dialect::Cuda);
        let function = s
            .find("void epsilod_stencil_cell(")
            .expect("a cell function");
        let body = s.find("return; }").expect("the body");
        let entry = s.find("void epsilod_stencil(").expect("an entry point");
        assert!(function < body && body < entry, "{s}");
        assert!(
            s[entry..].contains("for (index_t i2 = first; i2 < last; i2++)"),
            "{s}"
        );
    }

    #[test]
    fn dialects_differ_only_around_the_body() {
        let ocl = exprs::library::<f32>(crate::Library::S2d4).source(Dialect::OpenCl);
        let cuda = exprs::library::<f32>(crate::Library::S2d4).source(Dialect::Cuda);
        assert!(ocl.contains("__kernel void epsilod_stencil(__global const cell* src, __global cell* dst, const index_t base"));
        assert!(ocl.contains("get_global_id(2)") && ocl.contains("#pragma OPENCL FP_CONTRACT OFF"));
        assert!(cuda
            .contains("extern \"C\" __global__ void epsilod_stencil(const cell* __restrict__ src, cell* __restrict__ dst"));
        assert!(cuda.contains("typedef long long index_t;") && cuda.contains("blockIdx.z"));
        assert!(!cuda.contains("__global ") && !cuda.contains("#pragma OPENCL"));
        assert!(!Dialect::Cuda
            .compiler_options()
            .iter()
            .any(|o| o.contains("fast")));
    }

    #[test]
    fn array_cells_compile_in_planes_where_the_body_uses_the_accessors() {
        let body = "    CELL_PUT(dst, c, CELL_AT(src, c + s3));";
        // SAFETY: a test of the emitted text; the kernel never runs.
        let k = unsafe { DeviceKernel::new(CellDecl::array::<f32>(3), body) };
        assert_eq!(k.source_in(Dialect::OpenCl, CellLayout::Planes), None);
        assert!(k
            .source(Dialect::OpenCl)
            .contains("#define CELL_AT(p, i) ((p)[i])\n#define PART_AT(p, i, q) ((p)[i].d[q])"));
        let k = k.with_planes();
        for d in Dialect::ALL {
            let s = k.source_in(d, CellLayout::Planes).unwrap();
            assert!(
                s.contains("#define PART_AT(p, i, q) ((p)[(i) + (index_t)(q) * np])"),
                "{s}"
            );
            assert!(s.contains("for (int q = 0; q < 3; q++) p[i + (index_t)q * np] = v.d[q];"));
            // Buffers of components, the plane stride among the arguments.
            assert!(s.contains("const float* ") && !s.contains("cell* "), "{s}");
            assert!(s.contains("const index_t np"), "{s}");
            assert_eq!(k.source_in(d, CellLayout::Cells), Some(k.source(d)));
        }
        // One layout for scalar cells, and fields are laid out as cells.
        let scalar = exprs::library::<f32>(crate::Library::S2d4).with_planes();
        assert!(!scalar.runs_in(CellLayout::Planes));
        assert!(!scalar.source(Dialect::OpenCl).contains("CELL_AT"));
        assert!(!k.with_aux(1).runs_in(CellLayout::Planes));
    }

    #[test]
    fn cells_and_tables_are_declared() {
        // SAFETY: a test of the emitted text; the kernel never runs.
        let k = unsafe { DeviceKernel::new(CellDecl::array::<f32>(19), "    dst[c] = src[c];") }
            .with_table(Table::ints("EX", &[0, -1, 1]))
            .with_table(Table::reals("W", &[1.0f32 / 3.0, f32::NEG_INFINITY]));
        assert_eq!(k.cell().bytes(), 76);
        assert!(!k.needs_fp64());
        let s = k.source(Dialect::OpenCl);
        assert!(s.contains("typedef struct { float d[19]; } cell;"), "{s}");
        assert!(s.contains("__constant int EX[3] = {0, -1, 1};"), "{s}");
        assert!(
            s.contains("__constant float W[2] = {0.33333334f, (-INFINITY)};"),
            "{s}"
        );
        assert!(k.source(Dialect::Cuda).contains("__constant__ int EX[3]"));
        let k = k.with_table(Table::reals("X", &[0.1f64]));
        assert!(k.needs_fp64() && k.source(Dialect::OpenCl).contains("cl_khr_fp64"));
        assert_eq!(1.0f32.literal(), "1.0f");
        assert_eq!(0.1f64.literal(), "0.1");
    }
}

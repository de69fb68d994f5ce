//! Device kernels: C-family source for device backends, in any [`Dialect`].
//!
//! A [`DeviceKernel`] is a dialect-free body (statements computing `dst[c]`
//! from `src`), the cell's C declaration and read-only tables. [`source`]
//! wraps it in one dialect: preamble, tables, the signature written from the
//! ABI ([`abi::ARGS`]) and a prologue that finds the thread's cell `c`. In
//! dialects whose grids are rounded up to whole blocks (CUDA) the prologue
//! returns early outside the launch region; OpenCL launches are exact and
//! go unguarded ([`Dialect::bounds_guard`]).
//!
//! Names a body can use: `cell` (the cell type; an array cell's components
//! are `.d[i]`), `index_t` (a 64-bit signed integer), the arguments of
//! [`abi::ARGS`] (`src`, `dst`, `base`, `s0..s2`, `n0..n3`, `o0..o3`, `np`; `s3` is the constant 1), `c` (the cell's
//! element index), `i3`, `i2`, `z` (the thread's grid position) and the
//! tables. A dimension `d` of a `k`-dimensional kernel is normalised
//! dimension `4 - k + d`, so a 3-D kernel steps with `s1`, `s2`, `s3`.
//!
//! Array cells can also be read and written through accessors:
//! `CELL_AT(src, i)` (a whole cell), `PART_AT(src, i, q)` (component `q`)
//! and `CELL_PUT(dst, c, v)`. A body that touches cells only through them
//! ([`DeviceKernel::with_planes`]) compiles for either [`CellLayout`]: as an
//! array of cells, or as one plane per component, where consecutive cells'
//! components are contiguous and a GPU's loads of them coalesce.
//!
//! [`source`]: DeviceKernel::source

pub mod abi;
pub mod dialect;
pub mod exprs;
pub mod fused;

pub use abi::{LaunchArgs, KERNEL_NAME};
pub use dialect::Dialect;
pub use fused::{FusedArgs, FusedShape, FUSED_KERNEL_NAME, MAX_FUSED_STEPS};

use abi::{ArgKind, BufferArg, ARGS};

/// A scalar type device code can compute in.
pub trait DeviceScalar: Copy {
    /// The C type name.
    const C_TYPE: &'static str;
    /// Whether the type needs double-precision support on the device.
    const NEEDS_FP64: bool;
    /// A C literal of exactly this value, in this type.
    fn literal(self) -> String;
    /// A literal of `v` rounded to this type, as `Real::from_f64` rounds it.
    fn literal_of(v: f64) -> String;
}

/// C spellings of the values Rust's shortest round-trip formatting cannot
/// give as a literal.
fn non_finite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NAN")
    } else if v == f64::INFINITY {
        Some("INFINITY")
    } else if v == f64::NEG_INFINITY {
        Some("(-INFINITY)")
    } else {
        None
    }
}

impl DeviceScalar for f32 {
    const C_TYPE: &'static str = "float";
    const NEEDS_FP64: bool = false;
    fn literal(self) -> String {
        // `{:?}` is the shortest text that parses back to the same bits.
        match non_finite(self as f64) {
            Some(s) => s.to_string(),
            None => format!("{self:?}f"),
        }
    }
    fn literal_of(v: f64) -> String {
        (v as f32).literal()
    }
}

impl DeviceScalar for f64 {
    const C_TYPE: &'static str = "double";
    const NEEDS_FP64: bool = true;
    fn literal(self) -> String {
        match non_finite(self) {
            Some(s) => format!("((double){s})"),
            None => format!("{self:?}"),
        }
    }
    fn literal_of(v: f64) -> String {
        v.literal()
    }
}

/// How a buffer's cells lie in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellLayout {
    /// One cell after another, as on the host (an array of structures).
    Cells,
    /// Component `q` of every cell together: component `q` of cell `i` at
    /// scalar `i + q * np`, `np` being the allocation's cell count (a
    /// structure of arrays). For array cells only; a scalar cell is one
    /// plane either way.
    Planes,
}

/// The C declaration of a kernel's cell type, always named `cell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellDecl {
    scalar: &'static str,
    scalar_bytes: usize,
    /// `None` for a scalar cell, the component count for an array cell.
    len: Option<usize>,
    fp64: bool,
}

impl CellDecl {
    /// A cell that is one `T` (`typedef float cell;`).
    pub fn scalar<T: DeviceScalar>() -> CellDecl {
        CellDecl {
            scalar: T::C_TYPE,
            scalar_bytes: std::mem::size_of::<T>(),
            len: None,
            fp64: T::NEEDS_FP64,
        }
    }

    /// A cell of `len` components of `T`, like Rust's `[T; len]`: a struct
    /// wrapping the array, since C cannot assign arrays.
    pub fn array<T: DeviceScalar>(len: usize) -> CellDecl {
        CellDecl {
            len: Some(len),
            ..CellDecl::scalar::<T>()
        }
    }

    /// The size of one cell in bytes, as the host lays it out.
    pub fn bytes(&self) -> usize {
        self.scalar_bytes * self.len.unwrap_or(1)
    }

    /// Components of an array cell; `None` for a scalar cell.
    pub fn components(&self) -> Option<usize> {
        self.len
    }

    /// Bytes of one component.
    pub fn scalar_bytes(&self) -> usize {
        self.scalar_bytes
    }

    /// The accessors of the module docs for an array cell in `layout`
    /// (none for a scalar cell: its bodies index buffers directly).
    fn accessors(&self, dialect: Dialect, layout: CellLayout) -> String {
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

    fn declaration(&self) -> String {
        match self.len {
            None => format!("typedef {} cell;\n", self.scalar),
            Some(n) => format!("typedef struct {{ {} d[{n}]; }} cell;\n", self.scalar),
        }
    }
}

/// A read-only table at file scope, generated from host values so device
/// and host share one set of constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    name: String,
    c_type: &'static str,
    values: Vec<String>,
    fp64: bool,
}

impl Table {
    /// An `int` table. Values must fit 32 bits; they are written as given.
    pub fn ints(name: &str, values: &[i32]) -> Table {
        Table {
            name: name.to_string(),
            c_type: "int",
            values: values.iter().map(|v| v.to_string()).collect(),
            fp64: false,
        }
    }

    /// A table of reals, each written as an exact literal.
    pub fn reals<T: DeviceScalar>(name: &str, values: &[T]) -> Table {
        Table {
            name: name.to_string(),
            c_type: T::C_TYPE,
            values: values.iter().map(|v| v.literal()).collect(),
            fp64: T::NEEDS_FP64,
        }
    }

    fn declaration(&self, dialect: Dialect) -> String {
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

/// A kernel as device code: a dialect-free body, the cell it computes on,
/// and the tables it reads. [`source`](Self::source) gives it in a dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceKernel {
    cell: CellDecl,
    tables: Vec<Table>,
    body: String,
    fp64: bool,
    /// Auxiliary field buffers after the ABI's arguments: `aux0`, ...
    aux: usize,
    /// The body reaches cells only through the accessors, so it runs in
    /// either [`CellLayout`].
    planes: bool,
}

impl DeviceKernel {
    /// A kernel from a hand-written body (see the [module docs](self) for
    /// the names it can use). It must compute exactly what the Rust kernel
    /// it stands for computes; device tests compare the two bit for bit.
    ///
    /// # Safety
    ///
    /// The body runs on the device over the launch region with no bounds
    /// checks. It must read `src` only at `c` plus offsets inside the
    /// footprint of the kernel it is attached to (the host checks launches
    /// against that footprint, not against the body), write only `dst[c]`,
    /// and `cell` must have the layout of the Rust cell type it is used with.
    pub unsafe fn new(cell: CellDecl, body: impl Into<String>) -> DeviceKernel {
        DeviceKernel::generated(cell, body.into(), false)
    }

    /// The generator's kernels: their bodies read only their stencil's
    /// offsets, by construction.
    pub(crate) fn generated(cell: CellDecl, body: String, fp64: bool) -> DeviceKernel {
        DeviceKernel {
            fp64: fp64 || cell.fp64,
            cell,
            tables: Vec::new(),
            body,
            aux: 0,
            planes: false,
        }
    }

    /// Adds a table the body reads by `name`. Tables are data: a table
    /// cannot make a body read outside its footprint.
    pub fn with_table(mut self, table: Table) -> DeviceKernel {
        self.fp64 |= table.fp64;
        self.tables.push(table);
        self
    }

    /// Declares that the body reads `aux` auxiliary field buffers, `aux0`
    /// to `aux{aux - 1}`: read-only cells with the grid's geometry, passed
    /// after the ABI's arguments in that order.
    pub fn with_aux(mut self, aux: usize) -> DeviceKernel {
        self.aux = aux;
        self
    }

    /// Declares that the body reads and writes cells only through the
    /// accessors (`CELL_AT`, `PART_AT`, `CELL_PUT`), never by indexing
    /// `src` or `dst`, so that it compiles for [`CellLayout::Planes`] too.
    /// Scalar cells need no such declaration: their one layout is both.
    pub fn with_planes(mut self) -> DeviceKernel {
        self.planes = true;
        self
    }

    /// The layouts the kernel compiles for: [`CellLayout::Planes`] only for an
    /// array cell whose body declared it uses the accessors (and reads no
    /// auxiliary fields, which are laid out as cells).
    pub fn runs_in(&self, layout: CellLayout) -> bool {
        match layout {
            CellLayout::Cells => true,
            CellLayout::Planes => self.planes && self.aux == 0 && self.cell.len.is_some(),
        }
    }

    /// How many auxiliary field buffers the kernel takes.
    pub fn aux(&self) -> usize {
        self.aux
    }

    /// Declares that the body computes in `double` (an f32 kernel with
    /// f64 steps), so OpenCL enables cl_khr_fp64.
    pub fn with_fp64(mut self) -> DeviceKernel {
        self.fp64 = true;
        self
    }

    /// The body, the same text in every dialect.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The cell declaration.
    pub fn cell(&self) -> &CellDecl {
        &self.cell
    }

    /// Needs double precision on the device (OpenCL's cl_khr_fp64).
    pub fn needs_fp64(&self) -> bool {
        self.fp64
    }

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
fn parameters_named(src: &str, dst: &str, aux: usize, aux_type: &str) -> String {
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

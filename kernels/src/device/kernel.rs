//! A device kernel's parts before any dialect: the cell it computes on,
//! the tables it reads and its body. [`emit`](super::emit) writes them
//! out as C.

use super::scalar::DeviceScalar;

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
    pub(super) scalar: &'static str,
    pub(super) scalar_bytes: usize,
    /// `None` for a scalar cell, the component count for an array cell.
    pub(super) len: Option<usize>,
    pub(super) fp64: bool,
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
}

/// A read-only table at file scope, generated from host values so device
/// and host share one set of constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub(super) name: String,
    pub(super) c_type: &'static str,
    pub(super) values: Vec<String>,
    pub(super) fp64: bool,
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
}

/// A kernel as device code: a dialect-free body, the cell it computes on,
/// and the tables it reads. [`source`](Self::source) gives it in a dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceKernel {
    pub(super) cell: CellDecl,
    pub(super) tables: Vec<Table>,
    pub(super) body: String,
    pub(super) fp64: bool,
    /// Auxiliary field buffers after the ABI's arguments: `aux0`, ...
    pub(super) aux: usize,
    /// The body reaches cells only through the accessors, so it runs in
    /// either [`CellLayout`].
    pub(super) planes: bool,
}

impl DeviceKernel {
    /// A kernel from a hand-written body (see the [module docs](super) for
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
}

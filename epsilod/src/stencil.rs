//! What the skeleton iterates: a kernel with its fixed boundary, and the
//! init function that gives every cell its first value.

use kernels::expr::Math;
use kernels::{
    library_kernel, AnySpec, Cell, ExprCell, ExprKernel, ExprSpec, Generic, Kernel, KernelChoice,
    Library, Real, StencilSpec,
};
use std::fmt;
use std::sync::Arc;

/// Initial value of a cell from its global index (boundary cells included).
pub type InitFn<T> = Arc<dyn Fn(&[i64]) -> T + Send + Sync>;

/// Why a snapshot function could not take a snapshot: any error.
pub type SnapshotFailure = Box<dyn std::error::Error + Send + Sync>;

/// Told the whole field after an iteration (rank 0 only): writes a
/// snapshot, or says why it could not.
pub type SnapshotFn<T> =
    Arc<dyn Fn(u64, ndarray::ArrayViewD<'_, T>) -> Result<(), SnapshotFailure> + Send + Sync>;

/// Which kind of kernel computes a stencil (the report's `kernel` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// A library stencil in EPSILOD's evaluation order.
    Specialized,
    /// Weights times neighbours in lexicographic order.
    Generic,
    /// A kernel of the application's own.
    Custom,
    /// An `update` expression from a spec file.
    Expression,
}

impl From<KernelChoice> for KernelKind {
    fn from(c: KernelChoice) -> KernelKind {
        match c {
            KernelChoice::Specialized => KernelKind::Specialized,
            KernelChoice::Generic => KernelKind::Generic,
        }
    }
}

impl fmt::Display for KernelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelKind::Specialized => "specialized",
            KernelKind::Generic => "generic",
            KernelKind::Custom => "custom",
            KernelKind::Expression => "expression",
        })
    }
}

/// A stencil as the skeleton needs it: the kernel and the fixed boundary
/// width on each side of each dimension (boundary cells are never written).
#[derive(Clone)]
pub struct Stencil<T> {
    /// The name reports and logs use.
    pub name: String,
    /// The update.
    pub kernel: Arc<dyn Kernel<T>>,
    /// Boundary cells below the interior, per dimension.
    pub low: Vec<usize>,
    /// Boundary cells above the interior, per dimension.
    pub high: Vec<usize>,
    /// What computes it.
    pub kind: KernelKind,
}

impl<T: Real> Stencil<T> {
    /// A library stencil with the chosen CPU kernel.
    pub fn library(lib: Library, choice: KernelChoice) -> Stencil<T> {
        let spec = lib.spec();
        Stencil {
            name: lib.name().to_string(),
            kernel: Arc::from(library_kernel::<T>(lib, choice)),
            low: spec.low,
            high: spec.high,
            kind: choice.into(),
        }
    }

    /// A stencil from a spec (generic kernel).
    pub fn from_spec(spec: &StencilSpec) -> Stencil<T> {
        Stencil {
            name: spec.name.clone(),
            kernel: Arc::new(Generic::<T>::new(spec)),
            low: spec.low.clone(),
            high: spec.high.clone(),
            kind: KernelKind::Generic,
        }
    }
}

impl<C: ExprCell> Stencil<C> {
    /// A stencil whose update is an expression (one source for the CPU and
    /// every device dialect), for cells of the spec's kind: `f32` or `f64`
    /// for scalar cells, `[f32; N]` for `cell = N`.
    ///
    /// # Panics
    ///
    /// As [`ExprKernel::new`]: where `C` is not the spec's cell, or `n[d]`
    /// is unbound.
    pub fn from_expr(spec: &ExprSpec) -> Stencil<C> {
        Stencil {
            name: spec.name.clone(),
            kernel: Arc::new(ExprKernel::<C>::new(spec)),
            low: spec.low.clone(),
            high: spec.high.clone(),
            kind: KernelKind::Expression,
        }
    }
}

impl<T: Math> Stencil<T> {
    /// A stencil from a spec file of either kind.
    ///
    /// # Panics
    ///
    /// As [`Stencil::from_expr`]: where the spec's cells have components
    /// (`cell = N`; build those with `Stencil::<[T; N]>::from_expr`), or
    /// `n[d]` is unbound.
    pub fn from_any_spec(spec: &AnySpec) -> Stencil<T> {
        match spec {
            AnySpec::Weighted(s) => Stencil::from_spec(s),
            AnySpec::Expr(s) => Stencil::from_expr(s),
        }
    }
}

impl<T: Cell> Stencil<T> {
    /// Any kernel (custom cell types included), with its boundary widths.
    pub fn custom(kernel: Arc<dyn Kernel<T>>, low: Vec<usize>, high: Vec<usize>) -> Stencil<T> {
        Stencil {
            name: kernel.name().to_string(),
            kernel,
            low,
            high,
            kind: KernelKind::Custom,
        }
    }

    /// Dimensions of the grids it runs on.
    pub fn ndims(&self) -> usize {
        self.low.len()
    }
}

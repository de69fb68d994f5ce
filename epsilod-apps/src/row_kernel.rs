//! An expression app's update with a hand-written CPU row. The expression
//! kernel evaluates an update one operation at a time over a chunk of cells
//! (a pass over memory per operation); a short update runs far faster as one
//! pass that computes each cell's operations in registers. The expression
//! stays the update's definition: it gives the device code, the footprint
//! and the name, and the row must compute each cell's operations in its
//! order (the same bits, which the apps' tests hold it to).

use epsilod::{for_each_row, ExprKernel, ExprSpec, Footprint, Frame, Kernel, Stencil};
use std::ops::Range;
use std::sync::Arc;

/// One row of an update over f32 cells.
pub(crate) trait Rows: Send + Sync + 'static {
    /// Whether [`Rows::row`] reads the global index (else `g` is left
    /// unset: finding it costs divisions per row, much of a short row).
    const GLOBAL: bool = true;

    /// Computes the row whose first cell is at `s` in `src` (the whole
    /// source buffer, of `frame`'s geometry) and at global index `g`, into
    /// `out`; `out` holds the level before the current one on entry.
    fn row(&self, frame: &Frame, src: &[f32], s: usize, g: &[i64], out: &mut [f32]);
}

/// [`Rows`] on the CPU, the expression everywhere else.
struct RowKernel<R> {
    expr: ExprKernel<f32>,
    rows: R,
}

impl<R: Rows> Kernel<f32> for RowKernel<R> {
    fn name(&self) -> &str {
        self.expr.name()
    }

    fn footprint(&self) -> &Footprint {
        self.expr.footprint()
    }

    fn device_kernel(&self) -> Option<epsilod::DeviceKernel> {
        self.expr.device_kernel()
    }

    fn reads_previous(&self) -> bool {
        self.expr.reads_previous()
    }

    fn apply(&self, src: &[f32], dst: &mut [f32], frame: &Frame, region: &[Range<usize>]) {
        let mut g = vec![0i64; frame.ndims()];
        for_each_row(frame, region, |s, d, len| {
            if !R::GLOBAL {
                return self.rows.row(frame, src, s, &g, &mut dst[d..d + len]);
            }
            for (x, ((&o, &st), &n)) in g
                .iter_mut()
                .zip(frame.origin().iter().zip(frame.strides()).zip(frame.dims()))
            {
                *x = o + ((s / st) % n) as i64;
            }
            self.rows.row(frame, src, s, &g, &mut dst[d..d + len]);
        });
    }
}

/// The stencil of `spec` (scalar f32 cells, no auxiliary field) whose CPU
/// kernel is `rows`.
///
/// # Panics
///
/// As [`ExprKernel::new`], and where the spec declares auxiliary fields.
pub(crate) fn stencil(spec: &ExprSpec, rows: impl Rows) -> Stencil<f32> {
    assert!(spec.aux.is_empty(), "row kernels read no auxiliary field");
    let kernel = RowKernel {
        expr: ExprKernel::new(spec),
        rows,
    };
    Stencil::custom(Arc::new(kernel), spec.low.clone(), spec.high.clone())
}

/// The row of `src` at `s + off` (an offset the footprint holds), as long
/// as a row of `len` cells.
#[inline(always)]
pub(crate) fn at(src: &[f32], s: usize, off: isize, len: usize) -> &[f32] {
    let start = (s as isize + off) as usize;
    &src[start..start + len]
}

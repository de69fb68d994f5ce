//! What the suites share: a library stencil run serially, the reference
//! every layout, device and schedule must reproduce.

use kernels::{reference, Library};
use ndarray::ArrayD;

/// Library stencil `lib` run serially for `iters` iterations on `sizes`
/// from `init`.
pub fn library_serial(
    lib: Library,
    sizes: &[usize],
    iters: usize,
    init: impl Fn(&[i64]) -> f32,
) -> ArrayD<f32> {
    let spec = lib.spec();
    reference::run(
        sizes,
        &spec.low,
        &spec.high,
        iters,
        init,
        reference::library_formula(lib),
    )
}

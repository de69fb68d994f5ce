//! Initial values of library and spec stencils.

use crate::args::InitKind;
use kernels::InitSpec;

/// EPSILOD's values (boundary values, interior 0), or with `Random` the
/// interior uniform in [0, 1) from `seed` (clear of the slow subnormal
/// range, for timing studies): as a host function and, for devices that
/// compute their tiles' values themselves, a device kernel.
pub fn init_spec(
    kind: InitKind,
    seed: u64,
    sizes: Vec<usize>,
    low: Vec<usize>,
    high: Vec<usize>,
) -> InitSpec {
    InitSpec {
        sizes,
        low,
        high,
        random: (kind == InitKind::Random).then_some(seed),
    }
}

/// [`init_spec`]'s values as a host function.
pub fn stencil_init(
    kind: InitKind,
    seed: u64,
    sizes: Vec<usize>,
    low: Vec<usize>,
    high: Vec<usize>,
) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    let spec = init_spec(kind, seed, sizes, low, high);
    move |i: &[i64]| spec.value(i)
}

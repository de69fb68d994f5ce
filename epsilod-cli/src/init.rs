//! Initial values of library and spec stencils.

use crate::args::InitKind;
use kernels::{basic_init, random_value};

/// EPSILOD's values (boundary values, interior 0), or with `Random` the
/// interior uniform in [0, 1) from `seed` (clear of the slow subnormal
/// range, for timing studies).
pub fn stencil_init(
    kind: InitKind,
    seed: u64,
    sizes: Vec<usize>,
    low: Vec<usize>,
    high: Vec<usize>,
) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    move |i: &[i64]| {
        let b = basic_init(i, &sizes, &low, &high);
        let interior =
            (0..i.len()).all(|d| i[d] >= low[d] as i64 && i[d] < (sizes[d] - high[d]) as i64);
        if kind == InitKind::Random && interior {
            random_value(i, seed)
        } else {
            b
        }
    }
}

//! Runs of spec files whose cells have components (`cell = N`). Each N is
//! its own compiled kernel, skeleton and controllers, so the binary carries
//! the counts stencil codes use (2-4: vector fields; 9, 19, 27: the D2Q9,
//! D3Q19 and D3Q27 lattices); others run from Rust (`Stencil::<[f32; N]>`).

use crate::{run_to_output, AppError, AppOutcome};
use epsilod::{Cluster, ExprSpec, InitSpec, RunOptions, Skeleton, Stencil};

/// The components per cell a [`crate::StencilApp`] runs.
pub const SUPPORTED_COMPONENTS: &[usize] = &[2, 3, 4, 9, 19, 27];

/// Runs `spec` (bound to the domain `size`; `name` is how it was given).
/// Every component starts from EPSILOD's boundary values, and with
/// `random` an interior drawn from that seed + the component's index.
pub(crate) fn run(
    name: &str,
    spec: &ExprSpec,
    size: &[usize],
    random: Option<u64>,
    options: &RunOptions,
    cluster: &Cluster,
) -> Result<AppOutcome, AppError> {
    let run = Run {
        spec,
        size,
        random,
        options,
        cluster,
    };
    match spec.components {
        Some(2) => run.cells::<2>(),
        Some(3) => run.cells::<3>(),
        Some(4) => run.cells::<4>(),
        Some(9) => run.cells::<9>(),
        Some(19) => run.cells::<19>(),
        Some(27) => run.cells::<27>(),
        n => Err(AppError::ArrayCells {
            path: name.to_string(),
            n: n.unwrap_or(1),
        }),
    }
}

struct Run<'a> {
    spec: &'a ExprSpec,
    size: &'a [usize],
    random: Option<u64>,
    options: &'a RunOptions,
    cluster: &'a Cluster,
}

impl Run<'_> {
    fn cells<const N: usize>(&self) -> Result<AppOutcome, AppError> {
        let stencil = Stencil::<[f32; N]>::from_expr(self.spec);
        let inits: Vec<InitSpec> = (0..N)
            .map(|k| InitSpec {
                sizes: self.size.to_vec(),
                low: stencil.low.clone(),
                high: stencil.high.clone(),
                random: self.random.map(|seed| seed.wrapping_add(k as u64)),
            })
            .collect();
        let init = move |i: &[i64]| -> [f32; N] { std::array::from_fn(|k| inits[k].value(i)) };
        let skeleton = Skeleton::new(self.size, stencil).init(init);
        run_to_output(skeleton, self.options, self.cluster, None)
    }
}

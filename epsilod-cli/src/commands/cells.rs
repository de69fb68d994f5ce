//! `epsilod run` of spec files whose cells have components (`cell = N`):
//! the run of the scalar path for cells of N f32 components. Each N is its
//! own compiled kernel, skeleton and controllers, so the binary carries the
//! counts stencil codes use (2-4: vector fields; 9, 19, 27: the D2Q9, D3Q19
//! and D3Q27 lattices); others run from Rust (`Stencil::<[f32; N]>`).

use crate::args::RunArgs;
use crate::error::CliError;
use crate::init::stencil_init;
use epsilod::output::{OutputGrid, Region};
use epsilod::{Cluster, Report, RunOptions, Skeleton, Stencil};
use kernels::ExprSpec;

/// The components per cell this binary runs.
pub const SUPPORTED: &[usize] = &[2, 3, 4, 9, 19, 27];

/// A finished run: its report, and on the rank that holds it the result.
pub struct Ran {
    /// Whether this rank holds the result (and writes the files).
    pub root: bool,
    /// The run's report.
    pub report: Report,
    /// The whole grid, on the root.
    pub output: Option<Box<dyn OutputGrid>>,
}

/// Runs `spec` (bound to the domain `size`) as `args` and `options` say.
/// Every component starts from `--init`: EPSILOD's boundary values, and
/// with `random` an interior drawn from `--seed` + the component's index.
pub fn run(
    spec: &ExprSpec,
    size: &[usize],
    args: &RunArgs,
    options: &RunOptions,
    cluster: &Cluster,
) -> Result<Ran, CliError> {
    let run = Run {
        spec,
        size,
        args,
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
        n => Err(CliError::ArrayCells {
            path: args.stencil.clone(),
            n: n.unwrap_or(1),
        }),
    }
}

struct Run<'a> {
    spec: &'a ExprSpec,
    size: &'a [usize],
    args: &'a RunArgs,
    options: &'a RunOptions,
    cluster: &'a Cluster,
}

impl Run<'_> {
    fn cells<const N: usize>(&self) -> Result<Ran, CliError> {
        let stencil = Stencil::<[f32; N]>::from_expr(self.spec);
        let inits: Vec<_> = (0..N)
            .map(|k| {
                stencil_init(
                    self.args.init,
                    self.args.seed.wrapping_add(k as u64),
                    self.size.to_vec(),
                    stencil.low.clone(),
                    stencil.high.clone(),
                )
            })
            .collect();
        let init = move |i: &[i64]| -> [f32; N] { std::array::from_fn(|k| inits[k](i)) };
        let mut skeleton = Skeleton::new(self.size, stencil)
            .init(init)
            .options(self.options);
        if let Some(s) = &self.options.snapshots {
            skeleton = skeleton.snapshot_files(s)?;
        }
        let out = skeleton.run_in(self.cluster)?;
        let root = out.is_root();
        Ok(Ran {
            root,
            report: out.report,
            output: root.then(|| {
                Box::new(Region {
                    grid: out.grid,
                    region: None,
                }) as Box<dyn OutputGrid>
            }),
        })
    }
}

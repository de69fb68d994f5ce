//! Applications beyond the stencil library, each one [`App`] in the
//! [`all`] registry: the command line runs any of them as
//! `epsilod run <name>`, so adding an app touches no command-line code.
//!
//! An app brings its stencil (often a custom kernel and cell type), its
//! init, its size rules and the part of the grid that is its result; the
//! driver brings the rest of the run as [`RunOptions`].
// Deny rather than forbid: a hand-written device kernel asserts that its
// body matches its footprint through `DeviceKernel::new`, an unsafe fn, and
// that one call (gas::device_kernel) is allowed where it is made.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod gas;
pub mod laplace;
pub mod poisson;
pub mod wavesim;

use epsilod::output::{OutputCell, OutputGrid, Region};
use epsilod::{Cluster, Report, RunError, RunOptions, Skeleton};
use hitmap::Shape;

/// What an app run gives back.
pub struct AppOutcome {
    /// The run's report (on every rank).
    pub report: Report,
    /// The result to write, where it is held (rank 0); `None` elsewhere.
    pub output: Option<Box<dyn OutputGrid>>,
}

/// An application runnable by name.
pub trait App: Sync {
    /// Its name on the command line.
    fn name(&self) -> &'static str;
    /// One line for `epsilod list`.
    fn about(&self) -> &'static str;
    /// Dimensions of its grid.
    fn ndims(&self) -> usize;
    /// Errors (with the reason) unless it can run on a global array of
    /// `size` (boundary included).
    fn check_size(&self, size: &[usize]) -> Result<(), String>;
    /// Runs on a global array of `size` in `cluster`.
    fn run(
        &self,
        size: &[usize],
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, RunError>;
}

/// Runs `skeleton` with `options` in `cluster`: the report, and on rank 0
/// the grid's `region` (all of it where `None`) as the output.
pub(crate) fn run_to_output<T: OutputCell>(
    skeleton: Skeleton<T>,
    options: &RunOptions,
    cluster: &Cluster,
    region: Option<Shape>,
) -> Result<AppOutcome, RunError> {
    let out = skeleton.options(options).run_in(cluster)?;
    let root = out.is_root();
    Ok(AppOutcome {
        report: out.report,
        output: root.then(|| {
            Box::new(Region {
                grid: out.grid,
                region,
            }) as Box<dyn OutputGrid>
        }),
    })
}

/// Errors unless every dimension has room for a 1-cell boundary each side
/// and an interior.
pub(crate) fn three_per_dimension(app: &str, size: &[usize]) -> Result<(), String> {
    if size.iter().any(|&s| s < 3) {
        return Err(format!(
            "{app} needs at least 3 cells per dimension (a 1-cell boundary each side)"
        ));
    }
    Ok(())
}

/// Every app, in the order `epsilod list` shows them.
pub fn all() -> &'static [&'static dyn App] {
    &[
        &gas::GasSim,
        &laplace::Laplace,
        &poisson::Poisson,
        &wavesim::WaveSim,
    ]
}

/// The app called `name`.
pub fn find(name: &str) -> Option<&'static dyn App> {
    all().iter().copied().find(|a| a.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for a in all() {
            assert_eq!(find(a.name()).map(|f| f.name()), Some(a.name()));
            assert_eq!(all().iter().filter(|b| b.name() == a.name()).count(), 1);
            // Apps must not shadow library stencils.
            assert!(kernels::Library::by_name(a.name()).is_none());
        }
        assert!(find("no-such-app").is_none());
    }
}

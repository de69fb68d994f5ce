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
pub mod gaussian;
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
    fn check_size(&self, size: &[usize]) -> Result<(), String> {
        three_per_dimension(self.name(), size)
    }
    /// The numbers it takes (`epsilod run APP --param name=value`).
    fn params(&self) -> &'static [Param] {
        &[]
    }
    /// Errors (with the reason) unless `params` suit it, beyond each being
    /// a number (whole numbers, ranges).
    fn check_params(&self, _params: &Params) -> Result<(), String> {
        Ok(())
    }
    /// What its input file is (`epsilod run APP --input FILE`), if it
    /// reads one.
    fn input(&self) -> Option<&'static str> {
        None
    }
    /// The size (as `--size` means it for this app) of a run on `input`.
    fn size_of_input(&self, _input: &std::path::Path) -> Result<Vec<usize>, String> {
        Err(format!("{} reads no input file", self.name()))
    }
    /// Runs on a global array of `size` in `cluster`.
    fn run(
        &self,
        size: &[usize],
        params: &Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, RunError>;
}

/// A number an app takes, with its default.
pub struct Param {
    /// Its name on the command line.
    pub name: &'static str,
    /// Its value when not given.
    pub default: f64,
    /// What it is, for `epsilod list`.
    pub about: &'static str,
}

/// An app's parameter values, every one present (defaults filled in),
/// and its input file, if given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    values: std::collections::BTreeMap<String, f64>,
    input: Option<std::path::PathBuf>,
}

impl Params {
    /// `app`'s defaults, overridden by `given` (`name=value` each): an
    /// unknown name, a value that is not a finite number, or a name given
    /// twice is an error naming it.
    pub fn parse(app: &dyn App, given: &[String]) -> Result<Params, String> {
        let known = app.params();
        let mut values: std::collections::BTreeMap<String, f64> = known
            .iter()
            .map(|p| (p.name.to_string(), p.default))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for text in given {
            let (name, value) = text
                .split_once('=')
                .ok_or_else(|| format!("--param {text}: write name=value"))?;
            if !known.iter().any(|p| p.name == name) {
                let names: Vec<&str> = known.iter().map(|p| p.name).collect();
                return Err(if names.is_empty() {
                    format!("--param {name}: {} takes no parameters", app.name())
                } else {
                    format!("--param {name}: {} takes {}", app.name(), names.join(", "))
                });
            }
            if !seen.insert(name) {
                return Err(format!("--param {name} is given twice"));
            }
            let v: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("--param {name}={value}: not a finite number"))?;
            values.insert(name.to_string(), v);
        }
        let params = Params {
            values,
            input: None,
        };
        app.check_params(&params)?;
        Ok(params)
    }

    /// The same values with `input` as the input file.
    pub fn with_input(self, input: &std::path::Path) -> Params {
        Params {
            input: Some(input.to_path_buf()),
            ..self
        }
    }

    /// The value of `name` (a parameter the app declared).
    pub fn get(&self, name: &str) -> f64 {
        self.values.get(name).copied().unwrap_or(f64::NAN)
    }

    /// The input file, if given.
    pub fn input(&self) -> Option<&std::path::Path> {
        self.input.as_deref()
    }
}

/// Runs `skeleton` with `options` in `cluster`: the report, and on rank 0
/// the grid's `region` (all of it where `None`) as the output.
pub(crate) fn run_to_output<T: OutputCell>(
    skeleton: Skeleton<T>,
    options: &RunOptions,
    cluster: &Cluster,
    region: Option<Shape>,
) -> Result<AppOutcome, RunError> {
    let mut skeleton = skeleton.options(options);
    if let Some(s) = &options.snapshots {
        skeleton = skeleton.snapshot_files(s)?;
    }
    let out = skeleton.run_in(cluster)?;
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
        &gaussian::Gaussian,
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
    fn params_take_defaults_and_say_what_is_wrong() {
        let w = find("wavesim").unwrap();
        assert_eq!(Params::parse(w, &[]).unwrap().get("dt"), 0.25);
        assert_eq!(Params::parse(w, &["dt=0.1".into()]).unwrap().get("dt"), 0.1);
        for (bad, why) in [
            ("dt", "write name=value"),
            ("step=1", "wavesim takes dt"),
            ("dt=fast", "not a finite number"),
            ("dt=inf", "not a finite number"),
        ] {
            assert!(
                Params::parse(w, &[bad.into()]).unwrap_err().contains(why),
                "{bad}"
            );
        }
        assert!(Params::parse(w, &["dt=1".into(), "dt=2".into()])
            .unwrap_err()
            .contains("twice"));
        let g = find("gas-sim").unwrap();
        assert!(Params::parse(g, &["x=1".into()])
            .unwrap_err()
            .contains("takes no parameters"));
    }

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

//! Applications beyond the stencil library, each one [`App`] in the
//! [`all`] registry: the command line runs any of them as
//! `epsilod run <name>`, so adding an app touches no command-line code.
//!
//! An app brings its stencil (often a custom kernel and cell type), its
//! init, its size rules and the part of the grid that is its result; the
//! driver brings the rest of the run as [`RunOptions`]. A library stencil
//! or spec file runs as an app too ([`StencilApp`]), so a driver has one
//! path for all of them.
// Deny rather than forbid: a hand-written device kernel asserts that its
// body matches its footprint through `DeviceKernel::new`, an unsafe fn, and
// that one call (gas::device_kernel) is allowed where it is made.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod array_cells;
pub mod error;
pub mod gas;
pub mod gaussian;
pub mod laplace;
pub mod poisson;
mod row_kernel;
pub mod stencil_app;
pub mod wavesim;

pub use array_cells::SUPPORTED_COMPONENTS;
pub use error::{AppError, ParamError};
pub use stencil_app::{StencilApp, StencilSource};

use epsilod::output::{OutputCell, OutputGrid, Region};
use epsilod::{Cluster, Report, RunOptions, Shape, Skeleton};

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
    fn name(&self) -> &str;
    /// One line for `epsilod list`.
    fn about(&self) -> &'static str;
    /// Dimensions of its grid.
    fn ndims(&self) -> usize;
    /// Errors (with the reason) unless it can run on a global array of
    /// `size` (boundary included).
    fn check_size(&self, size: &[usize]) -> Result<(), AppError> {
        three_per_dimension(self.name(), size)
    }
    /// Cells of the global array's boundary per dimension, which a run
    /// never updates; none for an app whose domain is its own.
    fn boundary(&self) -> Vec<usize> {
        vec![0; self.ndims()]
    }
    /// Whether it is a library stencil or spec file, which takes no
    /// `--param` (and says so in other words than an app without any).
    fn is_stencil(&self) -> bool {
        false
    }
    /// The numbers it takes (`epsilod run APP --param name=value`).
    fn params(&self) -> &'static [Param] {
        &[]
    }
    /// Errors (with the reason) unless `params` suit it, beyond each being
    /// a number (whole numbers, ranges).
    fn check_params(&self, _params: &Params) -> Result<(), ParamError> {
        Ok(())
    }
    /// What its input file is (`epsilod run APP --input FILE`), if it
    /// reads one.
    fn input(&self) -> Option<&'static str> {
        None
    }
    /// The size (as `--size` means it for this app) of a run on `input`.
    fn size_of_input(&self, _input: &std::path::Path) -> Result<Vec<usize>, AppError> {
        Err(AppError::NoInput {
            app: self.name().to_string(),
        })
    }
    /// Runs on a global array of `size` in `cluster`.
    fn run(
        &self,
        size: &[usize],
        params: &Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, AppError>;
}

/// A number an app takes, with its default.
pub struct Param {
    /// Its name on the command line.
    pub name: &'static str,
    /// Its value when not given; `None` for one that changes the run only
    /// where given (wavesim's `T`).
    pub default: Option<f64>,
    /// What it is, for `epsilod list`.
    pub about: &'static str,
}

/// An app's parameter values, every one declared (defaults filled in;
/// `None` for one without a default that was not given), and its input
/// file, if given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    /// The app's name, for errors.
    app: String,
    values: std::collections::BTreeMap<String, Option<f64>>,
    input: Option<std::path::PathBuf>,
}

impl Params {
    /// `app`'s defaults, overridden by `given` (`name=value` each): an
    /// unknown name, a value that is not a finite number (in f64, then in
    /// f32, the type the kernels compute in), or a name given twice is an
    /// error naming it.
    pub fn parse(app: &dyn App, given: &[String]) -> Result<Params, ParamError> {
        if app.is_stencil() && !given.is_empty() {
            return Err(ParamError::NotAnApp {
                target: app.name().to_string(),
            });
        }
        let known = app.params();
        let mut values: std::collections::BTreeMap<String, Option<f64>> = known
            .iter()
            .map(|p| (p.name.to_string(), p.default))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for text in given {
            let (name, value) = text
                .split_once('=')
                .ok_or_else(|| ParamError::NotNameValue { text: text.clone() })?;
            if !known.iter().any(|p| p.name == name) {
                return Err(ParamError::NotTaken {
                    app: app.name().to_string(),
                    name: name.to_string(),
                    known: known.iter().map(|p| p.name).collect(),
                });
            }
            if !seen.insert(name) {
                return Err(ParamError::Twice {
                    name: name.to_string(),
                });
            }
            let v: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| ParamError::NotFinite {
                    name: name.to_string(),
                    value: value.to_string(),
                })?;
            values.insert(name.to_string(), Some(v));
        }
        let params = Params {
            app: app.name().to_string(),
            values,
            input: None,
        };
        // The app's own checks first, for their own words (gaussian's sigma).
        app.check_params(&params)?;
        for name in params.values.keys() {
            params.get_f32(name)?;
        }
        Ok(params)
    }

    /// The same values with `input` as the input file.
    pub fn with_input(self, input: &std::path::Path) -> Params {
        Params {
            input: Some(input.to_path_buf()),
            ..self
        }
    }

    /// The value of `name`; an error unless the app declared it and it has
    /// a value (a default, or given).
    pub fn get(&self, name: &str) -> Result<f64, ParamError> {
        self.given(name)?.ok_or_else(|| ParamError::NotGiven {
            name: name.to_string(),
        })
    }

    /// The value of `name` where it has one, `None` for a parameter without
    /// a default that was not given; an error unless the app declared it.
    pub fn given(&self, name: &str) -> Result<Option<f64>, ParamError> {
        self.values
            .get(name)
            .copied()
            .ok_or_else(|| ParamError::Unknown {
                app: self.app.clone(),
                name: name.to_string(),
            })
    }

    /// The value of `name` as the kernel sees it, in f32 (rounded from the
    /// f64 once, as EPSILOD's `(float)atof(...)`): an error where f32
    /// cannot hold it (beyond 3.4e38, which f32 makes infinite).
    pub fn get_f32(&self, name: &str) -> Result<Option<f32>, ParamError> {
        let Some(v) = self.given(name)? else {
            return Ok(None);
        };
        let x = v as f32;
        if !x.is_finite() {
            return Err(ParamError::NotF32 {
                name: name.to_string(),
                value: shown(v),
            });
        }
        Ok(Some(x))
    }

    /// The input file, if given.
    pub fn input(&self) -> Option<&std::path::Path> {
        self.input.as_deref()
    }
}

/// A number for an error line: plain where short, in exponent form
/// (`1e39`) where a plain one would run to dozens of digits.
pub(crate) fn shown(v: f64) -> String {
    match v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
        true => format!("{v:e}"),
        false => v.to_string(),
    }
}

/// Runs `skeleton` with `options` in `cluster`: the report, and on rank 0
/// the grid's `region` (all of it where `None`) as the output.
pub(crate) fn run_to_output<T: OutputCell>(
    skeleton: Skeleton<T>,
    options: &RunOptions,
    cluster: &Cluster,
    region: Option<Shape>,
) -> Result<AppOutcome, AppError> {
    run_with(skeleton, options, cluster, |grid| {
        Box::new(Region { grid, region }) as Box<dyn OutputGrid>
    })
}

/// Runs `skeleton` as [`run_to_output`] does; on rank 0, `output` makes the
/// result of the grid (an app whose result is written its own way).
pub(crate) fn run_with<T: OutputCell>(
    skeleton: Skeleton<T>,
    options: &RunOptions,
    cluster: &Cluster,
    output: impl FnOnce(ndarray::ArrayD<T>) -> Box<dyn OutputGrid>,
) -> Result<AppOutcome, AppError> {
    let mut skeleton = skeleton.options(options);
    if let Some(s) = &options.snapshots {
        skeleton = skeleton.snapshot_files(s)?;
    }
    let out = skeleton.run_in(cluster)?;
    let root = out.is_root();
    Ok(AppOutcome {
        report: out.report,
        output: root.then(|| output(out.grid)),
    })
}

/// Errors unless every dimension has room for a 1-cell boundary each side
/// and an interior.
pub(crate) fn three_per_dimension(app: &str, size: &[usize]) -> Result<(), AppError> {
    if size.iter().any(|&s| s < 3) {
        return Err(AppError::TooSmall {
            app: app.to_string(),
        });
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

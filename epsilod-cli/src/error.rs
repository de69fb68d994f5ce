//! The command line's errors: the library's, and the ones only a command
//! line has (arguments, files it writes, plots).

use epsilod::output::OutputError;
use epsilod::{ClusterError, RunError, SetupError};
use thiserror::Error;

/// Anything a command can fail with; `main` prints it as one line.
#[derive(Debug, Error)]
pub enum CliError {
    /// The run could not start.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The run failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Joining the MPI job failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The result could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A stencil spec file is wrong.
    #[error(transparent)]
    Spec(#[from] kernels::SpecError),
    /// An unknown heuristic or parameter (the message lists the known ones).
    #[error(transparent)]
    Alb(#[from] heuristics::SpecError),
    /// Neither a library stencil, an app nor a spec file.
    #[error("unknown stencil '{name}': use a library stencil (see 'epsilod list'), an app ({apps}) or a path to a .toml stencil spec")]
    UnknownStencil {
        /// What was given.
        name: String,
        /// Every app's name.
        apps: String,
    },
    /// An app (or library stencil or spec file run as one) that cannot be
    /// set up or run.
    #[error(transparent)]
    App(#[from] epsilod_apps::AppError),
    /// A spec file with array cells given to a command that models scalar
    /// runs (`signature`, `calibrate`, `simulate`).
    #[error("{path} has cells of {n} components (cell = {n}): this command models runs of scalar cells; `epsilod run` runs it")]
    ArrayCellsRunOnly {
        /// The spec file.
        path: String,
        /// Its components per cell.
        n: usize,
    },
    /// An `--aux` field that cannot be used.
    #[error("--aux {arg}: {why}")]
    Aux {
        /// The option's value.
        arg: String,
        /// What is wrong.
        why: String,
    },
    /// A size that does not parse or fit the stencil.
    #[error("bad size '{size}': {why}")]
    Size {
        /// What was given.
        size: String,
        /// What is wrong.
        why: String,
    },
    /// Both `--devices` and `--device-file`.
    #[error("give devices with --devices or --device-file, not both")]
    DevicesTwice,
    /// A file a command writes (a report, a table, a model...) that cannot
    /// be written: the message says which kind, as the user named it by
    /// its option.
    #[error("cannot write {what} {path}: {why}")]
    Write {
        /// What the file holds: "report", "CSV", "machine model"...
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// Options that do not go together, or ask what the command cannot do.
    #[error("{0}")]
    Usage(String),
    /// `plot` failed.
    #[error("cannot plot: {0}")]
    Plot(String),
    /// `view` cannot draw a field file.
    #[error("cannot view {path}: {why}")]
    View {
        /// The field file.
        path: String,
        /// Why.
        why: String,
    },
    /// `view` failed drawing its picture (text with the font, most often).
    #[error("cannot draw the picture: {0}")]
    Draw(String),
    /// No font for the labels of `plot` and `view`.
    #[error("{0}")]
    Font(String),

    #[error("cannot take a signature of '{0}': signatures cover library stencils and spec files, not apps")]
    SignatureOfApp(String),

    #[error("cannot model scaling: {0}")]
    Scaling(#[from] models::scaling::ScalingError),

    #[error("cannot read {path}: {why}")]
    Input { path: String, why: String },

    #[error("cannot fit the model: {0}")]
    Model(#[from] models::ModelError),

    #[error("cannot replay: {0}")]
    Replay(String),

    /// Not a source: the message already holds its text, which the error
    /// chain would print a second time.
    #[error("{0} (see 'epsilod list')")]
    Param(epsilod_apps::ParamError),

    #[error("--input is for apps that read a file; '{0}' reads none (see 'epsilod list')")]
    InputNotRead(String),

    #[error(transparent)]
    LearnedMethod(#[from] models::learned::UnknownMethod),

    /// A machine model file that cannot be used.
    #[error("machine model {path}: {why}")]
    MachineModel {
        /// The file.
        path: String,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// `predict` failed.
    #[error("cannot predict: {0}")]
    Predict(String),
    /// `plan` failed.
    #[error("cannot plan: {0}")]
    Plan(String),
    /// `calibrate` was asked something it cannot do.
    #[error("cannot calibrate: {0}")]
    Calibrate(String),
    /// A launch shape variable that does not parse.
    #[error("{var}={why}; unset it to let each kernel's shape be timed")]
    LaunchShape {
        /// The variable.
        var: &'static str,
        /// What is wrong with its value.
        why: controllers::gpu::runs::ShapeError,
    },
    /// `list --measure` could not time a device.
    #[error("cannot measure: {0}")]
    Measure(String),
    /// `simulate` was asked something it cannot do.
    #[error("cannot simulate: {0}")]
    Simulate(String),
    /// The simulation failed.
    #[error("cannot simulate: {0}")]
    Sim(#[from] models::simulate::SimError),
}

impl From<epsilod_apps::ParamError> for CliError {
    fn from(e: epsilod_apps::ParamError) -> CliError {
        CliError::Param(e)
    }
}

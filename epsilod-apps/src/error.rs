//! What can be wrong with an app's size, parameters or run.

use thiserror::Error;

/// A `--param` that an app cannot take, or a value it cannot use.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum ParamError {
    /// Not written `name=value`.
    #[error("--param {text}: write name=value")]
    NotNameValue {
        /// What was given.
        text: String,
    },
    /// A parameter given to a library stencil or spec file.
    #[error("--param is for apps; '{target}' takes none")]
    NotAnApp {
        /// The stencil, as given.
        target: String,
    },
    /// A name the app does not take (`known` is empty where it takes none).
    #[error("--param {name}: {app} {}", takes(known))]
    NotTaken {
        /// The app.
        app: String,
        /// The name given.
        name: String,
        /// The names it takes.
        known: Vec<&'static str>,
    },
    /// A name given twice.
    #[error("--param {name} is given twice")]
    Twice {
        /// The name.
        name: String,
    },
    /// A value that is not a finite number.
    #[error("--param {name}={value}: not a finite number")]
    NotFinite {
        /// The name.
        name: String,
        /// The value given.
        value: String,
    },
    /// A finite number that f32, the type the kernels compute in, cannot
    /// hold.
    #[error("--param {name}={value}: not a finite number in f32, the type the kernel computes in (at most 3.4e38 either side of 0)")]
    NotF32 {
        /// The name.
        name: String,
        /// The value, as shown to the user.
        value: String,
    },
    /// A number outside what the app accepts.
    #[error("--param {name}={value}: {want}")]
    OutOfRange {
        /// The name.
        name: &'static str,
        /// The value, as shown to the user.
        value: String,
        /// What the app accepts.
        want: &'static str,
    },
    /// A value asked for that has no default and was not given: a bug in
    /// the app, which asks with [`crate::Params::given`] for those.
    #[error("--param {name} is not given and has no default")]
    NotGiven {
        /// The name.
        name: String,
    },
    /// A value asked for by a name the app never declared: a bug in the app.
    #[error("{app} has no parameter '{name}'")]
    Unknown {
        /// The app.
        app: String,
        /// The name asked for.
        name: String,
    },
}

/// "takes a, b" or "takes no parameters".
fn takes(known: &[&str]) -> String {
    match known.is_empty() {
        true => "takes no parameters".into(),
        false => format!("takes {}", known.join(", ")),
    }
}

/// Why an app cannot be set up or run.
#[derive(Debug, Error)]
pub enum AppError {
    /// A size without room for a 1-cell boundary each side and an interior.
    #[error("{app} needs at least 3 cells per dimension (a 1-cell boundary each side)")]
    TooSmall {
        /// The app.
        app: String,
    },
    /// A parameter it cannot take.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A run of other iterations than wavesim's `T` gives.
    #[error("--param T={t} at dt={dt} is {want} iterations (EPSILOD runs (int)((float)T/dt)), not {iters}: give --iters {want}, or leave T out")]
    Iterations {
        /// The simulated time.
        t: i32,
        /// The time step, as the kernel has it.
        dt: f32,
        /// The iterations T gives.
        want: u64,
        /// The iterations asked for.
        iters: u64,
    },
    /// An input file that cannot be used (the caller names the file).
    #[error("{why}")]
    Input {
        /// What is wrong with it: the app's own error.
        #[source]
        why: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An input file given to an app that reads none.
    #[error("{app} reads no input file")]
    NoInput {
        /// The app.
        app: String,
    },
    /// A spec file whose cells have a number of components this build
    /// does not run.
    #[error("{path} has cells of {n} components (cell = {n}): epsilod runs cells of 2, 3, 4, 9, 19 or 27 components; run it from Rust, Stencil::<[f32; {n}]>::from_expr (docs/stencils.md)")]
    ArrayCells {
        /// The spec file.
        path: String,
        /// Its components per cell.
        n: usize,
    },
    /// A spec that cannot be bound to the run's domain.
    #[error(transparent)]
    Spec(#[from] epsilod::SpecError),
    /// An auxiliary field's values that the kernel cannot take.
    #[error("--aux {name}: {why}")]
    Aux {
        /// The field.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// The run failed.
    #[error(transparent)]
    Run(#[from] epsilod::RunError),
}

impl From<epsilod::SetupError> for AppError {
    fn from(e: epsilod::SetupError) -> AppError {
        AppError::Run(e.into())
    }
}

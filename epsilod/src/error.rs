use thiserror::Error;

/// What can go wrong setting up or running a stencil. Every message says what
/// is wrong and, where there is one, how to fix it.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("bad device '{spec}': {why}")]
    Device { spec: String, why: String },
    #[error("bad device file {path}: {why}")]
    DeviceFile { path: String, why: String },
    #[error(
        "device kind '{kind}' is not available in this build: rebuild with --features {feature}"
    )]
    Unavailable {
        kind: &'static str,
        feature: &'static str,
    },
    #[error("device failure: {0}")]
    Backend(String),
    #[error("unknown stencil '{0}': use a library stencil (see 'epsilod list'), an app (gas-sim) or a path to a .toml stencil spec")]
    UnknownStencil(String),
    #[error(transparent)]
    Spec(#[from] kernels::SpecError),
    #[error("bad size '{size}': {why}")]
    Size { size: String, why: String },
    #[error("bad iteration count '{0}': expected a whole number >= 1")]
    Iters(String),
    #[error("{0}")]
    Layout(#[from] hitmap::HitmapError),
    #[error("{0}")]
    Kernel(String),
    #[error("{0}")]
    Compare(String),
    #[error("cannot plot: {0}")]
    Plot(String),
    #[error("unknown init '{0}': use basic (EPSILOD's values) or random")]
    Init(String),
    #[error("give devices with --devices or --device-file, not both")]
    DevicesTwice,
    #[error("cannot write report {path}: {why}")]
    Report { path: String, why: String },
    #[error(
        "unknown ALB heuristic '{0}': use none, const-iters, exp-iters, double-iters or next-alb"
    )]
    UnknownAlb(String),
    #[error("ALB heuristic '{0}' needs a weighted partition: add --partition w0")]
    AlbNeedsWeights(String),
    #[error("cannot write output {path}: {why}")]
    Output { path: String, why: String },
    #[error("unknown output format '{0}': use a file name ending in .npy, .txt or .dat")]
    OutputFormat(String),
    #[error("virtual process {vp} ({device}) failed: {why}")]
    Run {
        vp: usize,
        device: String,
        why: String,
    },
}

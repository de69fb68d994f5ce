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
    #[error("this binary was started by mpirun as one of {size} ranks but was built without MPI: rebuild it with `cargo build --release --features mpi` (or run it without mpirun)")]
    NoMpi { size: usize },
    #[error("this program was started by mpirun as one of {size} ranks but never joined the job: call epsilod::Cluster::join() at the start of main")]
    NotJoined { size: usize },
    #[error("MPI: {0}")]
    Mpi(String),
    #[error("{0}")]
    Agreed(String),
    #[error("rank {rank}: {why}")]
    OnRank { rank: usize, why: String },
    #[error("rank {rank} was given another run than rank 0 (rank {rank}: {mine}; rank 0: {root}): give every rank the same arguments and device file")]
    Mismatch {
        rank: usize,
        mine: String,
        root: String,
    },
    #[error("{ranks} MPI ranks but only {devices} device(s): give at least one device per rank (repeat --devices), or run fewer ranks (mpirun -np {devices})")]
    TooManyRanks { ranks: usize, devices: usize },
    #[error("rank {rank} would compute no rows: {cells} interior cells are too few for {ranks} ranks; run fewer ranks or a larger size")]
    IdleRank {
        rank: usize,
        cells: usize,
        ranks: usize,
    },
    #[error("rank {rank} (host {host}) has no device: {why}")]
    RankWithoutDevice {
        rank: usize,
        host: String,
        why: String,
    },
    #[error("virtual process {vp} ({device}) failed: {why}")]
    Run {
        vp: usize,
        device: String,
        why: String,
    },
}

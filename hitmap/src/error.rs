use thiserror::Error;

/// Errors from building tiles, layouts and plans.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HitmapError {
    #[error("tiles must be contiguous (stride 1) in every dimension")]
    StridedTile,
    #[error("region {region} is not inside tile {tile}")]
    OutOfTile { region: String, tile: String },
    #[error("expected {expected} elements, got {got}")]
    LengthMismatch { expected: usize, got: usize },
    #[error("a layout needs at least one process")]
    NoProcesses,
    #[error("partition on dimension {dim}, but the domain has {ndims} dimension(s) (use 0..{max})", max = ndims.saturating_sub(1))]
    PartitionDim { dim: usize, ndims: usize },
    #[error("unknown partition '{0}': use m, m<n>, s<d> or w<d> (e.g. m, m2, s0, w0)")]
    UnknownPartition(String),
    #[error("{expected} weights expected (one per process), got {got}")]
    WeightCount { expected: usize, got: usize },
    #[error("weight {index} is {value}: weights must be finite and >= 0, and not all zero")]
    BadWeight { index: usize, value: f64 },
    #[error("process {vp} gets {width} row(s) in dimension {dim}, thinner than the stencil border {border}: use fewer processes, another partition or a larger size")]
    TooThin {
        vp: usize,
        dim: usize,
        width: usize,
        border: usize,
    },
    #[error("domain has {domain} dimension(s), stencil footprint has {footprint}")]
    RankMismatch { domain: usize, footprint: usize },
    #[error("layouts of different domains cannot be redistributed into each other")]
    DomainMismatch,
}

use crate::shape::Shape;
use thiserror::Error;

/// Errors from building tiles, layouts and plans.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HitmapError {
    #[error("tiles must be contiguous (stride 1) in every dimension")]
    /// A tile over a strided shape.
    StridedTile,
    #[error("region {region} is not inside tile {tile}")]
    /// A region outside the tile's extent (both printed).
    OutOfTile {
        /// The region asked for.
        region: Shape,
        /// The tile's extent.
        tile: Shape,
    },
    #[error("expected {expected} elements, got {got}")]
    /// Data of the wrong length for a region.
    LengthMismatch {
        /// Cells in the region.
        expected: usize,
        /// Cells given.
        got: usize,
    },
    #[error("a layout needs at least one process")]
    /// A layout over zero processes.
    NoProcesses,
    #[error("partition on dimension {dim}, but the domain has {ndims} dimension(s) (use 0..{max})", max = ndims.saturating_sub(1))]
    /// A partition along a dimension the domain does not have.
    PartitionDim {
        /// The dimension asked for.
        dim: usize,
        /// The domain's dimensions.
        ndims: usize,
    },
    #[error("m{cut} cuts the first {cut} dimensions, but the domain has {ndims} (use m1..m{ndims}, or m for all)")]
    /// `m<n>` over more dimensions than the domain has.
    PartitionDims {
        /// The dimensions asked to be cut.
        cut: usize,
        /// The domain's dimensions.
        ndims: usize,
    },
    #[error("unknown partition '{0}': use m, m<n>, s<d> or w<d> (e.g. m, m2, s0, w0)")]
    /// A partition name that does not parse.
    UnknownPartition(String),
    #[error("{expected} weights expected (one per process), got {got}")]
    /// Not one weight (or block) per process.
    WeightCount {
        /// Processes.
        expected: usize,
        /// Weights (or blocks) given.
        got: usize,
    },
    #[error("weight {index} is {value}: weights must be finite and >= 0")]
    /// A negative or non-finite weight.
    BadWeight {
        /// Which weight.
        index: usize,
        /// Its value.
        value: f64,
    },
    #[error("all {count} weights are 0: at least one must be positive")]
    /// Every weight zero: no process would get an index.
    AllWeightsZero {
        /// Weights given.
        count: usize,
    },
    #[error("process {vp} gets {width} row(s) in dimension {dim}, thinner than the stencil border {border}: use fewer processes, another partition or a larger size")]
    /// A block thinner than the stencil's reach.
    TooThin {
        /// The process.
        vp: usize,
        /// The dimension.
        dim: usize,
        /// Its rows in that dimension.
        width: usize,
        /// The stencil's reach there.
        border: usize,
    },
    #[error("domain has {domain} dimension(s), stencil footprint has {footprint}")]
    /// A footprint of another dimension count than the domain.
    RankMismatch {
        /// The domain's dimensions.
        domain: usize,
        /// The footprint's dimensions.
        footprint: usize,
    },
    #[error("layouts of different domains cannot be redistributed into each other")]
    /// Two layouts of different domains.
    DomainMismatch,
    #[error("not enough memory for tile {tile}: {cells} cells of {cell_bytes} bytes")]
    /// The allocator refused a tile's memory (or its size overflows).
    OutOfMemory {
        /// The tile's allocation.
        tile: Shape,
        /// Its cells.
        cells: usize,
        /// Bytes a cell.
        cell_bytes: usize,
    },
}

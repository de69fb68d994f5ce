use crate::expr::error::{ExprError, Part};
use std::sync::Arc;
use thiserror::Error;

#[derive(Debug, Clone, Error)]
pub enum SpecError {
    #[error("stencil spec has no dimensions: give 'low' and 'high' extents, one per dimension")]
    NoDims,
    #[error("stencil spec has {low} low extent(s) but {high} high extent(s): give one of each per dimension")]
    ExtentRank { low: usize, high: usize },
    #[error("stencil spec has {0} dimensions; at most {max} are supported", max = crate::limits::MAX_DIMS)]
    TooManyDims(usize),
    #[error("stencil spec needs {expected} weights (the product of low+high+1 over dimensions, row-major), got {got}")]
    WeightCount { expected: usize, got: usize },
    #[error("stencil weight {index} is {value}: weights must be finite")]
    BadWeight { index: usize, value: f64 },
    #[error("stencil weights are all zero: at least one must be non-zero")]
    AllZero,
    #[error("stencil extent {extent} is too large: extents of at most {max} are supported", max = crate::limits::MAX_EXTENT)]
    ExtentTooLarge { extent: usize },
    #[error("stencil factor is {0}: it must be finite and non-zero")]
    BadFactor(f64),
    /// A spec is a weighted sum or an expression, not both.
    #[error("stencil spec has both weights (a weighted sum) and update (an expression): give one of them")]
    WeightsAndUpdate,
    #[error("in {part}, at character {at}: {why}")]
    Expr {
        part: Part,
        at: usize,
        why: ExprError,
    },
    /// The file could not be read (shared, so that the error stays
    /// `Clone`).
    #[error("cannot read stencil spec {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: Arc<std::io::Error>,
    },
    #[error("invalid stencil spec {path}: {reason}")]
    Parse { path: String, reason: ParseReason },
}

/// What makes a spec file's text not a spec.
#[derive(Debug, Clone, Error)]
pub enum ParseReason {
    /// Not TOML, or not the tables a spec has.
    #[error(transparent)]
    Toml(#[from] crate::toml_error::TomlError),
    /// TOML whose values do not make a spec.
    #[error(transparent)]
    Spec(Box<SpecError>),
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum KernelError {
    #[error("kernel '{kernel}' is {kernel_dims}-d but the grid is {grid_dims}-d")]
    Rank {
        kernel: String,
        kernel_dims: usize,
        grid_dims: usize,
    },
    #[error("region {region:?} with the stencil's reach does not fit the buffer {dims:?}")]
    OutOfBuffer {
        region: Vec<std::ops::Range<usize>>,
        dims: Vec<usize>,
    },
    #[error("device kernels run regions of 1 to {max} dimensions, not {0}", max = crate::limits::DEVICE_DIMS)]
    DeviceDims(usize),
    #[error("device kernels need a contiguous innermost dimension, not a stride of {0}")]
    InnerStride(usize),
    #[error(
        "a launch needs one stride per region dimension: {strides} strides for a {region}-d region"
    )]
    LaunchRank { strides: usize, region: usize },
}

/// A kernel choice that names no kernel.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown kernel '{0}': use specialized or generic")]
pub struct UnknownKernel(pub String);

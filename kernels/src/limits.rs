//! The limits on what a stencil and a device launch may be: a leaf, so that
//! the checks and the errors that name them read the same numbers.

/// Most dimensions a stencil may have.
pub const MAX_DIMS: usize = 8;

/// The largest reach of a stencil along one direction: a halo this deep
/// already costs more than the block it borders on any realistic grid.
pub const MAX_EXTENT: usize = 64;

/// Dimensions of a device kernel's normalised launch: a region of fewer
/// fills the first ones with extent 1.
pub const DEVICE_DIMS: usize = 4;

//! hitmap: index domains, tiles, layouts, communication plans and transports.
//!
//! Everything here is about indices and data movement; nothing knows about
//! devices or stencil arithmetic.

#![warn(missing_docs)]

/// The error type of tiles, layouts and plans.
pub mod error;
pub mod halo;
pub mod layout;
pub mod redistribute;
pub mod shape;
pub mod sig;
pub mod tile;
pub mod topology;
pub mod transport;

pub use error::HitmapError;
pub use halo::{split_border, Exchange, Footprint, HaloPlan, VpHalo};
pub use layout::{regular_block, weighted_blocks, Layout, Partition};
pub use redistribute::{Move, RedistributionPlan};
pub use shape::Shape;
pub use sig::Sig;
pub use tile::Tile;
pub use topology::Topology;
pub use transport::{in_process, Awaited, InProcess, Transport, TransportError, SPIN};
#[cfg(feature = "mpi")]
pub use transport::{MpiTransport, Placement, MAX_TAG};

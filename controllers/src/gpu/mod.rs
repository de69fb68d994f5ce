//! One [`Controller`](crate::Controller) for every GPU API. The parts that
//! do not depend on the API are here once and tested without a device:
//! [`copy_plan`] (a region as rectangle or run copies), [`geometry`] (kernel
//! arguments, grid, work groups), [`fused`] (fused kernels' tiles), [`slots`]
//! (buffer ids, shapes, resize plans), [`planes`] (array cells one plane per
//! component) and [`GpuController`], whose fused-step planning, peer messages,
//! init kernels and transfers have modules of their own. An API is a
//! [`DeviceRuntime`]: buffers, copies, compile, launch, timing; `opencl` and
//! `cuda` are two, and `mock` (host memory, behind its feature) a third that
//! needs no device.

mod controller;
pub mod copy_plan;
pub mod fused;
mod fusing;
pub mod geometry;
mod init;
mod loaded;
#[cfg(any(test, feature = "mock"))]
pub mod mock;
#[cfg(feature = "mock")]
pub(crate) mod mock_register;
pub mod module_cache;
mod peers;
pub mod planes;
pub mod runs;
mod runtime;
pub mod slots;
pub mod staging;
mod transfer;
pub mod tuning;

pub use controller::GpuController;
pub use copy_plan::{CopyPiece, CopyPlan, Rect};
pub use fused::FusedLimits;
pub use geometry::GroupHints;
pub use runtime::{Compiled, DeviceRuntime, Lane};

//! controllers: one uniform interface over every device kind.
//!
//! Backends: `cpu` (rayon) always; `opencl` and `cuda` behind their features, each a
//! [`gpu::DeviceRuntime`] under the shared [`gpu::GpuController`].
//! [`Slowdown`] wraps any backend to emulate a slower device, [`FailAt`] one
//! that fails mid-run: each a [`Decorator`], writing only what it changes. [`registry`] names every backend, reads device
//! options into a typed [`device_spec`], and opens and lists devices.

mod capability;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod controller;
pub mod cpu;
pub mod cpu_time;
#[cfg(feature = "cuda")]
pub mod cuda;
mod decorator;
pub mod device_spec;
mod error;
pub mod fail_at;
mod fill;
pub mod gpu;
mod ids;
mod launch;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod peer;
pub mod registry;
pub mod roofline;
pub mod slowdown;

pub use capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
pub use controller::{BufferId, Controller, KernelId};
pub use cpu::CpuController;
#[cfg(feature = "cuda")]
pub use cuda::CudaController;
pub use decorator::Decorator;
pub use error::{
    BackendError, BadOption, DeviceError, Failure, ForeignError, Mismatch, Unavailable,
};
pub use fail_at::FailAt;
pub use gpu::GpuController;
#[cfg(feature = "opencl")]
pub use opencl::OpenClController;
pub use peer::{DeviceMessage, PeerDomain};
pub use slowdown::Slowdown;

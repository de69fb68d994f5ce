//! controllers: one uniform interface over every device kind.
//!
//! Backends: `cpu` (rayon) always; `opencl` and `cuda` behind their features.
//! [`Slowdown`] wraps any backend to emulate a slower device.

pub mod conformance;
mod controller;
pub mod cpu;
mod error;
mod launch;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod slowdown;

pub use controller::{BufferId, Controller, KernelId};
pub use cpu::CpuController;
pub use error::DeviceError;
#[cfg(feature = "opencl")]
pub use opencl::OpenClController;
pub use slowdown::Slowdown;

//! The typed spec of one device: which device of which backend, and the
//! options it runs with. The registry ([`crate::registry`]) reads them from
//! device strings; each backend's runtime opens them.

use crate::gpu::runs::RunShape;
use kernels::CellLayout;
use std::fmt;

/// The options of a device string or table that its backend reads (the
/// run's own, such as weight or slowdown, are its caller's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BackendOptions {
    /// CPU threads.
    pub threads: Option<usize>,
    /// OpenCL platform.
    pub platform: Option<usize>,
    /// OpenCL or CUDA device number.
    pub device: Option<usize>,
    /// Cells with components in planes or whole, on GPU backends.
    pub layout: Option<CellLayout>,
}

/// Which device, of which backend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceKind {
    /// Host cores on a rayon pool.
    Cpu {
        /// Threads of its pool; `None` (`cpu` with no `threads=`): the
        /// caller gives it its share of the cores.
        threads: Option<usize>,
    },
    /// A device of a GPU backend, as `epsilod list` numbers them.
    Gpu(GpuDevice),
}

/// One device of a GPU backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuDevice {
    /// Its backend's registered name (`opencl`, `cuda`).
    pub backend: &'static str,
    /// Platform number, for backends that have platforms (OpenCL).
    pub platform: Option<usize>,
    /// Device number (on its platform).
    pub device: usize,
}

impl fmt::Display for GpuDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.platform {
            Some(p) => write!(f, "{}:platform={p},device={}", self.backend, self.device),
            None => write!(f, "{}:device={}", self.backend, self.device),
        }
    }
}

/// How a GPU device runs, beyond which one it is: typed options a program
/// sets per device (the command line fills the last three from its
/// environment).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuOptions {
    /// Array cells in planes or whole; `None`: the device's choice (planes
    /// on GPUs, whole cells on CPU implementations).
    pub layout: Option<CellLayout>,
    /// One launch shape for every CUDA launch instead of the shapes timed
    /// per kernel: for measuring the shapes.
    pub launch: Option<RunShape>,
    /// Log (`info`) each fused kernel chosen, with its tile.
    pub log_fused: bool,
    /// Log (`info`) each CUDA kernel's timed launch shapes and the one
    /// chosen.
    pub log_launch: bool,
}

/// What `epsilod list` says about one backend.
#[derive(Clone, Debug, PartialEq)]
pub enum Listing {
    /// Its devices: each one's device string and what it is.
    Devices(Vec<(String, String)>),
    /// One line instead: what it has, or why it has no device to list.
    Note(String),
}

use hitmap::HitmapError;
use kernels::KernelError;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum DeviceError {
    #[error("no buffer {0} on this device")]
    UnknownBuffer(usize),
    #[error("no kernel {0} loaded on this device")]
    UnknownKernel(usize),
    #[error("source and destination must be distinct buffers with the same allocation ({0})")]
    BufferMismatch(String),
    #[error("launch region {region} reads outside the source extent {extent}")]
    ReadsOutside { region: String, extent: String },
    #[error(transparent)]
    Index(#[from] HitmapError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(
        "kernel '{kernel}' reads {wants} auxiliary field(s), {bound} bound (Controller::bind_aux)"
    )]
    AuxFields {
        kernel: String,
        wants: usize,
        bound: usize,
    },
    #[error("bad device option: {0}")]
    BadOption(String),
    #[error("device backend failure: {0}")]
    Backend(String),
    /// A runtime without fused kernels was asked for one.
    #[error("{api} has no fused kernels")]
    NoFusedKernels {
        /// The runtime's API.
        api: &'static str,
    },
    /// A backend whose cargo feature this build left out.
    #[error(
        "device kind '{kind}' is not available in this build: rebuild with --features {feature}"
    )]
    NotBuilt {
        /// The backend.
        kind: &'static str,
        /// The feature that builds it.
        feature: &'static str,
    },
    /// The device's API cannot be used on this machine (no driver, no such
    /// device): one line saying what is missing.
    #[error("{0}")]
    Unavailable(String),
    /// The device stopped working mid-run (or was told to, by
    /// [`crate::FailAt`]).
    #[error("device failed: {0}")]
    Failed(String),
}

/// A device API's error as [`DeviceError::Backend`], its message kept.
#[cfg(any(feature = "cuda", feature = "opencl"))]
pub(crate) fn backend<E: std::fmt::Display>(e: E) -> DeviceError {
    DeviceError::Backend(e.to_string())
}

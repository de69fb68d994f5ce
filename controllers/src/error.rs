use crate::peer::PeerDomain;
use hitmap::{HitmapError, Shape};
use kernels::KernelError;
use std::sync::Arc;
use thiserror::Error;

/// A foreign error (a device API's, the thread pool's) kept as a source.
/// Shared so that [`DeviceError`] stays `Clone`; equal only to its own
/// clones, as foreign error types need not compare.
#[derive(Debug, Clone)]
pub struct ForeignError(Arc<dyn std::error::Error + Send + Sync>);

impl ForeignError {
    pub fn new<E: std::error::Error + Send + Sync + 'static>(e: E) -> ForeignError {
        ForeignError(Arc::new(e))
    }

    /// The foreign error itself (to downcast to its type).
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl PartialEq for ForeignError {
    fn eq(&self, other: &ForeignError) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Display for ForeignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ForeignError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum DeviceError {
    #[error("no buffer {0} on this device")]
    UnknownBuffer(usize),
    #[error("no kernel {0} loaded on this device")]
    UnknownKernel(usize),
    #[error("source and destination must be distinct buffers with the same allocation ({0})")]
    BufferMismatch(#[from] Mismatch),
    #[error("launch region {region} reads outside the source extent {extent}")]
    ReadsOutside { region: Shape, extent: Shape },
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
    BadOption(#[from] BadOption),
    #[error("device backend failure: {0}")]
    Backend(#[from] BackendError),
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
    Unavailable(#[from] Unavailable),
    /// The device stopped working mid-run (or was told to, by
    /// [`crate::FailAt`]).
    #[error("device failed: {0}")]
    Failed(#[from] Failure),
}

/// How a launch's or copy's buffers do not go together.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Mismatch {
    #[error("the same buffer twice")]
    SameBuffer,
    #[error("a copy of {region} from buffer {buffer} into itself")]
    CopyIntoItself { region: Shape, buffer: usize },
    #[error("{src} vs {dst}")]
    Allocations { src: Shape, dst: Shape },
    #[error("an aux field over {aux}, the source over {src}")]
    AuxAllocation { aux: Shape, src: Shape },
    #[error("an aux field is its own buffer")]
    AuxIsItself,
}

/// A request the device cannot take: a setting out of range, or a launch
/// it does not do.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BadOption {
    #[error("mock devices keep cells whole: layout=planes is for opencl and cuda")]
    MockCellsWhole,
    #[error("{device} takes no auxiliary fields")]
    NoAuxFields { device: String },
    #[error("{device} cannot fuse {steps} iterations into one launch")]
    NoFusing { device: String, steps: usize },
    #[error("{device} cannot fuse {steps} iterations into one launch (at most {most})")]
    FusesFewer {
        device: String,
        steps: usize,
        most: usize,
    },
    #[error("{steps} iterations in one launch: at most {most}")]
    TooManySteps { steps: usize, most: usize },
    #[error("no fused kernel of {steps} steps")]
    NoFusedKernel { steps: usize },
    #[error("fused steps must be nested: {inner} is not within {outer}")]
    NotNested { inner: Shape, outer: Shape },
    #[error("fused steps must be contiguous regions: {region}")]
    NotContiguous { region: Shape },
    #[error("kernel '{kernel}' reads auxiliary fields: one iteration per launch")]
    FusedAux { kernel: String },
    #[error("{device} exchanges no halos in device memory")]
    NoPeers { device: String },
    #[error("device message: {api} shares no device memory")]
    NoSharedMemory { api: &'static str },
    #[error("device message: not from a {api} device")]
    ForeignMessage { api: &'static str },
    #[error("device message: {api} cannot copy {region} within the device")]
    NoCopyWithin { api: &'static str, region: Shape },
    #[error("device message: packed in {domain:?}, not this device's memory")]
    OtherMemory { domain: PeerDomain },
    #[error("device message: regions of {got:?} bytes, {want:?} expected")]
    RegionBytes { got: Vec<usize>, want: Vec<usize> },
    #[error("device message: cells in {got} planes, this device lays them out in {here}")]
    Planes { got: usize, here: usize },
    #[error("slowdown {factor:e} is not allowed: it must be a number from 1 to {most}")]
    Slowdown { factor: f64, most: f64 },
    #[error("threads must be at least 1")]
    NoThreads,
    #[error("an init kernel of {init}-byte cells for {cell}-byte cells")]
    InitCell { init: usize, cell: usize },
    #[error(
        "kernel '{kernel}' reads whole cells, but this {api} device holds its cells in planes \
         for the kernel loaded first: run it on a device of its own, or set {var}=cells"
    )]
    CellLayout {
        kernel: String,
        api: &'static str,
        /// The environment variable that picks the layout.
        var: &'static str,
    },
    #[error("no OpenCL platform {platform}: there are {count}")]
    NoPlatform { platform: usize, count: usize },
    #[error("no device {device} on OpenCL platform {platform}: it has {count}")]
    NoDevice {
        platform: usize,
        device: usize,
        count: usize,
    },
}

/// What went wrong inside a device's runtime.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BackendError {
    /// The device API's own error.
    #[error("{source}")]
    Api {
        api: &'static str,
        #[source]
        source: ForeignError,
    },
    #[error("NVRTC: {source}")]
    Nvrtc {
        #[source]
        source: ForeignError,
    },
    /// Not a `#[source]`: the message shows the status before the log, and
    /// error chains would repeat it.
    #[error("NVRTC: {status}: {log}")]
    NvrtcCompile {
        status: ForeignError,
        /// The compiler's log.
        log: String,
    },
    #[error("NVRTC: the source holds a NUL byte")]
    NulInSource,
    #[error("{0}")]
    ThreadPool(#[source] ForeignError),
    #[error("no OpenCL platform found: install one (e.g. Debian's pocl-opencl-icd)")]
    NoOpenClPlatform,
    #[error("{api} launch recorded no events")]
    NoEvents { api: &'static str },
    #[error("{given} integer kernel arguments given, the kernel ABI has {abi}")]
    ArgCount { given: usize, abi: usize },
    #[error("fewer integer kernel arguments than the ABI has")]
    TooFewArgs,
    #[error("a launch of {grid:?} is too large for CUDA")]
    LaunchTooLarge { grid: [usize; 3] },
    #[error("a fused launch of {groups:?} blocks is too large for CUDA")]
    FusedLaunchTooLarge { groups: [usize; 3] },
    #[error("copy {piece} with {host} host bytes does not fit a buffer of {bytes} bytes")]
    CopyOutside {
        /// The copy's pieces, as `Debug` shows them.
        piece: String,
        host: usize,
        bytes: usize,
    },
    #[error(
        "kernel '{kernel}' has no device code for {api}: custom Rust kernels run on cpu devices \
         unless given one (Custom::with_device_kernel)"
    )]
    NoDeviceCode { kernel: String, api: &'static str },
    /// The cause is no `#[source]`: the message shows it without its
    /// "device backend failure" prefix, which error chains would repeat.
    #[error("kernel '{kernel}' failed to build for {api}: {}", build_why(cause))]
    Build {
        kernel: String,
        api: &'static str,
        cause: Box<DeviceError>,
    },
    #[error("kernel '{kernel}' fused {steps} times failed to build for {api}: {source}")]
    FusedBuild {
        kernel: String,
        steps: usize,
        api: &'static str,
        #[source]
        source: Box<DeviceError>,
    },
    #[error("out of memory: {bytes} bytes more would make {live}")]
    OutOfMemory { bytes: usize, live: usize },
    #[error("not a library kernel")]
    NotLibraryKernel,
    #[error("not a fused kernel")]
    NotFusedKernel,
    #[error("not a library kernel fused")]
    NotLibraryKernelFused,
}

/// A build failure's reason without the "device backend failure" prefix
/// its runtime's error carries.
fn build_why(e: &DeviceError) -> String {
    match e {
        DeviceError::Backend(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// What this machine lacks for a device.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unavailable {
    #[error(
        "no CUDA driver found (libcuda.so.1): install the NVIDIA driver, or use cpu/opencl devices"
    )]
    NoCudaDriver,
    #[error(
        "no NVRTC library found (libnvrtc.so): install the CUDA runtime libraries (e.g. the \
         cuda-nvrtc package); no full toolkit is needed"
    )]
    NoNvrtc,
    #[error("no CUDA device {device}: this machine has {count}")]
    NoCudaDevice { device: usize, count: usize },
    #[error("mock:device={device}: the mock has one device, mock:device=0")]
    NoMockDevice { device: usize },
}

/// Why a working device stopped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Failure {
    /// [`crate::FailAt`]'s emulated failure.
    #[error("emulated failure at iteration {iter} (fail@{at})")]
    Emulated { iter: u64, at: u64 },
}

/// A device API's error as [`DeviceError::Backend`], kept as its source.
#[cfg(any(feature = "cuda", feature = "opencl"))]
pub(crate) fn backend<E: std::error::Error + Send + Sync + 'static>(
    api: &'static str,
) -> impl Fn(E) -> DeviceError {
    move |e| {
        BackendError::Api {
            api,
            source: ForeignError::new(e),
        }
        .into()
    }
}

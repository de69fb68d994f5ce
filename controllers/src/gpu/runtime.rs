//! The surface a GPU API must offer for [`super::GpuController`] to run on it.

use super::copy_plan::CopyPiece;
use super::fused::FusedLimits;
use super::geometry::GroupHints;
use crate::error::DeviceError;
use kernels::Dialect;

/// One of a device's two in-order command queues (OpenCL queues, CUDA
/// streams). The lanes run concurrently: a launch on [`Lane::Side`] starts
/// after every command issued before it on [`Lane::Main`], and nothing on
/// the main lane waits for the side lane until [`DeviceRuntime::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Transfers, border strips, everything the host waits on in turn.
    Main,
    /// A launch the main lane's transfers should not queue behind (the
    /// inner region while its halos move).
    Side,
}

/// A kernel compiled by a runtime, with what the launch geometry needs to
/// know about it on this device.
pub struct Compiled<K> {
    /// The runtime's kernel object.
    pub kernel: K,
    /// Work-group size hints for it.
    pub hints: GroupHints,
}

/// One device of one GPU API (OpenCL, CUDA, ...): raw byte buffers, copy
/// commands, kernel compilation and launch, and device timing. Everything
/// about shapes, validation and transfer planning stays in
/// [`super::GpuController`].
///
/// Ordering: commands on one [`Lane`] run in the order issued, as on one
/// in-order queue or stream; `write` and `read` go on the main lane. They
/// may return before the device has run earlier main-lane launches, but act
/// after them (a read sees what every earlier launch there wrote) and must
/// be complete, host memory included, when they return.
pub trait DeviceRuntime: Send {
    /// A device buffer of bytes.
    type Buffer: Send + 'static;
    /// A compiled kernel, ready to launch.
    type Kernel: Send;
    /// What a launch leaves to time it by (an event).
    type Timing: Send;

    /// The API's name, for messages (`OpenCL`).
    const API: &'static str;

    /// The C dialect its kernels are written in: the controller compiles
    /// `DeviceKernel::source(DIALECT)`.
    const DIALECT: Dialect;

    /// What this device is, e.g. `opencl:platform=0,device=0 (name)`.
    fn describe(&self) -> String;

    /// Whether the device is a GPU: GPUs and CPU implementations get
    /// different work-group shapes (see [`super::geometry::plan_launch`]).
    fn is_gpu(&self) -> bool;

    /// A buffer of `bytes` bytes (possibly 0), contents unspecified.
    fn alloc(&mut self, bytes: usize) -> Result<Self::Buffer, DeviceError>;

    /// Copies `host` (exactly `piece.bytes()` bytes, packed) into `piece` of
    /// `buf`.
    fn write(
        &mut self,
        buf: &Self::Buffer,
        piece: &CopyPiece,
        host: &[u8],
    ) -> Result<(), DeviceError>;

    /// Copies `piece` of `buf` into `host` (exactly `piece.bytes()` bytes,
    /// packed).
    fn read(
        &mut self,
        buf: &Self::Buffer,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError>;

    /// Copies `from_piece` of `from` into `to_piece` of `to` on the device
    /// (pieces of one region in two allocations: the same sizes, different
    /// pitches), in order on the main lane; `Ok(false)` where the runtime
    /// has no such copy, and the controller then goes through the host. A
    /// resized tile keeps its cells this way without a round trip over the
    /// bus.
    fn copy_within(
        &mut self,
        from: &Self::Buffer,
        from_piece: &CopyPiece,
        to: &Self::Buffer,
        to_piece: &CopyPiece,
    ) -> Result<bool, DeviceError> {
        let _ = (from, from_piece, to, to_piece);
        Ok(false)
    }

    /// Whether it compiles kernels it was not given a Rust twin of (the
    /// init kernels of `DeviceFill::fill_device`); the mock does not.
    fn compiles_any(&self) -> bool {
        true
    }

    /// Which runtimes of the process can copy this one's buffers with
    /// [`DeviceRuntime::copy_within`], one to another: an id shared by the
    /// runtimes of one context (`None`, the default: none can). Their
    /// copies must then accept buffers another of them allocated, on this
    /// runtime's own main lane.
    fn peer_domain(&self) -> Option<u64> {
        None
    }

    /// Compiles `source` (a `kernels::DeviceKernel` in [`Self::DIALECT`]; its
    /// entry point is `kernels::device::KERNEL_NAME` and its arguments are
    /// `kernels::device::abi::ARGS`). Results must be bit-identical to the
    /// CPU backend's: compile with `DIALECT.compiler_options()` (IEEE-exact
    /// division and square root, no contraction), falling back only for
    /// devices that reject them.
    fn compile(&mut self, source: &str) -> Result<Compiled<Self::Kernel>, DeviceError>;

    /// Enqueues `kernel` on `lane` with arguments `(src, dst, index_args..., aux...)` over a grid of
    /// `grid` work-items (x fastest), in groups of `group` when given (they
    /// tile `grid`), else of the runtime's choice. May return before the
    /// kernel runs. A runtime may round the grid up to whole groups only if
    /// its dialect has a `bounds_guard`; otherwise it runs exactly `grid`.
    ///
    /// # Safety
    ///
    /// Device code indexes the buffers unchecked: every cell the kernel
    /// reads from `src` and writes to `dst` for these `index_args` and `grid` must
    /// lie inside them (what `crate::launch::validate` establishes).
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &Self::Kernel,
        src: &Self::Buffer,
        dst: &Self::Buffer,
        index_args: &[i64],
        aux: &[&Self::Buffer],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<Self::Timing, DeviceError>;

    /// What the device allows fused kernels (`kernels::device::fused`:
    /// several iterations per launch through work-group memory), or `None`
    /// where the runtime has no [`DeviceRuntime::compile_fused`] and
    /// [`DeviceRuntime::launch_fused`]: its controller then takes one step
    /// per launch.
    fn fused_limits(&self) -> Option<FusedLimits> {
        None
    }

    /// Compiles a fused kernel's source (entry point
    /// `kernels::device::FUSED_KERNEL_NAME`, arguments `src`, `dst` and
    /// `index_args` 64-bit integers), with the options of
    /// [`DeviceRuntime::compile`].
    fn compile_fused(
        &mut self,
        source: &str,
        index_arg_count: usize,
    ) -> Result<Compiled<Self::Kernel>, DeviceError> {
        let _ = (source, index_arg_count);
        Err(DeviceError::NoFusedKernels { api: Self::API })
    }

    /// Enqueues a fused kernel on `lane` with arguments `(src, dst,
    /// index_args...)`: `groups` work groups along the three launch axes, of
    /// `group` work-items each along x. May return before it runs.
    ///
    /// # Safety
    ///
    /// As [`DeviceRuntime::launch`]: every cell the kernel reads from `src`
    /// and writes to `dst` for these arguments must lie inside them, and
    /// `group` must be the work group its source was generated for.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &Self::Kernel,
        src: &Self::Buffer,
        dst: &Self::Buffer,
        index_args: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<Self::Timing, DeviceError> {
        let _ = (lane, kernel, src, dst, index_args, groups, group);
        Err(DeviceError::NoFusedKernels { api: Self::API })
    }

    /// Waits for every command issued so far, on both lanes.
    fn finish(&mut self) -> Result<(), DeviceError>;

    /// Device-measured seconds the launches of `timings` ran, summed; only
    /// called after [`DeviceRuntime::finish`].
    fn elapsed_seconds(&mut self, timings: Vec<Self::Timing>) -> f64;
}

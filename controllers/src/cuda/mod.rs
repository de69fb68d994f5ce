//! The CUDA runtime (feature `cuda`, `cudarc` crate) under
//! [`GpuController`]: device allocations of bytes, rectangle copies through
//! the driver's 2-D copies, kernels compiled by NVRTC from the generated
//! CUDA C, launches timed by pairs of CUDA events.
//!
//! The driver (`libcuda.so`) and NVRTC are loaded at run time, so the build
//! needs no CUDA toolkit; cudarc panics when a library it needs is missing,
//! so every entry point probes them first and answers
//! [`DeviceError::Unavailable`] instead.

mod compile;
mod driver;
mod launch;
mod memory;
mod register;

use crate::error::{backend, BackendError, DeviceError, Unavailable};
use crate::gpu::runs::{RunShape, Tuner};
use crate::gpu::tuning::choose;
use crate::gpu::{Compiled, CopyPiece, DeviceRuntime, FusedLimits, GpuController, Lane};
use compile::load;
pub use compile::CodeImage;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, PushKernelArg};
pub use driver::{devices, CudaDeviceInfo};
use driver::{driver_version, nvrtc_version, probe_driver, probe_nvrtc};
use kernels::device::abi::LONG_ARGS;
use kernels::device::{FUSED_KERNEL_NAME, KERNEL_NAME};
use kernels::{Cell, Dialect};
use launch::{fused_config, fused_limits, launch_shaped, log_choice, no_launch, Events};
pub use memory::CudaBuffer;
use memory::{check_piece, copy_device, HostCopies};
pub(crate) use register::{list, open};
use std::collections::HashMap;
use std::sync::Arc;

/// One CUDA device: its (primary) context and two streams, one per
/// [`Lane`]; buffers are allocated, copied and freed on the main one.
pub struct CudaRuntime {
    desc: String,
    /// The device: runtimes of one device share its primary context, and
    /// with it their buffers.
    ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    side: Arc<CudaStream>,
    arch: (i32, i32),
    /// What NVRTC compiles kernels to for this device.
    image: CodeImage,
    /// Copies to and from host memory, staged where they are small.
    copies: HostCopies,
    /// The shape of every launch, where one was forced
    /// ([`CudaRuntime::with_launch`]).
    forced: Option<RunShape>,
    /// Whether to log the shapes timed and chosen.
    log_launch: bool,
    /// Shapes tried and chosen, by kernel and grid.
    tuner: Tuner<Events>,
    /// Each compiled kernel's largest block, by its function handle.
    max_threads: HashMap<usize, usize>,
}

/// The CUDA backend: the GPU controller over [`CudaRuntime`].
pub type CudaController<T> = GpuController<CudaRuntime, T>;

impl<T: Cell> GpuController<CudaRuntime, T> {
    /// CUDA device `device` (as `epsilod list` numbers them).
    pub fn new(device: usize) -> Result<CudaController<T>, DeviceError> {
        Ok(GpuController::with_runtime(CudaRuntime::new(device)?))
    }
}

impl CudaRuntime {
    /// Every launch in `shape`, where given, instead of the shapes timed
    /// per kernel: for measuring the shapes.
    pub fn with_launch(mut self, shape: Option<RunShape>) -> CudaRuntime {
        self.forced = shape;
        self
    }

    /// Logs (`info`) each kernel's timed shapes and the one chosen, where
    /// `on`.
    pub fn with_launch_log(mut self, on: bool) -> CudaRuntime {
        self.log_launch = on;
        self
    }

    /// `source` compiled by NVRTC for this device (cached per process) and
    /// its function `name`, with its block hints.
    fn function(
        &mut self,
        source: &str,
        name: &str,
    ) -> Result<Compiled<CudaFunction>, DeviceError> {
        let compiled = load(&self.ctx, (self.arch, self.image), source, name)?;
        self.max_threads
            .insert(compiled.kernel.cu_function() as usize, compiled.hints.max);
        Ok(compiled)
    }

    /// The stream of `lane`: a side-lane launch comes after everything
    /// issued on the main stream so far.
    fn lane_stream(&self, lane: Lane) -> Result<Arc<CudaStream>, DeviceError> {
        match lane {
            Lane::Main => Ok(self.stream.clone()),
            Lane::Side => {
                self.side.join(&self.stream).map_err(backend("CUDA"))?;
                Ok(self.side.clone())
            }
        }
    }

    /// The same device compiling its kernels to `image` rather than what
    /// the driver and NVRTC versions call for (the test suites run both).
    pub fn with_image(mut self, image: CodeImage) -> CudaRuntime {
        self.image = image;
        self
    }

    /// What this device's kernels are compiled to.
    pub fn image(&self) -> CodeImage {
        self.image
    }

    /// Opens CUDA device `device`.
    pub fn new(device: usize) -> Result<CudaRuntime, DeviceError> {
        probe_driver()?;
        probe_nvrtc()?;
        let count = CudaContext::device_count().map_err(backend("CUDA"))?.max(0) as usize;
        if device >= count {
            return Err(Unavailable::NoCudaDevice { device, count }.into());
        }
        let ctx = CudaContext::new(device).map_err(backend("CUDA"))?;
        // Ordering comes from the main stream, and side-stream launches
        // join it first (see `launch`); cudarc's per-allocation event
        // tracking would only add events to every launch.
        // SAFETY: buffers are allocated, copied and freed on `stream`; a
        // launch on `side` first waits for everything issued on `stream`,
        // and the controller finishes both before it frees a buffer. A
        // peer's message (`PeerCopies::pack_peer`) is copied on the peer's
        // stream, synchronised before it is handed over, then on this one,
        // whose holder waits before it reuses or drops it.
        unsafe { ctx.disable_event_tracking() };
        // Border strips, halo copies and every other command but the inner
        // regions go on `stream`, inner regions on `side`. At the highest
        // priority a strip's blocks start before the
        // blocks still waiting of an inner kernel launched earlier (another
        // virtual device's on this GPU), so its halos leave sooner.
        ctx.bind_to_thread().map_err(backend("CUDA"))?;
        let (_, highest) =
            cudarc::driver::result::stream::get_priority_range().map_err(backend("CUDA"))?;
        let stream = ctx
            .new_stream_with_priority(highest)
            .map_err(backend("CUDA"))?;
        let side = ctx.new_stream().map_err(backend("CUDA"))?;
        let name = ctx.name().map_err(backend("CUDA"))?;
        let arch = ctx.compute_capability().map_err(backend("CUDA"))?;
        Ok(CudaRuntime {
            desc: format!("cuda:device={device} ({name})"),
            ordinal: device,
            copies: HostCopies::new(ctx.clone(), stream.clone()),
            ctx,
            stream,
            side,
            arch,
            image: match nvrtc_version() {
                Some(v) => CodeImage::for_versions(driver_version()?, v),
                None => CodeImage::Ptx,
            },
            forced: None,
            log_launch: false,
            tuner: Tuner::default(),
            max_threads: HashMap::new(),
        })
    }
}

impl DeviceRuntime for CudaRuntime {
    type Buffer = CudaBuffer;
    type Kernel = CudaFunction;
    type Timing = (CudaEvent, CudaEvent);
    const API: &'static str = "CUDA";
    const DIALECT: Dialect = Dialect::Cuda;

    fn describe(&self) -> String {
        self.desc.clone()
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn alloc(&mut self, bytes: usize) -> Result<CudaBuffer, DeviceError> {
        CudaBuffer::new(&self.stream, bytes)
    }

    fn write(
        &mut self,
        buf: &CudaBuffer,
        piece: &CopyPiece,
        host: &[u8],
    ) -> Result<(), DeviceError> {
        check_piece(buf, piece, host.len())?;
        // SAFETY: `check_piece` established that the piece lies in the
        // allocation and `host` holds it; a write only reads `host`.
        unsafe {
            self.copies
                .copy(buf.ptr, piece, host.as_ptr() as *mut u8, true)
        }
    }

    fn read(
        &mut self,
        buf: &CudaBuffer,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError> {
        check_piece(buf, piece, host.len())?;
        // SAFETY: as in `write`, and `host` is writable.
        unsafe { self.copies.copy(buf.ptr, piece, host.as_mut_ptr(), false) }
    }

    fn peer_domain(&self) -> Option<u64> {
        Some(self.ordinal as u64)
    }

    fn copy_within(
        &mut self,
        from: &CudaBuffer,
        from_piece: &CopyPiece,
        to: &CudaBuffer,
        to_piece: &CopyPiece,
    ) -> Result<bool, DeviceError> {
        copy_device(&self.stream, (from, from_piece), (to, to_piece))
    }

    fn compile(&mut self, source: &str) -> Result<Compiled<CudaFunction>, DeviceError> {
        self.function(source, KERNEL_NAME)
    }

    fn fused_limits(&self) -> Option<FusedLimits> {
        fused_limits(&self.ctx)
    }

    fn compile_fused(
        &mut self,
        source: &str,
        _index_arg_count: usize,
    ) -> Result<Compiled<CudaFunction>, DeviceError> {
        self.function(source, FUSED_KERNEL_NAME)
    }

    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &CudaFunction,
        src: &CudaBuffer,
        dst: &CudaBuffer,
        index_args: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<(CudaEvent, CudaEvent), DeviceError> {
        let stream = self.lane_stream(lane)?;
        let cfg = fused_config(groups, group)?;
        let (src, dst) = (src.ptr, dst.ptr);
        let mut b = stream.launch_builder(kernel);
        b.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
        b.arg(&src).arg(&dst);
        for v in index_args {
            b.arg(v);
        }
        // SAFETY: the caller guarantees the kernel's accesses for these
        // arguments lie inside `src` and `dst` and that the block is the
        // one its source was generated for; the arguments are the fused
        // kernel's (two device addresses, then `long long`s); the buffers
        // outlive the launch because the controller finishes both streams
        // before freeing any, and `Drop` synchronises.
        let events = unsafe { b.launch(cfg) }.map_err(backend("CUDA"))?;
        events.ok_or_else(|| BackendError::NoEvents { api: "CUDA" }.into())
    }

    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &CudaFunction,
        src: &CudaBuffer,
        dst: &CudaBuffer,
        index_args: &[i64],
        aux: &[&CudaBuffer],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<(CudaEvent, CudaEvent), DeviceError> {
        if index_args.len() != LONG_ARGS {
            return Err(BackendError::ArgCount {
                given: index_args.len(),
                abi: LONG_ARGS,
            }
            .into());
        }
        let stream = self.lane_stream(lane)?;
        if grid.contains(&0) {
            return no_launch(&stream);
        }
        let aux: Vec<sys::CUdeviceptr> = aux.iter().map(|a| a.ptr).collect();
        let buffers = (src.ptr, dst.ptr, &aux[..]);
        let key = kernel.cu_function() as usize;
        let max = self.max_threads.get(&key).copied().unwrap_or(256);
        let seconds = |(a, b): &Events| {
            a.elapsed_ms(b)
                .map(|ms| f64::from(ms) * 1e-3)
                .map_err(backend("CUDA"))
        };
        let choice = choose(
            &mut self.tuner,
            self.forced,
            group,
            (key, max),
            grid,
            seconds,
        )?;
        if let Some((grid, timed)) = choice.decided.filter(|_| self.log_launch) {
            log_choice(grid, &timed, choice.shape);
        }
        let shape = (choice.shape, choice.z_block);
        if choice.trial {
            // Events of its own: the launch's pair goes to the
            // controller's kernel time.
            let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
            let start = stream.record_event(flags).map_err(backend("CUDA"))?;
            // SAFETY: the caller's guarantee covers every shape,
            // since each computes exactly the cells of `grid`.
            let timing =
                unsafe { launch_shaped(&stream, kernel, buffers, index_args, grid, shape)? };
            let end = stream.record_event(flags).map_err(backend("CUDA"))?;
            self.tuner.record(key, grid, choice.shape, (start, end));
            return Ok(timing);
        }
        // SAFETY: the caller's guarantee covers every shape, since each
        // computes exactly the cells of `grid`.
        unsafe { launch_shaped(&stream, kernel, buffers, index_args, grid, shape) }
    }

    fn finish(&mut self) -> Result<(), DeviceError> {
        self.side.synchronize().map_err(backend("CUDA"))?;
        self.stream.synchronize().map_err(backend("CUDA"))
    }

    fn elapsed_seconds(&mut self, timings: Vec<(CudaEvent, CudaEvent)>) -> f64 {
        timings
            .iter()
            .map(|(start, end)| start.elapsed_ms(end).map_or(0.0, f64::from))
            .sum::<f64>()
            * 1e-3
    }
}

impl Drop for CudaRuntime {
    /// Launches still queued must finish before their buffers are freed.
    fn drop(&mut self) {
        let _ = self.side.synchronize();
        let _ = self.stream.synchronize();
    }
}

//! The OpenCL runtime (feature `opencl`, `ocl` crate) under
//! [`GpuController`]: byte buffers, rectangle copies, programs built from
//! the generated OpenCL C, launches timed by profiling events. PoCL runs it
//! on a CPU.

mod build;
mod devices;
mod register;

use crate::error::{backend, BackendError, DeviceError};
use crate::gpu::fused::MAX_OVERHEAD;
use crate::gpu::{Compiled, CopyPiece, DeviceRuntime, FusedLimits, GpuController, Lane};
use build::Target;
use devices::open as open_device;
pub use devices::platforms;
use kernels::device::abi::{ArgKind, BufferArg, ARGS, LONG_ARGS};
use kernels::{Cell, Dialect};
use ocl::builders::KernelCmd;
use ocl::enums::ProfilingInfo;
use ocl::{Buffer, Context, Device, Event, Queue};
pub(crate) use register::{list, open};

/// An OpenCL device: its context and two in-order, profiling queues, one
/// per [`Lane`].
pub struct OclRuntime {
    desc: String,
    device: Device,
    context: Context,
    /// Its context's place in the process: the runtimes sharing it share
    /// buffers.
    context_id: u64,
    queue: Queue,
    side: Queue,
    gpu: bool,
}

/// The OpenCL backend: the GPU controller over [`OclRuntime`].
pub type OpenClController<T> = GpuController<OclRuntime, T>;

impl<T: Cell> GpuController<OclRuntime, T> {
    /// Device `device` of platform `platform` (as `epsilod list` numbers them).
    pub fn new(platform: usize, device: usize) -> Result<OpenClController<T>, DeviceError> {
        Ok(GpuController::with_runtime(OclRuntime::new(
            platform, device,
        )?))
    }
}

impl OclRuntime {
    /// Opens device `device` of platform `platform`.
    pub fn new(platform: usize, device: usize) -> Result<OclRuntime, DeviceError> {
        let opened = open_device(platform, device)?;
        Ok(OclRuntime {
            desc: format!(
                "opencl:platform={platform},device={device} ({})",
                opened.name
            ),
            device: opened.device,
            context: opened.context,
            context_id: opened.context_id,
            queue: opened.queue,
            side: opened.side,
            gpu: opened.gpu,
        })
    }

    /// Where this device builds its kernels.
    fn target(&self) -> Target<'_> {
        Target {
            device: self.device,
            context: &self.context,
            queue: &self.queue,
        }
    }

    /// Enqueues `cmd` (its kernel's arguments set) on `lane`, returning
    /// the event that times it. A side-lane launch starts after the main
    /// lane's earlier commands.
    ///
    /// # Safety
    ///
    /// As [`DeviceRuntime::launch`]: the kernel's accesses for its arguments
    /// lie inside its buffers, which its arguments (and OpenCL) retain until
    /// the command completes.
    unsafe fn enqueue(&self, lane: Lane, cmd: KernelCmd<'_>) -> Result<Event, DeviceError> {
        let after = match lane {
            Lane::Main => None,
            Lane::Side => Some(
                self.queue
                    .enqueue_marker::<Event>(None)
                    .map_err(backend("OpenCL"))?,
            ),
        };
        let mut ev = Event::empty();
        let cmd = cmd.enew(&mut ev);
        let cmd = match &after {
            Some(marker) => cmd.queue(&self.side).ewait(marker),
            None => cmd,
        };
        // SAFETY: the caller's promise, passed on.
        unsafe {
            cmd.enq().map_err(backend("OpenCL"))?;
        }
        Ok(ev)
    }

    /// Launches with the work-group shapes of a GPU (`true`) or of a CPU
    /// implementation. Tests use it to run the GPU launch geometry on PoCL.
    pub fn gpu_groups(mut self, on: bool) -> OclRuntime {
        self.gpu = on;
        self
    }
}

/// `$cmd` (a read or a write: ocl's two builders share no trait) over
/// `$piece` of its buffer.
macro_rules! on_piece {
    ($cmd:expr, $piece:expr) => {
        match *$piece {
            CopyPiece::Rect(r) => $cmd.rect(
                r.origin,
                [0; 3],
                r.size,
                r.row_pitch,
                r.slice_pitch,
                r.size[0],
                r.size[0] * r.size[1],
            ),
            CopyPiece::Run { offset, .. } => $cmd.offset(offset),
        }
    };
}

impl DeviceRuntime for OclRuntime {
    type Buffer = Buffer<u8>;
    type Kernel = ocl::Kernel;
    type Timing = Event;
    const API: &'static str = "OpenCL";
    const DIALECT: Dialect = Dialect::OpenCl;

    fn describe(&self) -> String {
        self.desc.clone()
    }

    fn is_gpu(&self) -> bool {
        self.gpu
    }

    fn alloc(&mut self, bytes: usize) -> Result<Buffer<u8>, DeviceError> {
        // OpenCL has no empty buffers.
        Buffer::<u8>::builder()
            .queue(self.queue.clone())
            .len(bytes.max(1))
            .build()
            .map_err(backend("OpenCL"))
    }

    fn write(
        &mut self,
        buf: &Buffer<u8>,
        piece: &CopyPiece,
        host: &[u8],
    ) -> Result<(), DeviceError> {
        on_piece!(buf.write(host), piece)
            .enq()
            .map_err(backend("OpenCL"))
    }

    fn read(
        &mut self,
        buf: &Buffer<u8>,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError> {
        on_piece!(buf.read(host), piece)
            .enq()
            .map_err(backend("OpenCL"))
    }

    fn copy_within(
        &mut self,
        from: &Buffer<u8>,
        from_piece: &CopyPiece,
        to: &Buffer<u8>,
        to_piece: &CopyPiece,
    ) -> Result<bool, DeviceError> {
        // On this runtime's queue, not the buffer's default one: the buffer
        // may be another runtime's of the same context (a peer's message).
        let cmd = from.cmd().queue(&self.queue);
        let cmd = match (*from_piece, *to_piece) {
            (
                CopyPiece::Run { offset: a, bytes },
                CopyPiece::Run {
                    offset: b,
                    bytes: n,
                },
            ) if bytes == n => {
                if bytes == 0 {
                    return Ok(true);
                }
                cmd.copy(to, Some(b), Some(bytes)).offset(a)
            }
            (CopyPiece::Rect(a), CopyPiece::Rect(b)) if a.size == b.size => {
                if a.size.contains(&0) {
                    return Ok(true);
                }
                cmd.copy(to, None, None).rect(
                    a.origin,
                    b.origin,
                    a.size,
                    a.row_pitch,
                    a.slice_pitch,
                    b.row_pitch,
                    b.slice_pitch,
                )
            }
            _ => return Ok(false),
        };
        cmd.enq().map_err(backend("OpenCL"))?;
        Ok(true)
    }

    fn peer_domain(&self) -> Option<u64> {
        Some(self.context_id)
    }

    fn compile(&mut self, source: &str) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        self.target().step_kernel(source)
    }

    fn fused_limits(&self) -> Option<FusedLimits> {
        use ocl::enums::{DeviceInfo as Di, DeviceInfoResult as DiR};
        let local_bytes = match self.device.info(Di::LocalMemSize) {
            Ok(DiR::LocalMemSize(n)) => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return None,
        };
        let max_group = match self.device.info(Di::MaxWorkGroupSize) {
            Ok(DiR::MaxWorkGroupSize(n)) => n,
            _ => 0,
        };
        Some(FusedLimits {
            local_bytes,
            max_group,
            gpu: self.gpu,
            max_overhead: MAX_OVERHEAD,
        })
    }

    fn compile_fused(
        &mut self,
        source: &str,
        index_arg_count: usize,
    ) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        self.target().fused_kernel(source, index_arg_count)
    }

    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &ocl::Kernel,
        src: &Buffer<u8>,
        dst: &Buffer<u8>,
        index_args: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<Event, DeviceError> {
        kernel.set_arg(0, src).map_err(backend("OpenCL"))?;
        kernel.set_arg(1, dst).map_err(backend("OpenCL"))?;
        for (i, v) in index_args.iter().enumerate() {
            kernel.set_arg(2 + i, *v).map_err(backend("OpenCL"))?;
        }
        let cmd = kernel
            .cmd()
            .global_work_size([groups[0] * group, groups[1], groups[2]])
            .local_work_size([group, 1, 1]);
        // SAFETY: as in `launch`: the caller guarantees the kernel's accesses
        // for these arguments lie inside both buffers.
        unsafe { self.enqueue(lane, cmd) }
    }

    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &ocl::Kernel,
        src: &Buffer<u8>,
        dst: &Buffer<u8>,
        index_args: &[i64],
        aux: &[&Buffer<u8>],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<Event, DeviceError> {
        if index_args.len() != LONG_ARGS {
            return Err(BackendError::ArgCount {
                given: index_args.len(),
                abi: LONG_ARGS,
            }
            .into());
        }
        let mut index_args = index_args.iter().copied();
        for (i, (_, kind)) in ARGS.iter().enumerate() {
            match kind {
                ArgKind::Buffer(BufferArg::Src) => kernel.set_arg(i, src),
                ArgKind::Buffer(BufferArg::Dst) => kernel.set_arg(i, dst),
                ArgKind::Long(_) => kernel.set_arg(i, index_args.next().unwrap_or_default()),
            }
            .map_err(backend("OpenCL"))?;
        }
        for (i, buf) in aux.iter().enumerate() {
            kernel
                .set_arg(ARGS.len() + i, *buf)
                .map_err(backend("OpenCL"))?;
        }
        let cmd = kernel.cmd().global_work_size(grid);
        let cmd = match group {
            Some(g) => cmd.local_work_size(g),
            None => cmd,
        };
        // SAFETY: the caller guarantees that the kernel's reads of `src` and
        // writes of `dst` for these arguments lie inside both buffers.
        unsafe { self.enqueue(lane, cmd) }
    }

    fn finish(&mut self) -> Result<(), DeviceError> {
        self.side.finish().map_err(backend("OpenCL"))?;
        self.queue.finish().map_err(backend("OpenCL"))
    }

    fn elapsed_seconds(&mut self, timings: Vec<Event>) -> f64 {
        let mut ns = 0u64;
        for ev in timings {
            let t = |k| {
                ev.profiling_info(k)
                    .ok()
                    .and_then(|r| r.time().ok())
                    .unwrap_or(0)
            };
            ns += t(ProfilingInfo::End).saturating_sub(t(ProfilingInfo::Start));
        }
        ns as f64 * 1e-9
    }
}

impl Drop for OclRuntime {
    /// Commands still queued must finish before their buffers go: PoCL, for
    /// one, compiles a kernel lazily in its own threads when the command
    /// runs, and a process that exits meanwhile aborts (seen in CI after a
    /// test dropped a controller right after a launch).
    fn drop(&mut self) {
        let _ = self.side.finish();
        let _ = self.queue.finish();
    }
}

//! The OpenCL runtime (feature `opencl`, `ocl` crate) under
//! [`GpuController`]: byte buffers, rectangle copies, programs built from
//! the generated OpenCL C, launches timed by profiling events. PoCL runs it
//! on a CPU.

use crate::device_spec::{GpuDevice, GpuOptions, Listing};
use crate::error::DeviceError;
use crate::gpu::fused::MAX_OVERHEAD;
use crate::gpu::{
    Compiled, CopyPiece, DeviceRuntime, FusedLimits, GpuController, GroupHints, Lane,
};
use kernels::device::abi::{ArgKind, BufferArg, ARGS, LONG_ARGS};
use kernels::device::{FUSED_KERNEL_NAME, KERNEL_NAME};
use kernels::{Cell, Dialect};
use ocl::enums::ProfilingInfo;
use ocl::{flags, Buffer, Context, Device, Event, Platform, Program, Queue};

/// Platform and device discovery is not safe to run from several threads at
/// once (measured: PoCL then reported no devices to one of two threads), and
/// every device of a run opens from its own thread.
static DISCOVERY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One context per (platform, device) in a process, shared by its virtual
/// devices (as CUDA shares the primary context): kernels from separate
/// contexts on one GPU are time-sliced, never run concurrently, and
/// buffers of one context are foreign to another.
static CONTEXTS: std::sync::Mutex<Vec<((usize, usize), Context)>> =
    std::sync::Mutex::new(Vec::new());

fn backend<E: std::fmt::Display>(e: E) -> DeviceError {
    DeviceError::Backend(e.to_string())
}

/// Every platform and its devices, by name.
pub fn platforms() -> Vec<(String, Vec<String>)> {
    let _one = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    Platform::list()
        .into_iter()
        .map(|p| {
            let devices = Device::list_all(p)
                .unwrap_or_default()
                .iter()
                .map(|d| d.name().unwrap_or_else(|_| "?".into()))
                .collect();
            (p.name().unwrap_or_else(|_| "?".into()), devices)
        })
        .collect()
}

/// An OpenCL device: its context and two in-order, profiling queues, one
/// per [`Lane`].
pub struct OclRuntime {
    desc: String,
    device: Device,
    context: Context,
    /// Its place in [`CONTEXTS`]: the runtimes sharing it share buffers.
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
        let _one = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
        let plats = Platform::list();
        if plats.is_empty() {
            return Err(DeviceError::Backend(
                "no OpenCL platform found: install one (e.g. Debian's pocl-opencl-icd)".into(),
            ));
        }
        let plat = *plats.get(platform).ok_or_else(|| {
            DeviceError::BadOption(format!(
                "no OpenCL platform {platform}: there are {}",
                plats.len()
            ))
        })?;
        let devs = Device::list_all(plat).map_err(backend)?;
        let dev = *devs.get(device).ok_or_else(|| {
            DeviceError::BadOption(format!(
                "no device {device} on OpenCL platform {platform}: it has {}",
                devs.len()
            ))
        })?;
        let (context, context_id) = {
            let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
            match contexts
                .iter()
                .position(|(at, _)| *at == (platform, device))
            {
                Some(i) => (contexts[i].1.clone(), i as u64),
                None => {
                    let c = Context::builder()
                        .platform(plat)
                        .devices(dev)
                        .build()
                        .map_err(backend)?;
                    contexts.push(((platform, device), c.clone()));
                    (c, contexts.len() as u64 - 1)
                }
            }
        };
        let queue =
            Queue::new(&context, dev, Some(flags::QUEUE_PROFILING_ENABLE)).map_err(backend)?;
        let side =
            Queue::new(&context, dev, Some(flags::QUEUE_PROFILING_ENABLE)).map_err(backend)?;
        let name = dev.name().unwrap_or_else(|_| "?".into());
        let gpu = matches!(
            dev.info(ocl::enums::DeviceInfo::Type),
            Ok(ocl::enums::DeviceInfoResult::Type(t)) if t.contains(ocl::flags::DEVICE_TYPE_GPU)
        );
        Ok(OclRuntime {
            desc: format!("opencl:platform={platform},device={device} ({name})"),
            device: dev,
            context,
            context_id,
            queue,
            side,
            gpu,
        })
    }
}

impl OclRuntime {
    /// `source` built for this device with the dialect's options (IEEE
    /// division for results bit-identical to the CPU), falling back to none
    /// only for devices that reject them.
    fn program(&self, source: &str) -> Result<Program, DeviceError> {
        let options = Self::DIALECT.compiler_options().join(" ");
        let build = |opts: &str| {
            Program::builder()
                .src(source)
                .devices(self.device)
                .cmplr_opt(opts)
                .build(&self.context)
        };
        build(&options).or_else(|_| build("")).map_err(backend)
    }

    /// A built kernel with its work-group hints on this device.
    fn hinted(&self, k: ocl::Kernel) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        use ocl::enums::{KernelWorkGroupInfo as Wg, KernelWorkGroupInfoResult as WgR};
        let multiple = match k.wg_info(self.device, Wg::PreferredWorkGroupSizeMultiple) {
            Ok(WgR::PreferredWorkGroupSizeMultiple(m)) => m,
            _ => 0,
        };
        let max = match k.wg_info(self.device, Wg::WorkGroupSize) {
            Ok(WgR::WorkGroupSize(m)) => m,
            _ => 0,
        };
        Ok(Compiled {
            kernel: k,
            hints: GroupHints { multiple, max },
        })
    }

    /// Launches with the work-group shapes of a GPU (`true`) or of a CPU
    /// implementation. Tests use it to run the GPU launch geometry on PoCL.
    pub fn gpu_groups(mut self, on: bool) -> OclRuntime {
        self.gpu = on;
        self
    }
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
            .map_err(backend)
    }

    fn write(
        &mut self,
        buf: &Buffer<u8>,
        piece: &CopyPiece,
        host: &[u8],
    ) -> Result<(), DeviceError> {
        let cmd = buf.write(host);
        let cmd = match *piece {
            CopyPiece::Rect(r) => cmd.rect(
                r.origin,
                [0; 3],
                r.size,
                r.row_pitch,
                r.slice_pitch,
                r.size[0],
                r.size[0] * r.size[1],
            ),
            CopyPiece::Run { offset, .. } => cmd.offset(offset),
        };
        cmd.enq().map_err(backend)
    }

    fn read(
        &mut self,
        buf: &Buffer<u8>,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError> {
        let cmd = buf.read(host);
        let cmd = match *piece {
            CopyPiece::Rect(r) => cmd.rect(
                r.origin,
                [0; 3],
                r.size,
                r.row_pitch,
                r.slice_pitch,
                r.size[0],
                r.size[0] * r.size[1],
            ),
            CopyPiece::Run { offset, .. } => cmd.offset(offset),
        };
        cmd.enq().map_err(backend)
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
        cmd.enq().map_err(backend)?;
        Ok(true)
    }

    fn peer_domain(&self) -> Option<u64> {
        Some(self.context_id)
    }

    fn compile(&mut self, source: &str) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        let program = self.program(source)?;
        // The builder wants every argument declared, in the ABI's order.
        let mut b = ocl::Kernel::builder();
        b.program(&program)
            .name(KERNEL_NAME)
            .queue(self.queue.clone());
        for (_, kind) in ARGS {
            match kind {
                ArgKind::Buffer(_) => b.arg(None::<&Buffer<u8>>),
                ArgKind::Long(_) => b.arg(0i64),
            };
        }
        // Auxiliary field buffers follow the ABI's arguments: as many as
        // the compiled kernel declares beyond them.
        let probe = ocl::core::create_kernel(&program, KERNEL_NAME).map_err(backend)?;
        let declared = match ocl::core::get_kernel_info(&probe, ocl::enums::KernelInfo::NumArgs) {
            Ok(ocl::enums::KernelInfoResult::NumArgs(n)) => n as usize,
            _ => ARGS.len(),
        };
        for _ in ARGS.len()..declared {
            b.arg(None::<&Buffer<u8>>);
        }
        self.hinted(b.build().map_err(backend)?)
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
        longs: usize,
    ) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        let program = self.program(source)?;
        let mut b = ocl::Kernel::builder();
        b.program(&program)
            .name(FUSED_KERNEL_NAME)
            .queue(self.queue.clone());
        b.arg(None::<&Buffer<u8>>).arg(None::<&Buffer<u8>>);
        for _ in 0..longs {
            b.arg(0i64);
        }
        self.hinted(b.build().map_err(backend)?)
    }

    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &ocl::Kernel,
        src: &Buffer<u8>,
        dst: &Buffer<u8>,
        longs: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<Event, DeviceError> {
        kernel.set_arg(0, src).map_err(backend)?;
        kernel.set_arg(1, dst).map_err(backend)?;
        for (i, v) in longs.iter().enumerate() {
            kernel.set_arg(2 + i, *v).map_err(backend)?;
        }
        let after = match lane {
            Lane::Main => None,
            Lane::Side => Some(self.queue.enqueue_marker::<Event>(None).map_err(backend)?),
        };
        let mut ev = Event::empty();
        let cmd = kernel
            .cmd()
            .global_work_size([groups[0] * group, groups[1], groups[2]])
            .local_work_size([group, 1, 1])
            .enew(&mut ev);
        let cmd = match &after {
            Some(marker) => cmd.queue(&self.side).ewait(marker),
            None => cmd,
        };
        // SAFETY: as in `launch`: the caller guarantees the kernel's accesses
        // for these arguments lie inside both buffers, which the kernel's
        // arguments retain until the command completes.
        unsafe {
            cmd.enq().map_err(backend)?;
        }
        Ok(ev)
    }

    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &ocl::Kernel,
        src: &Buffer<u8>,
        dst: &Buffer<u8>,
        longs: &[i64],
        aux: &[&Buffer<u8>],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<Event, DeviceError> {
        if longs.len() != LONG_ARGS {
            return Err(DeviceError::Backend(format!(
                "{} integer kernel arguments given, the kernel ABI has {LONG_ARGS}",
                longs.len()
            )));
        }
        let mut longs = longs.iter().copied();
        for (i, (_, kind)) in ARGS.iter().enumerate() {
            match kind {
                ArgKind::Buffer(BufferArg::Src) => kernel.set_arg(i, src),
                ArgKind::Buffer(BufferArg::Dst) => kernel.set_arg(i, dst),
                ArgKind::Long(_) => kernel.set_arg(i, longs.next().unwrap_or_default()),
            }
            .map_err(backend)?;
        }
        for (i, buf) in aux.iter().enumerate() {
            kernel.set_arg(ARGS.len() + i, *buf).map_err(backend)?;
        }
        // A side-lane launch starts after the main lane's earlier commands.
        let after = match lane {
            Lane::Main => None,
            Lane::Side => Some(self.queue.enqueue_marker::<Event>(None).map_err(backend)?),
        };
        let mut ev = Event::empty();
        let cmd = kernel.cmd().global_work_size(grid).enew(&mut ev);
        let cmd = match &after {
            Some(marker) => cmd.queue(&self.side).ewait(marker),
            None => cmd,
        };
        let cmd = match group {
            Some(g) => cmd.local_work_size(g),
            None => cmd,
        };
        // SAFETY: the caller guarantees that the kernel's reads of `src` and
        // writes of `dst` for these arguments lie inside both buffers; the
        // buffers are retained by the kernel's arguments (and by OpenCL)
        // until the command completes.
        unsafe {
            cmd.enq().map_err(backend)?;
        }
        Ok(ev)
    }

    fn finish(&mut self) -> Result<(), DeviceError> {
        self.side.finish().map_err(backend)?;
        self.queue.finish().map_err(backend)
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

/// Opens an OpenCL device for the registry ([`crate::registry`]).
pub(crate) fn open<T: Cell>(
    d: &GpuDevice,
    o: &GpuOptions,
) -> Result<Box<dyn crate::Controller<T>>, DeviceError> {
    let c =
        OpenClController::<T>::new(d.platform.unwrap_or(0), d.device)?.with_fused_log(o.log_fused);
    Ok(Box::new(match o.layout {
        Some(l) => c.with_cell_layout(l),
        None => c,
    }))
}

/// Every device of every platform, for `epsilod list`.
pub(crate) fn list() -> Listing {
    let plats = platforms();
    if plats.is_empty() {
        return Listing::Note("no platform found (install one, e.g. pocl-opencl-icd)".into());
    }
    let mut devices = Vec::new();
    for (p, (name, devs)) in plats.iter().enumerate() {
        for (d, dev) in devs.iter().enumerate() {
            devices.push((
                format!("opencl:platform={p},device={d}"),
                format!("{name}: {dev}"),
            ));
        }
    }
    Listing::Devices(devices)
}

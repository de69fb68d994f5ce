//! The CUDA runtime (feature `cuda`, `cudarc` crate) under
//! [`GpuController`]: device allocations of bytes, rectangle copies through
//! the driver's 2-D copies, kernels compiled by NVRTC from the generated
//! CUDA C, launches timed by pairs of CUDA events.
//!
//! The driver (`libcuda.so`) and NVRTC are loaded at run time, so the build
//! needs no CUDA toolkit; cudarc panics when a library it needs is missing,
//! so every entry point probes them first and answers
//! [`DeviceError::Unavailable`] instead.

use crate::device_spec::{GpuDevice, GpuOptions, Listing};
use crate::error::DeviceError;
use crate::gpu::fused::MAX_OVERHEAD;
use crate::gpu::runs::{RunShape, Tuner, TUNE_CELLS};
use crate::gpu::{
    Compiled, CopyPiece, DeviceRuntime, FusedLimits, GpuController, GroupHints, Lane,
};
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use kernels::device::abi::{ArgKind, BufferArg, ARGS, LONG_ARGS};
use kernels::device::{FUSED_KERNEL_NAME, KERNEL_NAME};
use kernels::{Cell, Dialect};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The largest copy staged through a device's pinned host buffer; larger
/// ones (a rebalance's bulk rows) go straight from the caller's memory.
const STAGING_BYTES: usize = 16 << 20;

/// A launch's pair of events: its start and its end on its stream.
type Events = (CudaEvent, CudaEvent);

fn backend<E: std::fmt::Display>(e: E) -> DeviceError {
    DeviceError::Backend(e.to_string())
}

/// Fails with one clear line unless the CUDA driver can be loaded: cudarc's
/// dynamic loading panics on the first call into a missing library.
fn probe_driver() -> Result<(), DeviceError> {
    // SAFETY: loading the driver library runs its initialisers, which is
    // what every CUDA program does; nothing else is touched.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(DeviceError::Unavailable(
            "no CUDA driver found (libcuda.so.1): install the NVIDIA driver, or use cpu/opencl devices"
                .into(),
        ))
    }
}

/// As [`probe_driver`], for NVRTC (the run-time compiler, shipped with the
/// CUDA runtime libraries rather than the driver).
fn probe_nvrtc() -> Result<(), DeviceError> {
    // SAFETY: as in `probe_driver`: it only loads the library.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(DeviceError::Unavailable(
            "no NVRTC library found (libnvrtc.so): install the CUDA runtime libraries (e.g. the \
             cuda-nvrtc package); no full toolkit is needed"
                .into(),
        ))
    }
}

/// What `epsilod list` says about one CUDA device.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaDeviceInfo {
    /// Device ordinal, as `cuda:device=D` takes it.
    pub ordinal: usize,
    /// The device's name.
    pub name: String,
    /// Device memory in bytes.
    pub memory: usize,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// CUDA version the driver supports (e.g. 12080 for 12.8).
    pub driver_version: i32,
    /// NVRTC version (major, minor), or `None` when NVRTC is missing (the
    /// device can then be listed but not run).
    pub nvrtc_version: Option<(i32, i32)>,
}

fn driver_version() -> Result<i32, DeviceError> {
    let mut v = 0;
    // SAFETY: the driver was probed; `v` is a valid out-pointer.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    r.result().map_err(backend)?;
    Ok(v)
}

fn nvrtc_version() -> Option<(i32, i32)> {
    probe_nvrtc().ok()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC was probed; both are valid out-pointers.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Every CUDA device of this machine, or why there are none to use.
pub fn devices() -> Result<Vec<CudaDeviceInfo>, DeviceError> {
    probe_driver()?;
    let count = CudaContext::device_count().map_err(backend)?;
    let driver_version = driver_version()?;
    let nvrtc_version = nvrtc_version();
    (0..count.max(0) as usize)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal).map_err(backend)?;
            Ok(CudaDeviceInfo {
                ordinal,
                name: ctx.name().map_err(backend)?,
                memory: ctx.total_mem().map_err(backend)?,
                compute_capability: ctx.compute_capability().map_err(backend)?,
                driver_version,
                nvrtc_version,
            })
        })
        .collect()
}

/// What NVRTC makes of a kernel for the driver to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeImage {
    /// PTX for the device's virtual architecture, which the driver compiles
    /// on load: the usual choice.
    Ptx,
    /// Machine code for the device itself: for an NVRTC newer than the
    /// driver, whose PTX (of a newer ISA version) the driver would refuse.
    Cubin,
}

impl CodeImage {
    /// PTX unless NVRTC (`(major, minor)`) is newer than the CUDA version
    /// the driver supports (`driver`, e.g. 12080 for 12.8).
    pub fn for_versions(driver: i32, nvrtc: (i32, i32)) -> CodeImage {
        if nvrtc.0 * 1000 + nvrtc.1 * 10 > driver {
            CodeImage::Cubin
        } else {
            CodeImage::Ptx
        }
    }
}

/// Code compiled once per process.
#[derive(Clone)]
enum Code {
    Ptx(String),
    Cubin(Vec<u8>),
}

/// Code already compiled in this process, by (source, compute capability,
/// image): every device of a run compiles the same kernels, and NVRTC takes
/// hundreds of milliseconds per kernel.
static MODULES: Mutex<Option<HashMap<ModuleKey, Code>>> = Mutex::new(None);

/// A kernel's CUDA C source, the compute capability and the image kind it
/// was compiled for.
type ModuleKey = (String, (i32, i32), CodeImage);

/// Compiles `source` with `options` (which name an `sm_XY` architecture)
/// to a cubin, through NVRTC's own calls: cudarc's compile gives PTX only.
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, DeviceError> {
    use cudarc::nvrtc::{result, sys as nv};
    let fail = |what: &str| DeviceError::Backend(format!("NVRTC: {what}"));
    let src = std::ffi::CString::new(source).map_err(|_| fail("the source holds a NUL byte"))?;
    let prog = result::create_program(&src, None).map_err(|e| fail(&e.to_string()))?;
    // SAFETY: `prog` was just created and is destroyed once, below; the
    // options are plain strings, copied by the call.
    let compiled = unsafe { result::compile_program(prog, options) };
    let out = match compiled {
        Err(e) => {
            // SAFETY: `prog` is live; the log is a NUL-terminated string.
            let log = unsafe { result::get_program_log(prog) }
                .map(|l| {
                    // SAFETY: NVRTC writes the log with its terminating NUL.
                    unsafe { std::ffi::CStr::from_ptr(l.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            Err(fail(&format!("{e}: {log}")))
        }
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: `prog` compiled; `size` is a valid out-pointer.
            let r = unsafe { nv::nvrtcGetCUBINSize(prog, &mut size) };
            r.result().map_err(|e| fail(&e.to_string()))?;
            let mut bin = vec![0u8; size];
            // SAFETY: `bin` holds the `size` bytes NVRTC said it writes.
            let r = unsafe { nv::nvrtcGetCUBIN(prog, bin.as_mut_ptr().cast()) };
            r.result().map(|()| bin).map_err(|e| fail(&e.to_string()))
        }
    };
    // SAFETY: `prog` is live and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

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
    /// Page-locked host memory halos and small moves are staged in.
    pinned: Option<PinnedHostSlice<u8>>,
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

/// A device allocation of bytes.
pub struct CudaBuffer {
    /// Owns the allocation (freed on drop).
    slice: CudaSlice<u8>,
    /// Its device address: the raw copies and launches take it directly.
    ptr: sys::CUdeviceptr,
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
        let key = (source.to_owned(), self.arch, self.image);
        let cached = {
            let cache = MODULES.lock().unwrap_or_else(|e| e.into_inner());
            cache.as_ref().and_then(|m| m.get(&key).cloned())
        };
        let code = match cached {
            Some(code) => code,
            None => {
                let mut options: Vec<String> = Self::DIALECT
                    .compiler_options()
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                // The device's own architecture: PTX for a newer one would not
                // load, for an older one would lose its instructions.
                let (major, minor) = self.arch;
                let code = match self.image {
                    CodeImage::Ptx => {
                        options.push(format!("--gpu-architecture=compute_{major}{minor}"));
                        let opts = CompileOptions {
                            options,
                            ..Default::default()
                        };
                        let ptx = compile_ptx_with_opts(source, opts)
                            .map_err(|e| DeviceError::Backend(format!("NVRTC: {e}")))?
                            .to_src();
                        Code::Ptx(ptx)
                    }
                    CodeImage::Cubin => {
                        options.push(format!("--gpu-architecture=sm_{major}{minor}"));
                        Code::Cubin(compile_cubin(source, &options)?)
                    }
                };
                MODULES
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(key, code.clone());
                code
            }
        };
        let ptx = match code {
            Code::Ptx(src) => Ptx::from_src(src),
            Code::Cubin(bin) => Ptx::from_binary(bin),
        };
        let module = self.ctx.load_module(ptx).map_err(backend)?;
        let kernel = module.load_function(name).map_err(backend)?;
        // Register pressure can lower a kernel's block limit below the
        // device's 1024 threads; asking the function is exact.
        let max = kernel
            .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map_err(backend)?;
        let multiple = self
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)
            .map_err(backend)?;
        self.max_threads
            .insert(kernel.cu_function() as usize, max.max(1) as usize);
        Ok(Compiled {
            kernel,
            hints: GroupHints {
                multiple: multiple.max(1) as usize,
                max: max.max(1) as usize,
            },
        })
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
        let count = CudaContext::device_count().map_err(backend)?.max(0) as usize;
        if device >= count {
            return Err(DeviceError::Unavailable(format!(
                "no CUDA device {device}: this machine has {count}"
            )));
        }
        let ctx = CudaContext::new(device).map_err(backend)?;
        // Ordering comes from the main stream, and side-stream launches
        // join it first (see `launch`); cudarc's per-allocation event
        // tracking would only add events to every launch.
        // SAFETY: buffers are allocated, copied and freed on `stream`; a
        // launch on `side` first waits for everything issued on `stream`,
        // and the controller finishes both before it frees a buffer. A
        // peer's message (`Controller::pack_peer`) is copied on the peer's
        // stream, synchronised before it is handed over, then on this one,
        // whose holder waits before it reuses or drops it.
        unsafe { ctx.disable_event_tracking() };
        // Border strips, halo copies and every other command but the inner
        // regions go on `stream`, inner regions on `side`. At the highest
        // priority a strip's blocks start before the
        // blocks still waiting of an inner kernel launched earlier (another
        // virtual device's on this GPU), so its halos leave sooner.
        ctx.bind_to_thread().map_err(backend)?;
        let (_, highest) = cudarc::driver::result::stream::get_priority_range().map_err(backend)?;
        let stream = ctx.new_stream_with_priority(highest).map_err(backend)?;
        let side = ctx.new_stream().map_err(backend)?;
        let name = ctx.name().map_err(backend)?;
        let arch = ctx.compute_capability().map_err(backend)?;
        Ok(CudaRuntime {
            desc: format!("cuda:device={device} ({name})"),
            ordinal: device,
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
            pinned: None,
            tuner: Tuner::default(),
            max_threads: HashMap::new(),
        })
    }

    /// One 2-D copy per slice of `piece` (a `Run` is one row), between the
    /// device allocation at `dev` and packed host memory at `host` (staged
    /// in the pinned buffer up to [`STAGING_BYTES`]); `to_device` chooses
    /// the direction. Then waits for the stream, as the trait wants the
    /// host memory complete on return.
    ///
    /// # Safety
    ///
    /// `host` must point to `piece.bytes()` bytes, writable when reading from
    /// the device, and `piece` must lie inside the allocation at `dev`.
    unsafe fn copy(
        &mut self,
        dev: sys::CUdeviceptr,
        piece: &CopyPiece,
        host: *mut u8,
        to_device: bool,
    ) -> Result<(), DeviceError> {
        // A 3-D copy would be one command, but cuMemcpy3D's descriptor has
        // fields (array, height in rows) that 2-D copies per slice avoid, at
        // the cost of one command per slice of the (few-slice) halo regions.
        let (origin, size, row_pitch, slice_pitch) = match *piece {
            CopyPiece::Rect(r) => (r.origin, r.size, r.row_pitch, r.slice_pitch),
            CopyPiece::Run { offset, bytes } => ([offset, 0, 0], [bytes, 1, 1], bytes, bytes),
        };
        if size.contains(&0) {
            return Ok(());
        }
        let bytes = piece.bytes();
        let user = host;
        // Pieces up to STAGING_BYTES (halos, small moves) go through the
        // device's pinned buffer: the driver copies pageable memory in
        // pieces it stages itself, synchronously.
        let staged = match self.staging(bytes)? {
            Some(pinned) => {
                if to_device {
                    // SAFETY: `user` holds `bytes` bytes (the caller's
                    // guarantee) and the staging buffer at least as many;
                    // they are distinct allocations.
                    unsafe { std::ptr::copy_nonoverlapping(user, pinned, bytes) };
                }
                Some(pinned)
            }
            None => None,
        };
        let host = staged.unwrap_or(user);
        let host_slice = size[0] * size[1];
        for z in 0..size[2] {
            let dev_base = dev + ((origin[2] + z) * slice_pitch) as u64;
            // SAFETY: `host` holds the piece packed, `size[2]` slices of
            // `host_slice` bytes, so the offset stays inside it.
            let host_base = unsafe { host.add(z * host_slice) };
            let (mem_dev, mem_host) = (
                sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            );
            let desc = sys::CUDA_MEMCPY2D {
                srcXInBytes: if to_device { 0 } else { origin[0] },
                srcY: if to_device { 0 } else { origin[1] },
                srcMemoryType: if to_device { mem_host } else { mem_dev },
                srcHost: host_base as *const _,
                srcDevice: dev_base,
                srcArray: std::ptr::null_mut(),
                srcPitch: if to_device { size[0] } else { row_pitch },
                dstXInBytes: if to_device { origin[0] } else { 0 },
                dstY: if to_device { origin[1] } else { 0 },
                dstMemoryType: if to_device { mem_dev } else { mem_host },
                dstHost: host_base as *mut _,
                dstDevice: dev_base,
                dstArray: std::ptr::null_mut(),
                dstPitch: if to_device { row_pitch } else { size[0] },
                WidthInBytes: size[0],
                Height: size[1],
            };
            // SAFETY: the caller guarantees the device rectangle lies in the
            // allocation and the host one in `host`; the descriptor names only
            // those (the unused array handles are null, as the driver wants
            // for host and device memory types); the stream is synchronised
            // below before `host` can go.
            let r = unsafe { sys::cuMemcpy2DAsync_v2(&desc, self.stream.cu_stream()) };
            r.result().map_err(backend)?;
        }
        self.stream.synchronize().map_err(backend)?;
        if let (Some(pinned), false) = (staged, to_device) {
            // SAFETY: as above, the other way; the copy into the staging
            // buffer completed with the stream.
            unsafe { std::ptr::copy_nonoverlapping(pinned, user, bytes) };
        }
        Ok(())
    }

    /// The pinned staging buffer, grown to hold `bytes`, or `None` for a
    /// piece larger than [`STAGING_BYTES`].
    fn staging(&mut self, bytes: usize) -> Result<Option<*mut u8>, DeviceError> {
        if bytes > STAGING_BYTES {
            return Ok(None);
        }
        if self.pinned.as_ref().is_none_or(|p| p.len() < bytes) {
            let len = bytes.next_power_of_two().max(64 << 10);
            // SAFETY: the contents are unspecified until written, and every
            // use writes before it reads. Not write-combined: the host reads
            // halos back from it.
            let p = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(len, 0) }.map_err(backend)?;
            self.pinned = Some(p);
        }
        match self.pinned.as_mut() {
            Some(p) => p.as_mut_ptr().map(Some).map_err(backend),
            None => Ok(None),
        }
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
        // The driver rejects empty allocations.
        // SAFETY: the contents are unspecified, as the trait allows; `u8`
        // has no invalid bit patterns.
        let slice = unsafe { self.stream.alloc::<u8>(bytes.max(1)) }.map_err(backend)?;
        let ptr = slice.device_ptr(&self.stream).0;
        Ok(CudaBuffer { slice, ptr })
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
        unsafe { self.copy(buf.ptr, piece, host.as_ptr() as *mut u8, true) }
    }

    fn read(
        &mut self,
        buf: &CudaBuffer,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError> {
        check_piece(buf, piece, host.len())?;
        // SAFETY: as in `write`, and `host` is writable.
        unsafe { self.copy(buf.ptr, piece, host.as_mut_ptr(), false) }
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
        check_piece(from, from_piece, from_piece.bytes())?;
        check_piece(to, to_piece, to_piece.bytes())?;
        let stream = self.stream.cu_stream();
        match (*from_piece, *to_piece) {
            (
                CopyPiece::Run { offset: a, bytes },
                CopyPiece::Run {
                    offset: b,
                    bytes: n,
                },
            ) if bytes == n => {
                // SAFETY: `check_piece` put both runs inside their
                // allocations; the buffers outlive the copy (the controller
                // finishes the stream before freeing either).
                let r = unsafe {
                    sys::cuMemcpyDtoDAsync_v2(to.ptr + b as u64, from.ptr + a as u64, bytes, stream)
                };
                r.result().map_err(backend)?;
                Ok(true)
            }
            (CopyPiece::Rect(a), CopyPiece::Rect(b)) if a.size == b.size => {
                let mem = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
                for z in 0..a.size[2] {
                    let desc = sys::CUDA_MEMCPY2D {
                        srcXInBytes: a.origin[0],
                        srcY: a.origin[1],
                        srcMemoryType: mem,
                        srcHost: std::ptr::null(),
                        srcDevice: from.ptr + ((a.origin[2] + z) * a.slice_pitch) as u64,
                        srcArray: std::ptr::null_mut(),
                        srcPitch: a.row_pitch,
                        dstXInBytes: b.origin[0],
                        dstY: b.origin[1],
                        dstMemoryType: mem,
                        dstHost: std::ptr::null_mut(),
                        dstDevice: to.ptr + ((b.origin[2] + z) * b.slice_pitch) as u64,
                        dstArray: std::ptr::null_mut(),
                        dstPitch: b.row_pitch,
                        WidthInBytes: a.size[0],
                        Height: a.size[1],
                    };
                    // SAFETY: `check_piece` put both rectangles inside their
                    // allocations; the descriptor names only those (null
                    // host and array pointers, as the driver wants for
                    // device memory); the buffers outlive the copy.
                    let r = unsafe { sys::cuMemcpy2DAsync_v2(&desc, stream) };
                    r.result().map_err(backend)?;
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn compile(&mut self, source: &str) -> Result<Compiled<CudaFunction>, DeviceError> {
        self.function(source, KERNEL_NAME)
    }

    fn fused_limits(&self) -> Option<FusedLimits> {
        use sys::CUdevice_attribute as A;
        // Static shared arrays: the 48 KiB every block may declare without
        // opting in to more.
        let local = self
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
            .ok()?;
        let threads = self
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .unwrap_or(0);
        Some(FusedLimits {
            local_bytes: usize::try_from(local).ok()?.min(48 << 10),
            max_group: usize::try_from(threads).unwrap_or(0),
            gpu: true,
            max_overhead: MAX_OVERHEAD,
        })
    }

    fn compile_fused(
        &mut self,
        source: &str,
        _longs: usize,
    ) -> Result<Compiled<CudaFunction>, DeviceError> {
        self.function(source, FUSED_KERNEL_NAME)
    }

    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &CudaFunction,
        src: &CudaBuffer,
        dst: &CudaBuffer,
        longs: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<(CudaEvent, CudaEvent), DeviceError> {
        let stream = match lane {
            Lane::Main => self.stream.clone(),
            Lane::Side => {
                self.side.join(&self.stream).map_err(backend)?;
                self.side.clone()
            }
        };
        let dim = |n: usize, most: usize| {
            u32::try_from(n)
                .ok()
                .filter(|&v| v as usize <= most)
                .ok_or_else(|| {
                    DeviceError::Backend(format!(
                        "a fused launch of {groups:?} blocks is too large for CUDA"
                    ))
                })
        };
        let cfg = LaunchConfig {
            grid_dim: (
                dim(groups[0], i32::MAX as usize)?,
                dim(groups[1], 65535)?,
                dim(groups[2], 65535)?,
            ),
            block_dim: (dim(group, 1024)?, 1, 1),
            // The tiles are static `__shared__` arrays.
            shared_mem_bytes: 0,
        };
        let (src, dst) = (src.ptr, dst.ptr);
        let mut b = stream.launch_builder(kernel);
        b.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
        b.arg(&src).arg(&dst);
        for v in longs {
            b.arg(v);
        }
        // SAFETY: the caller guarantees the kernel's accesses for these
        // arguments lie inside `src` and `dst` and that the block is the
        // one its source was generated for; the arguments are the fused
        // kernel's (two device addresses, then `long long`s); the buffers
        // outlive the launch because the controller finishes both streams
        // before freeing any, and `Drop` synchronises.
        let events = unsafe { b.launch(cfg) }.map_err(backend)?;
        events.ok_or_else(|| DeviceError::Backend("CUDA launch recorded no events".into()))
    }

    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &CudaFunction,
        src: &CudaBuffer,
        dst: &CudaBuffer,
        longs: &[i64],
        aux: &[&CudaBuffer],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<(CudaEvent, CudaEvent), DeviceError> {
        if longs.len() != LONG_ARGS {
            return Err(DeviceError::Backend(format!(
                "{} integer kernel arguments given, the kernel ABI has {LONG_ARGS}",
                longs.len()
            )));
        }
        let stream = match lane {
            Lane::Main => self.stream.clone(),
            Lane::Side => {
                // After everything issued on the main stream so far.
                self.side.join(&self.stream).map_err(backend)?;
                self.side.clone()
            }
        };
        if grid.contains(&0) {
            // Nothing to run; still two recorded events so timing stays uniform.
            let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
            let a = stream.record_event(flags).map_err(backend)?;
            let b = stream.record_event(flags).map_err(backend)?;
            return Ok((a, b));
        }
        let aux: Vec<sys::CUdeviceptr> = aux.iter().map(|a| a.ptr).collect();
        let buffers = (src.ptr, dst.ptr, &aux[..]);
        let shape = match (self.forced, group) {
            (Some(forced), _) => (forced, 1),
            _ if grid.iter().product::<usize>() < TUNE_CELLS || grid[1] < 2 => match group {
                Some([x, y, z]) => (
                    RunShape {
                        block: [x, y],
                        rows: 1,
                    },
                    z,
                ),
                None => (RunShape::ONE_CELL, 1),
            },
            _ => {
                let key = kernel.cu_function() as usize;
                let max = self.max_threads.get(&key).copied().unwrap_or(256);
                let seconds = |(a, b): &Events| {
                    a.elapsed_ms(b)
                        .map(|ms| f64::from(ms) * 1e-3)
                        .map_err(backend)
                };
                let (shape, trial) = self.tuner.next(key, grid, max, seconds)?;
                if let Some((grid, timed)) = self.tuner.take_decided() {
                    if self.log_launch {
                        log_choice(grid, &timed, shape);
                    }
                }
                if trial {
                    // Events of its own: the launch's pair goes to the
                    // controller's kernel time.
                    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
                    let start = stream.record_event(flags).map_err(backend)?;
                    // SAFETY: the caller's guarantee covers every shape,
                    // since each computes exactly the cells of `grid`.
                    let timing = unsafe {
                        launch_shaped(&stream, kernel, buffers, longs, grid, (shape, 1))?
                    };
                    let end = stream.record_event(flags).map_err(backend)?;
                    self.tuner.record(key, grid, shape, (start, end));
                    return Ok(timing);
                }
                (shape, 1)
            }
        };
        // SAFETY: the caller's guarantee covers every shape, since each
        // computes exactly the cells of `grid`.
        unsafe { launch_shaped(&stream, kernel, buffers, longs, grid, shape) }
    }

    fn finish(&mut self) -> Result<(), DeviceError> {
        self.side.synchronize().map_err(backend)?;
        self.stream.synchronize().map_err(backend)
    }

    fn elapsed_seconds(&mut self, timings: Vec<(CudaEvent, CudaEvent)>) -> f64 {
        timings
            .iter()
            .map(|(start, end)| start.elapsed_ms(end).map_or(0.0, f64::from))
            .sum::<f64>()
            * 1e-3
    }
}

/// Logs what the candidates of a launch ran at and which was chosen.
fn log_choice(grid: [usize; 3], timed: &[(RunShape, f64)], chosen: RunShape) {
    let cells = grid.iter().product::<usize>() as f64;
    let all: Vec<String> = timed
        .iter()
        .map(|(s, t)| {
            format!(
                "{}x{}x{}: {:.1} G/s",
                s.block[0],
                s.block[1],
                s.rows,
                cells / t / 1e9
            )
        })
        .collect();
    log::info!(
        "cuda launch {grid:?}: {} -> {}x{}x{}",
        all.join(", "),
        chosen.block[0],
        chosen.block[1],
        chosen.rows
    );
}

/// Enqueues one launch of `kernel` over `grid` cells in `shape` (the run
/// shape and the block's depth along z), timed by a pair of events.
///
/// # Safety
///
/// As [`DeviceRuntime::launch`].
unsafe fn launch_shaped(
    stream: &CudaStream,
    kernel: &CudaFunction,
    (src, dst, aux): (sys::CUdeviceptr, sys::CUdeviceptr, &[sys::CUdeviceptr]),
    longs: &[i64],
    grid: [usize; 3],
    (shape, z_block): (RunShape, usize),
) -> Result<(CudaEvent, CudaEvent), DeviceError> {
    let blocks = shape.blocks(grid, z_block);
    let dim = |n: usize| {
        u32::try_from(n).map_err(|_| {
            DeviceError::Backend(format!("a launch of {grid:?} is too large for CUDA"))
        })
    };
    let cfg = LaunchConfig {
        grid_dim: (dim(blocks[0])?, dim(blocks[1])?, dim(blocks[2])?),
        block_dim: (
            dim(shape.block[0])?,
            dim(shape.block[1])?,
            dim(z_block.max(1))?,
        ),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(kernel);
    b.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut longs = longs.iter();
    for (_, kind) in ARGS {
        match kind {
            ArgKind::Buffer(BufferArg::Src) => b.arg(&src),
            ArgKind::Buffer(BufferArg::Dst) => b.arg(&dst),
            ArgKind::Long(_) => match longs.next() {
                Some(v) => b.arg(v),
                None => {
                    return Err(DeviceError::Backend(
                        "fewer integer kernel arguments than the ABI has".into(),
                    ))
                }
            },
        };
    }
    for a in aux {
        b.arg(a);
    }
    // SAFETY: the caller guarantees the kernel's accesses for these
    // arguments lie inside `src`, `dst` and `aux`; the arguments follow the
    // ABI's order and types (two device addresses, `long long`s, then the
    // auxiliary fields' device addresses); the
    // buffers outlive the launch because the controller finishes both
    // streams before freeing any, and `Drop` synchronises.
    let events = unsafe { b.launch(cfg) }.map_err(backend)?;
    events.ok_or_else(|| DeviceError::Backend("CUDA launch recorded no events".into()))
}

/// Refuses copies outside the allocation or host buffers of the wrong size:
/// the raw copies would otherwise touch memory they do not own.
fn check_piece(buf: &CudaBuffer, piece: &CopyPiece, host: usize) -> Result<(), DeviceError> {
    let fits = piece.bytes() == host
        && piece
            .spans()
            .all(|(off, _, len)| off.checked_add(len).is_some_and(|e| e <= buf.slice.len()));
    if fits {
        Ok(())
    } else {
        Err(DeviceError::Backend(format!(
            "copy {piece:?} with {host} host bytes does not fit a buffer of {} bytes",
            buf.slice.len()
        )))
    }
}

impl Drop for CudaRuntime {
    /// Launches still queued must finish before their buffers are freed.
    fn drop(&mut self) {
        let _ = self.side.synchronize();
        let _ = self.stream.synchronize();
    }
}

/// Opens a CUDA device for the registry ([`crate::registry`]).
pub(crate) fn open<T: Cell>(
    d: &GpuDevice,
    o: &GpuOptions,
) -> Result<Box<dyn crate::Controller<T>>, DeviceError> {
    let rt = CudaRuntime::new(d.device)?
        .with_launch(o.launch)
        .with_launch_log(o.log_launch);
    let c = GpuController::with_runtime(rt).with_fused_log(o.log_fused);
    Ok(Box::new(match o.layout {
        Some(l) => c.with_cell_layout(l),
        None => c,
    }))
}

/// Every CUDA device, for `epsilod list`.
pub(crate) fn list() -> Listing {
    let devs = match devices() {
        Ok(d) => d,
        Err(e) => return Listing::Note(e.to_string()),
    };
    if devs.is_empty() {
        return Listing::Note("the driver reports no CUDA device".into());
    }
    let about = |d: &CudaDeviceInfo| {
        let nvrtc = match d.nvrtc_version {
            Some((major, minor)) => format!("NVRTC {major}.{minor}"),
            None => "no NVRTC (cannot compile kernels)".into(),
        };
        format!(
            "{}: {:.1} GiB, compute {}.{}, driver CUDA {}.{}, {nvrtc}",
            d.name,
            d.memory as f64 / (1u64 << 30) as f64,
            d.compute_capability.0,
            d.compute_capability.1,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10,
        )
    };
    Listing::Devices(
        devs.iter()
            .map(|d| (format!("cuda:device={}", d.ordinal), about(d)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::CodeImage;

    #[test]
    fn ptx_unless_nvrtc_is_newer_than_the_driver() {
        assert_eq!(CodeImage::for_versions(13000, (13, 0)), CodeImage::Ptx);
        assert_eq!(CodeImage::for_versions(12080, (12, 4)), CodeImage::Ptx);
        assert_eq!(CodeImage::for_versions(12080, (12, 9)), CodeImage::Cubin);
        assert_eq!(CodeImage::for_versions(12080, (13, 0)), CodeImage::Cubin);
    }
}

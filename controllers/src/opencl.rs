//! The OpenCL backend (feature `opencl`, `ocl` crate): tiles resident on
//! the device, transfers only for what the host asks (halos, moved rows,
//! results), kernels from generated OpenCL C, timed by profiling events.
//! PoCL runs it on a CPU.

use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::{Shape, Sig};
use kernels::{Cell, Kernel};
use ocl::enums::ProfilingInfo;
use ocl::{flags, Buffer, Context, Device, Event, Platform, Program, Queue};
use std::marker::PhantomData;
use std::sync::Arc;

/// Platform and device discovery is not safe to run from several threads at
/// once (measured: PoCL then reported no devices to one of two threads), and
/// every device of a run opens from its own thread.
static DISCOVERY: std::sync::Mutex<()> = std::sync::Mutex::new(());

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

struct ClBuf {
    alloc: Shape,
    extent: Shape,
    buf: Buffer<u8>,
}

struct Loaded<T> {
    kernel: ocl::Kernel,
    source: Arc<dyn Kernel<T>>,
    /// This device's preferred work-group multiple and largest work group,
    /// for this kernel.
    wg_multiple: usize,
    wg_max: usize,
}

/// Work-items per group along the contiguous dimension: the largest multiple
/// of the device's preferred multiple, up to 256 and the kernel's maximum,
/// that divides `n` (OpenCL 1.2 needs groups to tile the range); `None` lets
/// the runtime choose when nothing fits.
fn work_group(n: usize, multiple: usize, max: usize) -> Option<usize> {
    if multiple == 0 {
        return None;
    }
    let cap = max.min(256);
    (1..=cap / multiple)
        .rev()
        .map(|k| k * multiple)
        .find(|&g| n.is_multiple_of(g))
}

/// Groups for launches only a few cells wide (a column border strip): left
/// to itself PoCL makes one work-group per row there, and waking a thread per
/// group costs ~70 us a row (measured: a 2048-row column strip took longer
/// than the 2048x1022 inner region). Whole rows of the strip, as many as fit
/// in 256 work-items, when they tile the range.
fn thin_groups(width: usize, rows: usize, max: usize) -> Option<[usize; 3]> {
    if width == 0 || width >= 64 {
        return None;
    }
    let most = (max.min(256) / width).max(1);
    let g = (1..=most.min(rows))
        .rev()
        .find(|&g| rows.is_multiple_of(g))?;
    (g > 1).then_some([width, g, 1])
}

pub struct OpenClController<T> {
    desc: String,
    device: Device,
    /// GPUs get explicit work-group sizes; CPU implementations (PoCL) choose
    /// better themselves (measured on 2d4 4098^2: 0.95x the CPU backend with
    /// PoCL's choice, 1.25-1.8x with 256-wide groups).
    explicit_groups: bool,
    context: Context,
    queue: Queue,
    bufs: Vec<Option<ClBuf>>,
    kernels: Vec<Loaded<T>>,
    events: Vec<Event>,
    _cell: PhantomData<fn() -> T>,
}

/// Row-major strides of an allocation, in elements.
fn strides(alloc: &Shape) -> Vec<usize> {
    let dims = alloc.extents();
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// Calls `f(element offset in the allocation, cells)` for each contiguous
/// run of `region` (a row along the last dimension, or single cells where
/// that dimension is strided), in row-major order.
fn runs(
    alloc: &Shape,
    region: &Shape,
    mut f: impl FnMut(usize, usize) -> Result<(), DeviceError>,
) -> Result<(), DeviceError> {
    if region.is_empty() {
        return Ok(());
    }
    let st = strides(alloc);
    let last = region.ndims() - 1;
    let row = region.sig(last);
    let (starts, len) = if row.stride() == 1 {
        (
            region.with_sig(last, Sig::range(row.begin(), row.begin() + 1)),
            row.card(),
        )
    } else {
        (region.clone(), 1)
    };
    for idx in starts.iter() {
        let off: usize = idx
            .iter()
            .zip(alloc.sigs())
            .zip(&st)
            .map(|((&i, a), &s)| (i - a.begin()) as usize * s)
            .sum();
        f(off, len)?;
    }
    Ok(())
}

/// One rectangular transfer: up to three dimensions of a region in one
/// command (clEnqueue*BufferRect), in bytes along the last dimension.
struct Rect {
    /// Origin in the allocation: byte in the row, row, slice.
    origin: [usize; 3],
    /// Bytes along the row, rows, slices.
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
    /// Cells this piece holds on the host (packed row-major).
    cells: usize,
}

/// Calls `f` for each rectangular piece of `region`, in row-major order:
/// one piece for regions of up to three dimensions, one per index of the
/// outer dimensions beyond. `None` where a dimension is strided (then
/// `runs` moves it).
fn rects(
    alloc: &Shape,
    region: &Shape,
    size: usize,
    mut f: impl FnMut(Rect) -> Result<(), DeviceError>,
) -> Option<Result<(), DeviceError>> {
    if region.is_empty() || region.sigs().iter().any(|s| s.stride() != 1) {
        return None;
    }
    let n = region.ndims();
    let ext = alloc.extents();
    let rel = |d: usize, i: i64| (i - alloc.sig(d).begin()) as usize;
    // The last three dimensions (padded with size-1 ones) form the box.
    let dim = |k: usize| (k < n).then(|| n - 1 - k);
    let count = |k: usize| dim(k).map_or(1, |d| region.sig(d).card());
    let row_pitch = dim(0).map_or(size, |d| ext[d] * size);
    let slice_pitch = dim(1).map_or(row_pitch, |d| ext[d] * row_pitch);
    let slice_len = dim(2).map_or(1, |d| ext[d]);
    let mut outer = region.clone();
    for d in n.saturating_sub(3)..n {
        let b = region.sig(d).begin();
        outer = outer.with_sig(d, Sig::range(b, b + 1));
    }
    let cells = count(0) * count(1) * count(2);
    for idx in outer.iter() {
        // Outer dimensions fold into the slice index: the allocation is
        // row-major, so one step of dimension d is (its stride / slice) slices.
        let mut z = dim(2).map_or(0, |d| rel(d, idx[d]));
        let mut scale = slice_len;
        for d in (0..n.saturating_sub(3)).rev() {
            z += rel(d, idx[d]) * scale;
            scale *= ext[d];
        }
        let r = Rect {
            origin: [
                dim(0).map_or(0, |d| rel(d, idx[d]) * size),
                dim(1).map_or(0, |d| rel(d, idx[d])),
                z,
            ],
            region: [count(0) * size, count(1), count(2)],
            row_pitch,
            slice_pitch,
            cells,
        };
        if let Err(e) = f(r) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

/// One transfer command's worth of a region.
enum Piece {
    Rect(Rect),
    /// A contiguous run at this element offset in the allocation.
    Run {
        offset: usize,
        cells: usize,
    },
}

impl Piece {
    fn cells(&self) -> usize {
        match self {
            Piece::Rect(r) => r.cells,
            Piece::Run { cells, .. } => *cells,
        }
    }
}

/// The transfer commands for `region`, in row-major order: rectangles where
/// it is contiguous in every dimension (a column halo is one command, not one
/// per row), contiguous runs where it is strided.
fn pieces(
    alloc: &Shape,
    region: &Shape,
    size: usize,
    mut f: impl FnMut(Piece) -> Result<(), DeviceError>,
) -> Result<(), DeviceError> {
    match rects(alloc, region, size, |r| f(Piece::Rect(r))) {
        Some(done) => done,
        None => runs(alloc, region, |offset, cells| {
            f(Piece::Run { offset, cells })
        }),
    }
}

impl<T: Cell> OpenClController<T> {
    /// Device `device` of platform `platform` (as `epsilod list` numbers them).
    pub fn new(platform: usize, device: usize) -> Result<OpenClController<T>, DeviceError> {
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
        let context = Context::builder()
            .platform(plat)
            .devices(dev)
            .build()
            .map_err(backend)?;
        let queue =
            Queue::new(&context, dev, Some(flags::QUEUE_PROFILING_ENABLE)).map_err(backend)?;
        let name = dev.name().unwrap_or_else(|_| "?".into());
        let explicit_groups = matches!(
            dev.info(ocl::enums::DeviceInfo::Type),
            Ok(ocl::enums::DeviceInfoResult::Type(t)) if t.contains(ocl::flags::DEVICE_TYPE_GPU)
        );
        Ok(OpenClController {
            desc: format!("opencl:platform={platform},device={device} ({name})"),
            device: dev,
            explicit_groups,
            context,
            queue,
            bufs: Vec::new(),
            kernels: Vec::new(),
            events: Vec::new(),
            _cell: PhantomData,
        })
    }

    fn get(&self, b: BufferId) -> Result<&ClBuf, DeviceError> {
        self.bufs
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or(DeviceError::UnknownBuffer(b.0))
    }

    fn new_buffer(&self, cells: usize) -> Result<Buffer<u8>, DeviceError> {
        // OpenCL has no empty buffers.
        let bytes = (cells * std::mem::size_of::<T>()).max(1);
        Buffer::<u8>::builder()
            .queue(self.queue.clone())
            .len(bytes)
            .build()
            .map_err(backend)
    }

    fn check_region(b: &ClBuf, region: &Shape) -> Result<(), DeviceError> {
        if region.ndims() != b.extent.ndims() || !b.extent.contains_shape(region) {
            return Err(DeviceError::Index(hitmap::HitmapError::OutOfTile {
                region: region.to_string(),
                tile: b.extent.to_string(),
            }));
        }
        Ok(())
    }

    fn write_raw(&self, b: &ClBuf, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        let size = std::mem::size_of::<T>();
        let mut at = 0;
        pieces(&b.alloc, region, size, |p| {
            let n = p.cells();
            let cmd = b
                .buf
                .write(bytemuck::cast_slice::<T, u8>(&data[at..at + n]));
            let cmd = match p {
                Piece::Rect(r) => cmd.rect(
                    r.origin,
                    [0; 3],
                    r.region,
                    r.row_pitch,
                    r.slice_pitch,
                    r.region[0],
                    r.region[0] * r.region[1],
                ),
                Piece::Run { offset, .. } => cmd.offset(offset * size),
            };
            cmd.enq().map_err(backend)?;
            at += n;
            Ok(())
        })
    }

    fn read_raw(&self, b: &ClBuf, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        let size = std::mem::size_of::<T>();
        let mut at = out.len();
        // Straight into `out`: no staging copy.
        out.resize(at + region.card(), T::zeroed());
        pieces(&b.alloc, region, size, |p| {
            let n = p.cells();
            let cmd = b
                .buf
                .read(bytemuck::cast_slice_mut::<T, u8>(&mut out[at..at + n]));
            let cmd = match p {
                Piece::Rect(r) => cmd.rect(
                    r.origin,
                    [0; 3],
                    r.region,
                    r.row_pitch,
                    r.slice_pitch,
                    r.region[0],
                    r.region[0] * r.region[1],
                ),
                Piece::Run { offset, .. } => cmd.offset(offset * size),
            };
            cmd.enq().map_err(backend)?;
            at += n;
            Ok(())
        })
    }
}

impl<T: Cell> Controller<T> for OpenClController<T> {
    fn describe(&self) -> String {
        self.desc.clone()
    }

    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        if !extent.is_contiguous() || !capacity.is_contiguous() {
            return Err(DeviceError::Index(hitmap::HitmapError::StridedTile));
        }
        if extent.ndims() != capacity.ndims() || !capacity.contains_shape(extent) {
            return Err(DeviceError::Index(hitmap::HitmapError::OutOfTile {
                region: extent.to_string(),
                tile: capacity.to_string(),
            }));
        }
        let buf = self.new_buffer(capacity.card())?;
        self.bufs.push(Some(ClBuf {
            alloc: capacity.clone(),
            extent: extent.clone(),
            buf,
        }));
        Ok(BufferId(self.bufs.len() - 1))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.get(buf)?;
        self.bufs[buf.0] = None;
        Ok(())
    }

    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        Ok(self.get(buf)?.extent.clone())
    }

    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        let old = self.get(buf)?;
        if !extent.is_contiguous() || extent.ndims() != old.alloc.ndims() {
            return Err(DeviceError::Index(hitmap::HitmapError::StridedTile));
        }
        if old.alloc.contains_shape(extent) && !extent.is_empty() {
            self.bufs[buf.0].as_mut().expect("checked").extent = extent.clone();
            return Ok(false);
        }
        let alloc = if extent.is_empty() {
            extent.clone()
        } else {
            extent.expand(spare, spare)
        };
        let keep = old.extent.intersect(extent);
        let mut kept = Vec::new();
        self.read_raw(old, &keep, &mut kept)?;
        let next = ClBuf {
            buf: self.new_buffer(alloc.card())?,
            alloc,
            extent: extent.clone(),
        };
        self.write_raw(&next, &keep, &kept)?;
        self.bufs[buf.0] = Some(next);
        Ok(true)
    }

    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        let b = self.get(buf)?;
        Self::check_region(b, region)?;
        if data.len() != region.card() {
            return Err(DeviceError::Index(hitmap::HitmapError::LengthMismatch {
                expected: region.card(),
                got: data.len(),
            }));
        }
        self.write_raw(b, region, data)
    }

    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        let b = self.get(buf)?;
        Self::check_region(b, region)?;
        self.read_raw(b, region, out)
    }

    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        let data: Vec<T> = region.iter().map(|i| f(&i)).collect();
        self.write(buf, region, &data)
    }

    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        use kernels::device::abi::{ArgKind, ARGS, KERNEL_NAME};
        use kernels::Dialect;
        let device_kernel = kernel.device_kernel().ok_or_else(|| {
            DeviceError::Backend(format!(
                "kernel '{}' has no OpenCL source: custom Rust kernels run on cpu devices",
                kernel.name()
            ))
        })?;
        let src = device_kernel.source(Dialect::OpenCl);
        // Bit-identical to the CPU needs IEEE division; ask for it, and fall
        // back only for devices that reject the option.
        let build = |opts: &str| {
            Program::builder()
                .src(src.clone())
                .devices(self.device)
                .cmplr_opt(opts)
                .build(&self.context)
        };
        let program = build(&Dialect::OpenCl.compiler_options().join(" "))
            .or_else(|_| build(""))
            .map_err(|e| {
                DeviceError::Backend(format!(
                    "kernel '{}' failed to build for OpenCL: {e}",
                    kernel.name()
                ))
            })?;
        let mut builder = ocl::Kernel::builder();
        builder
            .program(&program)
            .name(KERNEL_NAME)
            .queue(self.queue.clone());
        for (_, kind) in ARGS {
            match kind {
                ArgKind::Buffer(_) => builder.arg(None::<&Buffer<u8>>),
                ArgKind::Long(_) => builder.arg(0i64),
            };
        }
        let k = builder.build().map_err(backend)?;
        use ocl::enums::{KernelWorkGroupInfo as Wg, KernelWorkGroupInfoResult as WgR};
        let wg_multiple = match k.wg_info(self.device, Wg::PreferredWorkGroupSizeMultiple) {
            Ok(WgR::PreferredWorkGroupSizeMultiple(m)) => m,
            _ => 0,
        };
        let wg_max = match k.wg_info(self.device, Wg::WorkGroupSize) {
            Ok(WgR::WorkGroupSize(m)) => m,
            _ => 0,
        };
        self.kernels.push(Loaded {
            kernel: k,
            source: kernel,
            wg_multiple,
            wg_max,
        });
        Ok(KernelId(self.kernels.len() - 1))
    }

    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        let loaded = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        let (s, d) = (self.get(src)?, self.get(dst)?);
        if src == dst {
            return Err(DeviceError::BufferMismatch("the same buffer twice".into()));
        }
        let local = crate::launch::validate(
            loaded.source.as_ref(),
            (&s.alloc, &s.extent),
            (&d.alloc, &d.extent),
            region,
        )?;
        if region.is_empty() {
            return Ok(());
        }
        use kernels::device::abi::{ArgKind, BufferArg, LaunchArgs, ARGS};
        let args = LaunchArgs::new(&strides(&s.alloc), &local)?;
        let k = &loaded.kernel;
        for (i, (_, kind)) in ARGS.iter().enumerate() {
            match kind {
                ArgKind::Buffer(BufferArg::Src) => k.set_arg(i, &s.buf),
                ArgKind::Buffer(BufferArg::Dst) => k.set_arg(i, &d.buf),
                ArgKind::Long(l) => k.set_arg(i, args.value(*l)),
            }
            .map_err(backend)?;
        }
        let mut ev = Event::empty();
        let gws = args.grid();
        let cmd = k.cmd().global_work_size(gws).enew(&mut ev);
        let group = self
            .explicit_groups
            .then(|| work_group(gws[0], loaded.wg_multiple, loaded.wg_max))
            .flatten();
        let cmd = match (group, thin_groups(gws[0], gws[1], loaded.wg_max)) {
            (Some(g), _) => cmd.local_work_size([g, 1, 1]),
            (None, Some(l)) => cmd.local_work_size(l),
            (None, None) => cmd,
        };
        // SAFETY: the kernel reads `src` and writes `dst` only at the cells
        // of `region` and their stencil reach (generated kernels by
        // construction, hand-written ones by `DeviceKernel::new`'s contract,
        // threads past the region return early), which `validate` checked
        // lie inside both buffers; the buffers are retained by the
        // kernel's arguments (and by OpenCL) until the command completes.
        unsafe {
            cmd.enq().map_err(backend)?;
        }
        self.events.push(ev);
        Ok(())
    }

    fn wait(&mut self) -> Result<(), DeviceError> {
        self.queue.finish().map_err(backend)
    }

    fn take_kernel_seconds(&mut self) -> f64 {
        let _ = self.queue.finish();
        let mut ns = 0u64;
        for ev in self.events.drain(..) {
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

impl<T> Drop for OpenClController<T> {
    /// Commands still queued must finish before their buffers go: PoCL, for
    /// one, compiles a kernel lazily in its own threads when the command
    /// runs, and a process that exits meanwhile aborts (seen in CI after a
    /// test dropped a controller right after a launch).
    fn drop(&mut self) {
        let _ = self.queue.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::{thin_groups, work_group};

    #[test]
    fn thin_launches_group_whole_rows() {
        assert_eq!(thin_groups(1, 2048, 4096), Some([1, 256, 1]));
        assert_eq!(thin_groups(2, 2047, 4096), Some([2, 89, 1]));
        assert_eq!(thin_groups(3, 7, 4096), Some([3, 7, 1]));
        assert_eq!(thin_groups(1, 1, 4096), None);
        assert_eq!(thin_groups(64, 2048, 4096), None);
        assert_eq!(thin_groups(0, 2048, 4096), None);
        assert_eq!(thin_groups(1, 2048, 64), Some([1, 64, 1]));
    }

    #[test]
    fn work_groups_tile_the_range() {
        assert_eq!(work_group(1024, 32, 1024), Some(256));
        assert_eq!(work_group(96, 32, 1024), Some(96));
        assert_eq!(work_group(100, 8, 1024), None);
        assert_eq!(work_group(100, 4, 1024), Some(100));
        assert_eq!(work_group(64, 32, 32), Some(32));
        assert_eq!(work_group(64, 0, 32), None);
    }
}

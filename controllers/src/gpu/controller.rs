//! [`Controller`] once for every GPU API: shapes, validation, transfer
//! plans and launch geometry here, the API behind a [`DeviceRuntime`].

use super::copy_plan::strides;
use super::fused::{plan as plan_fused, FusedLimits};
use super::geometry::{plan_launch, GroupHints};
use super::planes::Planes;
use super::runtime::{Compiled, DeviceRuntime, Lane};
use super::slots::{check_alloc, ResizePlan, Slot, Slots};
use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::{HitmapError, Shape};
use kernels::device::{FusedArgs, FusedShape, MAX_FUSED_STEPS};
use kernels::{Cell, CellLayout, DeviceKernel, Kernel};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

struct Loaded<K, T> {
    kernel: K,
    /// The Rust kernel, for its footprint in launch checks.
    source: Arc<dyn Kernel<T>>,
    hints: GroupHints,
    /// Auxiliary field buffers bound to its launches.
    aux: Vec<BufferId>,
    /// Steps one fused launch takes where `launch_steps` asks for more (1:
    /// none fuse), by the count asked for.
    fuses: HashMap<usize, usize>,
    /// Its fused kernels, by step count.
    fused: HashMap<usize, Fused<K>>,
}

/// A compiled fused kernel and the shape its source was generated for.
struct Fused<K> {
    kernel: K,
    shape: FusedShape,
}

/// A device of a GPU API: tiles resident on the device, transfers only for
/// what the host asks (halos, moved rows, results), kernels from generated
/// device code, timed by the device.
pub struct GpuController<R: DeviceRuntime, T> {
    // First, so that dropping the controller lets the runtime finish its
    // queued commands before the buffers they use are released.
    rt: R,
    slots: Slots<R::Buffer>,
    kernels: Vec<Loaded<R::Kernel, T>>,
    timings: Vec<R::Timing>,
    /// Intermediate levels of `launch_steps` where a kernel fuses fewer
    /// steps than asked (allocated on first use, like the launches' source).
    scratch: Vec<Option<BufferId>>,
    /// A cap on fused kernels' work-group memory and their overhead bound
    /// ([`GpuController::with_fused_limits`]).
    fused_cap: Option<(usize, f64)>,
    /// Compiled init kernels ([`Controller::fill_device`]), by source.
    inits: HashMap<String, Compiled<R::Kernel>>,
    /// How every buffer holds its cells: fixed by the first kernel loaded
    /// or buffer allocated, whichever comes first (see
    /// [`GpuController::choose_planes`]).
    planes: Option<Planes>,
    /// The layout asked for ([`GpuController::with_cell_layout`]).
    layout: Option<CellLayout>,
    /// Whether to log each fused kernel chosen ([`GpuController::with_fused_log`]).
    log_fused: bool,
    _cell: PhantomData<fn() -> T>,
}

/// `cells` or `planes`: the variable with which the command line lays out
/// array cells on every GPU device not told otherwise, to compare the two
/// in one binary (named in the error that asks for it).
pub const CELL_LAYOUT_VAR: &str = "EPSILOD_CELL_LAYOUT";

impl<R: DeviceRuntime, T: Cell> GpuController<R, T> {
    /// A controller over an opened runtime.
    pub fn with_runtime(rt: R) -> GpuController<R, T> {
        GpuController {
            rt,
            slots: Slots::default(),
            kernels: Vec::new(),
            timings: Vec::new(),
            scratch: Vec::new(),
            fused_cap: None,
            inits: HashMap::new(),
            planes: None,
            layout: None,
            log_fused: false,
            _cell: PhantomData,
        }
    }

    /// Array cells in `layout` for kernels that run in it, whatever the
    /// device would choose.
    pub fn with_cell_layout(mut self, layout: CellLayout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Logs (`info`) each fused kernel chosen, with its tile, where `on`.
    pub fn with_fused_log(mut self, on: bool) -> Self {
        self.log_fused = on;
        self
    }

    /// How buffers hold cells, now that it is fixed.
    fn planes(&mut self) -> Planes {
        *self
            .planes
            .get_or_insert(Planes::cells(std::mem::size_of::<T>()))
    }

    /// The layout for a controller whose first kernel is `device`, where
    /// it can read cells in planes (an array cell, a body written with the
    /// accessors): on a GPU, planes, so that a warp's loads of one
    /// component of neighbouring cells coalesce (gas-sim's 19-float cells
    /// read as whole structs ran at a third of the copy bandwidth on an
    /// H100); on a CPU implementation, whole cells (planes ran gas-sim
    /// 130x130x34 2.1x slower on PoCL). What was asked wins; whole
    /// cells for every other kernel.
    fn choose_planes(&self, device: &DeviceKernel) -> Planes {
        match device.cell().components() {
            Some(n)
                if self.asked_layout() == CellLayout::Planes
                    && device.runs_in(CellLayout::Planes) =>
            {
                Planes::new(n, device.cell().scalar_bytes())
            }
            _ => Planes::cells(std::mem::size_of::<T>()),
        }
    }

    /// The layout asked of array cells: by [`Self::with_cell_layout`], else
    /// planes on a GPU and whole cells on a CPU implementation.
    fn asked_layout(&self) -> CellLayout {
        self.layout.unwrap_or(if self.rt.is_gpu() {
            CellLayout::Planes
        } else {
            CellLayout::Cells
        })
    }

    /// Fused kernels get at most `local_bytes` of work-group memory (0: no
    /// fused kernels, one step per launch) and may recompute up to
    /// `max_overhead` times a step's cells ([`super::fused::FusedLimits`]):
    /// small tiles and fewer fused steps on any device, for tests and
    /// experiments.
    pub fn with_fused_limits(mut self, local_bytes: usize, max_overhead: f64) -> Self {
        self.fused_cap = Some((local_bytes, max_overhead));
        self
    }

    /// What fused kernels may use here, or `None` where they do not run.
    fn fused_limits(&self) -> Option<FusedLimits> {
        let mut limits = self.rt.fused_limits()?;
        if let Some((bytes, overhead)) = self.fused_cap {
            limits.local_bytes = limits.local_bytes.min(bytes);
            limits.max_overhead = overhead;
        }
        (limits.local_bytes > 0).then_some(limits)
    }

    /// How many steps one fused launch of `kernel` takes where `steps` are
    /// asked for (1 where none fuse), compiling its fused kernel on first
    /// use. A kernel whose cones for `steps` do not fit the work-group
    /// memory fuses fewer, and says so once.
    fn fusable(&mut self, kernel: KernelId, steps: usize) -> Result<usize, DeviceError> {
        let loaded = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        if let Some(&k) = loaded.fuses.get(&steps) {
            return Ok(k);
        }
        if self.cell_layout() == CellLayout::Planes {
            // Fused kernels hold whole cells in work-group memory.
            return Ok(1);
        }
        let source = loaded.source.clone();
        let fp = source.footprint();
        let (low, high) = (fp.low().to_vec(), fp.high().to_vec());
        let device = source.device_kernel();
        let mut limits = self.fused_limits();
        let mut fuses = 1;
        let mut k = steps.min(MAX_FUSED_STEPS);
        while let (Some(device), Some(l), true) = (&device, &limits, k >= 2) {
            let Some(shape) = plan_fused(&low, &high, std::mem::size_of::<T>(), k, l) else {
                k -= 1;
                continue;
            };
            // Kernels with auxiliary fields have none.
            let Some(text) = device.fused_source(R::DIALECT, &shape) else {
                break;
            };
            let longs = FusedArgs::arg_count(low.len(), k);
            let compiled = self.rt.compile_fused(&text, longs).map_err(|e| {
                DeviceError::Backend(format!(
                    "kernel '{}' fused {k} times failed to build for {}: {e}",
                    source.name(),
                    R::API
                ))
            })?;
            let max = compiled.hints.max;
            if max != 0 && max < shape.group_size() {
                // Registers or local memory limit this kernel's groups:
                // plan again for them.
                limits = limits.map(|l| FusedLimits {
                    max_group: max,
                    ..l
                });
                if shape.group_size() > 1 {
                    continue;
                }
                break;
            }
            if self.log_fused {
                log::info!(
                    "{}: kernel '{}' fused {k} times: {shape:?}",
                    self.rt.describe(),
                    source.name()
                );
            }
            self.kernels[kernel.0].fused.insert(
                k,
                Fused {
                    kernel: compiled.kernel,
                    shape,
                },
            );
            fuses = k;
            break;
        }
        if fuses < steps && steps <= MAX_FUSED_STEPS && limits.is_some() {
            log::warn!(
                "{}: kernel '{}' fuses {fuses} of {steps} steps per launch (its cones for more \
                 do not fit {} bytes of work-group memory); the others run in further launches",
                self.rt.describe(),
                source.name(),
                limits.map_or(0, |l| l.local_bytes)
            );
        }
        self.kernels[kernel.0].fuses.insert(steps, fuses);
        Ok(fuses)
    }

    /// One launch of the fused kernel of `steps.len()` steps (compiled by
    /// [`Self::fusable`]) from `src` to `dst`, on `lane`.
    fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        let loaded = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        let fused = loaded.fused.get(&steps.len()).ok_or_else(|| {
            DeviceError::BadOption(format!("no fused kernel of {} steps", steps.len()))
        })?;
        let (s, d) = (self.slots.get(src)?, self.slots.get(dst)?);
        let local = steps
            .iter()
            .map(|r| {
                crate::launch::validate(
                    loaded.source.as_ref(),
                    (&s.alloc, &s.extent),
                    (&d.alloc, &d.extent),
                    r,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let last: Vec<usize> = local[local.len() - 1].iter().map(|r| r.len()).collect();
        if last.contains(&0) {
            return Ok(());
        }
        let args = FusedArgs {
            strides: strides(&s.alloc.extents()),
            origin: s.alloc.sigs().iter().map(|g| g.begin()).collect(),
            steps: local,
        };
        // SAFETY: `validate` checked that every step's region and the cells
        // the kernel reads around it lie inside both buffers' allocation
        // (the same one); the fused kernel reads `src` only there (within
        // the first step's reads) and writes `dst` only over the last step's
        // region, its work-group arrays sized by its shape, and runs in the
        // group its source was generated for.
        let timing = unsafe {
            self.rt.launch_fused(
                lane,
                &fused.kernel,
                &s.buf,
                &d.buf,
                &args.longs(),
                fused.shape.groups(&last),
                fused.shape.group_size(),
            )?
        };
        self.timings.push(timing);
        Ok(())
    }

    /// [`Controller::launch_steps`] with its launches on `lane` (copies
    /// into scratch buffers stay on the main lane, which side-lane
    /// launches follow).
    fn steps_on(
        &mut self,
        lane: Lane,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match steps {
            [] => return Ok(()),
            [one] => return self.launch_on(lane, kernel, src, dst, one),
            _ => {}
        }
        if self.fused_steps() < steps.len() {
            return Err(DeviceError::BadOption(format!(
                "{} cannot fuse {} iterations into one launch (at most {})",
                self.describe(),
                steps.len(),
                self.fused_steps()
            )));
        }
        if let Some(w) = steps.windows(2).find(|w| !w[0].contains_shape(&w[1])) {
            return Err(DeviceError::BadOption(format!(
                "fused steps must be nested: {} is not within {}",
                w[1], w[0]
            )));
        }
        if let Some(r) = steps.iter().find(|r| !r.is_contiguous()) {
            return Err(DeviceError::BadOption(format!(
                "fused steps must be contiguous regions: {r}"
            )));
        }
        let source = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?
            .source
            .clone();
        if !source.aux_fields().is_empty() {
            // The fused kernel's tiles have their own geometry, which an
            // auxiliary field's buffer does not have.
            return Err(DeviceError::BadOption(format!(
                "kernel '{}' reads auxiliary fields: one iteration per launch",
                source.name()
            )));
        }
        {
            let (s, d) = (self.slots.get(src)?, self.slots.get(dst)?);
            if src == dst {
                return Err(DeviceError::BufferMismatch("the same buffer twice".into()));
            }
            for r in steps {
                crate::launch::validate(
                    source.as_ref(),
                    (&s.alloc, &s.extent),
                    (&d.alloc, &d.extent),
                    r,
                )?;
            }
        }
        if steps.iter().any(Shape::is_empty) {
            // Nested: the last is empty too, and nothing is stored.
            return Ok(());
        }
        let per = self.fusable(kernel, steps.len())?;
        if per >= steps.len() {
            return self.launch_fused(lane, kernel, src, dst, steps);
        }
        // Launches of as many steps as fuse, the last of what is left.
        let mut chunks: Vec<&[Shape]> = vec![&steps[..per]];
        let mut at = per;
        while at < steps.len() {
            let n = self.fusable(kernel, steps.len() - at)?.max(1);
            chunks.push(&steps[at..at + n]);
            at += n;
        }
        let levels = (chunks.len() - 1).min(2);
        let fp = source.footprint();
        let low: Vec<i64> = fp.low().iter().map(|&x| x as i64).collect();
        let high: Vec<i64> = fp.high().iter().map(|&x| x as i64).collect();
        let reads = steps[0].expand(&low, &high);
        let mut scratch = Vec::new();
        let planes = self.planes();
        // Levels of their own for side-lane launches: a main-lane launch
        // may reuse the main lane's levels while those still run.
        let first = if lane == Lane::Side { 2 } else { 0 };
        for i in 0..levels {
            let b = self.scratch(first + i, src)?;
            let (from, to) = (self.slots.get(src)?, self.slots.get(b)?);
            move_cells::<R, T>(&mut self.rt, planes, from, to, &reads)?;
            scratch.push(b);
        }
        for (c, chunk) in chunks.iter().enumerate() {
            let from = if c == 0 { src } else { scratch[(c - 1) % 2] };
            let to = if c + 1 == chunks.len() {
                dst
            } else {
                scratch[c % 2]
            };
            match chunk {
                [one] => self.launch_on(lane, kernel, from, to, one)?,
                _ => self.launch_fused(lane, kernel, from, to, chunk)?,
            }
        }
        Ok(())
    }

    /// Scratch buffer `i` with the allocation and extent of `like`.
    fn scratch(&mut self, i: usize, like: BufferId) -> Result<BufferId, DeviceError> {
        let (alloc, extent) = {
            let s = self.slots.get(like)?;
            (s.alloc.clone(), s.extent.clone())
        };
        if self.scratch.len() <= i {
            self.scratch.resize(i + 1, None);
        }
        if let Some(b) = self.scratch[i] {
            if self.slots.get(b)?.alloc == alloc {
                self.slots.get_mut(b)?.extent = extent;
                return Ok(b);
            }
            // Forgotten first: a failed allocation below leaves no freed id.
            self.scratch[i] = None;
            self.free(b)?;
        }
        let b = self.alloc(&extent, &alloc)?;
        self.scratch[i] = Some(b);
        Ok(b)
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &R {
        &self.rt
    }

    fn launch_on(
        &mut self,
        lane: Lane,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        let loaded = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        let (s, d) = (self.slots.get(src)?, self.slots.get(dst)?);
        if src == dst {
            return Err(DeviceError::BufferMismatch("the same buffer twice".into()));
        }
        let aux = loaded
            .aux
            .iter()
            .map(|&b| self.slots.get(b))
            .collect::<Result<Vec<_>, _>>()?;
        if loaded.aux.iter().any(|&b| b == src || b == dst) {
            return Err(DeviceError::BufferMismatch(
                "an aux field is its own buffer".into(),
            ));
        }
        let aux_shapes: Vec<_> = aux.iter().map(|a| (&a.alloc, &a.extent)).collect();
        crate::launch::validate_aux(loaded.source.as_ref(), &s.alloc, &aux_shapes, region)?;
        let local = crate::launch::validate(
            loaded.source.as_ref(),
            (&s.alloc, &s.extent),
            (&d.alloc, &d.extent),
            region,
        )?;
        if region.is_empty() {
            return Ok(());
        }
        let origin: Vec<i64> = region.sigs().iter().map(|g| g.begin()).collect();
        let g = plan_launch(
            &s.alloc.extents(),
            &local,
            &origin,
            loaded.hints,
            self.rt.is_gpu(),
        )?;
        let aux: Vec<&R::Buffer> = aux.iter().map(|a| &a.buf).collect();
        // SAFETY: `validate` and `validate_aux` checked that `region` and
        // every cell the kernel reads around it lie inside all the buffers'
        // allocations (the same one), and the geometry describes exactly that
        // region of that allocation. In planes, component q of cell i is
        // scalar i + q * np, np the allocation's cells: inside a buffer of
        // np cells' bytes for every i < np and component q.
        let timing = unsafe {
            self.rt.launch(
                lane,
                &loaded.kernel,
                &s.buf,
                &d.buf,
                &g.longs,
                &aux,
                g.grid,
                g.group,
            )?
        };
        self.timings.push(timing);
        Ok(())
    }
}

fn write_region<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    slot: &Slot<R::Buffer>,
    region: &Shape,
    data: &[T],
) -> Result<(), DeviceError> {
    let bytes = planes.to_planes(bytemuck::cast_slice::<T, u8>(data));
    let plan = planes.plan(&slot.alloc, region);
    for (at, piece) in &plan.pieces {
        rt.write(&slot.buf, piece, &bytes[*at..*at + piece.bytes()])?;
    }
    Ok(())
}

fn read_region<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    slot: &Slot<R::Buffer>,
    region: &Shape,
    out: &mut Vec<T>,
) -> Result<(), DeviceError> {
    let start = out.len();
    out.resize(start + region.card(), T::zeroed());
    let bytes = bytemuck::cast_slice_mut::<T, u8>(&mut out[start..]);
    let plan = planes.plan(&slot.alloc, region);
    if planes.count() == 1 {
        // Straight into `out`: no staging copy.
        for (at, piece) in &plan.pieces {
            rt.read(&slot.buf, piece, &mut bytes[*at..*at + piece.bytes()])?;
        }
        return Ok(());
    }
    let mut staged = vec![0u8; bytes.len()];
    for (at, piece) in &plan.pieces {
        rt.read(&slot.buf, piece, &mut staged[*at..*at + piece.bytes()])?;
    }
    planes.from_planes(&staged, bytes);
    Ok(())
}

/// Copies `region` from one allocation to another on the device (each a
/// buffer and the shape it is laid out over), piece by piece (one region
/// in two allocations: pieces of equal sizes); `false` where the runtime
/// cannot, and then the caller copies through the host (which overwrites
/// whatever pieces were copied).
fn copy_within<R: DeviceRuntime>(
    rt: &mut R,
    planes: Planes,
    (from, from_alloc): (&R::Buffer, &Shape),
    (to, to_alloc): (&R::Buffer, &Shape),
    region: &Shape,
) -> Result<bool, DeviceError> {
    // One plan per allocation, piece for piece alike.
    let plans = planes.plans(&[from_alloc, to_alloc], region);
    let (a, b) = (&plans[0], &plans[1]);
    if a.pieces.len() != b.pieces.len() {
        return Ok(false);
    }
    for ((_, p), (_, q)) in a.pieces.iter().zip(&b.pieces) {
        if !rt.copy_within(from, p, to, q)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copies `region` from one buffer to another of other pitches: on the
/// device where the runtime can, else through the host.
fn move_cells<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    from: &Slot<R::Buffer>,
    to: &Slot<R::Buffer>,
    region: &Shape,
) -> Result<(), DeviceError> {
    if !copy_within(
        rt,
        planes,
        (&from.buf, &from.alloc),
        (&to.buf, &to.alloc),
        region,
    )? {
        let mut cells: Vec<T> = Vec::new();
        read_region(rt, planes, from, region, &mut cells)?;
        write_region(rt, planes, to, region, &cells)?;
    }
    Ok(())
}

/// Why a peer message cannot be used here.
fn foreign(why: String) -> DeviceError {
    DeviceError::BadOption(format!("device message: {why}"))
}

impl<R: DeviceRuntime, T: Cell> Controller<T> for GpuController<R, T> {
    fn describe(&self) -> String {
        self.rt.describe()
    }

    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        check_alloc(extent, capacity)?;
        self.planes();
        let buf = self.rt.alloc(capacity.card() * std::mem::size_of::<T>())?;
        Ok(self.slots.insert(Slot {
            alloc: capacity.clone(),
            extent: extent.clone(),
            buf,
        }))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        // An overlapped launch may still use it.
        self.rt.finish()?;
        self.slots.remove(buf).map(drop)
    }

    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        Ok(self.slots.get(buf)?.extent.clone())
    }

    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        let old = self.slots.get(buf)?;
        let (alloc, keep) = match old.resize_plan(extent, spare)? {
            ResizePlan::InPlace => {
                self.slots.get_mut(buf)?.extent = extent.clone();
                return Ok(false);
            }
            ResizePlan::Realloc { alloc, keep } => (alloc, keep),
        };
        // The old buffer goes: no overlapped launch may still use it.
        self.rt.finish()?;
        if keep.is_empty() {
            // Nothing kept: the old memory goes first, so a device given
            // rows again after it was emptied never holds both. An empty
            // buffer takes its place: should the new allocation fail, the
            // id still names a buffer, an empty one.
            let empty = self.rt.alloc(0)?;
            let slot = self.slots.get_mut(buf)?;
            drop(std::mem::replace(&mut slot.buf, empty));
            slot.alloc = keep.clone();
            slot.extent = keep.clone();
        }
        let next = Slot {
            buf: self.rt.alloc(alloc.card() * std::mem::size_of::<T>())?,
            alloc,
            extent: extent.clone(),
        };
        if !keep.is_empty() {
            let planes = self.planes();
            let old = self.slots.get(buf)?;
            move_cells::<R, T>(&mut self.rt, planes, old, &next, &keep)?;
            // The copies must be done before the old buffer is freed.
            self.rt.finish()?;
        }
        *self.slots.get_mut(buf)? = next;
        Ok(true)
    }

    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        crate::controller::check_copy(from, to, region)?;
        let planes = self.planes();
        let (a, b) = (self.slots.get(from)?, self.slots.get(to)?);
        a.check_region(region)?;
        b.check_region(region)?;
        move_cells::<R, T>(&mut self.rt, planes, a, b, region)
    }

    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        let planes = self.planes();
        let slot = self.slots.get(buf)?;
        slot.check_region(region)?;
        if data.len() != region.card() {
            return Err(DeviceError::Index(HitmapError::LengthMismatch {
                expected: region.card(),
                got: data.len(),
            }));
        }
        write_region(&mut self.rt, planes, slot, region, data)
    }

    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        let planes = self.planes();
        let slot = self.slots.get(buf)?;
        slot.check_region(region)?;
        read_region(&mut self.rt, planes, slot, region, out)
    }

    fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError> {
        let strided = region.sigs().iter().any(|s| s.stride() != 1);
        // Init kernels write whole cells.
        let planes = self.planes().count() > 1;
        if !self.rt.compiles_any() || strided || init.aux() > 0 || planes {
            return Ok(false);
        }
        if init.cell().bytes() != std::mem::size_of::<T>() {
            return Err(DeviceError::BadOption(format!(
                "an init kernel of {}-byte cells for {}-byte cells",
                init.cell().bytes(),
                std::mem::size_of::<T>()
            )));
        }
        let slot = self.slots.get(buf)?;
        slot.check_region(region)?;
        if region.is_empty() {
            return Ok(true);
        }
        let source = init.source(R::DIALECT);
        if !self.inits.contains_key(&source) {
            let compiled = self.rt.compile(&source)?;
            self.inits.insert(source.clone(), compiled);
        }
        let (slot, k) = (self.slots.get(buf)?, &self.inits[&source]);
        let local: Vec<std::ops::Range<usize>> = region
            .sigs()
            .iter()
            .zip(slot.alloc.sigs())
            .map(|(r, a)| (r.begin() - a.begin()) as usize..(r.end() - a.begin()) as usize)
            .collect();
        let origin: Vec<i64> = region.sigs().iter().map(|g| g.begin()).collect();
        let g = plan_launch(
            &slot.alloc.extents(),
            &local,
            &origin,
            k.hints,
            self.rt.is_gpu(),
        )?;
        // SAFETY: the kernel reads no buffer and writes only the cells of
        // `region`, which `check_region` put inside the allocation the
        // geometry describes; `src` is passed only to fill the ABI.
        let timing = unsafe {
            self.rt.launch(
                Lane::Main,
                &k.kernel,
                &slot.buf,
                &slot.buf,
                &g.longs,
                &[],
                g.grid,
                g.group,
            )?
        };
        // Setup, not an iteration's kernel time.
        drop(timing);
        Ok(true)
    }

    fn cell_layout(&self) -> CellLayout {
        // Whole cells until a kernel or buffer fixes it.
        self.planes.map_or(CellLayout::Cells, |p| p.layout())
    }

    fn peer_domain(&self) -> Option<PeerDomain> {
        // Devices asked for different layouts hold one kernel's cells
        // differently: their messages go through the host. (A run asks
        // before its kernel fixes the layout, so scalar cells, one layout
        // either way, go through the host too between such devices.)
        self.rt.peer_domain().map(|id| PeerDomain {
            api: R::API,
            id,
            cells: self.asked_layout(),
        })
    }

    fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        let domain = self
            .peer_domain()
            .ok_or_else(|| foreign(format!("{} shares no device memory", R::API)))?;
        let size = std::mem::size_of::<T>();
        let lens: Vec<usize> = regions.iter().map(|r| r.card() * size).collect();
        // Buffers of a message that came in, where they fit: a neighbour's
        // halo is the size of this device's halo to it.
        let mut parts: Vec<R::Buffer> = match reuse {
            Some(m) if m.domain == domain && m.lens == lens && m.parts.is::<Vec<R::Buffer>>() => *m
                .parts
                .downcast::<Vec<R::Buffer>>()
                .map_err(|_| foreign(format!("not from a {} device", R::API)))?,
            Some(m) => {
                // Copies out of it may still run on this device's lanes,
                // and a CUDA buffer is freed on the stream it came from.
                self.rt.finish()?;
                drop(m);
                Vec::new()
            }
            None => Vec::new(),
        };
        if parts.len() != regions.len() {
            parts = lens
                .iter()
                .map(|&n| self.rt.alloc(n))
                .collect::<Result<_, _>>()?;
        }
        let planes = self.planes();
        let slot = self.slots.get(buf)?;
        for (r, part) in regions.iter().zip(&parts) {
            slot.check_region(r)?;
            // The part is laid out over the region itself: packed.
            if !copy_within(&mut self.rt, planes, (&slot.buf, &slot.alloc), (part, r), r)? {
                return Err(foreign(format!(
                    "{} cannot copy {r} within the device",
                    R::API
                )));
            }
        }
        self.rt.finish()?;
        Ok(DeviceMessage {
            domain,
            lens,
            planes: planes.count(),
            parts: Box::new(parts),
        })
    }

    fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        if Some(&msg.domain) != self.peer_domain().as_ref() {
            return Err(foreign(format!(
                "packed in {:?}, not this device's memory",
                msg.domain
            )));
        }
        let size = std::mem::size_of::<T>();
        let lens: Vec<usize> = regions.iter().map(|r| r.card() * size).collect();
        if lens != msg.lens {
            return Err(foreign(format!(
                "regions of {:?} bytes, {lens:?} expected",
                msg.lens
            )));
        }
        let planes = self.planes();
        if msg.planes != planes.count() {
            return Err(foreign(format!(
                "cells in {} planes, this device lays them out in {}",
                msg.planes,
                planes.count()
            )));
        }
        let parts = msg
            .parts
            .downcast_ref::<Vec<R::Buffer>>()
            .ok_or_else(|| foreign(format!("not from a {} device", R::API)))?;
        let slot = self.slots.get(buf)?;
        for (r, part) in regions.iter().zip(parts) {
            slot.check_region(r)?;
            if !copy_within(&mut self.rt, planes, (part, r), (&slot.buf, &slot.alloc), r)? {
                return Err(foreign(format!(
                    "{} cannot copy {r} within the device",
                    R::API
                )));
            }
        }
        Ok(())
    }

    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        let data = crate::fill::values(region, f);
        self.write(buf, region, &data)
    }

    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        let device = kernel.device_kernel().ok_or_else(|| {
            DeviceError::Backend(format!(
                "kernel '{}' has no device code for {}: custom Rust kernels run on cpu devices \
                 unless given one (Custom::with_device_kernel)",
                kernel.name(),
                R::API
            ))
        })?;
        let planes = self.planes.unwrap_or_else(|| self.choose_planes(&device));
        let source = device.source_in(R::DIALECT, planes.layout()).ok_or_else(|| {
            DeviceError::BadOption(format!(
                "kernel '{}' reads whole cells, but this {} device holds its cells in planes \
                 for the kernel loaded first: run it on a device of its own, or set {CELL_LAYOUT_VAR}=cells",
                kernel.name(),
                R::API
            ))
        })?;
        let compiled = self.rt.compile(&source).map_err(|e| {
            let why = match e {
                DeviceError::Backend(why) => why,
                other => other.to_string(),
            };
            DeviceError::Backend(format!(
                "kernel '{}' failed to build for {}: {why}",
                kernel.name(),
                R::API
            ))
        })?;
        self.planes = Some(planes);
        self.kernels.push(Loaded {
            kernel: compiled.kernel,
            source: kernel,
            hints: compiled.hints,
            aux: Vec::new(),
            fuses: HashMap::new(),
            fused: HashMap::new(),
        });
        Ok(KernelId(self.kernels.len() - 1))
    }

    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        for &b in aux {
            self.slots.get(b)?;
        }
        self.kernels
            .get_mut(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?
            .aux = aux.to_vec();
        Ok(())
    }

    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.launch_on(Lane::Main, kernel, src, dst, region)
    }

    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.launch_on(Lane::Side, kernel, src, dst, region)
    }

    fn fused_steps(&self) -> usize {
        // Fused kernels hold whole cells in work-group memory.
        if self.fused_limits().is_some() && self.cell_layout() == CellLayout::Cells {
            MAX_FUSED_STEPS
        } else {
            1
        }
    }

    /// Compiles the fused kernels a launch of `steps` steps takes: the one
    /// of as many steps as fuse, then those of what is left, as
    /// [`Self::steps_on`] cuts them.
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        if steps < 2 || self.fused_steps() < steps {
            return Ok(());
        }
        let mut at = 0;
        while steps - at >= 2 {
            at += self.fusable(kernel, steps - at)?.max(1);
        }
        Ok(())
    }

    /// Steps fuse in launches of as many as the kernel's fused kernel takes
    /// ([`Self::fusable`]); where that is fewer than asked, each launch but
    /// the last writes a scratch level the next reads, both scratch levels
    /// first given the source's cells the steps read (so the boundary
    /// cells no step writes read their source values, as in one launch).
    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.steps_on(Lane::Main, kernel, src, dst, steps)
    }

    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.steps_on(Lane::Side, kernel, src, dst, steps)
    }

    fn wait(&mut self) -> Result<(), DeviceError> {
        self.rt.finish()
    }

    fn take_kernel_seconds(&mut self) -> f64 {
        // A failed finish shows in the next wait; the timings of commands
        // that did complete still count.
        let _ = self.rt.finish();
        let timings = std::mem::take(&mut self.timings);
        self.rt.elapsed_seconds(timings)
    }
}

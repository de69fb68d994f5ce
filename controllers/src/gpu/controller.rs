//! [`Controller`] once for every GPU API: shapes, validation, transfer
//! plans and launch geometry here, the API behind a [`DeviceRuntime`].
//! Its capabilities have modules of their own: fused steps
//! ([`FusedSteps`], `fusing.rs`), peer messages ([`PeerCopies`],
//! `peers.rs`) and init kernels ([`DeviceFill`], `init.rs`).

use super::geometry::plan_launch;
use super::loaded::Loaded;
use super::planes::Planes;
use super::runtime::{Compiled, DeviceRuntime, Lane};
use super::slots::{check_alloc, ResizePlan, Slot, Slots};
use super::transfer::{move_cells, read_region, write_region};
use crate::capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
use crate::controller::{BufferId, Controller, KernelId};
use crate::error::{BackendError, BadOption, DeviceError, Mismatch};
use hitmap::{HitmapError, Shape};
use kernels::{Cell, CellLayout, DeviceKernel, Kernel};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// A device of a GPU API: tiles resident on the device, transfers only for
/// what the host asks (halos, moved rows, results), kernels from generated
/// device code, timed by the device.
pub struct GpuController<R: DeviceRuntime, T> {
    // First, so that dropping the controller lets the runtime finish its
    // queued commands before the buffers they use are released.
    pub(super) rt: R,
    pub(super) slots: Slots<R::Buffer>,
    pub(super) kernels: Vec<Loaded<R::Kernel, T>>,
    pub(super) timings: Vec<R::Timing>,
    /// Intermediate levels of `launch_steps` where a kernel fuses fewer
    /// steps than asked (allocated on first use, like the launches' source).
    pub(super) scratch: Vec<Option<BufferId>>,
    /// A cap on fused kernels' work-group memory and their overhead bound
    /// ([`GpuController::with_fused_limits`]).
    pub(super) fused_cap: Option<(usize, f64)>,
    /// Compiled init kernels ([`DeviceFill::fill_device`]), by source.
    pub(super) inits: HashMap<String, Compiled<R::Kernel>>,
    /// How every buffer holds its cells: fixed by the first kernel loaded
    /// or buffer allocated, whichever comes first (see
    /// [`GpuController::choose_planes`]).
    pub(super) planes: Option<Planes>,
    /// The layout asked for ([`GpuController::with_cell_layout`]).
    pub(super) layout: Option<CellLayout>,
    /// Whether to log each fused kernel chosen ([`GpuController::with_fused_log`]).
    pub(super) log_fused: bool,
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
    pub(super) fn planes(&mut self) -> Planes {
        *self
            .planes
            .get_or_insert(Planes::cells(std::mem::size_of::<T>()))
    }

    /// The layout for a controller whose first kernel is `device`, where
    /// it can read cells in planes (an array cell, a body written with the
    /// accessors): on a GPU, planes, so that a warp's loads of one
    /// component of neighbouring cells coalesce; on a CPU implementation,
    /// whole cells, which its caches prefer (docs/benchmarks.md). What was
    /// asked wins; whole cells for every other kernel.
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
    pub(super) fn asked_layout(&self) -> CellLayout {
        self.layout.unwrap_or(if self.rt.is_gpu() {
            CellLayout::Planes
        } else {
            CellLayout::Cells
        })
    }

    /// How buffers hold cells: whole until a kernel or buffer fixes it.
    pub(super) fn layout(&self) -> CellLayout {
        self.planes.map_or(CellLayout::Cells, |p| p.layout())
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &R {
        &self.rt
    }

    pub(super) fn launch_on(
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
            return Err(Mismatch::SameBuffer.into());
        }
        let aux = loaded
            .aux
            .iter()
            .map(|&b| self.slots.get(b))
            .collect::<Result<Vec<_>, _>>()?;
        if loaded.aux.iter().any(|&b| b == src || b == dst) {
            return Err(Mismatch::AuxIsItself.into());
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
                &g.index_args,
                &aux,
                g.grid,
                g.group,
            )?
        };
        self.timings.push(timing);
        Ok(())
    }
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
            DeviceError::from(BackendError::NoDeviceCode {
                kernel: kernel.name().to_string(),
                api: R::API,
            })
        })?;
        let planes = self.planes.unwrap_or_else(|| self.choose_planes(&device));
        let source = device
            .source_in(R::DIALECT, planes.layout())
            .ok_or_else(|| {
                DeviceError::from(BadOption::CellLayout {
                    kernel: kernel.name().to_string(),
                    api: R::API,
                    var: CELL_LAYOUT_VAR,
                })
            })?;
        let compiled = self.rt.compile(&source).map_err(|e| BackendError::Build {
            kernel: kernel.name().to_string(),
            api: R::API,
            cause: Box::new(e),
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

    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        Some(self)
    }

    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        Some(self)
    }

    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        Some(self)
    }

    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        Some(self)
    }

    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        Some(self)
    }
}

/// The side lane ([`Lane::Side`]): the inner region runs there while the
/// halos are written on the main lane.
impl<R: DeviceRuntime, T: Cell> OverlappedLaunch<T> for GpuController<R, T> {
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.launch_on(Lane::Side, kernel, src, dst, region)
    }
}

impl<R: DeviceRuntime, T: Cell> CellPlanes for GpuController<R, T> {
    fn cell_layout(&mut self) -> CellLayout {
        self.layout()
    }
}

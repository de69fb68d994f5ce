//! [`Controller`] once for every GPU API: shapes, validation, transfer
//! plans and launch geometry here, the API behind a [`DeviceRuntime`].

use super::copy_plan::CopyPlan;
use super::geometry::{plan_launch, GroupHints};
use super::runtime::{DeviceRuntime, Lane};
use super::slots::{check_alloc, ResizePlan, Slot, Slots};
use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::{HitmapError, Shape};
use kernels::{Cell, Kernel};
use std::marker::PhantomData;
use std::sync::Arc;

struct Loaded<K, T> {
    kernel: K,
    /// The Rust kernel, for its footprint in launch checks.
    source: Arc<dyn Kernel<T>>,
    hints: GroupHints,
    /// Auxiliary field buffers bound to its launches.
    aux: Vec<BufferId>,
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
    _cell: PhantomData<fn() -> T>,
}

impl<R: DeviceRuntime, T: Cell> GpuController<R, T> {
    /// A controller over an opened runtime.
    pub fn with_runtime(rt: R) -> GpuController<R, T> {
        GpuController {
            rt,
            slots: Slots::default(),
            kernels: Vec::new(),
            timings: Vec::new(),
            _cell: PhantomData,
        }
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
        // region of that allocation.
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
    slot: &Slot<R::Buffer>,
    region: &Shape,
    data: &[T],
) -> Result<(), DeviceError> {
    let bytes = bytemuck::cast_slice::<T, u8>(data);
    let plan = CopyPlan::new(&slot.alloc, region, std::mem::size_of::<T>());
    for (at, piece) in &plan.pieces {
        rt.write(&slot.buf, piece, &bytes[*at..*at + piece.bytes()])?;
    }
    Ok(())
}

fn read_region<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    slot: &Slot<R::Buffer>,
    region: &Shape,
    out: &mut Vec<T>,
) -> Result<(), DeviceError> {
    let start = out.len();
    // Straight into `out`: no staging copy.
    out.resize(start + region.card(), T::zeroed());
    let bytes = bytemuck::cast_slice_mut::<T, u8>(&mut out[start..]);
    let plan = CopyPlan::new(&slot.alloc, region, std::mem::size_of::<T>());
    for (at, piece) in &plan.pieces {
        rt.read(&slot.buf, piece, &mut bytes[*at..*at + piece.bytes()])?;
    }
    Ok(())
}

/// Copies `region` from one slot to another on the device, piece by piece
/// (one region in two allocations: pieces of equal sizes); `false` where the
/// runtime cannot, and then the caller copies through the host (which
/// overwrites whatever pieces were copied).
fn copy_within<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    from: &Slot<R::Buffer>,
    to: &Slot<R::Buffer>,
    region: &Shape,
) -> Result<bool, DeviceError> {
    let size = std::mem::size_of::<T>();
    let (a, b) = (
        CopyPlan::new(&from.alloc, region, size),
        CopyPlan::new(&to.alloc, region, size),
    );
    if a.pieces.len() != b.pieces.len() {
        return Ok(false);
    }
    for ((_, p), (_, q)) in a.pieces.iter().zip(&b.pieces) {
        if !rt.copy_within(&from.buf, p, &to.buf, q)? {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<R: DeviceRuntime, T: Cell> Controller<T> for GpuController<R, T> {
    fn describe(&self) -> String {
        self.rt.describe()
    }

    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        check_alloc(extent, capacity)?;
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
        let next = Slot {
            buf: self.rt.alloc(alloc.card() * std::mem::size_of::<T>())?,
            alloc,
            extent: extent.clone(),
        };
        if !copy_within::<R, T>(&mut self.rt, old, &next, &keep)? {
            let mut kept: Vec<T> = Vec::new();
            read_region(&mut self.rt, old, &keep, &mut kept)?;
            write_region(&mut self.rt, &next, &keep, &kept)?;
        }
        // The copies must be done before the old buffer is freed.
        self.rt.finish()?;
        *self.slots.get_mut(buf)? = next;
        Ok(true)
    }

    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        let slot = self.slots.get(buf)?;
        slot.check_region(region)?;
        if data.len() != region.card() {
            return Err(DeviceError::Index(HitmapError::LengthMismatch {
                expected: region.card(),
                got: data.len(),
            }));
        }
        write_region(&mut self.rt, slot, region, data)
    }

    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        let slot = self.slots.get(buf)?;
        slot.check_region(region)?;
        read_region(&mut self.rt, slot, region, out)
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
        let compiled = self.rt.compile(&device.source(R::DIALECT)).map_err(|e| {
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
        self.kernels.push(Loaded {
            kernel: compiled.kernel,
            source: kernel,
            hints: compiled.hints,
            aux: Vec::new(),
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

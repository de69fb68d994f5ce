//! The device interface every backend implements: a core of what every
//! device does, and accessors to the optional capabilities
//! (`crate::capability`) a backend opts into.

use crate::capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
use crate::error::{BadOption, DeviceError, Mismatch};
pub use crate::ids::{BufferId, KernelId};
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::Shape;
use kernels::{CellLayout, DeviceKernel, Kernel};
use std::sync::Arc;

/// One device: its memory, transfers to and from the host, kernel launches,
/// and device-side timing. Buffers are addressed by global indices, like
/// `hitmap::Tile`s, so callers never compute device offsets.
///
/// Launches may run asynchronously; `wait` completes them, and reads and
/// writes are ordered after earlier launches.
///
/// What only some devices do (fused steps, a second queue, peer copies,
/// device-side fills, cells in planes) is a capability trait of its own,
/// handed out by an accessor here (`None` by default). Callers use the
/// methods on `dyn Controller`, which fall back where a device lacks one.
pub trait Controller<T>: Send {
    /// What this device is, e.g. `cpu:threads=2`.
    fn describe(&self) -> String;

    /// A buffer over `extent`, allocated over `capacity` (a superset: halos and
    /// spare rows for later rebalances). Contents are unspecified until written.
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError>;
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError>;
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError>;
    /// Moves the buffer's extent, keeping shared elements at their global
    /// indices; reallocates (with `spare` elements each side per dimension)
    /// only when the new extent leaves the allocation. Returns whether it did.
    fn resize(&mut self, buf: BufferId, extent: &Shape, spare: &[i64])
        -> Result<bool, DeviceError>;

    /// Host to device: `data` row-major over `region`.
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError>;
    /// Device to host: appends `region`'s elements, row-major, to `out`.
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError>;
    /// Copies `region` of `from` into the same cells of `to` (distinct
    /// buffers). The default goes through the host; a device that can copy
    /// in its own memory does.
    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        check_copy(from, to, region)?;
        let mut cells = Vec::with_capacity(region.card());
        self.read(from, region, &mut cells)?;
        self.write(to, region, &cells)
    }
    /// Sets `region` from each element's global index (host-side init).
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError>;

    /// Prepares a kernel for launches on this device.
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError>;
    /// Binds the auxiliary field buffers a loaded kernel reads
    /// ([`kernels::Kernel::aux_fields`], in that order) to its later
    /// launches. Each must share the launches' source allocation; the
    /// launch checks them.
    /// The default is for devices that take no auxiliary fields.
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        let _ = kernel;
        match aux {
            [] => Ok(()),
            _ => Err(BadOption::NoAuxFields {
                device: self.describe(),
            }
            .into()),
        }
    }
    /// Computes `region` (global indices) of `dst` from `src`, which must be
    /// distinct buffers with the same allocation.
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError>;
    /// Waits for every launch so far.
    fn wait(&mut self) -> Result<(), DeviceError>;
    /// Device-measured seconds of the kernel launches since the last
    /// `take_kernel_seconds` (complete them with `wait` first).
    fn take_kernel_seconds(&mut self) -> f64;

    /// Told at the start of each iteration (emulated slow devices use it).
    fn set_iteration(&mut self, _iter: u64) {}

    /// Several iterations in one launch, where the device fuses them.
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        None
    }
    /// A second queue for launches that overlap halo traffic.
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        None
    }
    /// Halos that stay in device memory, where the device shares it with
    /// others of its kind.
    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        None
    }
    /// Initial states computed on the device.
    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        None
    }
    /// Cells with components held in planes.
    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        None
    }
}

/// Every capability through one interface: the device's where it has it,
/// else what a device without it does.
impl<T> dyn Controller<T> + '_ {
    /// How many iterations [`Self::launch_steps`] may fuse (1 where the
    /// device does not fuse).
    pub fn fused_steps(&mut self) -> usize {
        self.fused().map_or(1, |f| f.fused_steps())
    }
    /// [`FusedSteps::prepare_steps`]; nothing where the device does not fuse.
    pub fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.prepare_steps(kernel, steps),
            None => Ok(()),
        }
    }
    /// [`FusedSteps::launch_steps`]; a device that does not fuse takes one
    /// step only.
    pub fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.launch_steps(kernel, src, dst, steps),
            None => self.one_step(kernel, src, dst, steps),
        }
    }
    /// [`FusedSteps::launch_steps_overlapped`]; a device that does not fuse
    /// takes one step only, as [`Self::launch_steps`].
    pub fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.launch_steps_overlapped(kernel, src, dst, steps),
            None => self.one_step(kernel, src, dst, steps),
        }
    }
    fn one_step(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match steps {
            [one] => self.launch(kernel, src, dst, one),
            _ => Err(BadOption::NoFusing {
                device: self.describe(),
                steps: steps.len(),
            }
            .into()),
        }
    }
    /// [`OverlappedLaunch::launch_overlapped`]; `launch` on a device with
    /// one queue.
    pub fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        match self.overlapped() {
            Some(o) => o.launch_overlapped(kernel, src, dst, region),
            None => self.launch(kernel, src, dst, region),
        }
    }
    /// The device's [`PeerCopies::peer_domain`]; `None` where its halos go
    /// through the host.
    pub fn peer_domain(&mut self) -> Option<PeerDomain> {
        self.peers().and_then(|p| p.peer_domain())
    }
    /// [`PeerCopies::pack_peer`]; an error where the device has no peers.
    pub fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        match self.peers() {
            Some(p) => p.pack_peer(buf, regions, reuse),
            None => Err(no_peers(&self.describe())),
        }
    }
    /// [`PeerCopies::unpack_peer`]; an error where the device has no peers.
    pub fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        match self.peers() {
            Some(p) => p.unpack_peer(buf, regions, msg),
            None => Err(no_peers(&self.describe())),
        }
    }
    /// [`DeviceFill::fill_device`]; `Ok(false)` where the device does not
    /// fill, and the caller fills from the host.
    pub fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError> {
        match self.device_fill() {
            Some(f) => f.fill_device(buf, region, init),
            None => Ok(false),
        }
    }
    /// [`CellPlanes::cell_layout`]; whole cells where the device holds no
    /// planes.
    pub fn cell_layout(&mut self) -> CellLayout {
        self.cell_planes()
            .map_or(CellLayout::Cells, |p| p.cell_layout())
    }
}

/// `c` as the trait object whose methods fall back where it lacks a
/// capability: what a decorator calls on the device it wraps.
pub(crate) fn as_dyn<T, C: Controller<T>>(c: &mut C) -> &mut dyn Controller<T> {
    c
}

fn no_peers(device: &str) -> DeviceError {
    BadOption::NoPeers {
        device: device.to_string(),
    }
    .into()
}

/// Errors unless a copy of `region` goes between two distinct buffers
/// (what [`Controller::copy_region`] promises every implementation checks).
pub(crate) fn check_copy(from: BufferId, to: BufferId, region: &Shape) -> Result<(), DeviceError> {
    if from == to {
        return Err(Mismatch::CopyIntoItself {
            region: region.clone(),
            buffer: from.0,
        }
        .into());
    }
    Ok(())
}

/// The memory, transfer and kernel-loading methods of [`Controller`], and
/// the capabilities that do not launch (peer copies, device fills, cell
/// planes), passed to `self.$inner`: what a decorator (one that changes
/// launches or timing, like [`crate::Slowdown`]) leaves as it is.
macro_rules! forward_memory {
    ($inner:ident) => {
        $crate::controller::forward_memory!($inner, but load);
        fn load(
            &mut self,
            kernel: std::sync::Arc<dyn kernels::Kernel<T>>,
        ) -> Result<$crate::KernelId, $crate::DeviceError> {
            self.$inner.load(kernel)
        }
    };
    // All of them but `load`, for a wrapper that must see each kernel.
    ($inner:ident, but load) => {
        fn alloc(
            &mut self,
            extent: &hitmap::Shape,
            capacity: &hitmap::Shape,
        ) -> Result<$crate::BufferId, $crate::DeviceError> {
            self.$inner.alloc(extent, capacity)
        }
        fn free(&mut self, buf: $crate::BufferId) -> Result<(), $crate::DeviceError> {
            self.$inner.free(buf)
        }
        fn extent(&self, buf: $crate::BufferId) -> Result<hitmap::Shape, $crate::DeviceError> {
            self.$inner.extent(buf)
        }
        fn resize(
            &mut self,
            buf: $crate::BufferId,
            extent: &hitmap::Shape,
            spare: &[i64],
        ) -> Result<bool, $crate::DeviceError> {
            self.$inner.resize(buf, extent, spare)
        }
        fn write(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            data: &[T],
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.write(buf, region, data)
        }
        fn read(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            out: &mut Vec<T>,
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.read(buf, region, out)
        }
        fn copy_region(
            &mut self,
            from: $crate::BufferId,
            to: $crate::BufferId,
            region: &hitmap::Shape,
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.copy_region(from, to, region)
        }
        fn fill(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            f: &(dyn Fn(&[i64]) -> T + Sync),
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.fill(buf, region, f)
        }
        fn bind_aux(
            &mut self,
            kernel: $crate::KernelId,
            aux: &[$crate::BufferId],
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.bind_aux(kernel, aux)
        }
        fn wait(&mut self) -> Result<(), $crate::DeviceError> {
            self.$inner.wait()
        }
        fn peers(&mut self) -> Option<&mut dyn $crate::PeerCopies> {
            self.$inner.peers()
        }
        fn device_fill(&mut self) -> Option<&mut dyn $crate::DeviceFill> {
            self.$inner.device_fill()
        }
        fn cell_planes(&mut self) -> Option<&mut dyn $crate::CellPlanes> {
            self.$inner.cell_planes()
        }
    };
}
pub(crate) use forward_memory;

impl<T, C: Controller<T> + ?Sized> Controller<T> for Box<C> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        (**self).alloc(extent, capacity)
    }
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        (**self).free(buf)
    }
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        (**self).extent(buf)
    }
    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        (**self).resize(buf, extent, spare)
    }
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        (**self).write(buf, region, data)
    }
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        (**self).read(buf, region, out)
    }
    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        (**self).copy_region(from, to, region)
    }
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        (**self).fill(buf, region, f)
    }
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        (**self).load(kernel)
    }
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        (**self).bind_aux(kernel, aux)
    }
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        (**self).launch(kernel, src, dst, region)
    }
    fn wait(&mut self) -> Result<(), DeviceError> {
        (**self).wait()
    }
    fn take_kernel_seconds(&mut self) -> f64 {
        (**self).take_kernel_seconds()
    }
    fn set_iteration(&mut self, iter: u64) {
        (**self).set_iteration(iter)
    }
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        (**self).fused()
    }
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        (**self).overlapped()
    }
    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        (**self).peers()
    }
    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        (**self).device_fill()
    }
    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        (**self).cell_planes()
    }
}

#[cfg(test)]
mod tests {
    use super::{BufferId, Controller, KernelId};
    use crate::{CpuController, DeviceError};
    use hitmap::Shape;
    use kernels::{library_kernel, Cell, CellLayout, InitSpec, KernelChoice, Library};
    use std::sync::Arc;

    /// A device of the core alone, computing on a CPU controller.
    struct Core<T: Cell> {
        inner: CpuController<T>,
    }

    impl<T: Cell> Controller<T> for Core<T> {
        fn describe(&self) -> String {
            "core".into()
        }
        forward_memory!(inner);
        fn launch(
            &mut self,
            kernel: KernelId,
            src: BufferId,
            dst: BufferId,
            region: &Shape,
        ) -> Result<(), DeviceError> {
            self.inner.launch(kernel, src, dst, region)
        }
        fn take_kernel_seconds(&mut self) -> f64 {
            self.inner.take_kernel_seconds()
        }
    }

    /// Without a capability, what a device without it does: one step a
    /// launch, overlapped launches ordinary ones, no peers, host fills and
    /// whole cells.
    #[test]
    fn a_device_of_the_core_alone_takes_the_fallbacks() {
        let mut core = Core {
            inner: CpuController::<f32>::new(1).unwrap(),
        };
        let dev: &mut dyn Controller<f32> = &mut core;
        let all = Shape::from_sizes(&[6, 7]);
        let inner = all.shrink(&[1, 1], &[1, 1]);
        let kernel = library_kernel::<f32>(Library::S2d4, KernelChoice::Specialized);
        let k = dev.load(Arc::from(kernel)).unwrap();
        let [a, b, c] = [0; 3].map(|_| dev.alloc(&all, &all).unwrap());
        for buf in [a, b, c] {
            dev.fill(buf, &all, &|i| (i[0] * 7 + i[1] * i[1]) as f32)
                .unwrap();
        }
        assert_eq!(dev.fused_steps(), 1);
        dev.prepare_steps(k, 4).unwrap();
        let two = [inner.clone(), inner.clone()];
        assert_eq!(
            dev.launch_steps(k, a, b, &two).unwrap_err().to_string(),
            "bad device option: core cannot fuse 2 iterations into one launch"
        );
        assert_eq!(
            dev.launch_steps_overlapped(k, a, b, &two)
                .unwrap_err()
                .to_string(),
            "bad device option: core cannot fuse 2 iterations into one launch"
        );
        dev.launch_steps(k, a, b, std::slice::from_ref(&inner))
            .unwrap();
        dev.launch_overlapped(k, a, c, &inner).unwrap();
        dev.wait().unwrap();
        let [source, stepped, overlapped] = [a, b, c].map(|buf| {
            let mut v = Vec::new();
            dev.read(buf, &all, &mut v).unwrap();
            v
        });
        assert_eq!(stepped, overlapped);
        assert_ne!(stepped, source, "computed");
        assert_eq!(dev.peer_domain(), None);
        let Err(e) = dev.pack_peer(a, std::slice::from_ref(&inner), None) else {
            panic!("packed without peers");
        };
        assert_eq!(
            e.to_string(),
            "bad device option: core exchanges no halos in device memory"
        );
        let init = InitSpec {
            sizes: vec![6, 7],
            low: vec![1, 1],
            high: vec![1, 1],
            random: None,
        };
        let init = init.device_kernel::<f32>().unwrap();
        assert!(!dev.fill_device(a, &all, &init).unwrap());
        assert_eq!(dev.cell_layout(), CellLayout::Cells);
    }
}

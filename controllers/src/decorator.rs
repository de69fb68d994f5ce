//! Controllers that wrap another and change part of what it does
//! ([`crate::Slowdown`], [`crate::FailAt`], the mock's registration, a
//! `Box`): each writes only what it changes, and the rest passes through.

use crate::capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::Shape;
use kernels::Kernel;
use std::sync::Arc;

pub(crate) mod sealed {
    /// Marks this crate's decorators: with it no other crate can make a
    /// backend's type a [`super::Decorator`], so the blanket `Controller`
    /// impl over decorators never meets a backend's own.
    pub trait Wraps {}
}

/// A controller wrapping `Inner`. It is a [`Controller`] (the blanket impl
/// below): memory, transfers and `wait` go to the inner controller as they
/// are, and so does each of these methods it does not write itself.
/// Cells are `'static` (as `kernels::Cell`s are), so the inner controller
/// outlives every borrow of the decorator. Sealed: this crate's decorators
/// only. Where it is in scope, calling one of its methods on a decorator
/// is ambiguous with `Controller`'s: import it only to write a decorator.
pub trait Decorator<T: 'static>: Send + sealed::Wraps {
    /// The controller it wraps.
    type Inner: Controller<T> + ?Sized;
    fn inner(&self) -> &Self::Inner;
    fn inner_mut(&mut self) -> &mut Self::Inner;

    /// [`Controller::describe`].
    fn describe(&self) -> String {
        self.inner().describe()
    }
    /// [`Controller::load`].
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.inner_mut().load(kernel)
    }
    /// [`Controller::launch`].
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.inner_mut().launch(kernel, src, dst, region)
    }
    /// [`Controller::take_kernel_seconds`].
    fn take_kernel_seconds(&mut self) -> f64 {
        self.inner_mut().take_kernel_seconds()
    }
    /// [`Controller::set_iteration`].
    fn set_iteration(&mut self, iter: u64) {
        self.inner_mut().set_iteration(iter)
    }
    /// [`Controller::fused`]: the inner controller's launches unchanged.
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        self.inner_mut().fused()
    }
    /// [`Controller::overlapped`]: the inner controller's launches unchanged.
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        self.inner_mut().overlapped()
    }
    /// [`Controller::peers`].
    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        self.inner_mut().peers()
    }
    /// [`Controller::device_fill`].
    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        self.inner_mut().device_fill()
    }
    /// [`Controller::cell_planes`].
    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        self.inner_mut().cell_planes()
    }
}

/// Every method a decorator does not write is its inner controller's,
/// including those with a default in [`Controller`] (`copy_region`,
/// `bind_aux`): a wrapped device copies and binds as it would alone.
impl<T: 'static, D: Decorator<T>> Controller<T> for D {
    fn describe(&self) -> String {
        Decorator::describe(self)
    }
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        self.inner_mut().alloc(extent, capacity)
    }
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.inner_mut().free(buf)
    }
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        self.inner().extent(buf)
    }
    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        self.inner_mut().resize(buf, extent, spare)
    }
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        self.inner_mut().write(buf, region, data)
    }
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        self.inner_mut().read(buf, region, out)
    }
    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.inner_mut().copy_region(from, to, region)
    }
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        self.inner_mut().fill(buf, region, f)
    }
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        Decorator::load(self, kernel)
    }
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        self.inner_mut().bind_aux(kernel, aux)
    }
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        Decorator::launch(self, kernel, src, dst, region)
    }
    fn wait(&mut self) -> Result<(), DeviceError> {
        self.inner_mut().wait()
    }
    fn take_kernel_seconds(&mut self) -> f64 {
        Decorator::take_kernel_seconds(self)
    }
    fn set_iteration(&mut self, iter: u64) {
        Decorator::set_iteration(self, iter)
    }
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        Decorator::fused(self)
    }
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        Decorator::overlapped(self)
    }
    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        Decorator::peers(self)
    }
    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        Decorator::device_fill(self)
    }
    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        Decorator::cell_planes(self)
    }
}

/// A boxed device is the device: the decorator that changes nothing.
impl<C: ?Sized> sealed::Wraps for Box<C> {}
impl<T: 'static, C: Controller<T> + ?Sized> Decorator<T> for Box<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        self
    }
    fn inner_mut(&mut self) -> &mut C {
        self
    }
}

/// `c` as the trait object whose methods fall back where it lacks a
/// capability: what a decorator calls on the device it wraps.
pub(crate) fn as_dyn<T, C: Controller<T>>(c: &mut C) -> &mut dyn Controller<T> {
    c
}

#[cfg(test)]
mod tests {
    use super::{sealed, Decorator};
    use crate::capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
    use crate::{Controller, CpuController};
    use hitmap::Shape;
    use kernels::{library_kernel, Cell, CellLayout, InitSpec, KernelChoice, Library};
    use std::sync::Arc;

    /// A device of the core alone: a CPU controller with every capability
    /// hidden.
    struct Core<T: Cell> {
        inner: CpuController<T>,
    }

    impl<T: Cell> sealed::Wraps for Core<T> {}
    impl<T: Cell> Decorator<T> for Core<T> {
        type Inner = CpuController<T>;
        fn inner(&self) -> &CpuController<T> {
            &self.inner
        }
        fn inner_mut(&mut self) -> &mut CpuController<T> {
            &mut self.inner
        }
        fn describe(&self) -> String {
            "core".into()
        }
        fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
            None
        }
        fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
            None
        }
        fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
            None
        }
        fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
            None
        }
        fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
            None
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

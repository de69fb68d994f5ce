//! Emulated device failures, for testing recovery on one machine.

use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::Shape;
use kernels::Kernel;
use std::sync::Arc;

/// Wraps any controller so that every launch from iteration `at` on fails,
/// as a device that dropped off the bus would: the run sees a device error
/// in the middle of an iteration, after the iterations before it ran.
pub struct FailAt<C> {
    inner: C,
    at: u64,
    iter: u64,
}

impl<C> FailAt<C> {
    /// `inner`, failing from iteration `at` on.
    pub fn new(inner: C, at: u64) -> FailAt<C> {
        FailAt { inner, at, iter: 0 }
    }

    fn check(&self) -> Result<(), DeviceError> {
        if self.iter >= self.at {
            Err(DeviceError::Failed(format!(
                "emulated failure at iteration {} (fail@{})",
                self.iter, self.at
            )))
        } else {
            Ok(())
        }
    }
}

impl<T, C: Controller<T>> Controller<T> for FailAt<C> {
    fn describe(&self) -> String {
        format!("{} failing at iteration {}", self.inner.describe(), self.at)
    }
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        self.inner.alloc(extent, capacity)
    }
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.inner.free(buf)
    }
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        self.inner.extent(buf)
    }
    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        self.inner.resize(buf, extent, spare)
    }
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        self.inner.write(buf, region, data)
    }
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        self.inner.read(buf, region, out)
    }
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        self.inner.fill(buf, region, f)
    }
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.inner.load(kernel)
    }
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.check()?;
        self.inner.launch(kernel, src, dst, region)
    }
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.check()?;
        self.inner.launch_overlapped(kernel, src, dst, region)
    }
    fn wait(&mut self) -> Result<(), DeviceError> {
        self.inner.wait()
    }
    fn take_kernel_seconds(&mut self) -> f64 {
        self.inner.take_kernel_seconds()
    }
    fn set_iteration(&mut self, iter: u64) {
        self.iter = iter;
        self.inner.set_iteration(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::FailAt;
    use crate::{Controller, CpuController, DeviceError};
    use hitmap::Shape;
    use kernels::{library_kernel, KernelChoice, Library};
    use std::sync::Arc;

    #[test]
    fn launches_fail_from_the_iteration_on() {
        let mut c = FailAt::new(CpuController::<f32>::new(1).unwrap(), 2);
        let all = Shape::from_sizes(&[6, 6]);
        let inner = all.shrink(&[1, 1], &[1, 1]);
        let k = c
            .load(Arc::from(library_kernel::<f32>(
                Library::S2d4,
                KernelChoice::Specialized,
            )))
            .unwrap();
        let (a, b) = (c.alloc(&all, &all).unwrap(), c.alloc(&all, &all).unwrap());
        for it in 0..4 {
            c.set_iteration(it);
            let r = c.launch(k, a, b, &inner);
            assert_eq!(r.is_err(), it >= 2, "iteration {it}");
            if let Err(e) = r {
                assert!(matches!(e, DeviceError::Failed(_)), "{e}");
                assert!(e.to_string().contains("fail@2"), "{e}");
            }
        }
    }
}

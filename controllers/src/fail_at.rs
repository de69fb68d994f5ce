//! Emulated device failures, for testing recovery on one machine.

use crate::controller::{forward_memory, BufferId, Controller, KernelId};
use crate::error::{DeviceError, Failure};
use hitmap::Shape;

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
            Err(Failure::Emulated {
                iter: self.iter,
                at: self.at,
            }
            .into())
        } else {
            Ok(())
        }
    }
}

impl<T, C: Controller<T>> Controller<T> for FailAt<C> {
    fn describe(&self) -> String {
        format!("{} failing at iteration {}", self.inner.describe(), self.at)
    }
    forward_memory!(inner);
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
    fn fused_steps(&self) -> usize {
        self.inner.fused_steps()
    }
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        self.inner.prepare_steps(kernel, steps)
    }
    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.check()?;
        self.inner.launch_steps(kernel, src, dst, steps)
    }
    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.check()?;
        self.inner.launch_steps_overlapped(kernel, src, dst, steps)
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

//! Emulated device failures, for testing recovery on one machine.

use crate::capability::{FusedSteps, OverlappedLaunch};
use crate::controller::{BufferId, Controller, KernelId};
use crate::decorator::{as_dyn, sealed, Decorator};
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

impl<C> sealed::Wraps for FailAt<C> {}
impl<T: 'static, C: Controller<T>> Decorator<T> for FailAt<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }
    fn describe(&self) -> String {
        format!("{} failing at iteration {}", self.inner.describe(), self.at)
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
    fn set_iteration(&mut self, iter: u64) {
        self.iter = iter;
        self.inner.set_iteration(iter)
    }
    // Every launch fails alike: the wrapper takes each kind of launch,
    // passing it on as the inner device runs it.
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        Some(self)
    }
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        Some(self)
    }
}

impl<T, C: Controller<T>> FusedSteps<T> for FailAt<C> {
    fn fused_steps(&mut self) -> usize {
        as_dyn(&mut self.inner).fused_steps()
    }
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        as_dyn(&mut self.inner).prepare_steps(kernel, steps)
    }
    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.check()?;
        as_dyn(&mut self.inner).launch_steps(kernel, src, dst, steps)
    }
    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.check()?;
        as_dyn(&mut self.inner).launch_steps_overlapped(kernel, src, dst, steps)
    }
}

impl<T, C: Controller<T>> OverlappedLaunch<T> for FailAt<C> {
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.check()?;
        as_dyn(&mut self.inner).launch_overlapped(kernel, src, dst, region)
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

    /// A failing device hands on what the device it wraps does (the four
    /// steps in one fused launch, overlapped launches on the side lane) and
    /// fails every kind of launch alike.
    #[test]
    fn every_kind_of_launch_goes_through_and_fails() {
        use crate::gpu::mock::tests::{four_steps, mock_2d4};
        use crate::gpu::Lane;
        let (gpu, k) = mock_2d4(48 << 10);
        let mut c = FailAt::new(gpu, 3);
        let ext = Shape::from_sizes(&[40, 36]);
        let (a, b) = (c.alloc(&ext, &ext).unwrap(), c.alloc(&ext, &ext).unwrap());
        let steps = four_steps();
        let dev: &mut dyn Controller<f32> = &mut c;
        dev.prepare_steps(k, 4).unwrap();
        dev.launch_steps(k, a, b, &steps).unwrap();
        dev.launch_steps_overlapped(k, a, b, &steps).unwrap();
        dev.launch_overlapped(k, a, b, &steps[3]).unwrap();
        dev.wait().unwrap();
        assert_eq!(
            c.inner.runtime().lanes,
            [Lane::Main, Lane::Side, Lane::Side]
        );
        assert_eq!(c.inner.runtime().fused_compiles, 1);
        c.set_iteration(3);
        let dev: &mut dyn Controller<f32> = &mut c;
        let failed = [
            dev.launch_steps(k, a, b, &steps),
            dev.launch_steps_overlapped(k, a, b, &steps),
            dev.launch_overlapped(k, a, b, &steps[3]),
        ];
        for r in failed {
            assert_eq!(
                r.unwrap_err().to_string(),
                "device failed: emulated failure at iteration 3 (fail@3)"
            );
        }
        assert_eq!(c.inner.runtime().lanes.len(), 3, "nothing launched");
    }
}

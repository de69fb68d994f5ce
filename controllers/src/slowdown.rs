//! Emulated slow devices for load-balancing experiments on one machine.

use crate::capability::{FusedSteps, OverlappedLaunch};
use crate::controller::{BufferId, Controller, KernelId};
use crate::decorator::{as_dyn, sealed, Decorator};
use crate::error::{BadOption, DeviceError};
use hitmap::Shape;
use std::time::{Duration, Instant};

/// Sleeps most of `d`, then spins until it has passed. The spin stays in
/// user space: yielding instead entered the scheduler thousands of times a
/// second and showed up as scheduling work on the other device's core.
fn wait_precisely(d: Duration) {
    const SPIN: Duration = Duration::from_micros(150);
    let until = Instant::now() + d;
    if d > SPIN {
        std::thread::sleep(d - SPIN);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Wraps any controller so that, from iteration `from_iter` on, every kernel
/// takes `factor` times as long: after each launch it waits the extra
/// `(factor - 1) x` the measured kernel time, and reports the time really
/// spent. The wait sleeps (freeing the core, as a slower remote device
/// would) and spins only its last stretch: a plain sleep overshoots by tens
/// of microseconds, which at sub-millisecond kernels made the device
/// measurably slower than the factor claimed.
pub struct Slowdown<C> {
    inner: C,
    factor: f64,
    from_iter: u64,
    iter: u64,
    seconds: f64,
}

/// The largest slowdown factor: an emulated device a thousand times slower
/// is already one that load balancing leaves without rows; past it a run
/// only waits (and a factor near 1e300 would not fit a wait's duration).
pub const MAX_FACTOR: f64 = 1000.0;

impl<C> Slowdown<C> {
    pub fn new(inner: C, factor: f64, from_iter: u64) -> Result<Slowdown<C>, DeviceError> {
        if !(1.0..=MAX_FACTOR).contains(&factor) {
            return Err(BadOption::Slowdown {
                factor,
                most: MAX_FACTOR,
            }
            .into());
        }
        Ok(Slowdown {
            inner,
            factor,
            from_iter,
            iter: 0,
            seconds: 0.0,
        })
    }

    fn active(&self) -> bool {
        self.iter >= self.from_iter && self.factor > 1.0
    }

    /// Completes the launch just made and waits the extra time it owes.
    fn slow_down<T>(&mut self) -> Result<(), DeviceError>
    where
        C: Controller<T>,
    {
        self.inner.wait()?;
        let t = self.inner.take_kernel_seconds();
        if self.active() {
            let start = Instant::now();
            // A kernel time a broken clock made absurd waits nothing.
            let owed = Duration::try_from_secs_f64(t * (self.factor - 1.0)).unwrap_or_default();
            wait_precisely(owed);
            self.seconds += t + start.elapsed().as_secs_f64();
        } else {
            self.seconds += t;
        }
        Ok(())
    }
}

impl<C> sealed::Wraps for Slowdown<C> {}
impl<T: 'static, C: Controller<T>> Decorator<T> for Slowdown<C> {
    type Inner = C;
    fn inner(&self) -> &C {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }
    fn describe(&self) -> String {
        format!(
            "{},slowdown={}@{}",
            self.inner.describe(),
            self.factor,
            self.from_iter
        )
    }

    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.inner.launch(kernel, src, dst, region)?;
        self.slow_down()
    }

    fn take_kernel_seconds(&mut self) -> f64 {
        std::mem::take(&mut self.seconds)
    }

    fn set_iteration(&mut self, iter: u64) {
        self.iter = iter;
        self.inner.set_iteration(iter);
    }

    // Fused launches are slowed as launches are. Overlapped ones stay
    // ordinary launches (the fallback): each is waited for to slow it.
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        Some(self)
    }
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        None
    }
}

impl<T, C: Controller<T>> FusedSteps<T> for Slowdown<C> {
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
        as_dyn(&mut self.inner).launch_steps(kernel, src, dst, steps)?;
        self.slow_down()
    }
}

#[cfg(test)]
mod tests {
    use super::Slowdown;
    use crate::Controller;
    use hitmap::Shape;

    /// A slowed device fuses as the device it wraps does (the four steps in
    /// one launch, slowed like any other); its overlapped launches are
    /// ordinary ones, each waited for.
    #[test]
    fn fused_launches_stay_fused_and_overlapped_ones_wait() {
        use crate::gpu::mock::tests::{four_steps, mock_2d4};
        use crate::gpu::Lane;
        let (gpu, k) = mock_2d4(48 << 10);
        let mut c = Slowdown::new(gpu, 2.0, 0).unwrap();
        let ext = Shape::from_sizes(&[40, 36]);
        let (a, b) = (c.alloc(&ext, &ext).unwrap(), c.alloc(&ext, &ext).unwrap());
        let steps = four_steps();
        let dev: &mut dyn Controller<f32> = &mut c;
        assert_eq!(dev.fused_steps(), kernels::device::MAX_FUSED_STEPS);
        dev.prepare_steps(k, 4).unwrap();
        dev.launch_steps(k, a, b, &steps).unwrap();
        dev.launch_steps_overlapped(k, a, b, &steps).unwrap();
        dev.launch_overlapped(k, a, b, &steps[3]).unwrap();
        assert!(dev.take_kernel_seconds() > 0.0);
        assert_eq!(c.inner.runtime().lanes, [Lane::Main; 3]);
        assert_eq!(c.inner.runtime().fused_compiles, 1);
    }
}

//! Device initialisation: buffers filled in place by generated init kernels.

use super::controller::GpuController;
use super::geometry::plan_launch;
use super::runtime::{DeviceRuntime, Lane};
use crate::capability::DeviceFill;
use crate::controller::BufferId;
use crate::error::{BadOption, DeviceError};
use hitmap::Shape;
use kernels::{Cell, DeviceKernel};

impl<R: DeviceRuntime, T: Cell> DeviceFill for GpuController<R, T> {
    /// `region` of `buf` written by `init` on the device, or `false` where
    /// it cannot be.
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
            return Err(BadOption::InitCell {
                init: init.cell().bytes(),
                cell: std::mem::size_of::<T>(),
            }
            .into());
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
                &g.index_args,
                &[],
                g.grid,
                g.group,
            )?
        };
        // Setup, not an iteration's kernel time.
        drop(timing);
        Ok(true)
    }
}

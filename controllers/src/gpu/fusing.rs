//! Fused-step planning: how many steps a launch takes, and the launches a run of steps becomes.

use super::controller::GpuController;
use super::copy_plan::strides;
use super::fused::{plan as plan_fused, FusedLimits};
use super::loaded::Fused;
use super::runtime::{DeviceRuntime, Lane};
use super::transfer::move_cells;
use crate::capability::FusedSteps;
use crate::controller::{BufferId, Controller, KernelId};
use crate::error::{BackendError, BadOption, DeviceError, Mismatch};
use hitmap::Shape;
use kernels::device::{FusedArgs, MAX_FUSED_STEPS};
use kernels::{Cell, CellLayout};

impl<R: DeviceRuntime, T: Cell> GpuController<R, T> {
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
    pub(super) fn fused_limits(&self) -> Option<FusedLimits> {
        let mut limits = self.rt.fused_limits()?;
        if let Some((bytes, overhead)) = self.fused_cap {
            limits.local_bytes = limits.local_bytes.min(bytes);
            limits.max_overhead = overhead;
        }
        (limits.local_bytes > 0).then_some(limits)
    }

    /// How many steps a launch may fuse now: none in planes, since fused
    /// kernels hold whole cells in work-group memory.
    pub(super) fn most_fused(&self) -> usize {
        if self.fused_limits().is_some() && self.layout() == CellLayout::Cells {
            MAX_FUSED_STEPS
        } else {
            1
        }
    }

    /// How many steps one fused launch of `kernel` takes where `steps` are
    /// asked for (1 where none fuse), compiling its fused kernel on first
    /// use. A kernel whose cones for `steps` do not fit the work-group
    /// memory fuses fewer, and says so once.
    pub(super) fn fusable(&mut self, kernel: KernelId, steps: usize) -> Result<usize, DeviceError> {
        let loaded = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        if let Some(&k) = loaded.fuses.get(&steps) {
            return Ok(k);
        }
        if self.layout() == CellLayout::Planes {
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
            let index_arg_count = FusedArgs::arg_count(low.len(), k);
            let compiled = self.rt.compile_fused(&text, index_arg_count).map_err(|e| {
                DeviceError::from(BackendError::FusedBuild {
                    kernel: source.name().to_string(),
                    steps: k,
                    api: R::API,
                    source: Box::new(e),
                })
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
                tracing::info!(
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
            tracing::warn!(
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
        let fused = loaded
            .fused
            .get(&steps.len())
            .ok_or_else(|| DeviceError::from(BadOption::NoFusedKernel { steps: steps.len() }))?;
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
                &args.index_args(),
                fused.shape.groups(&last),
                fused.shape.group_size(),
            )?
        };
        self.timings.push(timing);
        Ok(())
    }

    /// [`FusedSteps::launch_steps`] with its launches on `lane` (copies
    /// into scratch buffers stay on the main lane, which side-lane
    /// launches follow).
    pub(super) fn steps_on(
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
        if self.most_fused() < steps.len() {
            return Err(BadOption::FusesFewer {
                device: self.describe(),
                steps: steps.len(),
                most: self.most_fused(),
            }
            .into());
        }
        if let Some(w) = steps.windows(2).find(|w| !w[0].contains_shape(&w[1])) {
            return Err(BadOption::NotNested {
                inner: w[1].clone(),
                outer: w[0].clone(),
            }
            .into());
        }
        if let Some(r) = steps.iter().find(|r| !r.is_contiguous()) {
            return Err(BadOption::NotContiguous { region: r.clone() }.into());
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
            return Err(BadOption::FusedAux {
                kernel: source.name().to_string(),
            }
            .into());
        }
        {
            let (s, d) = (self.slots.get(src)?, self.slots.get(dst)?);
            if src == dst {
                return Err(Mismatch::SameBuffer.into());
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
}

impl<R: DeviceRuntime, T: Cell> FusedSteps<T> for GpuController<R, T> {
    fn fused_steps(&mut self) -> usize {
        self.most_fused()
    }

    /// Compiles the fused kernels a launch of `steps` steps takes: the one
    /// of as many steps as fuse, then those of what is left, as
    /// [`GpuController::steps_on`] cuts them.
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        if steps < 2 || self.most_fused() < steps {
            return Ok(());
        }
        let mut at = 0;
        while steps - at >= 2 {
            at += self.fusable(kernel, steps - at)?.max(1);
        }
        Ok(())
    }

    /// Steps fuse in launches of as many as the kernel's fused kernel takes
    /// ([`GpuController::fusable`]); where that is fewer than asked, each
    /// launch but the last writes a scratch level the next reads, both
    /// scratch levels first given the source's cells the steps read (so the
    /// boundary cells no step writes read their source values, as in one
    /// launch).
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
}

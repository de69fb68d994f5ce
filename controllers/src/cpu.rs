//! The CPU backend: tiles in host memory, kernels on a rayon pool of the
//! device's own (so two CPU devices in one process never share threads).

use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::{Shape, Tile};
use kernels::{Cell, Frame, Kernel};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// Rows of dimension 0 per parallel task: a few tasks per thread for balance,
/// but never tiny ones.
fn rows_per_task(rows: usize, cells_per_row: usize, threads: usize) -> usize {
    let balanced = rows.div_ceil(threads * 4);
    let min_rows = 16_384usize.div_ceil(cells_per_row.max(1));
    balanced.max(min_rows).max(1)
}

pub struct CpuController<T> {
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    bufs: Vec<Option<Tile<T>>>,
    kernels: Vec<Arc<dyn Kernel<T>>>,
    kernel_seconds: f64,
}

impl<T: Cell> CpuController<T> {
    /// A device of `threads` threads. One thread runs kernels on the caller's
    /// thread; more get a dedicated pool.
    pub fn new(threads: usize) -> Result<CpuController<T>, DeviceError> {
        if threads == 0 {
            return Err(DeviceError::BadOption("threads must be at least 1".into()));
        }
        let pool = if threads > 1 {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("epsilod-cpu-{i}"))
                    .build()
                    .map_err(|e| DeviceError::Backend(e.to_string()))?,
            )
        } else {
            None
        };
        Ok(CpuController {
            threads,
            pool,
            bufs: Vec::new(),
            kernels: Vec::new(),
            kernel_seconds: 0.0,
        })
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    fn tile(&self, b: BufferId) -> Result<&Tile<T>, DeviceError> {
        self.bufs
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or(DeviceError::UnknownBuffer(b.0))
    }

    fn tile_mut(&mut self, b: BufferId) -> Result<&mut Tile<T>, DeviceError> {
        self.bufs
            .get_mut(b.0)
            .and_then(Option::as_mut)
            .ok_or(DeviceError::UnknownBuffer(b.0))
    }
}

impl<T: Cell> Controller<T> for CpuController<T> {
    fn describe(&self) -> String {
        format!("cpu:threads={}", self.threads)
    }

    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        let t = Tile::with_capacity(extent.clone(), capacity.clone(), T::zeroed())?;
        self.bufs.push(Some(t));
        Ok(BufferId(self.bufs.len() - 1))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.tile(buf)?;
        self.bufs[buf.0] = None;
        Ok(())
    }

    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        Ok(self.tile(buf)?.shape().clone())
    }

    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        Ok(self
            .tile_mut(buf)?
            .resize(extent.clone(), spare, T::zeroed())?)
    }

    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        Ok(self.tile_mut(buf)?.unpack(region, data)?)
    }

    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        Ok(self.tile(buf)?.pack_into(region, out)?)
    }

    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        Ok(self.tile_mut(buf)?.fill_with(region, f)?)
    }

    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.kernels.push(kernel);
        Ok(KernelId(self.kernels.len() - 1))
    }

    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        let k = self
            .kernels
            .get(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?
            .clone();
        self.tile(src)?;
        self.tile(dst)?;
        if src == dst {
            return Err(DeviceError::BufferMismatch("the same buffer twice".into()));
        }
        let [Some(s), Some(d)] = self
            .bufs
            .get_disjoint_mut([src.0, dst.0])
            .map_err(|_| DeviceError::UnknownBuffer(src.0))?
        else {
            return Err(DeviceError::UnknownBuffer(src.0));
        };
        let local = crate::launch::validate(
            k.as_ref(),
            (s.alloc_shape(), s.shape()),
            (d.alloc_shape(), d.shape()),
            region,
        )?;
        if region.is_empty() {
            return Ok(());
        }
        let frame = Frame::row_major(s.alloc_dims());
        let started = Instant::now();
        let plane = frame.plane();
        let slab = &mut d.as_slice_mut()[local[0].start * plane..local[0].end * plane];
        let src_data = s.as_slice();
        match &self.pool {
            None => k.apply(src_data, slab, &frame, &local),
            Some(pool) => {
                let cells_per_row: usize = local[1..].iter().map(|r| r.len()).product();
                let rows = rows_per_task(local[0].len(), cells_per_row, self.threads);
                let k = k.as_ref();
                pool.install(|| {
                    slab.par_chunks_mut(rows * plane)
                        .enumerate()
                        .for_each(|(i, chunk)| {
                            let mut sub = local.clone();
                            sub[0].start = local[0].start + i * rows;
                            sub[0].end = (sub[0].start + rows).min(local[0].end);
                            k.apply(src_data, chunk, &frame, &sub);
                        })
                });
            }
        }
        self.kernel_seconds += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn wait(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    fn take_kernel_seconds(&mut self) -> f64 {
        std::mem::take(&mut self.kernel_seconds)
    }
}

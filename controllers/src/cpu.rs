//! The CPU backend: tiles in host memory, kernels on a rayon pool of the
//! device's own (so two CPU devices in one process never share threads).

use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::{Shape, Tile};
use kernels::{Cell, Frame, Kernel};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// The fewest cells a parallel task computes: below about this, handing a
/// task to another thread and waking it costs more than the cells do.
const MIN_TASK_CELLS: usize = 16_384;

/// How a launch over `rows` rows of dimension 0, `cells_per_row` cells
/// each, is cut into parallel tasks on `threads` threads: the rows of each
/// task, in order. A few tasks per thread for balance, but none under
/// [`MIN_TASK_CELLS`] unless the whole region is (then it is one task), and
/// sizes that differ by at most a row. A border strip of a row or two is
/// one task: run where it is launched, it costs no hand-over to the pool.
fn task_rows(rows: usize, cells_per_row: usize, threads: usize) -> Vec<usize> {
    let min_rows = MIN_TASK_CELLS.div_ceil(cells_per_row.max(1));
    let tasks = (rows / min_rows).clamp(1, threads.max(1) * 4);
    let (base, extra) = (rows / tasks, rows % tasks);
    (0..tasks).map(|i| base + usize::from(i < extra)).collect()
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
        CpuController::pinned(threads, &[])
    }

    /// A device of `threads` threads whose pool's thread `i` runs only on
    /// core `cores[i % cores.len()]` (ids as [`core_affinity`] numbers
    /// them); no pinning where `cores` is empty, or for a one-thread device,
    /// whose kernels run on the caller's thread (pin that thread instead).
    /// Where the OS refuses, a thread runs unpinned.
    pub fn pinned(threads: usize, cores: &[usize]) -> Result<CpuController<T>, DeviceError> {
        if threads == 0 {
            return Err(DeviceError::BadOption("threads must be at least 1".into()));
        }
        let pool = if threads > 1 {
            let cores = cores.to_vec();
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("epsilod-cpu-{i}"))
                    .start_handler(move |i| {
                        if !cores.is_empty() {
                            let id = cores[i % cores.len()];
                            core_affinity::set_for_current(core_affinity::CoreId { id });
                        }
                    })
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
        let origin: Vec<i64> = s.alloc_shape().sigs().iter().map(|g| g.begin()).collect();
        let frame = Frame::row_major(s.alloc_dims()).with_origin(&origin);
        let started = Instant::now();
        let plane = frame.plane();
        let slab = &mut d.as_slice_mut()[local[0].start * plane..local[0].end * plane];
        let src_data = s.as_slice();
        let cells_per_row: usize = local[1..].iter().map(|r| r.len()).product();
        let tasks = task_rows(local[0].len(), cells_per_row, self.threads);
        match &self.pool {
            Some(pool) if tasks.len() > 1 => {
                let mut chunks = Vec::with_capacity(tasks.len());
                let (mut rest, mut start) = (slab, local[0].start);
                for rows in tasks {
                    let (chunk, tail) = rest.split_at_mut(rows * plane);
                    chunks.push((start..start + rows, chunk));
                    (rest, start) = (tail, start + rows);
                }
                let k = k.as_ref();
                pool.install(|| {
                    chunks.into_par_iter().for_each(|(rows, chunk)| {
                        let mut sub = local.clone();
                        sub[0] = rows;
                        k.apply(src_data, chunk, &frame, &sub);
                    })
                });
            }
            // One task (or one thread) runs on the calling thread.
            _ => k.apply(src_data, slab, &frame, &local),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row in exactly one task, in order; no task under the minimum
    /// unless the region is; never more than a few tasks per thread; sizes
    /// within a row of each other.
    #[test]
    fn task_rows_cover_every_row_once_in_tasks_worth_a_thread() {
        for threads in [1, 2, 3, 8, 16] {
            for cells_per_row in [1, 7, 130, 2048, 4096, 16_384, 100_000] {
                for rows in (1..70).chain([100, 1000, 4096, 8192]) {
                    let t = task_rows(rows, cells_per_row, threads);
                    let what = format!("{rows} rows of {cells_per_row} on {threads} threads");
                    assert_eq!(t.iter().sum::<usize>(), rows, "{what}: {t:?}");
                    assert!(t.len() <= threads * 4, "{what}: {t:?}");
                    let (lo, hi) = (t.iter().min().unwrap(), t.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{what}: {t:?}");
                    if rows * cells_per_row >= MIN_TASK_CELLS {
                        assert!(lo * cells_per_row >= MIN_TASK_CELLS, "{what}: {t:?}");
                    } else {
                        assert_eq!(t, [rows], "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_border_strip_is_one_task_and_a_block_is_spread() {
        // 2d4 4098^2 split in two: a one-row border strip, and the inner rows.
        assert_eq!(task_rows(1, 4096, 8), [1]);
        assert_eq!(task_rows(2047, 4096, 8).len(), 32);
        // A column strip of a 2-D block split by columns: one cell a row.
        assert_eq!(task_rows(4096, 1, 8), [4096]);
    }
}

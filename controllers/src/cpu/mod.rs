//! The CPU backend: tiles in host memory, kernels on a rayon pool of the
//! device's own (so two CPU devices in one process never share threads),
//! several iterations fused into one pass over memory where the skeleton
//! asks for them ([`fused`]).

mod bands;
mod fused;

use crate::capability::FusedSteps;
use crate::controller::{BufferId, Controller, KernelId};
use crate::cpu_time;
use crate::error::{BackendError, BadOption, DeviceError, ForeignError, Mismatch};
use bands::Bands;
use hitmap::{Shape, Tile};
use kernels::{Cell, Frame, Kernel};
use rayon::prelude::*;
use smallvec::SmallVec;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The fewest cells a parallel task computes: below about this, handing a
/// task to another thread and waking it costs more than the cells do.
const MIN_TASK_CELLS: usize = 16_384;

/// Cells of init values computed at once when filling a tile (64 MiB of
/// f64): a bounded fraction of a large tile, and many 2-d rows a thread.
const FILL_SLAB_CELLS: usize = 8 << 20;

/// The CPU seconds (and instructions) a launch's tasks took on the pool's
/// threads, each measured on the thread that ran it, to charge to the
/// launching thread ([`cpu_time`]); a pool thread's time between tasks is
/// not the kernel's.
#[derive(Default)]
struct PoolCpu(Mutex<Option<cpu_time::Charge>>);

impl PoolCpu {
    fn time(&self, task: impl FnOnce()) {
        if let ((), Some(t)) = cpu_time::timed(task) {
            let mut sum = self.0.lock().unwrap_or_else(|e| e.into_inner());
            *sum = Some(sum.map_or(t, |had| had + t));
        }
    }

    fn charge(self) {
        if let Some(t) = self.0.into_inner().unwrap_or_else(|e| e.into_inner()) {
            cpu_time::charge(t);
        }
    }
}

/// How a launch over `rows` rows of dimension 0, `cells_per_row` cells
/// each, is cut into parallel tasks on `threads` threads: the rows of each
/// task, in order. A few tasks per thread for balance, but none under
/// [`MIN_TASK_CELLS`] unless the whole region is (then it is one task), and
/// sizes that differ by at most a row. A border strip of a row or two is
/// one task: run where it is launched, it costs no hand-over to the pool.
fn task_rows(rows: usize, cells_per_row: usize, threads: usize) -> Vec<usize> {
    let min_rows = MIN_TASK_CELLS.div_ceil(cells_per_row.max(1));
    even_split(rows, (rows / min_rows).clamp(1, threads.max(1) * 4))
}

/// `rows` in `tasks` runs of sizes within one of each other.
fn even_split(rows: usize, tasks: usize) -> Vec<usize> {
    let (base, extra) = (rows / tasks, rows % tasks);
    (0..tasks).map(|i| base + usize::from(i < extra)).collect()
}

/// The most iterations one fused launch computes: past a few, the cones
/// of neighbouring tasks overlap more than the memory traffic saved.
const MAX_FUSED: usize = 16;

/// How a fused launch of `steps` over `rows` planes is cut into tasks on
/// `threads` threads: as many as a one-step launch (a few per thread, so a
/// thread the OS takes away leaves its unstarted tasks to the others), but
/// none so thin that the cone it shares with its neighbours (recomputed by
/// both) outweighs it, and none under [`MIN_TASK_CELLS`] unless the whole
/// launch is; a whole number per thread, and where planes are too few for
/// thick tasks, as many as there are threads, each at least two cones and
/// the least cells thick.
fn fused_task_rows(
    rows: usize,
    plane: usize,
    steps: usize,
    reach: usize,
    threads: usize,
) -> Vec<usize> {
    let min_rows = (8 * steps * reach.max(1)).max(MIN_TASK_CELLS.div_ceil(plane.max(1)));
    let threads = threads.max(1);
    let tasks = (rows / min_rows).clamp(1, threads * 4);
    let cone = steps * reach.max(1);
    let tasks = if tasks >= threads {
        // Whole rounds: a last task alone would leave the other threads idle.
        tasks - tasks % threads
    } else {
        // Too few planes for thick tasks (3-d and 4-d tiles): up to one per
        // thread, each at least two cones thick, beats fewer threads doing
        // it all.
        let thick = (2 * cone).max(MIN_TASK_CELLS.div_ceil(plane.max(1)));
        tasks.max((rows / thick).min(threads))
    };
    even_split(rows, tasks)
}

/// Bytes a fused launch keeps each thread's windows in: the core's
/// second-level cache, as Linux reports it; 1 MiB where it does not say.
/// Smaller windows ran slower and larger ones no faster (docs/benchmarks.md,
/// "Fused launches against one-step launches and the copy"): the planes a
/// window keeps for the next wave are copied at every wave, so short waves
/// cost more than windows that spill into the third-level cache.
fn window_budget() -> usize {
    l2_cache_bytes()
}

/// How one-step launches band their planes by default ([`bands`]): by
/// the second-level cache, in bands whose planes take a quarter of it.
/// Larger bands gained less, smaller ones no more (docs/benchmarks.md,
/// "Apps against the copy roofline").
fn one_step_bands() -> Bands {
    Bands::Cache(l2_cache_bytes())
}

/// Bytes of a row of a band of a 2-d fused launch: a sixth of the core's
/// first-level data cache, so that the rows a kernel row reads and writes
/// stay in it, and the windows (a [`BANDED_WINDOW_SHARE`] of theirs) hold
/// many rows. Narrower bands ran slower, and whole rows slower by the
/// kernels' CPU time through the CLI, level in one criterion run at 8194²
/// (docs/benchmarks.md, "Fused launches against one-step launches and the
/// copy").
fn fused_band_bytes() -> usize {
    l1d_cache_bytes() / 6
}

/// The part of [`window_budget`] the windows of a launch in bands take:
/// the rest of the L2 is left to the source and destination rows streamed
/// through it, which whole rows' longer waves did not leave room for.
const BANDED_WINDOW_SHARE: usize = 4;

/// How many times whole rows' windows the windows of a launch in bands may
/// take: they are buffers of whole rows holding a band's cells, so on wide
/// grids a band's wave would make them many times larger.
const MAX_BANDED_WINDOW_GROWTH: usize = 4;

/// Planes each step of a fused launch advances per wave: what `windows`
/// windows of `budget` bytes hold of rows of `row_bytes`, less the `kept`
/// + 1 planes a window keeps for the next wave; at least one.
fn wave_in(budget: usize, windows: usize, row_bytes: usize, kept: usize) -> usize {
    (budget / (windows * row_bytes).max(1))
        .saturating_sub(kept + 1)
        .max(1)
}

/// The wave of a fused launch with `window_bytes` for its `windows`, on
/// planes of `plane_bytes`: in bands whose rows take `band_row_bytes`, a
/// [`BANDED_WINDOW_SHARE`] of the bytes in a band's rows, but windows (buffers
/// of whole planes) at most [`MAX_BANDED_WINDOW_GROWTH`] times whole planes'.
fn fused_wave(
    window_bytes: usize,
    windows: usize,
    plane_bytes: usize,
    band_row_bytes: Option<usize>,
    kept: usize,
) -> usize {
    let whole = wave_in(window_bytes, windows, plane_bytes, kept);
    match band_row_bytes {
        None => whole,
        Some(row) => wave_in(window_bytes / BANDED_WINDOW_SHARE, windows, row, kept)
            .min(MAX_BANDED_WINDOW_GROWTH * (whole + kept + 1) - (kept + 1)),
    }
}

/// One core's first-level data cache, as Linux reports it; 32 KiB where it
/// does not say.
fn l1d_cache_bytes() -> usize {
    let dir = "/sys/devices/system/cpu/cpu0/cache/index0";
    let data = std::fs::read_to_string(format!("{dir}/type")).is_ok_and(|t| t.trim() == "Data")
        && std::fs::read_to_string(format!("{dir}/level")).is_ok_and(|l| l.trim() == "1");
    data.then(|| cache_size(&format!("{dir}/size")))
        .flatten()
        .unwrap_or(32 << 10)
}

/// A cache's size from its `size` file in sysfs (`48K`, `2048K`, `300M`).
fn cache_size(path: &str) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    let (num, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: usize = num.parse().ok()?;
    match unit {
        "K" => Some(n << 10),
        "M" => Some(n << 20),
        _ => None,
    }
}

/// One core's second-level cache, as Linux reports it; 1 MiB where it does
/// not say. What a fused launch's windows are sized by, and what decides
/// whether fusing saves memory traffic at all.
pub fn l2_cache_bytes() -> usize {
    cache_size("/sys/devices/system/cpu/cpu0/cache/index2/size").unwrap_or(1 << 20)
}

/// A loaded kernel and the auxiliary field buffers bound to it.
type Loaded<T> = (Arc<dyn Kernel<T>>, Vec<BufferId>);

/// A launch's kernel with its tiles: the source, the destination and the
/// auxiliary fields bound to the kernel.
struct Operands<'a, T> {
    k: Arc<dyn Kernel<T>>,
    s: &'a Tile<T>,
    d: &'a mut Tile<T>,
    aux: Vec<&'a Tile<T>>,
}

/// A launch's operands, checked: every buffer exists, and all are
/// distinct (only reads may share a buffer, and nothing needs to).
fn operands<'a, T>(
    kernels: &[Loaded<T>],
    bufs: &'a mut [Option<Tile<T>>],
    kernel: KernelId,
    src: BufferId,
    dst: BufferId,
) -> Result<Operands<'a, T>, DeviceError> {
    let (k, aux_ids) = kernels
        .get(kernel.0)
        .ok_or(DeviceError::UnknownKernel(kernel.0))?;
    let ids: Vec<BufferId> = [src, dst]
        .into_iter()
        .chain(aux_ids.iter().copied())
        .collect();
    for (i, b) in ids.iter().enumerate() {
        if !matches!(bufs.get(b.0), Some(Some(_))) {
            return Err(DeviceError::UnknownBuffer(b.0));
        }
        if ids[..i].contains(b) {
            return Err(Mismatch::SameBuffer.into());
        }
    }
    // Disjoint borrows: each slot is visited once.
    let (mut s, mut d, mut aux) = (None, None, vec![None; aux_ids.len()]);
    for (i, slot) in bufs.iter_mut().enumerate() {
        let Some(tile) = slot.as_mut() else { continue };
        if i == dst.0 {
            d = Some(tile);
        } else if i == src.0 {
            s = Some(&*tile);
        } else if let Some(j) = aux_ids.iter().position(|b| b.0 == i) {
            aux[j] = Some(&*tile);
        }
    }
    match (s, d) {
        (Some(s), Some(d)) => Ok(Operands {
            k: k.clone(),
            s,
            d,
            aux: aux.into_iter().flatten().collect(),
        }),
        _ => Err(DeviceError::UnknownBuffer(src.0)),
    }
}

pub struct CpuController<T> {
    threads: usize,
    pool: Option<rayon::ThreadPool>,
    bufs: Vec<Option<Tile<T>>>,
    /// Loaded kernels, each with its bound auxiliary field buffers.
    kernels: Vec<Loaded<T>>,
    kernel_seconds: f64,
    /// Bytes each task of a fused launch keeps its windows in.
    window_bytes: usize,
    /// Columns of a band of a 2-d fused launch (0: whole rows).
    band_cols: usize,
    /// Init values computed at once by `fill` (see [`FILL_SLAB_CELLS`]).
    fill_slab_cells: usize,
    /// How a one-step launch walks each task's planes ([`bands`]).
    bands: Bands,
    /// The windows of each task of a fused launch, kept between launches.
    scratch: Vec<Vec<Vec<T>>>,
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
            return Err(BadOption::NoThreads.into());
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
                    .map_err(|e| BackendError::ThreadPool(ForeignError::new(e)))?,
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
            window_bytes: window_budget(),
            band_cols: fused_band_bytes() / std::mem::size_of::<T>().max(1),
            fill_slab_cells: FILL_SLAB_CELLS,
            bands: one_step_bands(),
            scratch: Vec::new(),
        })
    }

    /// The same device keeping each fused task's windows in `bytes` of
    /// cache (default: the second-level cache). Tiny budgets make
    /// many short waves: tests use them to exercise every path.
    pub fn window_bytes(mut self, bytes: usize) -> CpuController<T> {
        self.window_bytes = bytes;
        self
    }

    /// The same device cutting 2-d fused launches into bands of at most
    /// `cols` columns (0: whole rows; default: a row of a sixth of the L1d,
    /// [`fused_band_bytes`]). Tests use narrow bands to exercise every path.
    pub fn band_cols(mut self, cols: usize) -> CpuController<T> {
        self.band_cols = cols;
        self
    }

    /// The same device filling tiles `cells` init values at a time (at
    /// least a few rows a thread; default 8 Mi): tests use tiny slabs to
    /// fill small tiles in several.
    pub fn fill_slab_cells(mut self, cells: usize) -> CpuController<T> {
        self.fill_slab_cells = cells.max(1);
        self
    }

    /// The same device walking the planes of every one-step launch on a
    /// grid of three or more dimensions in bands of `rows` rows of
    /// dimension 1 (at least one), whatever the cache: tests use it to
    /// exercise every path.
    pub fn band_rows(mut self, rows: usize) -> CpuController<T> {
        self.bands = Bands::Rows(rows.max(1));
        self
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

    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.tile(from)?;
        self.tile(to)?;
        crate::controller::check_copy(from, to, region)?;
        // Out for the copy, so both tiles can be borrowed; back whatever
        // the copy gives.
        let src = self.bufs[from.0].take().expect("checked above");
        let mut copy = || -> Result<(), DeviceError> {
            let cells = src.select(region)?;
            self.tile_mut(to)?.select_mut(region)?.assign(&cells);
            Ok(())
        };
        let copied = copy();
        self.bufs[from.0] = Some(src);
        copied
    }

    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        self.tile(buf)?;
        if region.is_empty() {
            return Ok(self.tile_mut(buf)?.unpack(region, &[])?);
        }
        // In slabs of a bounded size: the values of a whole large tile
        // would be a third buffer of its size beside the two tiles (measured
        // at 40000^2: 18.7 GB where the tiles hold 12.8). A slab has a few
        // rows a thread at least, which for 3-d tiles (a row is a plane)
        // may be more than the bound.
        let row = (region.card() / region.sig(0).card()).max(1);
        let rows = self.fill_slab_cells.div_ceil(row).max(self.threads * 4);
        for slab in crate::fill::slabs(region, rows) {
            let vals = match &self.pool {
                Some(pool) => pool.install(|| crate::fill::values(&slab, f)),
                None => crate::fill::values_serial(&slab, f),
            };
            self.tile_mut(buf)?.unpack(&slab, &vals)?;
        }
        Ok(())
    }

    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.kernels.push((kernel, Vec::new()));
        Ok(KernelId(self.kernels.len() - 1))
    }

    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        for &b in aux {
            self.tile(b)?;
        }
        let slot = self
            .kernels
            .get_mut(kernel.0)
            .ok_or(DeviceError::UnknownKernel(kernel.0))?;
        slot.1 = aux.to_vec();
        Ok(())
    }

    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        let Operands { k, s, d, aux } = operands(&self.kernels, &mut self.bufs, kernel, src, dst)?;
        let local = crate::launch::validate(
            k.as_ref(),
            (s.alloc_shape(), s.shape()),
            (d.alloc_shape(), d.shape()),
            region,
        )?;
        let aux_shapes: Vec<(&Shape, &Shape)> =
            aux.iter().map(|t| (t.alloc_shape(), t.shape())).collect();
        crate::launch::validate_aux(k.as_ref(), s.alloc_shape(), &aux_shapes, region)?;
        if region.is_empty() {
            return Ok(());
        }
        let aux: Vec<&[T]> = aux.iter().map(|t| t.as_slice()).collect();
        let aux = &aux[..];
        let origin: SmallVec<[i64; 4]> = s.alloc_shape().sigs().iter().map(|g| g.begin()).collect();
        let frame = Frame::row_major(s.alloc_dims()).with_origin(&origin);
        let started = Instant::now();
        let plane = frame.plane();
        let slab = &mut d.as_slice_mut()[local[0].start * plane..local[0].end * plane];
        let src_data = s.as_slice();
        let cells_per_row: usize = local[1..].iter().map(|r| r.len()).product();
        let tasks = task_rows(local[0].len(), cells_per_row, self.threads);
        let fp = k.footprint();
        let bands = self
            .bands
            .of(&local, fp.low(), fp.high(), std::mem::size_of::<T>());
        // Each band over all of a task's planes before the next band: the
        // destination stays the task's whole planes, only the region shrinks.
        let apply = |chunk: &mut [T], sub: &mut [std::ops::Range<usize>]| match &bands {
            None => k.apply_aux(src_data, aux, chunk, &frame, sub),
            Some(bands) => {
                for band in bands {
                    sub[1] = band.clone();
                    k.apply_aux(src_data, aux, chunk, &frame, sub);
                }
            }
        };
        match &self.pool {
            Some(pool) if tasks.len() > 1 => {
                let mut chunks = Vec::with_capacity(tasks.len());
                let (mut rest, mut start) = (slab, local[0].start);
                for rows in tasks {
                    let (chunk, tail) = rest.split_at_mut(rows * plane);
                    chunks.push((start..start + rows, chunk));
                    (rest, start) = (tail, start + rows);
                }
                let cpu = PoolCpu::default();
                pool.install(|| {
                    chunks.into_par_iter().for_each(|(rows, chunk)| {
                        let mut sub = local.clone();
                        sub[0] = rows;
                        cpu.time(|| apply(chunk, &mut sub));
                    })
                });
                cpu.charge();
            }
            // One task (or one thread) runs on the calling thread.
            _ => {
                let mut sub = local.clone();
                let ((), spent) = cpu_time::timed(|| apply(slab, &mut sub));
                if let Some(t) = spent {
                    cpu_time::charge(t);
                }
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

    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        Some(self)
    }
}

/// Temporal blocking: each task's planes walked as a wavefront (`fused.rs`).
impl<T: Cell> FusedSteps<T> for CpuController<T> {
    fn fused_steps(&mut self) -> usize {
        MAX_FUSED
    }

    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        if steps.len() < 2 {
            return match steps {
                [one] => self.launch(kernel, src, dst, one),
                _ => Ok(()),
            };
        }
        if steps.len() > MAX_FUSED {
            return Err(BadOption::TooManySteps {
                steps: steps.len(),
                most: MAX_FUSED,
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
        let Operands { k, s, d, aux } = operands(&self.kernels, &mut self.bufs, kernel, src, dst)?;
        if !aux.is_empty() || !k.aux_fields().is_empty() {
            // The fused waves compute in windows of their own geometry, which
            // an auxiliary field's buffer does not have.
            return Err(BadOption::FusedAux {
                kernel: k.name().to_string(),
            }
            .into());
        }
        let local = steps
            .iter()
            .map(|r| {
                crate::launch::validate(
                    k.as_ref(),
                    (s.alloc_shape(), s.shape()),
                    (d.alloc_shape(), d.shape()),
                    r,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        if steps.iter().any(Shape::is_empty) {
            // Nested: the last is empty too, and nothing is stored.
            return Ok(());
        }
        let origin: Vec<i64> = s.alloc_shape().sigs().iter().map(|g| g.begin()).collect();
        let frame = Frame::row_major(s.alloc_dims()).with_origin(&origin);
        let fp = k.footprint();
        let reach = (fp.low()[0], fp.high()[0]);
        let nd = frame.ndims();
        let cross = (fp.low()[nd - 1], fp.high()[nd - 1]);
        let plane = frame.plane();
        let band = match local[local.len() - 1][nd - 1].len() {
            cols if nd == 2 && self.band_cols > 0 && cols > self.band_cols => {
                // Bands of even widths: no thin last one paying a whole cone.
                cols.div_ceil(cols.div_ceil(self.band_cols))
            }
            _ => 0,
        };
        // The windows hold a band's rows, with the cone its first step
        // computes beside it.
        let size = std::mem::size_of::<T>();
        let band_row = (band > 0).then(|| (band + steps.len() * (cross.0 + cross.1)).min(plane));
        let wave = fused_wave(
            self.window_bytes,
            steps.len() - 1,
            plane * size,
            band_row.map(|r| r * size),
            reach.0 + reach.1,
        );
        let started = Instant::now();
        let fused = fused::Fused {
            kernel: k.as_ref(),
            src: s.as_slice(),
            frame: &frame,
            steps: &local,
            reach,
            wave,
            band,
            cross,
        };
        let last = local[local.len() - 1][0].clone();
        let tasks = match &self.pool {
            Some(_) => fused_task_rows(
                last.len(),
                plane,
                steps.len(),
                reach.0 + reach.1,
                self.threads,
            ),
            None => vec![last.len()],
        };
        if self.scratch.len() < tasks.len() {
            self.scratch.resize_with(tasks.len(), Vec::new);
        }
        let mut chunks = Vec::with_capacity(tasks.len());
        let (mut rest, mut start) = (
            &mut d.as_slice_mut()[last.start * plane..last.end * plane],
            last.start,
        );
        for (rows, scratch) in tasks.into_iter().zip(self.scratch.iter_mut()) {
            let (chunk, tail) = rest.split_at_mut(rows * plane);
            chunks.push((start..start + rows, chunk, scratch));
            (rest, start) = (tail, start + rows);
        }
        match &self.pool {
            Some(pool) if chunks.len() > 1 => {
                let cpu = PoolCpu::default();
                pool.install(|| {
                    chunks
                        .into_par_iter()
                        .for_each(|(rows, out, scratch)| cpu.time(|| fused.run(rows, out, scratch)))
                });
                cpu.charge();
            }
            _ => {
                let ((), spent) = cpu_time::timed(|| {
                    for (rows, out, scratch) in chunks {
                        fused.run(rows, out, scratch);
                    }
                });
                if let Some(t) = spent {
                    cpu_time::charge(t);
                }
            }
        }
        self.kernel_seconds += started.elapsed().as_secs_f64();
        Ok(())
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

    /// Fused launches: every plane in one task, in order; a few tasks per
    /// thread where there are planes enough, a whole number per thread;
    /// none thinner than two cones of reach (each recomputed by two tasks)
    /// or under the minimum of cells unless the launch is one task.
    #[test]
    fn fused_tasks_cover_every_plane_and_outweigh_their_cones() {
        for threads in [1, 2, 3, 8] {
            for (steps, reach) in [(2, 2), (4, 2), (8, 4)] {
                for plane in [64, 4096, 66_564, 287_496] {
                    for rows in [1, 7, 63, 64, 198, 300, 4096] {
                        let t = fused_task_rows(rows, plane, steps, reach, threads);
                        let what = format!("{rows} planes of {plane} on {threads} threads");
                        assert_eq!(t.iter().sum::<usize>(), rows, "{what}");
                        assert!(t.len() <= threads * 4, "{what}: {t:?}");
                        assert!(
                            t.len() < threads || t.len().is_multiple_of(threads),
                            "{what}: {t:?}"
                        );
                        if t.len() > 1 {
                            let thin = t.iter().min().unwrap();
                            assert!(*thin >= 2 * steps * reach, "{what}: {t:?}");
                            assert!(thin * plane >= MIN_TASK_CELLS, "{what}: {t:?}");
                        }
                    }
                }
            }
        }
        assert_eq!(fused_task_rows(4096, 4096, 4, 2, 2).len(), 8);
    }

    /// The 3-d and 4-d tiles whose fused launches left a thread idle: 3d6
    /// 200^3 (198 planes, three thick tasks on two threads) and 4d8 66^4
    /// (64 planes, one task).
    #[test]
    fn fused_tasks_keep_every_thread_busy_on_few_planes() {
        assert_eq!(fused_task_rows(198, 200 * 200, 4, 2, 2), [99, 99]);
        assert_eq!(fused_task_rows(64, 66 * 66 * 66, 4, 2, 2), [32, 32]);
        // Too few planes for two cones a thread: one task.
        assert_eq!(fused_task_rows(30, 66 * 66 * 66, 4, 2, 2), [30]);
        // Many threads: as many tasks two cones thick as fit.
        assert_eq!(fused_task_rows(198, 200 * 200, 4, 2, 16).len(), 12);
        assert_eq!(fused_task_rows(64, 66 * 66 * 66, 4, 2, 16), [16; 4]);
    }

    /// The thinnest tasks the split makes, two cones each (3d6 34x130x130,
    /// 4 steps, 2 threads: 32 planes in two tasks of 16), give the bits of
    /// the steps one by one.
    #[test]
    fn fused_tasks_two_cones_thick_give_the_bits_of_single_steps() {
        use crate::conformance::{cones, fused, probe_value, stepwise};
        use kernels::{library_kernel, KernelChoice, Library};
        let all = Shape::from_sizes(&[34, 130, 130]);
        let interior = all.shrink(&[1, 1, 1], &[1, 1, 1]);
        assert_eq!(fused_task_rows(32, 130 * 130, 4, 2, 2), [16, 16]);
        let steps = cones(&interior, 4, &[1, 1, 1], &[1, 1, 1], &interior);
        let kernel: Arc<dyn Kernel<f32>> = Arc::from(library_kernel::<f32>(
            Library::S3d6,
            KernelChoice::Specialized,
        ));
        let mut c = CpuController::<f32>::new(2).unwrap();
        let k = c.load(kernel.clone()).unwrap();
        let (a, b) = (c.alloc(&all, &all).unwrap(), c.alloc(&all, &all).unwrap());
        fused(&mut c, k, (a, b), &all, &probe_value, &steps);
        let mut got = Vec::new();
        c.read(b, &interior, &mut got).unwrap();
        let want = stepwise(&kernel, &all, &probe_value, &steps, &interior);
        assert!(
            got.iter()
                .map(|x| x.to_bits())
                .eq(want.iter().map(|x| x.to_bits())),
            "fused 3d6 in two-cone tasks differs from the steps one by one"
        );
    }

    /// The wave of a launch in bands holds its windows to a few times whole
    /// rows' memory on wide grids, and is the band's own where rows are
    /// narrow (2d4 f32, 4 steps, reach 1 each side, a 2 MiB L2).
    #[test]
    fn banded_windows_stay_within_a_few_times_whole_rows() {
        let l2 = 2 << 20;
        let rows = |wave: usize| wave + 3;
        // 4098 columns in two bands: the band's wave, longer than whole rows'.
        let whole = fused_wave(l2, 3, 4098 * 4, None, 2);
        let banded = fused_wave(l2, 3, 4098 * 4, Some((2049 + 8) * 4), 2);
        assert_eq!(
            banded,
            wave_in(l2 / BANDED_WINDOW_SHARE, 3, (2049 + 8) * 4, 2)
        );
        assert!(banded < whole);
        for cols in [16_386, 65_538, 262_146] {
            let whole = fused_wave(l2, 3, cols * 4, None, 2);
            let banded = fused_wave(l2, 3, cols * 4, Some((2048 + 8) * 4), 2);
            assert!(
                rows(banded) <= MAX_BANDED_WINDOW_GROWTH * rows(whole),
                "{cols}: {banded} against {whole}"
            );
        }
        // Wide rows: the cap, not the band, decides.
        let banded = fused_wave(l2, 3, 262_146 * 4, Some((2048 + 8) * 4), 2);
        assert!(banded < wave_in(l2 / BANDED_WINDOW_SHARE, 3, (2048 + 8) * 4, 2));
        assert_eq!(fused_wave(1, 3, 1 << 20, Some(1 << 10), 2), 1);
    }

    /// 2-d fused launches cut into bands of columns give the bits of the
    /// steps one by one: bands that do not divide the width, bands of a
    /// column (narrower than the cone), stencils reaching 2 and one-sided
    /// ones, diagonals; final regions on the boundary columns (cones
    /// clipped there), inside (cones free) and a strip narrower than a band;
    /// windows of a plane (every band's kept columns slid) and of the L2.
    /// The library's one-sided stencil reaches left and up; two more
    /// kernels reach further right than left (and down than up), so that
    /// a band's cone or kept columns taking one side's reach for the
    /// other's shows.
    #[test]
    fn fused_launches_in_bands_give_the_bits_of_single_steps() {
        use crate::conformance::{cones, fused, probe_value, stepwise};
        use hitmap::Sig;
        use kernels::{library_kernel, KernelChoice, Library};
        let all = Shape::from_sizes(&[37, 45]);
        let library = [
            Library::S2d4,
            Library::S2dnc8,
            Library::S2df5,
            Library::S2d8,
        ]
        .map(|lib| -> (String, Arc<dyn Kernel<f32>>) {
            let k = library_kernel::<f32>(lib, KernelChoice::Specialized);
            (lib.to_string(), Arc::from(k))
        });
        let leaning = [
            (
                "right",
                "[1, 0]",
                "[0, 2]",
                "u[0,0] + u[-1,0] * 0.5 - u[0,2] * 0.25 + u[0,1]",
            ),
            (
                "down-right",
                "[0, 1]",
                "[2, 3]",
                "u[2,3] * 0.5 + u[0,-1] * 0.25 - u[1,0]",
            ),
        ]
        .map(
            |(name, low, high, update)| -> (String, Arc<dyn Kernel<f32>>) {
                let text = format!(
                    "name = \"{name}\"\nlow = {low}\nhigh = {high}\nupdate = \"{update}\"\n"
                );
                (name.to_string(), expr_kernel(&text))
            },
        );
        for (lib, kernel) in library.into_iter().chain(leaning) {
            let fp = kernel.footprint();
            let (low, high) = (fp.low().to_vec(), fp.high().to_vec());
            let interior = all.shrink(
                &[low[0] as i64, low[1] as i64],
                &[high[0] as i64, high[1] as i64],
            );
            let l = interior.sig(1).begin();
            let finals = [
                interior.clone(),
                interior.shrink(&[3, 4], &[2, 5]),
                interior.with_sig(1, Sig::range(l, l + 2)),
                interior.with_sig(1, Sig::range(l + 9, l + 12)),
            ];
            for (band, window) in [(1, 1), (2, 1 << 20), (3, 1), (7, 1 << 20), (16, 1), (40, 1)] {
                let mut c = CpuController::<f32>::new(2)
                    .unwrap()
                    .window_bytes(window)
                    .band_cols(band);
                let k = c.load(kernel.clone()).unwrap();
                let (a, b) = (c.alloc(&all, &all).unwrap(), c.alloc(&all, &all).unwrap());
                for steps in [2, 4, 5] {
                    for f in &finals {
                        let cones = cones(f, steps, &low, &high, &interior);
                        fused(&mut c, k, (a, b), &all, &probe_value, &cones);
                        let mut got = Vec::new();
                        c.read(b, f, &mut got).unwrap();
                        let want = stepwise(&kernel, &all, &probe_value, &cones, f);
                        assert!(
                            got.iter()
                                .map(|x| x.to_bits())
                                .eq(want.iter().map(|x| x.to_bits())),
                            "{lib}, {steps} steps over {f} in bands of {band}, windows of {window} bytes"
                        );
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

    /// What a one-step launch of `kernel` over `region` leaves in the whole
    /// destination (both filled with probe values first, so a cell written
    /// outside the region, or one of it left unwritten, shows), on `c`.
    fn launch_bits(
        mut c: CpuController<f32>,
        kernel: Arc<dyn Kernel<f32>>,
        ext: &Shape,
        region: &Shape,
    ) -> Vec<u32> {
        use crate::conformance::probe_value;
        let (a, b) = (c.alloc(ext, ext).unwrap(), c.alloc(ext, ext).unwrap());
        c.fill(a, ext, &probe_value).unwrap();
        c.fill(b, ext, &|i| probe_value(i) + 3.0).unwrap();
        let fields: Vec<BufferId> = kernel
            .aux_fields()
            .iter()
            .map(|f| {
                let buf = c.alloc(ext, ext).unwrap();
                c.fill(buf, ext, f.as_ref()).unwrap();
                buf
            })
            .collect();
        let k = c.load(kernel).unwrap();
        c.bind_aux(k, &fields).unwrap();
        c.launch(k, a, b, region).unwrap();
        let mut out = Vec::new();
        c.read(b, ext, &mut out).unwrap();
        out.iter().map(|x| x.to_bits()).collect()
    }

    /// The kernel of an expression spec's text.
    fn expr_kernel(text: &str) -> Arc<dyn Kernel<f32>> {
        let spec = kernels::ExprSpec::from_toml(text, "test.toml").unwrap();
        Arc::new(kernels::ExprKernel::<f32>::new(&spec))
    }

    /// A 3-d kernel reading an auxiliary field at offsets.
    fn aux_kernel_3d() -> Arc<dyn Kernel<f32>> {
        expr_kernel(
            "name = \"aux3\"\nlow = [1, 1, 1]\nhigh = [1, 1, 1]\n\
             aux = { k = \"g[0] * 0.5 - g[1] / 3 + g[2] * 0.25\" }\n\
             update = \"u[0,0,0] * k[0,1,0] + k[-1,0,1] - u[1,-1,0] + u[0,0,-1]\"\n",
        )
    }

    /// Banded one-step launches give the bits of whole-plane ones: 3-d and
    /// 4-d grids (away from the origin), bands of one row and bands that do
    /// not divide the rows, regions of the interior, of boundary planes and
    /// of boundary rows, one thread and two (several tasks), a kernel
    /// reading an auxiliary field.
    #[test]
    fn banded_launches_give_the_bits_of_whole_planes() {
        const CACHE: usize = 16 << 10;
        use kernels::{library_kernel, KernelChoice, Library};
        let lib = |l| -> Arc<dyn Kernel<f32>> {
            Arc::from(library_kernel::<f32>(l, KernelChoice::Specialized))
        };
        let ext3 = Shape::from_ranges(&[(-2, 32), (3, 43), (0, 36)]);
        let ext4 = Shape::from_ranges(&[(0, 60), (1, 11), (0, 10), (-1, 11)]);
        let cases = [
            (
                "3d6",
                lib(Library::S3d6),
                &ext3,
                vec![
                    ext3.shrink(&[1, 1, 1], &[1, 1, 1]),
                    Shape::from_ranges(&[(-1, 0), (4, 42), (1, 35)]),
                    Shape::from_ranges(&[(-1, 31), (4, 5), (1, 35)]),
                    Shape::from_ranges(&[(-1, 31), (41, 42), (1, 35)]),
                    Shape::from_ranges(&[(5, 9), (10, 23), (1, 2)]),
                ],
            ),
            (
                "3d27",
                lib(Library::S3d27),
                &ext3,
                vec![ext3.shrink(&[1, 1, 1], &[1, 1, 1])],
            ),
            (
                "aux",
                aux_kernel_3d(),
                &ext3,
                vec![
                    ext3.shrink(&[1, 1, 1], &[1, 1, 1]),
                    Shape::from_ranges(&[(30, 31), (4, 42), (1, 35)]),
                ],
            ),
            (
                "4d8",
                lib(Library::S4d8),
                &ext4,
                vec![
                    ext4.shrink(&[1, 1, 1, 1], &[1, 1, 1, 1]),
                    Shape::from_ranges(&[(58, 59), (2, 10), (1, 9), (0, 10)]),
                    Shape::from_ranges(&[(1, 59), (9, 10), (1, 9), (0, 10)]),
                ],
            ),
        ];
        for (name, kernel, ext, regions) in cases {
            for region in &regions {
                for threads in [1, 2] {
                    let mut whole = CpuController::<f32>::new(threads).unwrap();
                    whole.bands = Bands::Cache(usize::MAX);
                    let want = launch_bits(whole, kernel.clone(), ext, region);
                    for rows in [1, 2, 3, 7, 1000] {
                        let banded = CpuController::<f32>::new(threads).unwrap().band_rows(rows);
                        assert!(
                            launch_bits(banded, kernel.clone(), ext, region) == want,
                            "{name} over {region:?} on {threads} threads in bands of {rows}"
                        );
                    }
                    // Bands sized by a cache.
                    let mut by_cache = CpuController::<f32>::new(threads).unwrap();
                    by_cache.bands = Bands::Cache(CACHE);
                    assert!(
                        launch_bits(by_cache, kernel.clone(), ext, region) == want,
                        "{name} over {region:?} on {threads} threads in bands by the cache"
                    );
                }
            }
        }
        // That cache bands the interiors above; they split into several
        // tasks on two threads.
        let local3 = [1..33, 1..39, 1..35];
        let bands = Bands::Cache(CACHE).of(&local3, &[1; 3], &[1; 3], 4);
        assert!(bands.expect("banded").len() > 1);
        assert_eq!(task_rows(32, 38 * 34, 2).len(), 2);
        assert_eq!(task_rows(58, 8 * 8 * 10, 2).len(), 2);
    }

    /// A launch charges its thread CPU time to the launching thread: no
    /// more than its wall time on each of the device's threads, and at
    /// least what the work must cost; nothing for an empty region.
    #[test]
    fn launches_charge_their_cpu_time_to_the_launching_thread() {
        use kernels::{library_kernel, KernelChoice, Library};
        let _on = cpu_time::measure();
        for threads in [1, 2] {
            let mut cpu = CpuController::<f32>::new(threads).unwrap();
            let all = Shape::from_sizes(&[1026, 1026]);
            let (a, b) = (
                cpu.alloc(&all, &all).unwrap(),
                cpu.alloc(&all, &all).unwrap(),
            );
            cpu.fill(a, &all, &|i| i[0] as f32).unwrap();
            let k = cpu
                .load(Arc::from(library_kernel::<f32>(
                    Library::S2d4,
                    KernelChoice::Specialized,
                )))
                .unwrap();
            let inner = Shape::from_ranges(&[(1, 1025), (1, 1025)]);
            cpu_time::take_charged();
            cpu.launch(k, a, b, &Shape::from_ranges(&[(1, 1), (1, 1025)]))
                .unwrap();
            assert_eq!(cpu_time::take_charged(), None, "an empty launch");
            cpu.take_kernel_seconds();
            for _ in 0..20 {
                cpu.launch(k, a, b, &inner).unwrap();
                let steps = [inner.clone(), Shape::from_ranges(&[(2, 1024), (2, 1024)])];
                cpu.launch_steps(k, a, b, &steps).unwrap();
            }
            let wall = cpu.take_kernel_seconds();
            let spent = cpu_time::take_charged()
                .expect("Linux has thread CPU clocks")
                .seconds;
            // CPU time, unlike wall time, does not depend on the machine's
            // load: sixty launches over a million cells cannot take under a
            // millisecond of it, nor more than the threads' share of the wall.
            assert!(
                spent > 1e-3 && spent <= threads as f64 * wall * 1.05 + 1e-3,
                "{threads} threads: {spent} CPU s in {wall} wall s"
            );
        }
    }
}

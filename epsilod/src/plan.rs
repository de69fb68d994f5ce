//! A run, validated: what [`Skeleton`](crate::Skeleton) builds and the
//! executors carry out. Nothing in it changes once built, so every rank of a
//! job can derive the same layout and owners from it.

use crate::checkpoint::{self, Checkpointing, Claim, DirLock, Expect, Origin, Restart};
use crate::depth_choice::DepthFacts;
use crate::devices::{DeviceKind, DeviceSpec};
use crate::error::{PlacementError, SetupError, SizeError};
use crate::job::JobInfo;
pub use crate::options::Observer;
use crate::options::RunOptions;
use crate::report::{
    median, CheckpointRecord, DepthReason, DeviceIteration, IterationRecord, Report, ReportConfig,
    Summary,
};
use crate::results::{default_records, record_every, recorded_in_block, VpResult};
use crate::size::size_text;
use crate::stencil::{InitFn, SnapshotFn, Stencil};
use hitmap::{Layout, Partition, Shape};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::sync::Arc;

/// What a run computes, whatever runs it: the grid, the stencil, the
/// first values, and where the whole field goes during the run. The
/// builder and the plan hold the same one.
#[derive(Clone)]
pub(crate) struct Problem<T> {
    /// The global size, boundary included.
    pub(crate) size: Vec<usize>,
    pub(crate) stencil: Stencil<T>,
    pub(crate) init: InitFn<T>,
    /// The interior of the level before the first (kernels reading `old2`).
    pub(crate) init_previous: Option<InitFn<T>>,
    /// `init` as a device kernel, for devices that launch it.
    pub(crate) device_init: Option<Arc<kernels::DeviceKernel>>,
    /// Every so many iterations, the whole field to this function.
    pub(crate) snapshot: Option<(u64, SnapshotFn<T>)>,
}

/// A validated run: the problem and options as given (the devices' weights
/// possibly taken from the checkpoint it resumes) and what validation
/// derived from them.
pub struct RunPlan<T> {
    pub(crate) problem: Problem<T>,
    pub(crate) options: RunOptions,
    /// How the interior is cut over the devices at the start.
    pub(crate) layout: Layout,
    /// The checkpoint this run resumes from.
    pub(crate) restart: Option<Restart>,
    /// Its hold on its checkpoints: its id, the directory's lock.
    pub(crate) claim: Claim,
    /// The first iteration this run computes (after a restart, the
    /// checkpoint's).
    pub(crate) start: u64,
    /// Iterations between halo exchanges (ghost cells that many reaches
    /// deep); 1 exchanges every iteration. With `auto_depth`, the depth
    /// the run starts at.
    pub(crate) depth: usize,
    /// `--halo-depth auto`: measure a few depths first, then run at the
    /// one the cost model chooses.
    pub(crate) auto_depth: bool,
    /// Why the run goes at `depth` (or `auto`'s choice).
    pub(crate) depth_reason: DepthReason,
}

impl<T> Problem<T> {
    /// Time levels a checkpoint of it holds per block.
    pub(crate) fn levels(&self) -> usize {
        if self.stencil.kernel.reads_previous() {
            2
        } else {
            1
        }
    }

    /// What a checkpoint must agree with to be of this problem, and of a
    /// run `identity` describes, handed to `f`.
    pub(crate) fn expectation<R>(
        &self,
        identity: &checkpoint::RunIdentity,
        f: impl FnOnce(&Expect<'_>, &Origin<'_>) -> R,
    ) -> Result<R, SetupError> {
        let interior = interior(&self.size, &self.stencil)?;
        let kernel = self.stencil.kind.to_string();
        Ok(f(
            &Expect {
                interior: &interior,
                stencil: &self.stencil.name,
                cell: std::any::type_name::<T>(),
                cell_size: std::mem::size_of::<T>(),
                size: &self.size,
                levels: self.levels(),
            },
            &Origin {
                kernel: &kernel,
                identity,
            },
        ))
    }

    /// Takes `c.dir` for a run of it with `options`, by this process of
    /// `job` (see [`checkpoint::claim`]).
    pub(crate) fn claim_dir(
        &self,
        options: &RunOptions,
        c: &Checkpointing,
        job: &JobInfo,
    ) -> Result<DirLock, SetupError> {
        let same = |a: &std::path::Path, b: &std::path::Path| {
            a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
        };
        let resuming_here = options.restart.as_deref().is_some_and(|r| same(r, &c.dir));
        let elsewhere = options.restart.as_deref().filter(|_| !resuming_here);
        let host = job.hosts.get(job.rank).map_or("this host", String::as_str);
        let holder = format!("pid {} on {host}", std::process::id());
        Ok(self.expectation(&options.identity, |expect, origin| {
            let iters = options.iters;
            checkpoint::claim(c, &holder, expect, origin, resuming_here, iters, elsewhere)
        })??)
    }
}

/// Each checkpoint with the slowest process's time over it.
fn checkpoint_records<T>(results: &[VpResult<T>]) -> Vec<CheckpointRecord> {
    let mut out: Vec<CheckpointRecord> = Vec::new();
    for r in results {
        for (i, c) in r.checkpoints.iter().enumerate() {
            match out.get_mut(i) {
                Some(o) => o.seconds = o.seconds.max(c.seconds),
                None => out.push(c.clone()),
            }
        }
    }
    out
}

/// The cells a stencil computes on a global array of `size`: all but its
/// boundary.
pub fn interior<T>(size: &[usize], stencil: &Stencil<T>) -> Result<Shape, SetupError> {
    let nd = stencil.low.len();
    let bad = |why: SizeError| SetupError::Size {
        size: size.to_vec(),
        why,
    };
    if size.len() != nd {
        return Err(bad(SizeError::Dims {
            stencil: stencil.name.clone(),
            stencil_dims: nd,
            size_dims: size.len(),
        }));
    }
    for (d, &width) in size.iter().enumerate() {
        let border = stencil.low[d] + stencil.high[d];
        if width <= border {
            return Err(bad(SizeError::NoInterior {
                dim: d,
                border,
                stencil: stencil.name.clone(),
            }));
        }
    }
    let cell_bytes = std::mem::size_of::<T>();
    let bytes = size
        .iter()
        .try_fold(cell_bytes, |b, &w| b.checked_mul(w))
        .filter(|&b| b <= isize::MAX as usize);
    if bytes.is_none() {
        return Err(bad(SizeError::TooLarge { cell_bytes }));
    }
    Ok(Shape::from_ranges(
        &(0..nd)
            .map(|d| (stencil.low[d] as i64, (size[d] - stencil.high[d]) as i64))
            .collect::<Vec<_>>(),
    ))
}

/// The cells of a grid of `size` outside `inner` (a box inside it), as
/// disjoint boxes: for each dimension `d`, the slabs below and above
/// `inner` there, within `inner` along the dimensions before `d`.
fn boundary_slabs(size: &[usize], inner: &Shape) -> Vec<Shape> {
    let nd = size.len();
    let mut slabs = Vec::new();
    for d in 0..nd {
        let (lo, hi) = (inner.sig(d).begin(), inner.sig(d).end());
        for (from, to) in [(0, lo), (hi, size[d] as i64)] {
            if from >= to {
                continue;
            }
            let ranges: Vec<(i64, i64)> = (0..nd)
                .map(|e| match e.cmp(&d) {
                    std::cmp::Ordering::Less => (inner.sig(e).begin(), inner.sig(e).end()),
                    std::cmp::Ordering::Equal => (from, to),
                    std::cmp::Ordering::Greater => (0, size[e] as i64),
                })
                .collect();
            slabs.push(Shape::from_ranges(&ranges));
        }
    }
    slabs
}

/// Copies `cells` (row-major over `region`) into `grid` at `region`.
fn place<T: Clone>(grid: &mut ArrayD<T>, region: &Shape, cells: &[T]) {
    let view = ArrayViewD::from_shape(IxDyn(&region.extents()), cells)
        .expect("a region's cells match its shape");
    grid.slice_each_axis_mut(|ax| {
        let s = region.sig(ax.axis.index());
        ndarray::Slice::from(s.begin() as isize..s.end() as isize)
    })
    .assign(&view);
}

impl<T> RunPlan<T> {
    /// Validates a run: sizes against the stencil's boundary, devices, the
    /// partition, ALB's need for weights, and block widths. The caller
    /// derives the rest (restart, depth) and sets it.
    pub(crate) fn new(problem: Problem<T>, options: RunOptions) -> Result<RunPlan<T>, SetupError> {
        let domain = interior(&problem.size, &problem.stencil)?;
        if options.devices.is_empty() {
            return Err(SetupError::NoDevices);
        }
        if let Some(a) = &options.alb {
            if !matches!(options.partition, Partition::Weighted(_)) {
                return Err(SetupError::AlbNeedsWeights(a.name.clone()));
            }
        }
        let weights: Vec<f64> = options.devices.iter().map(|d| d.weight).collect();
        if matches!(options.partition, Partition::Weighted(_)) && weights.iter().all(|&w| w == 0.0)
        {
            return Err(SetupError::AllWeightsZero {
                partition: options.partition,
            });
        }
        let layout = Layout::new(
            &domain,
            options.partition,
            options.devices.len(),
            Some(&weights),
        )?;
        let fp = problem.stencil.kernel.footprint();
        layout.check_width(fp.low(), fp.high())?;
        Ok(RunPlan {
            problem,
            options,
            layout,
            restart: None,
            claim: Claim::default(),
            start: 0,
            depth: 1,
            auto_depth: false,
            depth_reason: DepthReason::Given,
        })
    }

    /// Decides the halo depth of the run in a job of `ranks` processes,
    /// the same on every rank (see [`DepthFacts::choose`]), once `start`
    /// is known.
    pub(crate) fn settle_depth(&mut self, ranks: usize) {
        let kernel = &self.problem.stencil.kernel;
        let fp = kernel.footprint();
        let choice = DepthFacts {
            setting: self.options.halo_depth,
            reads_previous: kernel.reads_previous(),
            aux_fields: !kernel.aux_fields().is_empty(),
            iters: self.options.iters.saturating_sub(self.start),
            ranks,
            balanced: self.options.alb.is_some(),
            devices: &self.options.devices,
            cores: crate::job::all_cores(),
            layout: &self.layout,
            reach: fp.low().iter().chain(fp.high()).copied().max().unwrap_or(1),
            cell_bytes: std::mem::size_of::<T>(),
            l2_bytes: controllers::cpu::l2_cache_bytes(),
        }
        .choose();
        self.depth = choice.depth;
        self.auto_depth = choice.trials;
        self.depth_reason = choice.reason;
    }

    /// The global size, boundary included.
    pub fn size(&self) -> &[usize] {
        &self.problem.size
    }

    /// Iterations.
    pub fn iterations(&self) -> u64 {
        self.options.iters
    }

    /// The devices, one virtual process each.
    pub fn devices(&self) -> &[DeviceSpec] {
        &self.options.devices
    }

    /// How the interior is cut over the devices at the start.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Errors if what the ranks on this rank's host hold in memory needs
    /// more than the `available` bytes there (Linux's `MemAvailable`, no
    /// more than the process's cgroup limit; swap is not counted). All
    /// ranks run at once and end
    /// at once, so the host needs the larger of: while running, two
    /// buffers of each CPU device's block, on every rank of the host; at
    /// the end, a copy of each of their blocks and, where rank 0 is, the
    /// other hosts' blocks gathered and the whole grid (one buffer each is
    /// freed by then). A lower bound: halos and spare rows come on top.
    /// Checked before any tile is allocated: on a host that overcommits
    /// memory, an allocation far beyond it may succeed and the process be
    /// killed later, as it writes.
    pub(crate) fn check_memory(
        &self,
        owners: &[usize],
        job: &JobInfo,
        available: Option<crate::memory::Available>,
    ) -> Result<(), SetupError> {
        let Some(crate::memory::Available {
            bytes: available,
            cgroup,
        }) = available
        else {
            return Ok(());
        };
        let host = job.hosts.get(job.rank).cloned().unwrap_or_default();
        // Host-mates as `cores::my_cores` counts them.
        let here = |r: usize| r == job.rank || job.hosts.get(r) == Some(&host);
        let cells = |p: usize| self.layout.block(p).card() as u64;
        let cpu = |p: usize| matches!(self.options.devices[p].kind, DeviceKind::Cpu { .. });
        let procs = || 0..owners.len();
        let running: u64 = 2 * procs()
            .filter(|&p| here(owners[p]) && cpu(p))
            .map(cells)
            .sum::<u64>();
        let mut ending: u64 = procs().filter(|&p| here(owners[p])).map(cells).sum();
        if here(0) {
            let elsewhere: u64 = procs().filter(|&p| !here(owners[p])).map(cells).sum();
            ending += elsewhere + self.problem.size.iter().map(|&w| w as u64).product::<u64>();
        }
        let need = running
            .max(ending)
            .saturating_mul(std::mem::size_of::<T>() as u64);
        if need > available {
            let ranks = (0..job.size.max(1)).filter(|&r| here(r)).count();
            return Err(SetupError::Memory {
                host,
                ranks,
                need,
                available,
                cgroup,
            });
        }
        Ok(())
    }

    /// The most iterations the run records one by one.
    pub(crate) fn records(&self) -> u64 {
        self.options
            .iteration_records
            .unwrap_or_else(|| default_records(self.options.devices.len()))
    }

    /// The rank of each virtual process in `job`, checked: every rank hosts
    /// at least one device with rows (or only devices given `weight=0`),
    /// and a rank hosting several can.
    pub(crate) fn owners(&self, job: &JobInfo) -> Result<Vec<usize>, SetupError> {
        let (n, ranks) = (self.options.devices.len(), job.size);
        let owners = match &self.options.placement {
            None if ranks == 1 => vec![0; n],
            None => {
                if ranks > n {
                    return Err(SetupError::TooManyRanks { ranks, devices: n });
                }
                (0..n).map(|i| i % ranks).collect()
            }
            Some(p) => {
                if p.len() != n {
                    return Err(SetupError::Placement(PlacementError::Count {
                        ranks: p.len(),
                        devices: n,
                    }));
                }
                p.clone()
            }
        };
        if let Some(&r) = owners.iter().find(|&&r| r >= ranks) {
            return Err(SetupError::Placement(PlacementError::PastLastRank {
                rank: r,
                ranks,
            }));
        }
        for (r, host) in job.hosts.iter().enumerate() {
            if !owners.contains(&r) {
                return Err(SetupError::RankWithoutDevice {
                    rank: r,
                    host: host.clone(),
                });
            }
        }
        if ranks > 1 {
            // A rank whose blocks are all empty would only wait on the
            // others: refused where the size left it nothing, run where
            // its devices were given `weight=0` (ALB may give them rows,
            // as it may take every row of a rank).
            let idle =
                |p: usize| self.layout.block(p).is_empty() && self.options.devices[p].weight > 0.0;
            if let Some(r) = (0..ranks).find(|&r| {
                (0..n).all(|p| owners[p] != r || self.layout.block(p).is_empty())
                    && (0..n).any(|p| owners[p] == r && idle(p))
            }) {
                return Err(SetupError::IdleRank {
                    rank: r,
                    cells: self.layout.domain().card(),
                    ranks,
                });
            }
        }
        let here = owners.iter().filter(|&&r| r == job.rank).count();
        if here > 1 && !job.threads_multiple {
            return Err(SetupError::NoThreadMultiple {
                rank: job.rank,
                devices: here,
            });
        }
        Ok(owners)
    }

    /// Takes the checkpoint directory where this process commits
    /// checkpoints (it hosts virtual process 0) and no lock is held yet
    /// (one process's recovery keeps its lock from the start).
    pub(crate) fn claim_checkpoints(
        &mut self,
        owners: &[usize],
        job: &JobInfo,
    ) -> Result<(), SetupError> {
        let Some(c) = &self.options.checkpoint else {
            return Ok(());
        };
        if self.claim.lock.is_some() || owners.first() != Some(&job.rank) {
            return Ok(());
        }
        let lock = self.problem.claim_dir(&self.options, c, job)?;
        self.claim.lock = Some(Arc::new(lock));
        Ok(())
    }

    /// What every rank must agree on before a distributed run.
    pub(crate) fn fingerprint(&self, owners: &[usize]) -> String {
        format!(
            "{} {} x {} iterations, devices [{}] on ranks {owners:?}, partition {}, alb {}",
            self.problem.stencil.name,
            size_text(&self.problem.size),
            self.options.iters,
            self.options
                .devices
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            self.options.partition,
            self.options
                .alb
                .as_ref()
                .map_or("none", |a| a.name.as_str())
        )
    }

    /// The whole global array: init values, overwritten by every block.
    pub(crate) fn assemble(&self, results: &[VpResult<T>]) -> ArrayD<T>
    where
        T: Clone,
    {
        self.assemble_blocks(results.iter().map(|r| (&r.block, r.data.as_slice())))
    }

    /// The whole global array from `(block, cells)` pairs over init values.
    pub(crate) fn assemble_blocks<'a>(
        &self,
        blocks: impl Iterator<Item = (&'a Shape, &'a [T])>,
    ) -> ArrayD<T>
    where
        T: Clone + 'a,
    {
        let blocks: Vec<_> = blocks.filter(|(b, _)| !b.is_empty()).collect();
        let covered: usize = blocks.iter().map(|(b, _)| b.card()).sum();
        let inner = interior(&self.problem.size, &self.problem.stencil)
            .ok()
            .filter(|i| i.card() == covered && !i.is_empty());
        let mut grid = match inner {
            // The blocks of a layout partition the interior: the init
            // function is needed on the boundary only (on one thread, it
            // was most of a large run's setup).
            Some(inner) => {
                let origin = vec![0; self.problem.size.len()];
                let mut grid =
                    ArrayD::from_elem(IxDyn(&self.problem.size), (self.problem.init)(&origin));
                for slab in boundary_slabs(&self.problem.size, &inner) {
                    let mut cells = Vec::with_capacity(slab.card());
                    slab.for_each_index(|g| cells.push((self.problem.init)(g)));
                    place(&mut grid, &slab, &cells);
                }
                grid
            }
            None => {
                // Index by index through one buffer: a Vec per cell cost
                // more than the init function on large grids.
                let mut cells = Vec::with_capacity(self.problem.size.iter().product());
                Shape::from_sizes(&self.problem.size)
                    .for_each_index(|g| cells.push((self.problem.init)(g)));
                ArrayD::from_shape_vec(IxDyn(&self.problem.size), cells)
                    .expect("one value per cell of the global size")
            }
        };
        for (block, data) in blocks {
            place(&mut grid, block, data);
        }
        grid
    }

    /// The report from every virtual process's result (in process order).
    /// Every process records the same rebalances and decisions, so they are
    /// taken from whichever came first, wherever it ran.
    pub(crate) fn report(&self, results: &[VpResult<T>], total: f64) -> Report {
        let ran = self.options.iters.saturating_sub(self.start);
        let every = record_every(ran, self.records());
        let recorded = results.iter().map(|r| r.stats.len()).min().unwrap_or(0);
        let iterations: Vec<IterationRecord> = (0..recorded)
            .map(|i| IterationRecord {
                iter: self.start + recorded_in_block(i as u64, every),
                seconds: results.iter().map(|r| r.stats[i].wall).fold(0.0, f64::max),
                elapsed_seconds: results
                    .iter()
                    .map(|r| r.stats[i].elapsed)
                    .fold(0.0, f64::max),
                devices: results
                    .iter()
                    .map(|r| DeviceIteration {
                        compute_seconds: r.stats[i].compute,
                        comm_seconds: r.stats[i].comm,
                        cpu_seconds: r.stats[i].cpu,
                        instructions: r.stats[i].instructions,
                        rows: r.stats[i].rows,
                    })
                    .collect(),
            })
            .collect();
        let secs: Vec<f64> = iterations.iter().map(|i| i.seconds).collect();
        let loop_seconds = results.iter().map(|r| r.loop_seconds).fold(0.0, f64::max);
        let cells = self.layout.domain().card() as f64 * ran as f64;
        let n = secs.len().max(1) as f64;
        let overhead = iterations
            .iter()
            .map(|it| {
                it.seconds
                    - it.devices
                        .iter()
                        .map(|d| d.compute_seconds)
                        .fold(0.0, f64::max)
            })
            // From +0.0: an empty float sum() is -0.0 (a run of 0 iterations).
            .fold(0.0, |a, b| a + b)
            / n;
        let first = results.first();
        let redistributions = first.map_or_else(Vec::new, |r| r.redistributions.clone());
        Report {
            config: ReportConfig {
                stencil: self.problem.stencil.name.clone(),
                size: self.problem.size.clone(),
                iters: self.options.iters,
                devices: self.options.devices.iter().map(|d| d.to_string()).collect(),
                alb: self
                    .options
                    .alb
                    .as_ref()
                    .map_or("none".into(), |a| a.name.clone()),
                alb_window: self
                    .options
                    .alb
                    .as_ref()
                    .map_or(heuristics::WINDOW, |a| a.window),
                times_direct_up_to: self
                    .options
                    .alb
                    .as_ref()
                    .map_or(heuristics::gather::DIRECT_UP_TO, |a| a.direct_times_up_to),
                alb_drop_below: self.options.alb.as_ref().map_or(0.0, |a| a.drop_below),
                partition: self.options.partition.to_string(),
                kernel: self.problem.stencil.kind.to_string(),
                resumed_from: self.restart.as_ref().map(|_| self.start),
                hosts: Vec::new(),
            },
            summary: Summary {
                total_seconds: total,
                loop_seconds,
                mean_iteration_seconds: secs.iter().fold(0.0, |a, b| a + b) / n,
                median_iteration_seconds: median(&secs),
                rebalances: redistributions.len(),
                // fold from +0.0: an empty float sum() is -0.0.
                redistribution_seconds_total: redistributions
                    .iter()
                    .map(|r| r.seconds)
                    .fold(0.0, |a, b| a + b),
                cell_updates_per_second: if loop_seconds > 0.0 {
                    cells / loop_seconds
                } else {
                    0.0
                },
                skeleton_overhead_seconds_per_iteration: overhead,
                halo_messages: results.iter().map(|r| r.messages).sum(),
                halo_messages_on_device: results.iter().map(|r| r.device_messages).sum(),
                devices_in_planes: results.iter().filter(|r| r.planes).count() as u64,
                iterations_recorded_every: every,
                heuristic_checks_dropped: first.map_or(0, |r| r.decisions_dropped),
                slow_spells: Vec::new(),
            },
            iterations,
            redistributions,
            heuristic: first.map_or_else(Vec::new, |r| r.decisions.clone()),
            checkpoints: checkpoint_records(results),
            halo_depth: first.map_or(self.depth, |r| r.depth),
            halo_depth_reason: self.depth_reason,
            depth_trials: first.map_or_else(Vec::new, |r| r.depth_trials.clone()),
            failures: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a host needs: its ranks' buffers while they run, or at the
    /// end their blocks plus, beside rank 0, the gathered blocks and the
    /// grid, whichever is more; GPU devices' blocks count at the end only.
    #[test]
    fn memory_needs_are_a_hosts_running_or_ending_peak() {
        use crate::{DeviceSpec, Skeleton, Stencil};
        use kernels::{KernelChoice, Library};
        let plan = |second: DeviceSpec| {
            Skeleton::new(
                &[34, 20],
                Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
            )
            .devices(vec![DeviceSpec::cpu(1), second])
            .placement(vec![0, 1])
            .plan()
            .unwrap()
        };
        let need = |plan: &RunPlan<f32>, rank: usize, hosts: [&str; 2]| {
            let job = JobInfo {
                rank,
                size: 2,
                hosts: hosts.iter().map(|h| h.to_string()).collect(),
                cores: vec![1, 1],
                threads_multiple: false,
            };
            assert!(
                plan.check_memory(&[0, 1], &job, None).is_ok(),
                "unknown memory"
            );
            let free = |bytes| {
                Some(crate::memory::Available {
                    bytes,
                    cgroup: None,
                })
            };
            match plan.check_memory(&[0, 1], &job, free(0)) {
                Err(SetupError::Memory { need, .. }) => {
                    assert!(plan.check_memory(&[0, 1], &job, free(need)).is_ok());
                    need
                }
                other => panic!("{:?}", other.err().map(|e| e.to_string())),
            }
        };
        let cpus = plan(DeviceSpec::cpu(1));
        let bytes = |plan: &RunPlan<f32>, p: usize| plan.layout.block(p).card() as u64 * 4;
        let (b0, b1, grid) = (bytes(&cpus, 0), bytes(&cpus, 1), 34 * 20 * 4);
        // Rank 0 alone on its host: its block's two buffers, or at the end
        // every block and the grid.
        assert_eq!(need(&cpus, 0, ["a", "b"]), (2 * b0).max(b0 + b1 + grid));
        assert_eq!(need(&cpus, 1, ["a", "b"]), 2 * b1);
        // Together: not the sum of the two.
        for rank in 0..2 {
            assert_eq!(
                need(&cpus, rank, ["a", "a"]),
                (2 * (b0 + b1)).max(b0 + b1 + grid)
            );
        }
        // A GPU device's block is in host memory at the end only.
        let mixed = plan(DeviceSpec::parse("opencl").unwrap());
        assert_eq!(need(&mixed, 1, ["a", "b"]), bytes(&mixed, 1));
    }

    proptest! {
        /// The boundary slabs and the interior cover the grid, each cell
        /// once.
        #[test]
        fn boundary_slabs_and_the_interior_tile_the_grid(
            dims in prop::collection::vec((1usize..7, 0usize..4, 0usize..4), 1..4)
        ) {
            let size: Vec<usize> = dims.iter().map(|&(w, a, b)| w + a + b).collect();
            let inner = Shape::from_ranges(
                &dims.iter().map(|&(w, a, _)| (a as i64, (a + w) as i64)).collect::<Vec<_>>(),
            );
            let slabs = boundary_slabs(&size, &inner);
            let global = Shape::from_sizes(&size);
            let mut seen = vec![0u8; global.card()];
            for (k, g) in global.iter().enumerate() {
                let holders = slabs.iter().filter(|s| s.contains(&g)).count()
                    + usize::from(inner.contains(&g));
                seen[k] = holders as u8;
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{:?} {} {:?}", size, inner, slabs);
        }
    }
}

//! The skeleton: a higher-order function that runs an iterative stencil over
//! any mix of devices. The user gives the domain, the stencil, the
//! iterations and an init function; the skeleton partitions, allocates,
//! exchanges halos (overlapped with the inner compute) and gathers the
//! result. This is the builder; [`RunPlan`] is what it validates into, and
//! the executors carry a plan out.

use crate::alb::Alb;
use crate::checkpoint::{self, Checkpointing, Claim, DirLock, Restart, RunIdentity};
use crate::cluster::{self, Cluster};
use crate::devices::DeviceSpec;
use crate::error::{RunError, SetupError, VpError};
use crate::executor::{execute, LocalJob, Outcome};
use crate::job::JobInfo;
pub use crate::options::{HaloDepth, OnFailure, RunOptions};
use crate::output::{OutputCell, Snapshots};
use crate::plan::{self, Problem, RunPlan};
use crate::report::FailureRecord;
use crate::stencil::{SnapshotFailure, Stencil};
use hitmap::{Partition, Shape};
use kernels::Cell;
use kernels::DeviceKernel;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Builder for one run: what it computes and how it runs.
pub struct Skeleton<T> {
    problem: Problem<T>,
    options: RunOptions,
}

impl<T: Cell> Skeleton<T> {
    /// A run over a global array of `size` (boundary cells included).
    /// Defaults: all-zero init and [`RunOptions::default`] (1 iteration,
    /// one CPU device on every core, partition `m`, no load balancing).
    pub fn new(size: &[usize], stencil: Stencil<T>) -> Skeleton<T> {
        Skeleton {
            problem: Problem {
                size: size.to_vec(),
                stencil,
                init: Arc::new(|_| T::zeroed()),
                init_previous: None,
                device_init: None,
                snapshot: None,
            },
            options: RunOptions::default(),
        }
    }

    /// Takes every option of `o` (its snapshot files are applied by
    /// [`snapshot_files`](Self::snapshot_files)).
    pub fn options(mut self, o: &RunOptions) -> Self {
        self.options = o.clone();
        self
    }

    /// Measures each CPU device's kernel thread CPU time, per iteration
    /// into the report (`cpu_seconds`), beside the wall time: what a
    /// scaling model fits compute on where devices outnumber cores. Off by
    /// default, since it costs two system calls per launch (and per pool
    /// task), which small grids feel (docs/benchmarks.md, "Kernel CPU time
    /// only when asked").
    pub fn cpu_time(mut self, on: bool) -> Self {
        self.options.cpu_time = on;
        self
    }

    /// Records at most `max` iterations one by one in the report (by
    /// default 2^20, fewer beyond four devices: 2^22 device-iterations in
    /// all, so that the records and the report fit in memory). A longer run
    /// records one iteration in each
    /// block of k, the smallest k that keeps within `max`
    /// (`summary.iterations_recorded_every`), at a place that varies from
    /// block to block so the sample never lines up with ALB windows or
    /// checkpoints; a run of any length then fits in memory. Totals and
    /// throughput stay exact; means, medians and the overhead are the
    /// sample's.
    pub fn iteration_records(mut self, max: u64) -> Self {
        self.options.iteration_records = Some(max.max(1));
        self
    }

    /// Ghost cells `k` stencil reaches deep, exchanged every `k`
    /// iterations: in between each device computes the ring of ghost cells
    /// still valid itself, so messages fall k-fold for some redundant
    /// compute. Results are bit-identical to `k = 1` whatever `k`, devices,
    /// partition or rebalances. Not for kernels that read the previous time
    /// level (wavesim) yet. By default [`HaloDepth::Cache`]: deep only
    /// where fused steps save memory traffic.
    pub fn halo_depth(mut self, k: HaloDepth) -> Self {
        self.options.halo_depth = k;
        self
    }

    /// Hands the whole field to `f` (on rank 0) after every `every`
    /// iterations, the last included: EPSILOD's output function, called
    /// during the run. The run waits while `f` runs; an error from it ends
    /// the run. See [`Skeleton::snapshot_files`] to write files.
    pub fn snapshot(
        mut self,
        every: u64,
        f: impl Fn(u64, ndarray::ArrayViewD<'_, T>) -> Result<(), SnapshotFailure>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.problem.snapshot = Some((every.max(1), Arc::new(f)));
        self
    }

    /// What to do when a device fails mid-run (a device error, or
    /// `fail@ITER` in its spec). With [`OnFailure::Recover`], in one
    /// process with devices to spare, the run drops the device and goes on
    /// over the others from the newest checkpoint in its checkpoint
    /// directory (or from where it started, without one): the result is
    /// bit-identical to a run without the failure, and the report's
    /// `failures` says what was lost. Under MPI a failure ends the job.
    pub fn on_failure(mut self, f: OnFailure) -> Self {
        self.options.on_failure = f;
        self
    }

    /// Under MPI, how long a virtual process waits for a message from a
    /// peer that sends nothing (its rank killed, stopped or cut off the
    /// network) before it ends the job with an error naming that rank and
    /// its host; `None` waits for ever. Default
    /// [`PEER_TIMEOUT`](crate::options::PEER_TIMEOUT).
    pub fn peer_timeout(mut self, limit: Option<std::time::Duration>) -> Self {
        self.options.peer_timeout = limit;
        self
    }

    /// Writes a checkpoint into `dir` every `every` iterations (not after
    /// the last), keeping the last two; see [`crate::checkpoint`]. The run
    /// holds `dir`'s lock throughout, and refuses a `dir` that another run
    /// holds or that holds another run's checkpoints (see
    /// [`checkpoint_overwrite`](Self::checkpoint_overwrite)), unless it
    /// resumes them ([`restart`](Self::restart) from `dir`).
    pub fn checkpoint(mut self, every: u64, dir: impl Into<PathBuf>) -> Self {
        let overwrite = self
            .options
            .checkpoint
            .as_ref()
            .is_some_and(|c| c.overwrite);
        self.options.checkpoint = Some(Checkpointing {
            every,
            dir: dir.into(),
            overwrite,
        });
        self
    }

    /// Replaces an earlier run's checkpoints found in the checkpoint
    /// directory (they go at the start) instead of refusing to run. Give
    /// it after [`checkpoint`](Self::checkpoint).
    pub fn checkpoint_overwrite(mut self, on: bool) -> Self {
        if let Some(c) = &mut self.options.checkpoint {
            c.overwrite = on;
        }
        self
    }

    /// What decides the result beyond the stencil's name, kernel kind,
    /// cell type and size (the driver's knowledge: a spec's content, an
    /// app's parameters, the init's seed): written into every checkpoint,
    /// and a restart from a checkpoint of another identity is refused,
    /// naming the first difference.
    pub fn identity(mut self, identity: RunIdentity) -> Self {
        self.options.identity = identity;
        self
    }

    /// Resumes from the newest valid checkpoint in `dir`, written by a run
    /// of the same stencil, kernel kind, size, cell type and
    /// [`identity`](Self::identity) on any devices, partition or rank
    /// count, and runs the iterations left up to
    /// [`iterations`](Self::iterations): the result is bit-identical to a
    /// run that was never interrupted. The init function still sets the
    /// boundary cells, which no iteration changes.
    pub fn restart(mut self, dir: impl Into<PathBuf>) -> Self {
        self.options.restart = Some(dir.into());
        self
    }

    /// Pins each local device's threads to cores of its own, in device
    /// order among the cores this process may run on (under MPI, its share
    /// of them on its host): a CPU device of T threads gets the next T
    /// cores for its pool, any other device (and a one-thread CPU device,
    /// which computes on it) one core for its virtual process's thread.
    /// Off by default; where there are too few cores, they are reused in
    /// turn, and where the OS refuses, threads run unpinned. Results do not
    /// depend on it.
    pub fn pin(mut self, pin: bool) -> Self {
        self.options.pin = pin;
        self
    }

    /// Sends every halo through the host, even between devices that share
    /// memory (virtual devices on one GPU, devices of one OpenCL context),
    /// to compare or to rule the device path out when a result looks
    /// wrong. Off by default.
    pub fn host_halos(mut self, on: bool) -> Self {
        self.options.host_halos = on;
        self
    }

    /// Iterations to run.
    pub fn iterations(mut self, n: u64) -> Self {
        self.options.iters = n;
        self
    }

    /// Every cell's first value, from its global index (boundary included;
    /// boundary cells keep it).
    pub fn init(mut self, f: impl Fn(&[i64]) -> T + Send + Sync + 'static) -> Self {
        self.problem.init = Arc::new(f);
        self
    }

    /// The init function as a device kernel (e.g.
    /// `kernels::InitSpec::device_kernel`): devices that can launch it
    /// (GPUs) compute their tiles' initial and boundary cells themselves
    /// instead of receiving them from the host. It must give the bits `init`
    /// gives; the others still use `init`.
    pub fn init_on_device(mut self, kernel: DeviceKernel) -> Self {
        self.problem.device_init = Some(Arc::new(kernel));
        self
    }

    /// For kernels that read the level before the current one
    /// ([`kernels::Kernel::reads_previous`], an expression's `old2`): that
    /// level's interior cells at the first step, from their global index.
    /// Without it the first step sees the init there too.
    pub fn init_previous(mut self, f: impl Fn(&[i64]) -> T + Send + Sync + 'static) -> Self {
        self.problem.init_previous = Some(Arc::new(f));
        self
    }

    /// The devices, one virtual process each.
    pub fn devices(mut self, d: Vec<DeviceSpec>) -> Self {
        self.options.devices = d;
        self
    }

    /// How the interior is cut over the devices.
    pub fn partition(mut self, p: Partition) -> Self {
        self.options.partition = p;
        self
    }

    /// Automatic load balancing (needs a weighted partition, `w<d>`);
    /// `None` for none.
    pub fn alb(mut self, alb: impl Into<Option<Alb>>) -> Self {
        self.options.alb = alb.into();
        self
    }

    /// Under MPI: the rank hosting each device (default: device `i` on rank
    /// `i mod ranks`). Ignored in a single process.
    pub fn placement(mut self, ranks: Vec<usize>) -> Self {
        self.options.placement = Some(ranks);
        self
    }

    /// Told the iterations finished so far while the run goes on (see
    /// [`Observer`]); a progress bar, say.
    pub fn observe(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.options.observer = Some(Arc::new(f));
        self
    }

    /// The cells that are computed (the global array less its boundary).
    pub fn interior(&self) -> Result<Shape, SetupError> {
        plan::interior(&self.problem.size, &self.problem.stencil)
    }

    /// Validates the run: sizes, devices, partition, ALB, block widths.
    pub fn plan(&self) -> Result<RunPlan<T>, SetupError> {
        self.plan_with(self.options.clone(), None, None)
    }

    /// Errors where the run cannot be planned in `cluster` or needs more
    /// memory than a host has ([`SetupError::Memory`]): the check
    /// [`run_in`](Self::run_in) makes before it allocates, for a caller
    /// that builds large inputs (an image) first. Every rank calls it; all
    /// get the same verdict.
    pub fn check_memory_in(&self, cluster: &Cluster) -> Result<(), RunError> {
        let job = cluster.info();
        let mine = self.plan().and_then(|p| {
            let owners = p.owners(job)?;
            p.check_memory(&owners, job, crate::memory::available())
        });
        let verdict = cluster.agree(crate::job::Readiness::of(&mine));
        mine?;
        verdict
    }

    /// Validates the run with `options` in place of the builder's (a
    /// recovery's fewer devices and its restart), holding `lock` on its
    /// checkpoint directory, as run `lineage` (a recovery goes on as the
    /// run it recovers, from that run's checkpoints only).
    fn plan_with(
        &self,
        mut options: RunOptions,
        lock: Option<&Arc<DirLock>>,
        lineage: Option<&str>,
    ) -> Result<RunPlan<T>, SetupError> {
        let stencil = &self.problem.stencil;
        match options.halo_depth {
            HaloDepth::Depth(depth) if depth > 1 && stencil.kernel.reads_previous() => {
                return Err(SetupError::HaloDepth {
                    depth,
                    stencil: stencil.name.clone(),
                });
            }
            _ => {}
        }
        if let Some(c) = &options.checkpoint {
            if c.every == 0 {
                return Err(SetupError::CheckpointEvery);
            }
            // Found out now, not after the first N iterations.
            checkpoint::prepare(&c.dir)?;
        }
        let restart = match &options.restart {
            Some(dir) => Some(self.find_restart(dir, lineage)?),
            None => None,
        };
        if let Some(r) = &restart {
            // The same devices and partition resume from the layout the
            // checkpoint had (ALB's last weights); others start afresh.
            let m = &r.manifest;
            let n = options.devices.len();
            let same = m.partition == options.partition.to_string()
                && m.devices.len() == n
                && m.weights.len() == n
                && m.weights.iter().all(|w| w.is_finite() && *w >= 0.0)
                // A device ALB dropped resumes dropped.
                && m.weights.iter().any(|w| *w > 0.0);
            if same && matches!(options.partition, Partition::Weighted(_)) {
                for (d, w) in options.devices.iter_mut().zip(&m.weights) {
                    d.weight = *w;
                }
            }
        }
        let mut plan = RunPlan::new(self.problem.clone(), options)?;
        plan.start = restart.as_ref().map_or(0, |r| r.manifest.iteration);
        // A resumed run goes on as the run it resumes.
        let run = lineage
            .map(String::from)
            .or_else(|| restart.as_ref().map(|r| r.manifest.run.clone()))
            .unwrap_or_else(checkpoint::new_run_id);
        plan.claim = Claim {
            run,
            lock: lock.cloned(),
            failures: Default::default(),
        };
        plan.restart = restart;
        Ok(plan)
    }

    /// Writes a snapshot file every `s.every` iterations (see
    /// [`Snapshots`]; `.npy`, `.txt` or `.dat`), checked now: a bad pattern
    /// or an unwritable place is an error before the run.
    pub fn snapshot_files(self, s: &Snapshots) -> Result<Self, SetupError>
    where
        T: OutputCell,
    {
        s.check()?;
        let files = s.clone();
        Ok(self.snapshot(s.every, move |iter, grid| {
            let path = files.path(iter);
            Snapshots::make_dir(&path)?;
            crate::output::write(&path, grid).map_err(crate::output::SnapshotError::from)?;
            Ok(())
        }))
    }

    /// The checkpoint in `dir` to resume from, of run `run` where given.
    fn find_restart(
        &self,
        dir: &std::path::Path,
        run: Option<&str>,
    ) -> Result<Restart, SetupError> {
        let r = self
            .problem
            .expectation(&self.options.identity, |expect, origin| {
                Restart::find(dir, expect, origin, run)
            })??;
        Ok(r.before_end(self.options.iters)?)
    }

    /// Runs every iteration and gathers the result, in the job this process
    /// joined with [`Cluster::join`] (alone if it joined none, refused if
    /// it [noted](crate::cluster::note_launch) a launch of several ranks).
    pub fn run(&self) -> Result<Outcome<T>, RunError> {
        self.run_on(&cluster::current()?)
    }

    /// Runs in `cluster`: every rank calls it with the same arguments and
    /// runs its own devices.
    pub fn run_in(&self, cluster: &Cluster) -> Result<Outcome<T>, RunError> {
        self.run_on(cluster.info())
    }

    fn run_on(&self, job: &JobInfo) -> Result<Outcome<T>, RunError> {
        let _measuring = self.options.cpu_time.then(controllers::cpu_time::measure);
        if job.size > 1 {
            #[cfg(feature = "mpi")]
            return execute(
                self.plan(),
                &crate::cluster::mpi::MpiJob::new(job).patience(self.options.peer_timeout),
            );
            #[cfg(not(feature = "mpi"))]
            return Err(SetupError::NoMpi { size: job.size }.into());
        }
        let started = Instant::now();
        // Held over every attempt: no other run gets in between.
        let lock = match &self.options.checkpoint {
            Some(c) if c.every > 0 => {
                Some(Arc::new(self.problem.claim_dir(&self.options, c, job)?))
            }
            _ => None,
        };
        let mut options = self.options.clone();
        let mut failures = Vec::new();
        let mut lineage: Option<String> = None;
        loop {
            let attempt = Instant::now();
            let plan = self.plan_with(options.clone(), lock.as_ref(), lineage.as_deref());
            if let Ok(p) = &plan {
                lineage.get_or_insert_with(|| p.claim.run.clone());
            }
            let out = execute(
                plan,
                &LocalJob::<T>::new(job.clone(), options.devices.len()),
            );
            match out {
                Err(RunError::Vp {
                    vp,
                    device,
                    cause: VpError::Device(e),
                }) if self.options.on_failure == OnFailure::Recover
                    && options.devices.len() > 1 =>
                {
                    let devices = &mut options.devices;
                    devices.remove(vp);
                    // Devices started without rows (weight=0) take over
                    // when no other is left.
                    if devices.iter().all(|d| d.weight == 0.0) {
                        devices.iter_mut().for_each(|d| d.weight = 1.0);
                    }
                    // Only this run's own checkpoints: not those an earlier
                    // run left in the directory.
                    let run = lineage.as_deref().unwrap_or_default();
                    let ckpt = self.options.checkpoint.as_ref().map(|c| c.dir.clone());
                    if let Some(dir) = ckpt.filter(|d| checkpoint::any_of_run(d, run)) {
                        options.restart = Some(dir);
                    }
                    let resumed_from = match &options.restart {
                        Some(dir) => self.find_restart(dir, Some(run))?.manifest.iteration,
                        None => 0,
                    };
                    tracing::warn!(
                        "device {device} failed ({e}): going on over the other {} from iteration {resumed_from}",
                        devices.len()
                    );
                    failures.push(FailureRecord {
                        device,
                        error: e.to_string(),
                        attempt_seconds: attempt.elapsed().as_secs_f64(),
                        resumed_from,
                        devices_left: devices.len(),
                    });
                }
                Ok(mut o) => {
                    o.report.summary.total_seconds = started.elapsed().as_secs_f64();
                    o.report.failures = failures;
                    return Ok(o);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(all(test, not(feature = "mpi")))]
mod tests {
    use super::*;
    use kernels::{KernelChoice, Library};

    /// Without MPI, a job of several ranks is refused rather than run by
    /// each rank as if alone.
    #[test]
    fn a_build_without_mpi_refuses_a_job_of_several_ranks() {
        let job = JobInfo::first_of_two();
        let e = Skeleton::new(
            &[10, 10],
            Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
        )
        .run_on(&job)
        .err()
        .expect("no MPI");
        assert!(
            matches!(e, RunError::Setup(SetupError::NoMpi { size: 2 })),
            "{e}"
        );
    }
}

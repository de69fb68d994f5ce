//! Carrying out a [`RunPlan`]: one thread per local virtual process, each
//! with a transport endpoint, then the results gathered into a grid and a
//! report. What differs between one process and an MPI job (which virtual
//! processes are local, how ranks agree, how endpoints are made, how
//! results reach rank 0) is behind the [`Job`] trait, so the flow below is
//! the same for both, and testable with a job of simulated ranks.

use crate::cluster;
use crate::cores::{busy_threads, pin_cores};
use crate::devices::share_cores;
use crate::error::{ControlError, ProtocolError, RunError, SetupError, VpError};
use crate::job::{all_cores, cores_here, my_cores, Job, JobInfo, Readiness, WaitPolicy};
use crate::peer_mail::PeerMail;
use crate::plan::RunPlan;
use crate::report::Report;
use crate::results::VpResult;
use crate::vp;
use hitmap::{in_process, InProcess, Transport};
use kernels::Cell;
use ndarray::{ArrayD, IxDyn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The result of a run: the whole global array (boundaries included) and
/// the report.
///
/// Under MPI the grid is gathered to rank 0 only (other ranks get an empty
/// array); every rank gets the same merged report.
pub struct Outcome<T> {
    /// The global array, boundary included (empty off rank 0).
    pub grid: ArrayD<T>,
    /// Measurements of the run.
    pub report: Report,
    pub(crate) root: bool,
}

impl<T> Outcome<T> {
    /// True where `grid` holds the result: always in one process, on rank 0
    /// under MPI.
    pub fn is_root(&self) -> bool {
        self.root
    }
}

/// Runs `plan` (or agrees to fail with its error) on `job`.
pub(crate) fn execute<T: Cell>(
    plan: Result<RunPlan<T>, SetupError>,
    job: &dyn Job<T>,
) -> Result<Outcome<T>, RunError> {
    let started = Instant::now();
    // Everything that can fail on one rank alone is settled before any rank
    // starts: a rank that bailed out early would leave the others waiting.
    let prepared = plan.and_then(|mut p| {
        let owners = p.owners(job.info())?;
        p.settle_depth(job.info().size);
        p.check_memory(&owners, job.info(), crate::memory::available())?;
        // Every rank learns of a directory another run holds.
        p.claim_checkpoints(&owners, job.info())?;
        Ok((p, owners))
    });
    let verdict = job.agree(match &prepared {
        Ok((p, o)) => Readiness::Ready(p.fingerprint(o)),
        Err(e) => Readiness::failed(e),
    });
    let (plan, owners) = prepared?;
    verdict?;
    job.place(&owners)?;
    let rank = job.info().rank;
    let local: Vec<usize> = (0..owners.len()).filter(|&p| owners[p] == rank).collect();
    tracing::info!(
        stencil = %plan.problem.stencil.name,
        iters = plan.options.iters,
        partition = %plan.options.partition,
        "starting on {} device(s), {} here",
        plan.options.devices.len(),
        local.len()
    );
    for &p in &local {
        tracing::debug!(
            "virtual process {p}: {}, block {}",
            plan.options.devices[p],
            plan.layout.block(p)
        );
    }
    let results = run_local(&plan, &local, job);
    let mine = first_cause(results)?;
    let all = job.gather(&owners, local.into_iter().zip(mine).collect())?;
    match all {
        Some(all) => {
            let grid = plan.assemble(&all);
            let mut report = plan.report(&all, started.elapsed().as_secs_f64());
            report.locate(&owners, &job.info().hosts);
            let report = job.share(Some(report))?;
            Ok(Outcome {
                grid,
                report,
                root: true,
            })
        }
        None => Ok(Outcome {
            grid: ArrayD::from_shape_vec(IxDyn(&vec![0; plan.problem.size.len()]), Vec::new())
                .expect("an empty array"),
            report: job.share(None)?,
            root: false,
        }),
    }
}

/// Runs the virtual processes `local`, one thread each, telling the job of
/// the first failure and the plan's observer of progress.
fn run_local<T: Cell>(
    plan: &RunPlan<T>,
    local: &[usize],
    job: &dyn Job<T>,
) -> Vec<Result<VpResult<T>, RunError>> {
    let progress = AtomicU64::new(0);
    let cores = cores_here(job.info(), all_cores());
    let specs = share_cores(
        &local
            .iter()
            .map(|&p| plan.options.devices[p].clone())
            .collect::<Vec<_>>(),
        cores,
    );
    let wait = WaitPolicy::for_threads(busy_threads(&specs), cores);
    tracing::debug!(
        "{cores} core(s) here, devices [{}]; virtual processes wait by {wait:?}",
        specs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let pins = if plan.options.pin {
        let ids = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        pin_cores(&specs, &my_cores(job.info(), ids))
    } else {
        vec![Vec::new(); specs.len()]
    };
    if plan.options.pin {
        tracing::info!("pinned to cores {pins:?}");
    }
    let mail = PeerMail::new(plan.options.devices.len(), plan.options.host_halos);
    let panicked = |p: usize| RunError::Vp {
        vp: p,
        device: plan.options.devices[p].to_string(),
        cause: VpError::Panicked,
    };
    std::thread::scope(|s| {
        let progress = &progress;
        let mail = &mail;
        let spawned: Vec<_> = local
            .iter()
            .zip(specs.iter().zip(&pins))
            .map(|(&p, (spec, cores))| {
                std::thread::Builder::new()
                    .name(format!("epsilod-vp{p}"))
                    .spawn_scoped(s, move || {
                        let endpoint = job.endpoint(p, wait).map_err(|cause| RunError::Vp {
                            vp: p,
                            device: spec.to_string(),
                            cause,
                        })?;
                        // A pool pins its own threads; a device without one
                        // computes on, or is driven from, this thread.
                        if let (false, Some(&id)) = (crate::cores::pooled(spec), cores.first()) {
                            core_affinity::set_for_current(core_affinity::CoreId { id });
                        }
                        vp::run(plan, progress, mail, spec, cores, p, endpoint)
                    })
                    .map_err(|e| {
                        // Its endpoint goes now, so that peers waiting for
                        // it fail instead of waiting for ever.
                        drop(job.endpoint(p, wait));
                        let error = RunError::Vp {
                            vp: p,
                            device: spec.to_string(),
                            cause: VpError::Thread(e),
                        };
                        job.on_failure(&error);
                        error
                    })
            })
            .collect();
        let mut handles = Vec::with_capacity(spawned.len());
        let mut results: Vec<Option<Result<VpResult<T>, RunError>>> =
            Vec::with_capacity(spawned.len());
        for h in spawned {
            match h {
                Ok(h) => {
                    handles.push(Some(h));
                    results.push(None);
                }
                Err(e) => {
                    handles.push(None);
                    results.push(Some(Err(e)));
                }
            }
        }
        if plan.options.observer.is_some() || job.fails_fast() {
            let mut told = 0;
            while handles.iter().any(Option::is_some) {
                for (i, h) in handles.iter_mut().enumerate() {
                    if h.as_ref().is_some_and(|h| h.is_finished()) {
                        let r = h
                            .take()
                            .and_then(|h| h.join().ok())
                            .unwrap_or_else(|| Err(panicked(local[i])));
                        if let Err(e) = &r {
                            job.on_failure(e);
                        }
                        results[i] = Some(r);
                    }
                }
                let done = progress.load(Ordering::Relaxed);
                if let Some(f) = plan.options.observer.as_ref().filter(|_| done != told) {
                    f(done);
                    told = done;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        handles
            .into_iter()
            .zip(results)
            .enumerate()
            .map(|(i, (h, r))| match (h, r) {
                (_, Some(r)) => r,
                (Some(h), None) => h.join().unwrap_or_else(|_| Err(panicked(local[i]))),
                (None, None) => Err(panicked(local[i])),
            })
            .collect()
    })
}

/// Prefers the error that started a failure over the "peer gone" errors it
/// caused in the other virtual processes.
fn first_cause<T>(
    results: Vec<Result<VpResult<T>, RunError>>,
) -> Result<Vec<VpResult<T>>, RunError> {
    let mut echo = None;
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(v) => ok.push(v),
            Err(e) if e.is_peer_gone() => echo = echo.or(Some(e)),
            Err(e) => return Err(e),
        }
    }
    match echo {
        Some(e) => Err(e),
        None => Ok(ok),
    }
}

/// One process: every virtual process here, over in-process channels.
pub(crate) struct LocalJob<T> {
    info: JobInfo,
    endpoints: Mutex<Vec<Option<InProcess<T>>>>,
}

impl<T: Cell> LocalJob<T> {
    pub(crate) fn new(info: JobInfo, devices: usize) -> LocalJob<T> {
        LocalJob {
            info,
            endpoints: Mutex::new(in_process::<T>(devices).into_iter().map(Some).collect()),
        }
    }
}

impl<T: Cell> Job<T> for LocalJob<T> {
    fn info(&self) -> &JobInfo {
        &self.info
    }

    fn agree(&self, mine: Readiness) -> Result<(), RunError> {
        cluster::agree(&self.info, mine)
    }

    fn place(&self, _owners: &[usize]) -> Result<(), RunError> {
        Ok(())
    }

    fn endpoint(&self, p: usize, wait: WaitPolicy) -> Result<Box<dyn Transport<T>>, VpError> {
        let mut ep = self
            .endpoints
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(p)
            .and_then(Option::take)
            .ok_or(VpError::Protocol(ProtocolError::NoEndpoint(p)))?;
        ep.set_spin(match wait {
            WaitPolicy::PollThenBlock => hitmap::SPIN,
            WaitPolicy::Block => Duration::ZERO,
        });
        Ok(Box::new(ep))
    }

    fn gather(
        &self,
        _owners: &[usize],
        mut mine: Vec<(usize, VpResult<T>)>,
    ) -> Result<Option<Vec<VpResult<T>>>, RunError> {
        mine.sort_by_key(|(p, _)| *p);
        Ok(Some(mine.into_iter().map(|(_, r)| r).collect()))
    }

    fn share(&self, report: Option<Report>) -> Result<Report, RunError> {
        report.ok_or(RunError::Mpi(ControlError::NoReport))
    }
}

#[cfg(test)]
mod tests {
    //! The distributed flow without MPI: simulated ranks are threads, each
    //! running `execute` with a job whose control plane is channels. The
    //! same code an MPI job runs decides placement, gathers and merges.
    use super::*;
    use crate::results::VpMeta;
    use crate::{Alb, DeviceSpec, Partition, Skeleton, Stencil};
    use heuristics::testing::Scripted;
    use heuristics::Heuristic;
    use kernels::{KernelChoice, Library};
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::Arc;

    type Parcel = (usize, usize, Vec<u8>);

    /// Rank `rank` of `size` simulated ranks.
    struct SimRank<T> {
        info: JobInfo,
        endpoints: Arc<Mutex<Vec<Option<InProcess<T>>>>>,
        /// To every rank (its own included), and this rank's inbox.
        out: Vec<Sender<Parcel>>,
        inbox: Mutex<Receiver<Parcel>>,
    }

    impl<T: Cell> SimRank<T> {
        fn recv(&self) -> Parcel {
            self.inbox.lock().unwrap().recv().expect("a rank hung up")
        }
        fn all_gather(&self, bytes: Vec<u8>) -> Vec<Vec<u8>> {
            for o in &self.out {
                o.send((self.info.rank, 0, bytes.clone())).unwrap();
            }
            let mut all = vec![Vec::new(); self.info.size];
            for _ in 0..self.info.size {
                let (from, _, b) = self.recv();
                all[from] = b;
            }
            all
        }
    }

    impl<T: Cell> Job<T> for SimRank<T> {
        fn info(&self) -> &JobInfo {
            &self.info
        }
        fn agree(&self, mine: Readiness) -> Result<(), RunError> {
            let bytes = serde_json::to_vec(&mine).unwrap();
            let views: Vec<Readiness> = self
                .all_gather(bytes)
                .iter()
                .map(|b| serde_json::from_slice(b).unwrap())
                .collect();
            // The verdict MPI ranks reach, on simulated ranks' views.
            cluster::verdict(&views)
        }
        fn place(&self, _owners: &[usize]) -> Result<(), RunError> {
            Ok(())
        }
        fn endpoint(&self, p: usize, _wait: WaitPolicy) -> Result<Box<dyn Transport<T>>, VpError> {
            Ok(Box::new(self.endpoints.lock().unwrap()[p].take().unwrap()))
        }
        fn gather(
            &self,
            owners: &[usize],
            mine: Vec<(usize, VpResult<T>)>,
        ) -> Result<Option<Vec<VpResult<T>>>, RunError> {
            // Results travel as MPI ranks send them: the metadata as serde
            // JSON, the cells as bytes.
            if self.info.rank != 0 {
                for (p, r) in &mine {
                    let meta = serde_json::to_vec(&VpMeta::of(*p, r)).unwrap();
                    let cells = bytemuck::cast_slice::<T, u8>(&r.data).to_vec();
                    self.out[0].send((self.info.rank, 0, meta)).unwrap();
                    self.out[0].send((self.info.rank, 1, cells)).unwrap();
                }
                return Ok(None);
            }
            let remote = owners.iter().filter(|&&r| r != 0).count();
            let mut all = mine;
            for _ in 0..remote {
                let (_, _, meta) = self.recv();
                let (_, _, cells) = self.recv();
                let (p, mut r) = serde_json::from_slice::<VpMeta>(&meta)
                    .unwrap()
                    .into_result::<T>();
                r.data = vec![T::zeroed(); r.block.card()];
                bytemuck::cast_slice_mut::<T, u8>(&mut r.data).copy_from_slice(&cells);
                all.push((p, r));
            }
            assert_eq!(all.len(), owners.len());
            all.sort_by_key(|(p, _)| *p);
            Ok(Some(all.into_iter().map(|(_, r)| r).collect()))
        }
        fn share(&self, report: Option<Report>) -> Result<Report, RunError> {
            let bytes = report.map(|r| serde_json::to_vec(&r).unwrap());
            if let Some(b) = &bytes {
                for o in &self.out[1..] {
                    o.send((0, 0, b.clone())).unwrap();
                }
            }
            let b = match bytes {
                Some(b) => b,
                None => self.recv().2,
            };
            Ok(serde_json::from_slice(&b).unwrap())
        }
    }

    /// Rebalances at iterations 40 and 80 towards the given weights.
    fn scripted() -> Box<dyn Heuristic> {
        Box::new(Scripted::new(&[(40, &[1.0, 3.0]), (80, &[2.0, 1.0])]))
    }

    fn skeleton(placement: Vec<usize>) -> Skeleton<f32> {
        Skeleton::new(
            &[34, 20],
            Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
        )
        .iterations(100)
        .init(|i| (i[0] * 7 + i[1]) as f32 * 0.25)
        .devices(vec![DeviceSpec::cpu(1); 2])
        .partition(Partition::Weighted(0))
        .alb(Alb::custom("scripted", scripted).window(5))
        .placement(placement)
    }

    /// Runs `sk` over `ranks` simulated ranks; returns every rank's outcome.
    fn simulate(sk: &Skeleton<f32>, ranks: usize) -> Vec<Outcome<f32>> {
        let endpoints = Arc::new(Mutex::new(
            in_process::<f32>(2)
                .into_iter()
                .map(Some)
                .collect::<Vec<_>>(),
        ));
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..ranks).map(|_| channel::<Parcel>()).unzip();
        let jobs: Vec<SimRank<f32>> = rxs
            .into_iter()
            .enumerate()
            .map(|(rank, rx)| SimRank {
                info: JobInfo {
                    rank,
                    size: ranks,
                    hosts: (0..ranks).map(|r| format!("h{r}")).collect(),
                    cores: vec![1; ranks],
                    threads_multiple: true,
                },
                endpoints: endpoints.clone(),
                out: txs.clone(),
                inbox: Mutex::new(rx),
            })
            .collect();
        std::thread::scope(|s| {
            let hs: Vec<_> = jobs
                .iter()
                .map(|j| s.spawn(move || execute(sk.plan(), j).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn the_report_is_whole_wherever_process_zero_runs() {
        let alone = skeleton(vec![0, 0]).run().unwrap();
        assert_eq!(alone.report.summary.rebalances, 2);
        for placement in [vec![0, 1], vec![1, 0]] {
            let outs = simulate(&skeleton(placement.clone()), 2);
            let root = outs.iter().find(|o| o.is_root()).unwrap();
            assert_eq!(root.grid, alone.grid, "placement {placement:?}");
            for o in &outs {
                let r = &o.report;
                assert_eq!(r.summary.rebalances, 2, "placement {placement:?}");
                assert_eq!(r.redistributions.len(), 2);
                assert_eq!(
                    r.redistributions[0].weights_after,
                    alone.report.redistributions[0].weights_after
                );
                assert_eq!(r.heuristic, alone.report.heuristic);
                assert_eq!(r.iterations.len(), 100);
            }
        }
    }
}

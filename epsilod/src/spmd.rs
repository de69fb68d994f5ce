//! Programs over the job's virtual processes that are not stencil runs:
//! communication benchmarks and link calibration use the same processes,
//! placement and transports as a run, so what they measure is what a run
//! pays.

use crate::cluster::Cluster;
use crate::error::{ControlError, RunError, SetupError, VpError};
use crate::executor::LocalJob;
use crate::job::{all_cores, cores_here, Job, JobInfo, WaitPolicy};
use hitmap::{Transport, TransportError};

/// What each virtual process runs: its transport end in, its values out.
pub type Body<'a> = dyn Fn(&mut dyn Transport<f32>) -> Result<Vec<f64>, TransportError> + Sync + 'a;

/// Runs `body` once on each of `per_rank` virtual processes per rank of
/// `cluster` (virtual process `p` on rank `p / per_rank`), one thread each,
/// and returns every process's values, indexed by process, on every rank.
pub fn run_vps(cluster: &Cluster, per_rank: usize, body: &Body) -> Result<Vec<Vec<f64>>, RunError> {
    run_vps_on(cluster.info(), per_rank, body)
}

fn run_vps_on(info: &JobInfo, per_rank: usize, body: &Body) -> Result<Vec<Vec<f64>>, RunError> {
    if per_rank == 0 {
        return Err(SetupError::NoDevices.into());
    }
    let owners: Vec<usize> = (0..info.size * per_rank).map(|p| p / per_rank).collect();
    if info.size > 1 {
        #[cfg(feature = "mpi")]
        return on_job(&crate::cluster::mpi::MpiJob::new(info), &owners, body);
        #[cfg(not(feature = "mpi"))]
        return Err(SetupError::NoMpi { size: info.size }.into());
    }
    on_job(
        &LocalJob::<f32>::new(info.clone(), owners.len()),
        &owners,
        body,
    )
}

fn on_job(job: &dyn Job<f32>, owners: &[usize], body: &Body) -> Result<Vec<Vec<f64>>, RunError> {
    job.place(owners)?;
    let info: &JobInfo = job.info();
    let local: Vec<usize> = (0..owners.len())
        .filter(|&p| owners[p] == info.rank)
        .collect();
    // Wait as a run of as many one-thread devices here would: polling while
    // each process has a core. A ping-pong between blocked threads measures
    // the wake-up of a sleeping core, not what a run pays.
    let wait = WaitPolicy::for_threads(local.len(), cores_here(info, all_cores()));
    let failed = |vp: usize, cause: VpError| RunError::Vp {
        vp,
        device: "benchmark process".into(),
        cause,
    };
    let results: Vec<Result<Vec<Vec<f64>>, RunError>> = std::thread::scope(|s| {
        let handles: Vec<_> = local
            .iter()
            .map(|&p| {
                std::thread::Builder::new()
                    .spawn_scoped(s, move || {
                        let mut ep = job.endpoint(p, wait).map_err(|e| failed(p, e))?;
                        let mine = body(&mut *ep).map_err(|e| failed(p, e.into()))?;
                        // Every process learns every result through the
                        // transport itself: no rank-0 gather to special-case.
                        ep.all_gather(&mine).map_err(|e| failed(p, e.into()))
                    })
                    .map_err(|e| {
                        // Its endpoint goes, so the others fail, not hang.
                        drop(job.endpoint(p, wait));
                        failed(p, VpError::Thread(e))
                    })
            })
            .collect();
        handles
            .into_iter()
            .zip(&local)
            .map(|(h, &p)| {
                h.and_then(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(failed(p, VpError::Panicked)))
                })
            })
            .collect()
    });
    // A process that stopped because a peer had gone only echoes the
    // failure of that peer: report the cause.
    let mut errors: Vec<RunError> = Vec::new();
    let mut all = None;
    for r in results {
        match r {
            Ok(values) => all = all.or(Some(values)),
            Err(e) => errors.push(e),
        }
    }
    if let Some(i) = errors.iter().position(|e| !e.is_peer_gone()) {
        return Err(errors.swap_remove(i));
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    all.ok_or(RunError::Mpi(ControlError::NoProcess))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without MPI, a job of several ranks is refused rather than run by
    /// each rank as if alone.
    #[test]
    #[cfg(not(feature = "mpi"))]
    fn a_build_without_mpi_refuses_a_job_of_several_ranks() {
        let job = JobInfo::first_of_two();
        let e = run_vps_on(&job, 1, &|_: &mut dyn Transport<f32>| Ok(vec![])).expect_err("no MPI");
        assert!(
            matches!(e, RunError::Setup(SetupError::NoMpi { size: 2 })),
            "{e}"
        );
    }

    #[test]
    fn every_process_runs_once_and_everyone_gets_every_result() {
        let alone = JobInfo::alone();
        let all = run_vps_on(&alone, 4, &|t: &mut dyn Transport<f32>| {
            // A ring: each sends its rank on and receives its left
            // neighbour's, so the transports really carry data.
            let (me, n) = (t.rank(), t.size());
            t.send((me + 1) % n, 7, vec![me as f32])?;
            let got = t.recv((me + n - 1) % n, 7)?;
            Ok(vec![me as f64, f64::from(got[0])])
        })
        .unwrap();
        assert_eq!(
            all,
            vec![
                vec![0.0, 3.0],
                vec![1.0, 0.0],
                vec![2.0, 1.0],
                vec![3.0, 2.0]
            ]
        );
        assert!(matches!(
            run_vps_on(&alone, 0, &|_| Ok(vec![])),
            Err(RunError::Setup(SetupError::NoDevices))
        ));
    }
}

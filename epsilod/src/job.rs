//! Who runs where: the job a process belongs to (its rank, every rank's
//! host and cores), how the ranks on one host share its cores, and the
//! `Job` trait through which a run's virtual processes talk, whether in
//! one process or across MPI ranks.

use crate::error::{chain, RunError, VpError};
use crate::report::Report;
use crate::results::VpResult;
use hitmap::Transport;
use kernels::Cell;
use serde::{Deserialize, Serialize};

/// What a run needs to know about the job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobInfo {
    /// This process's rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// Host name of every rank.
    pub hosts: Vec<String>,
    /// The cores every rank may run on ([`all_cores`]
    /// there: its affinity mask, or its cgroup's quota), before ranks on one
    /// host share them out.
    pub cores: Vec<usize>,
    /// Whether several threads of a rank may call MPI at once (so that a
    /// rank can host several virtual processes).
    pub threads_multiple: bool,
}

impl JobInfo {
    /// A process on its own.
    pub fn alone() -> JobInfo {
        JobInfo {
            rank: 0,
            size: 1,
            hosts: vec![local_host()],
            cores: vec![all_cores()],
            threads_multiple: true,
        }
    }

    /// Rank 0 of two on two hosts: a job only a launcher starts, for the
    /// tests of a build without MPI.
    #[cfg(all(test, not(feature = "mpi")))]
    pub(crate) fn first_of_two() -> JobInfo {
        JobInfo {
            size: 2,
            hosts: vec!["a".into(), "b".into()],
            cores: vec![1, 1],
            ..JobInfo::alone()
        }
    }
}

/// This machine's name, without MPI, as the OS gives it (the kernel's,
/// else `/etc/hostname`).
pub(crate) fn local_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Threads of the default device: every core.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How a virtual process waits for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitPolicy {
    /// Poll up to [`hitmap::SPIN`], spinning on the core, then block: every
    /// thread of this process has a core, so the spin takes none from a
    /// thread of ours and saves a wake-up. It does not yield, which would
    /// hand the core to other processes' work for a whole scheduler slice.
    PollThenBlock,
    /// Block at once: threads outnumber cores, and a poller would take the
    /// core of the thread whose message it waits for.
    Block,
}

impl WaitPolicy {
    /// The policy for a process whose devices run `threads` threads in all
    /// on `cores` cores.
    pub(crate) fn for_threads(threads: usize, cores: usize) -> WaitPolicy {
        if threads <= cores {
            WaitPolicy::PollThenBlock
        } else {
            WaitPolicy::Block
        }
    }
}

/// This process's share of the cores it may run on (ids as
/// [`core_affinity`] numbers them), the same split as [`cores_here`]; all of
/// them where the ranks on the host are already bound apart (fewer cores
/// than ranks on the host).
pub(crate) fn my_cores(info: &JobInfo, ids: Vec<usize>) -> Vec<usize> {
    let host = info.hosts.get(info.rank);
    let mates: Vec<usize> = (0..info.hosts.len())
        .filter(|&r| Some(&info.hosts[r]) == host)
        .collect();
    let n = mates.len();
    if n <= 1 || ids.len() < n {
        return ids;
    }
    let i = mates.iter().position(|&r| r == info.rank).unwrap_or(0);
    let start = i * (ids.len() / n) + i.min(ids.len() % n);
    let len = ids.len() / n + usize::from(i < ids.len() % n);
    ids[start..start + len].to_vec()
}

/// The cores this process may use out of `cores`: shared evenly with the
/// other ranks of the job on its host (the lower ranks taking one more
/// where they do not divide), at least one.
pub(crate) fn cores_here(info: &JobInfo, cores: usize) -> usize {
    rank_share(info, info.rank, cores)
}

/// [`cores_here`] for rank `rank` of the job, which may run on `cores`.
pub(crate) fn rank_share(info: &JobInfo, rank: usize, cores: usize) -> usize {
    let Some(host) = info.hosts.get(rank) else {
        return cores.max(1);
    };
    let mates: Vec<usize> = (0..info.hosts.len())
        .filter(|&r| info.hosts[r] == *host)
        .collect();
    let n = mates.len().max(1);
    let i = mates.iter().position(|&r| r == rank).unwrap_or(0);
    (cores / n + usize::from(i < cores % n)).max(1)
}

/// What a rank offers the agreement round before ranks go on together
/// (see [`Cluster::agree`](crate::Cluster::agree)); sent to every rank as
/// it is, so it stays plain data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Readiness {
    /// Ready to start what this fingerprint describes (empty where the
    /// ranks only agree to go on).
    Ready(String),
    /// Cannot start: its error, causes included, in one line.
    Failed(String),
}

impl Readiness {
    /// Ready, with nothing to compare beyond that.
    pub fn ready() -> Readiness {
        Readiness::Ready(String::new())
    }

    /// Cannot start because of `error`.
    pub fn failed(error: &(dyn std::error::Error + 'static)) -> Readiness {
        Readiness::Failed(chain(error))
    }

    /// Ready where `checked` is a value, failed with its error otherwise.
    pub fn of<V, E: std::error::Error + 'static>(checked: &Result<V, E>) -> Readiness {
        match checked {
            Ok(_) => Readiness::ready(),
            Err(e) => Readiness::failed(e),
        }
    }
}

/// The processes a run spans and how they talk.
pub(crate) trait Job<T: Cell>: Sync {
    /// This process's place in the job.
    fn info(&self) -> &JobInfo;
    /// Every rank offers its view of the run; all get the same verdict.
    fn agree(&self, mine: Readiness) -> Result<(), RunError>;
    /// Called once the owner of every virtual process is agreed.
    fn place(&self, owners: &[usize]) -> Result<(), RunError>;
    /// Virtual process `p`'s endpoint, made in the thread that will use it.
    /// `wait` says whether its receives may poll before they block (see
    /// [`WaitPolicy`]); MPI's probe loop, which cannot block with a bound
    /// on the wait, yields at once where the policy says to block.
    fn endpoint(&self, p: usize, wait: WaitPolicy) -> Result<Box<dyn Transport<T>>, VpError>;
    /// Whether a failure must be acted on at once (`on_failure`), because
    /// peers elsewhere could otherwise wait for it forever.
    fn fails_fast(&self) -> bool {
        false
    }
    /// The first failure of a local virtual process, while the others may
    /// still run.
    fn on_failure(&self, _error: &RunError) {}
    /// Hands this process's results (by virtual process) to rank 0, which
    /// gets every result in process order; other ranks get `None`.
    fn gather(
        &self,
        owners: &[usize],
        mine: Vec<(usize, VpResult<T>)>,
    ) -> Result<Option<Vec<VpResult<T>>>, RunError>;
    /// Rank 0's report on every rank (rank 0 passes it).
    fn share(&self, report: Option<Report>) -> Result<Report, RunError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank `rank` of a job with a rank on each of `hosts`, each of whose
    /// ranks may run on `cores` cores.
    fn on_hosts(rank: usize, hosts: &[&str], cores: usize) -> JobInfo {
        JobInfo {
            rank,
            size: hosts.len(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            cores: vec![cores; hosts.len()],
            threads_multiple: true,
        }
    }

    #[test]
    fn ranks_on_one_host_share_its_cores() {
        let info = |rank: usize, hosts: &[&str]| on_hosts(rank, hosts, 16);
        assert_eq!(cores_here(&info(0, &["a"]), 16), 16);
        assert_eq!(cores_here(&info(1, &["a", "a"]), 16), 8);
        assert_eq!(cores_here(&info(1, &["a", "b"]), 16), 16);
        let hosts = ["a", "a", "a", "b"];
        let on_a: Vec<usize> = (0..3).map(|r| cores_here(&info(r, &hosts), 16)).collect();
        assert_eq!(on_a, [6, 5, 5]);
        assert_eq!(cores_here(&info(0, &["a", "a", "a"]), 2), 1);
        assert_eq!(cores_here(&info(2, &["a", "a", "a"]), 2), 1);
    }

    #[test]
    fn a_ranks_cores_are_its_share_of_its_hosts() {
        let info = |rank: usize, hosts: &[&str]| on_hosts(rank, hosts, 5);
        let ids: Vec<usize> = (0..5).collect();
        assert_eq!(my_cores(&info(0, &["a", "a"]), ids.clone()), [0, 1, 2]);
        assert_eq!(my_cores(&info(1, &["a", "a"]), ids.clone()), [3, 4]);
        assert_eq!(my_cores(&info(1, &["a", "b"]), ids.clone()), ids);
        // Bound apart already (one core each): keep what the rank was given.
        assert_eq!(my_cores(&info(1, &["a", "a"]), vec![7]), [7]);
    }

    #[test]
    fn waits_poll_only_while_every_thread_has_a_core() {
        assert_eq!(WaitPolicy::for_threads(1, 2), WaitPolicy::PollThenBlock);
        assert_eq!(WaitPolicy::for_threads(2, 2), WaitPolicy::PollThenBlock);
        assert_eq!(WaitPolicy::for_threads(3, 2), WaitPolicy::Block);
        // Two devices of 8 threads on 16 cores: 16 pool threads and the two
        // virtual-process threads beside them.
        assert_eq!(WaitPolicy::for_threads(18, 16), WaitPolicy::Block);
    }
}

//! Cores for the devices of one process: how many this rank may use (shared
//! with the other ranks on its host), which each device is pinned to under
//! `--pin`, and how virtual processes wait for messages given how many
//! threads compete for those cores.

use crate::cluster::JobInfo;
use crate::devices::{DeviceKind, DeviceSpec};

/// How a virtual process waits for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Poll briefly, then block: every thread of this process has a core,
    /// so polling takes nothing from anyone and saves a wake-up.
    PollThenBlock,
    /// Block at once: threads outnumber cores, and a poller would take the
    /// core of the thread whose message it waits for.
    Block,
}

impl Wait {
    /// The policy for a process whose devices run `threads` threads in all
    /// on `cores` cores.
    pub(crate) fn for_threads(threads: usize, cores: usize) -> Wait {
        if threads <= cores {
            Wait::PollThenBlock
        } else {
            Wait::Block
        }
    }
}

/// Threads `devices` keep busy: a CPU device of one thread computes on its
/// virtual process's thread; one of more threads has a pool beside that
/// thread, which packs, sends and receives between launches; any other
/// device has the thread that drives it.
pub(crate) fn busy_threads(devices: &[DeviceSpec]) -> usize {
    devices
        .iter()
        .map(|d| match d.kind {
            DeviceKind::Cpu {
                threads: Some(threads),
            } if threads > 1 => threads + 1,
            _ => 1,
        })
        .sum()
}

/// The cores each of `devices` is pinned to, in device order over `cores`
/// (reused in turn where too few): a CPU device with a pool one per
/// thread, any other device one, for its virtual process's thread.
pub(crate) fn pin_cores(devices: &[DeviceSpec], cores: &[usize]) -> Vec<Vec<usize>> {
    if cores.is_empty() {
        return vec![Vec::new(); devices.len()];
    }
    let mut next = 0;
    devices
        .iter()
        .map(|d| {
            let n = match d.kind {
                DeviceKind::Cpu {
                    threads: Some(threads),
                } => threads,
                _ => 1,
            };
            let mine = (next..next + n).map(|i| cores[i % cores.len()]).collect();
            next += n;
            mine
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_on_one_host_share_its_cores() {
        let info = |rank: usize, hosts: &[&str]| JobInfo {
            rank,
            size: hosts.len(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            cores: vec![16; hosts.len()],
            threads_multiple: true,
        };
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
    fn pinned_devices_get_cores_of_their_own_in_order() {
        let specs = [
            DeviceSpec::cpu(2),
            DeviceSpec::parse("opencl").unwrap(),
            DeviceSpec::cpu(1),
        ];
        assert_eq!(
            pin_cores(&specs, &[0, 1, 2, 3, 4]),
            [vec![0, 1], vec![2], vec![3]]
        );
        // Too few cores: reused in turn.
        assert_eq!(pin_cores(&specs, &[5, 6]), [vec![5, 6], vec![5], vec![6]]);
        assert!(pin_cores(&specs, &[]).iter().all(Vec::is_empty));
        let info = |rank: usize, hosts: &[&str]| JobInfo {
            rank,
            size: hosts.len(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            cores: vec![5; hosts.len()],
            threads_multiple: true,
        };
        let ids: Vec<usize> = (0..5).collect();
        assert_eq!(my_cores(&info(0, &["a", "a"]), ids.clone()), [0, 1, 2]);
        assert_eq!(my_cores(&info(1, &["a", "a"]), ids.clone()), [3, 4]);
        assert_eq!(my_cores(&info(1, &["a", "b"]), ids.clone()), ids);
        // Bound apart already (one core each): keep what the rank was given.
        assert_eq!(my_cores(&info(1, &["a", "a"]), vec![7]), [7]);
    }

    #[test]
    fn busy_threads_count_the_thread_beside_a_pool() {
        let specs = [DeviceSpec::cpu(1), DeviceSpec::cpu(8), DeviceSpec::cpu(8)];
        assert_eq!(busy_threads(&specs[..1]), 1);
        assert_eq!(busy_threads(&specs), 19);
    }

    #[test]
    fn waits_poll_only_while_every_thread_has_a_core() {
        assert_eq!(Wait::for_threads(1, 2), Wait::PollThenBlock);
        assert_eq!(Wait::for_threads(2, 2), Wait::PollThenBlock);
        assert_eq!(Wait::for_threads(3, 2), Wait::Block);
        // Two devices of 8 threads on 16 cores: 16 pool threads and the two
        // virtual-process threads beside them.
        assert_eq!(Wait::for_threads(18, 16), Wait::Block);
    }
}

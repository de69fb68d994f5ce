//! Where a run's devices go when it does not say: one CPU device per rank,
//! and CPU devices given no threads sharing the cores the others leave.

use super::spec::DeviceSpec;
use crate::job::{rank_share, JobInfo};
use controllers::registry::DeviceKind;

/// The devices of a run and, when the file places them, their ranks.
pub type Placed = (Vec<DeviceSpec>, Option<Vec<usize>>);

/// The devices of a run given none: one CPU device per rank of `job`, each
/// with its rank's share of its host's cores (ranks on one host split them,
/// as [`share_cores`] would split them for a `cpu` device there), placed on
/// its rank. Alone, one device on every core. The threads are written out
/// rather than left to each rank, so that every rank agrees on the same run
/// and the report says what each rank got.
pub fn one_cpu_per_rank(job: &JobInfo) -> Placed {
    let devices = (0..job.size)
        .map(|r| {
            let cores = job.cores.get(r).copied().unwrap_or(1);
            DeviceSpec::cpu(rank_share(job, r, cores))
        })
        .collect();
    let placement = (job.size > 1).then(|| (0..job.size).collect());
    (devices, placement)
}

/// `devices` (those of one process) with every CPU device that was given no
/// threads given its share of `cores`: the cores left once the others take
/// theirs (a CPU device its threads, any other device one core for the
/// thread that drives it: NVIDIA's OpenCL polls while it waits for a
/// kernel), split evenly, the first ones getting one more where they do
/// not divide, and at least one thread each. So one `cpu` device alone
/// takes every core, and the threads of a process never exceed `cores`
/// unless explicit `threads=` already ask for more (on a 16-core node, two
/// 8-thread devices each taking all 16 cores ran 2-3x slower than one).
pub fn share_cores(devices: &[DeviceSpec], cores: usize) -> Vec<DeviceSpec> {
    let auto = |d: &DeviceSpec| matches!(d.kind, DeviceKind::Cpu { threads: None });
    let taken: usize = devices
        .iter()
        .map(|d| match d.kind {
            DeviceKind::Cpu { threads } => threads.unwrap_or(0),
            DeviceKind::Gpu(_) => 1,
        })
        .sum();
    let sharing = devices.iter().filter(|d| auto(d)).count();
    let left = cores.saturating_sub(taken);
    let mut nth = 0;
    devices
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if auto(&d) {
                let share = left / sharing + usize::from(nth < left % sharing);
                d.kind = DeviceKind::Cpu {
                    threads: Some(share.max(1)),
                };
                nth += 1;
            }
            d
        })
        .collect()
}

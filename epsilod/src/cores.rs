//! Threads and cores of one process's devices: how many threads they keep
//! busy, and which cores each is pinned to under `--pin` (how many cores
//! the process has is its share of its host's, [`crate::job`]).

use crate::devices::{DeviceKind, DeviceSpec};

/// Whether `device` computes on a thread pool of its own (a CPU device of
/// more than one thread); the others compute on, or are driven from, their
/// virtual process's thread.
pub(crate) fn pooled(device: &DeviceSpec) -> bool {
    matches!(device.kind, DeviceKind::Cpu { threads: Some(t) } if t > 1)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn busy_threads_count_the_thread_beside_a_pool() {
        let specs = [DeviceSpec::cpu(1), DeviceSpec::cpu(8), DeviceSpec::cpu(8)];
        assert_eq!(busy_threads(&specs[..1]), 1);
        assert_eq!(busy_threads(&specs), 19);
    }
}

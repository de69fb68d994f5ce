//! The memory this host has for a run's tiles, so a run too large for it is
//! refused with a clear error before it allocates (or, where the kernel
//! overcommits memory, before it is killed for writing its tiles).

/// The memory a process has for new allocations, and what bounds it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Available {
    /// Bytes.
    pub bytes: u64,
    /// The cgroup limit file where its limit is the bound (a batch job's
    /// memory), `None` where the host's free memory is: the error tells a
    /// user which one to raise.
    pub cgroup: Option<String>,
}

/// Bytes of memory available to this process for new allocations: the
/// host's `MemAvailable` (Linux), no more than its cgroup's memory limit
/// where one is set (a batch system's job limit); `None` where neither is
/// known. The limit, not the limit less the cgroup's usage: that usage
/// counts page cache the kernel would reclaim.
pub(crate) fn available() -> Option<Available> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let host = read("/proc/meminfo").and_then(|m| mem_available(&m));
    let limit = read("/proc/self/cgroup").and_then(|c| cgroup_limit(&c, read));
    bound(host, limit)
}

/// The lower of the host's free memory and the cgroup's limit.
fn bound(host: Option<u64>, limit: Option<(u64, String)>) -> Option<Available> {
    match (host, limit) {
        (Some(h), Some((l, _))) if h <= l => Some(Available {
            bytes: h,
            cgroup: None,
        }),
        (_, Some((l, file))) => Some(Available {
            bytes: l,
            cgroup: Some(file),
        }),
        (h, None) => h.map(|bytes| Available {
            bytes,
            cgroup: None,
        }),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib * 1024)
}

/// The memory limit of the cgroup a `/proc/self/cgroup` text names, read
/// through `read`: the smallest of cgroup v2's `memory.max` or v1's
/// `memory.limit_in_bytes` over the group and each group above it (a batch
/// system sets the limit on the job's group, above the task's), or at the
/// root where a container sees its own group as the root, with the file
/// that sets it. `None` where no limit is set.
fn cgroup_limit(cgroup: &str, read: impl Fn(&str) -> Option<String>) -> Option<(u64, String)> {
    let mut limit: Option<(u64, String)> = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (dir, file) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The group, each group above it, and the root.
        let mut group = path.trim_end_matches('/');
        loop {
            let at = format!("{dir}{group}/{file}");
            if let Some(n) = read(&at).and_then(|t| parse_limit(&t)) {
                if limit.as_ref().is_none_or(|(l, _)| n < *l) {
                    limit = Some((n, at));
                }
            }
            match group.rfind('/') {
                Some(i) => group = &group[..i],
                None => break,
            }
        }
    }
    limit
}

/// A limit file's bytes; `None` for no limit (`max`, or v1's near-2^63).
fn parse_limit(text: &str) -> Option<u64> {
    let n: u64 = text.trim().parse().ok()?;
    (n < 1 << 60).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text =
            "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   20480000 kB\n";
        assert_eq!(mem_available(text), Some(20_480_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        if cfg!(target_os = "linux") {
            assert!(available().is_some_and(|a| a.bytes > 0));
        }
    }

    #[test]
    fn a_cgroups_memory_limit_is_the_smallest_on_its_path() {
        let files = HashMap::from([
            // Slurm on v2: the limit on the job and the step, not the task.
            (
                "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max",
                "8589934592\n",
            ),
            (
                "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/memory.max",
                "9000000000\n",
            ),
            (
                "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/user/task_0/memory.max",
                "max\n",
            ),
            (
                "/sys/fs/cgroup/memory/slurm/uid_0/job_8/memory.limit_in_bytes",
                "4294967296\n",
            ),
            (
                "/sys/fs/cgroup/memory/slurm/uid_0/job_8/step_0/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/sys/fs/cgroup/memory.max", "max\n"),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let read = |p: &str| files.get(p).map(|s| s.to_string());
        assert_eq!(
            cgroup_limit(
                "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n",
                read
            ),
            Some((
                8 << 30,
                "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max".to_string()
            ))
        );
        assert_eq!(
            cgroup_limit("5:cpu:/x\n4:memory:/slurm/uid_0/job_8/step_0\n0::/\n", read),
            Some((
                4 << 30,
                "/sys/fs/cgroup/memory/slurm/uid_0/job_8/memory.limit_in_bytes".to_string()
            ))
        );
        // Unlimited all the way up (v2 "max", v1 near 2^63), or a group not
        // seen under its path (a container): no limit.
        assert_eq!(cgroup_limit("0::/elsewhere\n", read), None);
        assert_eq!(cgroup_limit("4:memory:/elsewhere\n", read), None);
        assert_eq!(cgroup_limit("garbage\n1:cpu:/\n", read), None);
        assert_eq!(cgroup_limit("0::/slurm/job_7\n", |_| None), None);
    }

    #[test]
    fn the_lower_of_host_and_cgroup_is_the_bound_and_named() {
        let cg = |n: u64| Some((n, "/sys/fs/cgroup/job/memory.max".to_string()));
        let host = |bytes| {
            Some(Available {
                bytes,
                cgroup: None,
            })
        };
        assert_eq!(bound(Some(5), cg(9)), host(5));
        assert_eq!(
            bound(Some(9), cg(5)),
            Some(Available {
                bytes: 5,
                cgroup: Some("/sys/fs/cgroup/job/memory.max".to_string())
            })
        );
        assert_eq!(bound(None, cg(5)).map(|a| a.bytes), Some(5));
        assert_eq!(bound(Some(5), None), host(5));
        assert_eq!(bound(None, None), None);
    }
}

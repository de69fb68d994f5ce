//! The memory this host has for a run's tiles, so a run too large for it is
//! refused with a clear error before it allocates (or, where the kernel
//! overcommits memory, before it is killed for writing its tiles).

/// Bytes of memory available for new allocations on this host without
/// swapping (Linux's `MemAvailable`); `None` where the host does not say.
pub(crate) fn available() -> Option<u64> {
    mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text =
            "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   20480000 kB\n";
        assert_eq!(mem_available(text), Some(20_480_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        if cfg!(target_os = "linux") {
            assert!(available().is_some_and(|b| b > 0));
        }
    }
}

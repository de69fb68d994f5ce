//! Thread CPU time of kernels, as well as their wall time.
//!
//! A wall-clock kernel time counts the time the OS gave the core to other
//! threads: with more devices than cores (oversubscription) it grows with
//! the device count although the work per device does not. The CPU time
//! the kernel's threads consumed does not, so a scaling model can fit
//! compute on it and convert to wall time for the cores at its target.
//!
//! The CPU backend charges each launch's CPU time to the thread that
//! launched it (the virtual process's): its own for a one-thread device,
//! which runs kernels on the caller's thread, and the pool threads' for a
//! pooled one, each task timed on the thread that ran it. The charge is
//! thread-local rather than a [`crate::Controller`] method so that every
//! other backend (GPUs: no host CPU time to speak of) keeps its interface;
//! the caller takes it with [`take_charged`] after its kernels.

use std::cell::Cell;

thread_local! {
    static CHARGED: Cell<Option<f64>> = const { Cell::new(None) };
}

/// CPU seconds the calling thread has consumed, or `None` where the OS
/// does not say.
pub fn thread_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's whole
        // duration, and CLOCK_THREAD_CPUTIME_ID needs nothing else.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (r == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Adds `seconds` of kernel CPU time to the calling thread's charge.
pub(crate) fn charge(seconds: f64) {
    CHARGED.with(|c| c.set(Some(c.get().unwrap_or(0.0) + seconds)));
}

/// The kernel CPU seconds charged to the calling thread since the last
/// call, or `None` when none were (a device that does not measure it, or
/// an OS without thread CPU clocks).
pub fn take_charged() -> Option<f64> {
    CHARGED.with(Cell::take)
}

/// Times `f` in the calling thread's CPU seconds (0 where the OS does not
/// say).
pub(crate) fn timed<R>(f: impl FnOnce() -> R) -> (R, Option<f64>) {
    let before = thread_cpu_seconds();
    let r = f();
    let spent = match (before, thread_cpu_seconds()) {
        (Some(a), Some(b)) => Some((b - a).max(0.0)),
        _ => None,
    };
    (r, spent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(wall: f64) -> u64 {
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_secs_f64() < wall {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        x
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn sleeping_costs_no_cpu_and_spinning_does() {
        let ((), slept) = timed(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        let (_, spun) = timed(|| spin(0.05));
        let (slept, spun) = (slept.unwrap(), spun.unwrap());
        assert!(slept < 0.01, "sleeping 50 ms cost {slept} s of CPU");
        // A busy core may take some of the 50 ms away, never add to them.
        assert!(spun > 0.005 && spun < 0.06, "spinning 50 ms cost {spun} s");
    }

    #[test]
    fn charges_add_up_per_thread_and_are_taken_once() {
        assert_eq!(take_charged(), None);
        charge(0.25);
        charge(0.5);
        std::thread::spawn(|| {
            charge(1.0);
        })
        .join()
        .unwrap();
        assert_eq!(take_charged(), Some(0.75));
        assert_eq!(take_charged(), None);
    }
}

//! Thread CPU time of kernels, as well as their wall time, and the
//! instructions they retired where the hardware counts them.
//!
//! A wall-clock kernel time counts the time the OS gave the core to other
//! threads: with more devices than cores (oversubscription) it grows with
//! the device count although the work per device does not. The CPU time
//! the kernel's threads consumed does not, so a scaling model can fit
//! compute on it and convert to wall time for the cores at its target.
//! Instructions (P3S's per-process counts) are what the compute was, free
//! of the clock: counted only when asked ([`count_instructions`]: each
//! task then pays two reads of a counter) and where the OS lends a
//! hardware counter to the thread (not in most virtual machines).
//!
//! Measuring is off unless asked for ([`measure`]): each read of a
//! thread's CPU clock is a system call, two per launch (and per pool
//! task), and measured 0.6 µs each on this project's 2-core VM. With them,
//! 2d4 130², two one-thread devices, took 7-10 µs an iteration; without,
//! 4.3-4.4 µs.
//!
//! The CPU backend charges each launch's CPU time to the thread that
//! launched it (the virtual process's): its own for a one-thread device,
//! which runs kernels on the caller's thread, and the pool threads' for a
//! pooled one, each task timed on the thread that ran it. The charge is
//! thread-local rather than a [`crate::Controller`] method so that every
//! other backend (GPUs: no host CPU time to speak of) keeps its interface;
//! the caller takes it with [`take_charged`] after its kernels.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What kernels consumed on the threads that ran them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Charge {
    /// Thread CPU seconds.
    pub seconds: f64,
    /// User-space instructions retired, where counted.
    pub instructions: Option<u64>,
}

/// Both charges together; instructions only where both counted them (a
/// sum over some threads would pass for all of them).
impl std::ops::Add for Charge {
    type Output = Charge;
    fn add(self, other: Charge) -> Charge {
        Charge {
            seconds: self.seconds + other.seconds,
            instructions: self
                .instructions
                .zip(other.instructions)
                .map(|(a, b)| a + b),
        }
    }
}

static COUNTING: AtomicBool = AtomicBool::new(false);

/// Live [`Measuring`] guards: kernels are measured while any is.
static MEASURING: AtomicUsize = AtomicUsize::new(0);

/// Kernels' CPU time is measured, in every thread of the process, while
/// the guard lives (a count: runs at once in one process each hold one,
/// and measuring stops when the last ends).
#[must_use = "measuring stops when the guard is dropped"]
pub struct Measuring(());

impl Drop for Measuring {
    fn drop(&mut self) {
        MEASURING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Measures kernels' thread CPU time until the guard is dropped.
pub fn measure() -> Measuring {
    MEASURING.fetch_add(1, Ordering::Relaxed);
    Measuring(())
}

/// Whether kernels' CPU time is being measured.
pub fn measuring() -> bool {
    MEASURING.load(Ordering::Relaxed) > 0
}

/// Whether kernels' instructions are counted from now on, in every thread
/// of the process (off by default), while their CPU time is measured.
pub fn count_instructions(on: bool) {
    COUNTING.store(on, Ordering::Relaxed);
}

/// A thread's instruction counter: not opened yet, refused by the OS, or
/// open and counting.
enum Counter {
    Untried,
    Refused,
    #[cfg(target_os = "linux")]
    Open(perf_event::Counter),
}

thread_local! {
    static CHARGED: Cell<Option<Charge>> = const { Cell::new(None) };
    static COUNTER: RefCell<Counter> = const { RefCell::new(Counter::Untried) };
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

/// User-space instructions the calling thread has retired since its
/// counter opened, or `None` where the OS lends no hardware counter. The
/// first call on a thread opens it (once: a refusal, of any cause, is
/// remembered for the thread's life).
pub fn thread_instructions() -> Option<u64> {
    read_counter().map(|r| r.count)
}

/// A counter's reading: its count, and the nanoseconds it was enabled and
/// actually counting (less when the kernel multiplexed it with other
/// events).
#[derive(Clone, Copy, Debug)]
struct Reading {
    count: u64,
    enabled: u64,
    running: u64,
}

/// Instructions retired between two readings, where the counter counted
/// all the time in between (a multiplexed stretch would make the count an
/// estimate: none then).
fn retired(before: Reading, after: Reading) -> Option<u64> {
    let enabled = after.enabled.checked_sub(before.enabled)?;
    let running = after.running.checked_sub(before.running)?;
    (enabled == running).then(|| after.count.saturating_sub(before.count))
}

/// The calling thread's counter, opened on first use.
fn read_counter() -> Option<Reading> {
    COUNTER.with(|c| {
        let mut c = c.borrow_mut();
        if matches!(*c, Counter::Untried) {
            *c = open_counter();
        }
        match &mut *c {
            #[cfg(target_os = "linux")]
            Counter::Open(counter) => reading(counter),
            _ => None,
        }
    })
}

#[cfg(target_os = "linux")]
fn reading(counter: &mut perf_event::Counter) -> Option<Reading> {
    let r = counter.read_count_and_time().ok()?;
    Some(Reading {
        count: r.count,
        enabled: r.time_enabled,
        running: r.time_running,
    })
}

#[cfg(target_os = "linux")]
fn open_counter() -> Counter {
    open_event(perf_event::events::Hardware::INSTRUCTIONS)
}

/// A counter of `event` for the calling thread on any CPU, user space
/// only, counting from now on.
#[cfg(target_os = "linux")]
fn open_event(event: impl perf_event::events::Event + 'static) -> Counter {
    match perf_event::Builder::new(event).build() {
        Ok(mut counter) => match counter.enable() {
            Ok(()) => Counter::Open(counter),
            Err(_) => Counter::Refused,
        },
        Err(_) => Counter::Refused,
    }
}

#[cfg(not(target_os = "linux"))]
fn open_counter() -> Counter {
    Counter::Refused
}

/// Adds `charge` to the calling thread's.
pub(crate) fn charge(charge: Charge) {
    CHARGED.with(|c| c.set(Some(c.get().map_or(charge, |had| had + charge))));
}

/// What kernels charged to the calling thread since the last call, or
/// `None` when none did (a device that does not measure it, or an OS
/// without thread CPU clocks).
pub fn take_charged() -> Option<Charge> {
    CHARGED.with(Cell::take)
}

/// Runs `f` and, while [`measuring`], measures it on the calling thread:
/// CPU seconds (`None` where the OS does not say) and, while counting is
/// on, instructions. The counter is read (and on a thread's first task
/// opened) outside the CPU-time window, so its system calls are not
/// charged as kernel time; they do fall in the launch's wall time, which
/// is why both are off unless asked for.
pub(crate) fn timed<R>(f: impl FnOnce() -> R) -> (R, Option<Charge>) {
    if !measuring() {
        return (f(), None);
    }
    let counting = COUNTING.load(Ordering::Relaxed);
    let count = || if counting { read_counter() } else { None };
    let counted = count();
    let before = (thread_cpu_seconds(), counted);
    let r = f();
    let cpu = thread_cpu_seconds();
    let after = (cpu, count());
    let spent = match (before.0, after.0) {
        (Some(a), Some(b)) => Some(Charge {
            seconds: (b - a).max(0.0),
            instructions: before.1.zip(after.1).and_then(|(a, b)| retired(a, b)),
        }),
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
        let _on = measure();
        let ((), slept) = timed(|| std::thread::sleep(std::time::Duration::from_millis(50)));
        let (_, spun) = timed(|| spin(0.05));
        let (slept, spun) = (slept.unwrap().seconds, spun.unwrap().seconds);
        assert!(slept < 0.01, "sleeping 50 ms cost {slept} s of CPU");
        // A busy core may take some of the 50 ms away, never add to them.
        assert!(spun > 0.005 && spun < 0.06, "spinning 50 ms cost {spun} s");
    }

    fn seconds(s: f64) -> Charge {
        Charge {
            seconds: s,
            instructions: None,
        }
    }

    #[test]
    fn charges_add_up_per_thread_and_are_taken_once() {
        assert_eq!(take_charged(), None);
        charge(seconds(0.25));
        charge(seconds(0.5));
        std::thread::spawn(|| {
            charge(seconds(1.0));
        })
        .join()
        .unwrap();
        assert_eq!(take_charged(), Some(seconds(0.75)));
        assert_eq!(take_charged(), None);
    }

    /// A stretch the counter spent multiplexed gives no count; one it
    /// counted throughout gives the difference, whatever came before.
    #[test]
    fn only_stretches_counted_throughout_give_a_count() {
        let r = |count, enabled, running| Reading {
            count,
            enabled,
            running,
        };
        // Multiplexed before, counting throughout since: counted.
        assert_eq!(retired(r(100, 50, 40), r(160, 80, 70)), Some(60));
        // Multiplexed for part of the stretch: none.
        assert_eq!(retired(r(100, 50, 50), r(160, 80, 70)), None);
        assert_eq!(retired(r(100, 80, 70), r(160, 50, 50)), None);
    }

    #[test]
    fn instructions_add_up_only_where_every_part_counted_them() {
        let counted = |i| Charge {
            seconds: 1.0,
            instructions: Some(i),
        };
        assert_eq!((counted(3) + counted(4)).instructions, Some(7));
        assert_eq!((counted(3) + seconds(1.0)).instructions, None);
        assert_eq!((counted(3) + seconds(1.0)).seconds, 2.0);
    }

    /// The counter's plumbing (open, enable, read), on a software event
    /// Linux lends wherever perf_event_open is allowed at all (a container
    /// may forbid the call): a thread's task clock in nanoseconds grows by
    /// about the time it spun.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_thread_counter_counts_from_when_it_opens() {
        let Counter::Open(mut c) = open_event(perf_event::events::Software::TASK_CLOCK) else {
            eprintln!("perf_event_open is not allowed here: no counter of any kind to test");
            return;
        };
        // Read as instructions are: only while it ran all the time enabled.
        let before = reading(&mut c).unwrap();
        spin(0.05);
        let ns = retired(before, reading(&mut c).unwrap())
            .expect("a software event is never multiplexed") as f64;
        assert!(
            ns > 5e6 && ns < 6e7,
            "{ns} ns of task clock in 50 ms of spinning"
        );
    }

    /// Where the OS lends a counter, a loop of n additions retires at
    /// least n instructions and twice the loop about twice as many; where
    /// it does not (most virtual machines, this project's CI), nothing is
    /// counted, whether counting is on or not.
    #[test]
    fn instructions_are_counted_where_the_hardware_allows() {
        let work = |n: u64| {
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            x
        };
        // Off: never counted, though CPU time is measured (the switch is
        // process-wide, so this test alone turns it on, in a thread of its
        // own, and off again).
        let on = measure();
        let (_, off) = timed(|| work(1000));
        assert!(off.is_some(), "CPU time is measured while the guard lives");
        assert_eq!(off.and_then(|c| c.instructions), None);
        drop(on);
        let counted = std::thread::spawn(move || {
            let _on = measure();
            count_instructions(true);
            let small = timed(|| work(1_000_000)).1.and_then(|c| c.instructions);
            let large = timed(|| work(2_000_000)).1.and_then(|c| c.instructions);
            count_instructions(false);
            (small, large, thread_instructions().is_some())
        })
        .join()
        .unwrap();
        match counted {
            (Some(small), Some(large), true) => {
                assert!(small >= 1_000_000, "{small} instructions for 1e6 additions");
                let ratio = large as f64 / small as f64;
                assert!((1.6..2.4).contains(&ratio), "{small} then {large}");
            }
            (None, None, false) => {
                eprintln!("no hardware instruction counter here: the fallback is what ran");
            }
            other => panic!("a counter that counts only sometimes: {other:?}"),
        }
    }
}

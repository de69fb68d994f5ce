//! What every [`Transport`] must do, as checks any implementation can run
//! (feature `conformance`).
//!
//! Each check in [`all`] is written for one endpoint and runs on every
//! endpoint at once, SPMD style, as the skeleton uses a transport: each
//! virtual process calls the same check with its own endpoint, and each
//! check receives everything it sends, so checks can run one after another
//! on the same endpoints. They panic on failure.
//!
//! For a test harness, [`transport_conformance!`](crate::transport_conformance)
//! expands one `#[test]` per check; a program that cannot use the harness
//! (MPI under `mpirun`) loops over [`all`]. [`dropped_peer_is_peer_gone`]
//! needs to drop an endpoint, so it runs only where endpoints can be dropped
//! on their own (in-process; MPI cannot tell a peer is gone).

use super::{in_process, InProcess, Transport, TransportError};
use std::fmt::Debug;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

/// A cell type the checks can fill with distinct values.
pub trait Cell: Copy + PartialEq + Debug + Send + From<u16> + 'static {}
impl<T: Copy + PartialEq + Debug + Send + From<u16> + 'static> Cell for T {}

/// A check, run by every endpoint at once.
pub type Check<X> = fn(&mut X);

/// Every check that runs on all endpoints, by name, in the order
/// [`transport_conformance!`](crate::transport_conformance) lists them.
pub fn all<T: Cell, X: Transport<T>>() -> Vec<(&'static str, Check<X>)> {
    vec![
        ("per_peer_and_tag_fifo", per_peer_and_tag_fifo::<T, X>),
        ("other_tags_kept_aside", other_tags_kept_aside::<T, X>),
        (
            "cells_values_and_collectives_kept_apart",
            cells_values_and_collectives_kept_apart::<T, X>,
        ),
        ("all_gather_in_rank_order", all_gather_in_rank_order::<T, X>),
        ("repeated_all_gathers", repeated_all_gathers::<T, X>),
        (
            "barrier_waits_for_everyone",
            barrier_waits_for_everyone::<T, X>,
        ),
        (
            "large_messages_both_ways_before_any_receive",
            large_messages_both_ways_before_any_receive::<T, X>,
        ),
        ("bad_peer_is_no_such_peer", bad_peer_is_no_such_peer::<T, X>),
    ]
}

/// Expands one `#[test]` per conformance check for a transport: `$t` is the
/// cell type, `$x` the endpoint type (a `Transport<$t>`), and `$run` runs a
/// `Check<$x>` on every endpoint of a fresh set (for the in-process
/// transport, `conformance::run_in_process`).
///
/// ```ignore
/// use hitmap::transport::conformance;
/// use hitmap::InProcess;
/// hitmap::transport_conformance!(u32, InProcess<u32>, |c| conformance::run_in_process(4, c));
/// ```
#[macro_export]
macro_rules! transport_conformance {
    ($t:ty, $x:ty, $run:expr) => {
        $crate::transport_conformance!(@tests $t, $x, $run;
            per_peer_and_tag_fifo,
            other_tags_kept_aside,
            cells_values_and_collectives_kept_apart,
            all_gather_in_rank_order,
            repeated_all_gathers,
            barrier_waits_for_everyone,
            large_messages_both_ways_before_any_receive,
            bad_peer_is_no_such_peer
        );
    };
    (@tests $t:ty, $x:ty, $run:expr; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                let check: $crate::transport::conformance::Check<$x> =
                    $crate::transport::conformance::$name::<$t, $x>;
                ($run)(check);
            }
        )*

        /// The macro's list and `all()` name the same checks.
        #[test]
        fn every_conformance_check_has_a_test() {
            let here = [$(stringify!($name)),*];
            let all: Vec<&str> = $crate::transport::conformance::all::<$t, $x>()
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            assert_eq!(here.to_vec(), all);
        }
    };
}

/// Runs `check` on each of `n` fresh in-process endpoints, one thread each;
/// panics with the first failure, or after 60 s (a deadlock).
pub fn run_in_process<T: Cell>(n: usize, check: Check<InProcess<T>>) {
    run_threads(in_process::<T>(n), check);
}

/// Runs `check` on each endpoint, one thread each; panics with the first
/// failure, or after 60 s (a deadlock). For any transport whose endpoints
/// can move to threads (a wrapper around the in-process one, say).
pub fn run_threads<X: Send + 'static>(endpoints: Vec<X>, check: Check<X>) {
    let n = endpoints.len();
    let (done, finished) = channel();
    let threads: Vec<_> = endpoints
        .into_iter()
        .map(|mut ep| {
            let done = done.clone();
            std::thread::spawn(move || {
                // Reports even when the check panics (the guard drops then).
                struct Done(std::sync::mpsc::Sender<()>);
                impl Drop for Done {
                    fn drop(&mut self) {
                        let _ = self.0.send(());
                    }
                }
                let _guard = Done(done);
                check(&mut ep);
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        finished
            .recv_timeout(left)
            .expect("a conformance check hung for 60 s (deadlock?)");
    }
    for t in threads {
        if let Err(panic) = t.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Distinct cells for message `k` from `rank`: `len` of them.
fn cells<T: Cell>(rank: usize, k: u64, len: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from(((rank * 7919 + k as usize * 104_729 + i) % 65_521) as u16))
        .collect()
}

/// The neighbours in a ring: (next, previous).
fn ring<T, X: Transport<T>>(ep: &X) -> (usize, usize) {
    let (r, n) = (ep.rank(), ep.size());
    ((r + 1) % n, (r + n - 1) % n)
}

/// Messages between a pair with the same tag arrive in the order sent.
pub fn per_peer_and_tag_fifo<T: Cell, X: Transport<T>>(ep: &mut X) {
    let (next, prev) = ring(ep);
    for k in 0..5 {
        ep.send(next, 3, cells(ep.rank(), k, 1 + k as usize))
            .unwrap();
        ep.send_values(next, 3, vec![k as f64; k as usize]).unwrap();
    }
    for k in 0..5 {
        assert_eq!(
            ep.recv(prev, 3).unwrap(),
            cells::<T>(prev, k, 1 + k as usize)
        );
    }
    for k in 0..5 {
        assert_eq!(ep.recv_values(prev, 3).unwrap(), vec![k as f64; k as usize]);
    }
}

/// A receive for one tag keeps the messages of other tags for later, so they
/// can be received in any order; every 64-bit tag is usable.
pub fn other_tags_kept_aside<T: Cell, X: Transport<T>>(ep: &mut X) {
    let (next, prev) = ring(ep);
    let tags = [0, 1 << 62, u64::MAX, 7, 1 << 32];
    for (k, &tag) in tags.iter().enumerate() {
        ep.send(next, tag, cells(ep.rank(), k as u64, 3)).unwrap();
        ep.send_values(next, tag, vec![k as f64]).unwrap();
    }
    for (k, &tag) in tags.iter().enumerate().rev() {
        assert_eq!(ep.recv(prev, tag).unwrap(), cells::<T>(prev, k as u64, 3));
    }
    for (k, tag) in [2, 0, 4, 1, 3].map(|k| (k, tags[k])) {
        assert_eq!(ep.recv_values(prev, tag).unwrap(), vec![k as f64]);
    }
}

/// Cells, values and collectives with the same tag do not meet: each kind
/// is received apart from the others, whatever arrived first.
pub fn cells_values_and_collectives_kept_apart<T: Cell, X: Transport<T>>(ep: &mut X) {
    let (next, prev) = ring(ep);
    let r = ep.rank();
    // Tag 0 is also the first collective's sequence number.
    ep.send(next, 0, cells(r, 1, 4)).unwrap();
    ep.send_values(next, 0, vec![r as f64, -1.0]).unwrap();
    ep.send(next, 0, Vec::new()).unwrap();
    ep.send_values(next, 0, Vec::new()).unwrap();
    let g = ep.all_gather(&[r as f64 + 0.5]).unwrap();
    assert_eq!(g.len(), ep.size());
    assert!(g.iter().enumerate().all(|(q, v)| v == &[q as f64 + 0.5]));
    assert_eq!(ep.recv_values(prev, 0).unwrap(), vec![prev as f64, -1.0]);
    assert_eq!(ep.recv_values(prev, 0).unwrap(), Vec::<f64>::new());
    assert_eq!(ep.recv(prev, 0).unwrap(), cells::<T>(prev, 1, 4));
    assert_eq!(ep.recv(prev, 0).unwrap(), Vec::<T>::new());
}

/// `all_gather` returns every process's values indexed by rank, of any
/// length (empty included).
pub fn all_gather_in_rank_order<T: Cell, X: Transport<T>>(ep: &mut X) {
    let r = ep.rank();
    let mine: Vec<f64> = (0..r).map(|i| (r * 100 + i) as f64).collect();
    let got = ep.all_gather(&mine).unwrap();
    let want: Vec<Vec<f64>> = (0..ep.size())
        .map(|q| (0..q).map(|i| (q * 100 + i) as f64).collect())
        .collect();
    assert_eq!(got, want);
}

/// Back-to-back all-gathers stay in step: each returns its own round's
/// values, even when a fast process starts the next round early.
pub fn repeated_all_gathers<T: Cell, X: Transport<T>>(ep: &mut X) {
    let r = ep.rank();
    for round in 0..20 {
        let got = ep.all_gather(&[r as f64, round as f64]).unwrap();
        let want: Vec<Vec<f64>> = (0..ep.size())
            .map(|q| vec![q as f64, round as f64])
            .collect();
        assert_eq!(got, want, "round {round}");
    }
}

/// `barrier` returns only once every process has reached it: rank 0
/// arrives 300 ms late, and the others wait for it. (A timing check, with a
/// wide margin: the others must wait at least 100 ms.)
pub fn barrier_waits_for_everyone<T: Cell, X: Transport<T>>(ep: &mut X) {
    ep.barrier().unwrap();
    let t0 = Instant::now();
    if ep.rank() == 0 {
        std::thread::sleep(Duration::from_millis(300));
    }
    ep.barrier().unwrap();
    if ep.rank() != 0 {
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(100),
            "rank {} left the barrier after {waited:?}, before rank 0 arrived",
            ep.rank()
        );
    }
}

/// Sends never wait for the receiver: every process sends a large message
/// (4 MB of u32, beyond any eager limit) to both neighbours before it
/// receives anything, which deadlocks a transport whose sends block.
pub fn large_messages_both_ways_before_any_receive<T: Cell, X: Transport<T>>(ep: &mut X) {
    const LEN: usize = 1 << 20;
    let (next, prev) = ring(ep);
    let r = ep.rank();
    ep.send(next, 11, cells(r, 11, LEN)).unwrap();
    ep.send(prev, 12, cells(r, 12, LEN)).unwrap();
    let from_prev = ep.recv(prev, 11).unwrap();
    let from_next = ep.recv(next, 12).unwrap();
    assert!(
        from_prev == cells::<T>(prev, 11, LEN),
        "large message from {prev}"
    );
    assert!(
        from_next == cells::<T>(next, 12, LEN),
        "large message from {next}"
    );
}

/// Addressing a process that does not exist is `NoSuchPeer`, for every
/// operation, and does not disturb what follows.
pub fn bad_peer_is_no_such_peer<T: Cell, X: Transport<T>>(ep: &mut X) {
    let n = ep.size();
    let bad = |peer| Err(TransportError::NoSuchPeer { peer, size: n });
    assert_eq!(ep.send(n, 0, cells(0, 0, 1)), bad(n));
    assert_eq!(ep.recv(n + 2, 0), bad(n + 2).map(|()| Vec::new()));
    assert_eq!(ep.send_values(usize::MAX, 0, vec![1.0]), bad(usize::MAX));
    assert_eq!(ep.recv_values(n, 0), bad(n).map(|()| Vec::new()));
    // Still usable.
    let g = ep.all_gather(&[1.0]).unwrap();
    assert_eq!(g, vec![vec![1.0]; n]);
}

/// A process whose endpoint is dropped is gone: waiting for it is
/// `PeerGone`, not a hang, once what it sent before going has been read;
/// sending to it is `PeerGone` too, and so is a collective it misses.
/// Takes a fresh set of at least two endpoints, rank `i` at index `i`, and
/// drops the last.
pub fn dropped_peer_is_peer_gone<T: Cell, X: Transport<T>>(mut endpoints: Vec<X>) {
    assert!(endpoints.len() >= 2, "needs two endpoints");
    let mut gone = endpoints.pop().unwrap();
    let g = gone.rank();
    let mut ep = endpoints.swap_remove(0);
    gone.send(ep.rank(), 5, cells(g, 5, 2)).unwrap();
    gone.send_values(ep.rank(), 5, vec![2.5]).unwrap();
    drop(gone);
    drop(endpoints);
    // Sent before it went: still delivered.
    assert_eq!(ep.recv(g, 5).unwrap(), cells::<T>(g, 5, 2));
    assert_eq!(ep.recv_values(g, 5).unwrap(), vec![2.5]);
    assert_eq!(ep.recv(g, 5), Err(TransportError::PeerGone(g)));
    assert_eq!(ep.recv_values(g, 6), Err(TransportError::PeerGone(g)));
    assert_eq!(
        ep.send(g, 5, cells(0, 0, 1)),
        Err(TransportError::PeerGone(g))
    );
    assert!(matches!(
        ep.all_gather(&[1.0]),
        Err(TransportError::PeerGone(_))
    ));
    // The message keeps the words the skeleton recognises.
    assert!(TransportError::PeerGone(g).to_string().contains("is gone"));
}

//! The MPI transport between real ranks. Run by `cargo test --features mpi`:
//! the test starts itself under `mpirun -np 3` and each rank hosts some
//! of five virtual processes, one thread each (so ranks host one or two).
//! Each runs the hand-written exchange below, then every check of the
//! transport conformance suite (`hitmap::transport::conformance`) in turn.

use epsilod_testkit::process::under_mpirun;
use hitmap::transport::conformance;
use hitmap::{Awaited, MpiTransport, Placement, Transport, TransportError};
use std::sync::Arc;
use std::time::Duration;

const RANKS: usize = 3;
const PLACEMENT: [usize; 5] = [0, 1, 2, 0, 1];

#[test]
fn five_processes_on_three_ranks_exchange_and_pass_the_conformance_suite() {
    under_mpirun(
        "five_processes_on_three_ranks_exchange_and_pass_the_conformance_suite",
        RANKS,
        rank_main,
    );
}

fn rank_main() {
    let (universe, threading) =
        mpi::initialize_with_threading(mpi::Threading::Multiple).expect("MPI initialises once");
    assert_eq!(
        threading,
        mpi::Threading::Multiple,
        "two processes share a rank"
    );
    use mpi::topology::Communicator;
    let rank = universe.world().rank() as usize;
    let placement = Arc::new(Placement::new(PLACEMENT.to_vec()).unwrap());
    let mine: Vec<usize> = (0..PLACEMENT.len())
        .filter(|&p| PLACEMENT[p] == rank)
        .collect();
    std::thread::scope(|s| {
        for &p in &mine {
            let placement = placement.clone();
            s.spawn(move || exchange(p, placement));
        }
    });
    drop(universe);
}

/// The exchange, then the conformance checks, on virtual process `p`'s
/// endpoint; then both again on an endpoint whose receives poll with a
/// patience, and a receive that waits in vain.
fn exchange(p: usize, placement: Arc<Placement>) {
    for patience in [None, Some(Duration::from_secs(60))] {
        let mut ep = MpiTransport::<u32>::new(p, placement.clone())
            .unwrap()
            .patience(patience);
        hand_written(&mut ep);
        for (name, check) in conformance::all::<u32, MpiTransport<u32>>() {
            check(&mut ep);
            if p == 0 {
                println!("mpi transport conformance ({patience:?}): {name} ok");
            }
        }
    }
    silent_peer(p, placement);
}

/// A receive from a peer that sends nothing gives up after its patience,
/// naming the peer, its rank and the message; the others go on.
fn silent_peer(p: usize, placement: Arc<Placement>) {
    let patience = Duration::from_millis(300);
    let mut ep = MpiTransport::<u32>::new(p, placement)
        .unwrap()
        .patience(Some(patience));
    ep.barrier().unwrap();
    let q = (p + 1) % PLACEMENT.len();
    match ep.recv(q, 999_999) {
        Err(TransportError::Silent {
            peer,
            rank,
            awaited,
            waited,
        }) => {
            assert_eq!((peer, rank), (q, PLACEMENT[q]));
            assert_eq!(awaited, Awaited::Cells(999_999));
            assert!(waited >= patience, "{waited:?}");
        }
        other => panic!("a receive from a silent peer: {other:?}"),
    }
    ep.barrier().unwrap();
}

fn hand_written(ep: &mut MpiTransport<u32>) {
    let p = ep.rank();
    let n = ep.size();
    let (next, prev) = ((p + 1) % n, (p + n - 1) % n);
    ep.send(next, 7, vec![p as u32; 3]).unwrap();
    ep.send(next, 1 << 62, vec![100 + p as u32]).unwrap();
    ep.send_values(next, 7, vec![p as f64 + 0.5]).unwrap();
    ep.send_values(next, 8, vec![p as f64 + 0.25]).unwrap();
    // Large enough for MPI's rendezvous protocol: every process sends before
    // it receives, which deadlocks unless sends are non-blocking.
    let big: Vec<u32> = (0..1_000_000).map(|i| i ^ p as u32).collect();
    ep.send(next, 9, big).unwrap();
    // Out of send order: the 64-bit tags keep them apart.
    let b = ep.recv(prev, 1 << 62).unwrap();
    let w = ep.recv_values(prev, 8).unwrap();
    let v = ep.recv_values(prev, 7).unwrap();
    let big = ep.recv(prev, 9).unwrap();
    let a = ep.recv(prev, 7).unwrap();
    assert_eq!(a, vec![prev as u32; 3]);
    assert_eq!(b, vec![100 + prev as u32]);
    assert_eq!(v, vec![prev as f64 + 0.5]);
    assert_eq!(w, vec![prev as f64 + 0.25]);
    assert_eq!(big.len(), 1_000_000);
    assert!(big
        .iter()
        .enumerate()
        .all(|(i, &x)| x == i as u32 ^ prev as u32));
    for round in 0..3 {
        let g = ep.all_gather(&[p as f64 * 2.0 + round as f64]).unwrap();
        let want: Vec<Vec<f64>> = (0..n)
            .map(|q| vec![q as f64 * 2.0 + round as f64])
            .collect();
        assert_eq!(g, want);
    }
    ep.barrier().unwrap();
    assert!(matches!(
        ep.recv(n + 2, 0),
        Err(TransportError::NoSuchPeer { peer, size }) if peer == n + 2 && size == n
    ));
    assert!(
        MpiTransport::<u32>::new(n, Arc::new(Placement::new(PLACEMENT.to_vec()).unwrap())).is_err()
    );
}

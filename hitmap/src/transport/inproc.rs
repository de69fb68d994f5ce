use super::{pop_oldest, Transport, TransportError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What a message of f64 values is for (point to point; collectives go
/// through the [`Board`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Floats {
    Values(u64),
}

/// The collectives in progress, shared by every endpoint: each process
/// leaves its values once and takes everyone's, so a collective of `n`
/// processes costs `n` deposits, not the `n²` messages of each sending to
/// each (thousands of processes in one run).
struct Board {
    rounds: Mutex<HashMap<u64, Round>>,
    changed: Condvar,
    /// Endpoints dropped so far: while none is, a waiting process wakes
    /// without asking each peer whether it is gone.
    gone: AtomicUsize,
}

/// One collective: the values left so far, then everyone's once all are.
/// While every process takes part, at most two are open at once (a process
/// can enter the next only after every process has entered this one); a
/// round that ended in `PeerGone` stays, the run ending with it.
struct Round {
    values: Vec<Option<Vec<f64>>>,
    missing: usize,
    all: Option<Arc<Vec<Vec<f64>>>>,
    /// Processes yet to take `all`; the last removes the round.
    unread: usize,
}

impl Board {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Round>> {
        // A panic never leaves a round half-changed: every update is one
        // assignment or counter step.
        self.rounds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A message as it travels: the payload's type follows from its kind, so a
/// receiver never meets cells where it waits for values.
enum Msg<T> {
    Cells {
        from: usize,
        tag: u64,
        data: Vec<T>,
    },
    Floats {
        from: usize,
        key: Floats,
        data: Vec<f64>,
    },
}

/// Messages that arrived before they were asked for, by sender and key.
type Pending<K, V> = super::Pending<(usize, K), Vec<V>>;

/// One virtual process's endpoint of the in-process transport (threads and
/// channels; messages move by handing over the vector, no copy).
///
/// An endpoint that is dropped marks its process gone, so a peer waiting for
/// it gets `PeerGone` instead of hanging.
pub struct InProcess<T> {
    rank: usize,
    /// Shared by all endpoints: a copy each would be `n²` senders.
    txs: Arc<[Sender<Msg<T>>]>,
    rx: Receiver<Msg<T>>,
    cells: Pending<u64, T>,
    floats: Pending<Floats, f64>,
    gone: Arc<Vec<AtomicBool>>,
    board: Arc<Board>,
    collectives: u64,
    spin: Duration,
}

/// Endpoints for `n` virtual processes, rank `i` at index `i`.
pub fn in_process<T: Send>(n: usize) -> Vec<InProcess<T>> {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
    let txs: Arc<[Sender<Msg<T>>]> = txs.into();
    let gone = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect::<Vec<_>>());
    let board = Arc::new(Board {
        rounds: Mutex::new(HashMap::new()),
        changed: Condvar::new(),
        gone: AtomicUsize::new(0),
    });
    rxs.into_iter()
        .enumerate()
        .map(|(rank, rx)| InProcess {
            rank,
            txs: txs.clone(),
            rx,
            cells: Pending::new(),
            floats: Pending::new(),
            gone: gone.clone(),
            board: board.clone(),
            collectives: 0,
            spin: SPIN,
        })
        .collect()
}

const POLL: Duration = Duration::from_millis(20);

/// How long a waiting endpoint polls by default before it blocks: long
/// enough to cover the wait of a device for one slower by a kernel's worth
/// of a millisecond, so that the wake-up of a blocked thread stays off the
/// path of an iteration. The poll spins without giving up the core (a
/// yield would hand it to other programs for a whole scheduler slice), so
/// it is meant for processes each of whose threads has a core of its own;
/// callers that know their threads outnumber the cores block at once
/// (zero).
pub const SPIN: Duration = Duration::from_millis(1);

impl<T: Send> InProcess<T> {
    /// Sets how long a receive polls for its message before the thread
    /// blocks (default [`SPIN`]); zero blocks at once. Polling spins on the
    /// core: it saves the wake-up of a blocked thread when messages arrive
    /// within the window, but only while the poller has a core of its own;
    /// where threads outnumber cores, it takes the core from the thread it
    /// waits for until the window ends. What arrives, and in which order,
    /// does not depend on it.
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// How long a receive polls before it blocks.
    pub fn spin(&self) -> Duration {
        self.spin
    }

    fn check_peer(&self, q: usize) -> Result<(), TransportError> {
        if q < self.txs.len() {
            Ok(())
        } else {
            Err(TransportError::NoSuchPeer {
                peer: q,
                size: self.txs.len(),
            })
        }
    }

    fn post(&self, to: usize, m: Msg<T>) -> Result<(), TransportError> {
        self.check_peer(to)?;
        self.txs[to]
            .send(m)
            .map_err(|_| TransportError::PeerGone(to))
    }

    fn post_floats(&self, to: usize, key: Floats, data: Vec<f64>) -> Result<(), TransportError> {
        let from = self.rank;
        self.post(to, Msg::Floats { from, key, data })
    }

    /// Waits for the first message that `take` finds in the pending ones
    /// or `accept` takes as it arrives, stashing whatever else arrives;
    /// `PeerGone` once `from` has gone and nothing it sent is left to read.
    /// A message accepted on arrival is the oldest of its sender and key
    /// (none was pending), and skips the pending map's insert and removal:
    /// most messages are the one awaited.
    fn wait<R>(
        &mut self,
        from: usize,
        take: impl Fn(&mut Self) -> Option<R>,
        accept: impl Fn(Msg<T>) -> Result<R, Msg<T>>,
    ) -> Result<R, TransportError> {
        self.check_peer(from)?;
        let mut spun = Instant::now();
        loop {
            if let Some(r) = take(self) {
                return Ok(r);
            }
            // Poll before blocking: waking a blocked thread costs its sender
            // a system call and the sleeping core's wake-up, every iteration
            // a faster device waits for a slower one.
            if super::spins(spun.elapsed(), self.spin) {
                match self.rx.try_recv() {
                    Ok(m) => {
                        match accept(m) {
                            Ok(r) => return Ok(r),
                            Err(m) => self.stash(m),
                        }
                        spun = Instant::now();
                    }
                    Err(_) => std::hint::spin_loop(),
                }
                continue;
            }
            // Read the flag before polling: anything the peer sent before it
            // went is then already in the channel.
            let peer_gone = self.gone[from].load(Ordering::Acquire);
            match self.rx.recv_timeout(POLL) {
                Ok(m) => match accept(m) {
                    Ok(r) => return Ok(r),
                    Err(m) => self.stash(m),
                },
                Err(RecvTimeoutError::Timeout) if peer_gone => {
                    return Err(TransportError::PeerGone(from))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(TransportError::PeerGone(from)),
            }
        }
    }

    fn wait_floats(&mut self, from: usize, key: Floats) -> Result<Vec<f64>, TransportError> {
        self.wait(
            from,
            |s| pop_oldest(&mut s.floats, &(from, key)),
            |m| match m {
                Msg::Floats {
                    from: f,
                    key: k,
                    data,
                } if f == from && k == key => Ok(data),
                m => Err(m),
            },
        )
    }

    fn stash(&mut self, m: Msg<T>) {
        match m {
            Msg::Cells { from, tag, data } => {
                self.cells.entry((from, tag)).or_default().push_back(data)
            }
            Msg::Floats { from, key, data } => {
                self.floats.entry((from, key)).or_default().push_back(data)
            }
        }
    }
}

impl<T: Send> Transport<T> for InProcess<T> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.txs.len()
    }

    fn send(&mut self, to: usize, tag: u64, data: Vec<T>) -> Result<(), TransportError> {
        let from = self.rank;
        self.post(to, Msg::Cells { from, tag, data })
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<T>, TransportError> {
        self.wait(
            from,
            |s| pop_oldest(&mut s.cells, &(from, tag)),
            |m| match m {
                Msg::Cells {
                    from: f,
                    tag: t,
                    data,
                } if f == from && t == tag => Ok(data),
                m => Err(m),
            },
        )
    }

    fn send_values(&mut self, to: usize, tag: u64, values: Vec<f64>) -> Result<(), TransportError> {
        self.post_floats(to, Floats::Values(tag), values)
    }

    fn recv_values(&mut self, from: usize, tag: u64) -> Result<Vec<f64>, TransportError> {
        self.wait_floats(from, Floats::Values(tag))
    }

    fn all_gather(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>, TransportError> {
        let (n, size) = (self.collectives, self.size());
        self.collectives += 1;
        let board = self.board.clone();
        let mut rounds = board.lock();
        let round = rounds.entry(n).or_insert_with(|| Round {
            values: vec![None; size],
            missing: size,
            all: None,
            unread: size,
        });
        round.values[self.rank] = Some(values.to_vec());
        round.missing -= 1;
        if round.missing == 0 {
            let values = std::mem::take(&mut round.values);
            round.all = Some(Arc::new(values.into_iter().flatten().collect()));
            board.changed.notify_all();
        }
        loop {
            let round = rounds
                .get_mut(&n)
                .expect("open until every process took it");
            if let Some(all) = round.all.clone() {
                round.unread -= 1;
                if round.unread == 0 {
                    rounds.remove(&n);
                }
                drop(rounds);
                // Copied outside the lock: the processes copy at once.
                return Ok(all.as_ref().clone());
            }
            // Checked under the lock, which a going endpoint takes after
            // it marks itself gone: no wake-up is lost.
            let gone = (board.gone.load(Ordering::Acquire) > 0)
                .then(|| {
                    (0..size).find(|&q| {
                        round.values[q].is_none() && self.gone[q].load(Ordering::Acquire)
                    })
                })
                .flatten();
            if let Some(q) = gone {
                return Err(TransportError::PeerGone(q));
            }
            rounds = board
                .changed
                .wait_timeout(rounds, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn spin(&self) -> Duration {
        InProcess::spin(self)
    }

    fn set_spin(&mut self, spin: Duration) {
        InProcess::set_spin(self, spin);
    }
}

impl<T> Drop for InProcess<T> {
    fn drop(&mut self) {
        self.gone[self.rank].store(true, Ordering::Release);
        self.board.gone.fetch_add(1, Ordering::Release);
        // Wakes the processes waiting in a collective this one will not
        // join; taking the lock orders this after their last check.
        drop(self.board.lock());
        self.board.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::conformance::{self, run_in_process};

    /// The conformance suite, four processes exchanging u32 cells.
    mod u32_cells {
        use super::*;
        crate::transport_conformance!(u32, InProcess<u32>, |c| run_in_process(4, c));
    }

    /// The same with f64 cells and two processes (each is the other's
    /// next and previous neighbour).
    mod f64_cells_two {
        use super::*;
        crate::transport_conformance!(f64, InProcess<f64>, |c| run_in_process(2, c));
    }

    /// Endpoints that block at once instead of polling first.
    fn blocking<T: Send>(n: usize) -> Vec<InProcess<T>> {
        let mut eps = in_process(n);
        for ep in &mut eps {
            ep.set_spin(Duration::ZERO);
        }
        eps
    }

    /// The suite again with endpoints that never poll: how long a receive
    /// polls must not change what it returns.
    mod u32_cells_blocking {
        use super::*;
        crate::transport_conformance!(u32, InProcess<u32>, |c| conformance::run_threads(
            blocking(3),
            c
        ));
    }

    /// The suite with more processes than a CI machine has cores: waits
    /// pass from the spin to blocking while the threads they wait for take
    /// turns on the cores.
    mod u32_cells_crowded {
        use super::*;
        crate::transport_conformance!(u32, InProcess<u32>, |c| run_in_process(8, c));
    }

    /// Code generic over transports (a virtual process whose device holds
    /// no rows) sets the endpoint's poll through the trait.
    #[test]
    fn the_trait_sets_the_poll() {
        let mut ep = in_process::<u32>(1).remove(0);
        assert_eq!(Transport::<u32>::spin(&ep), SPIN);
        Transport::<u32>::set_spin(&mut ep, Duration::ZERO);
        assert_eq!(ep.spin(), Duration::ZERO);
        Transport::<u32>::set_spin(&mut ep, SPIN * 2);
        assert_eq!(Transport::<u32>::spin(&ep), SPIN * 2);
    }

    /// Keys of messages received leave the pending maps: a long run's tags
    /// (one per iteration) would otherwise pile up.
    #[test]
    fn received_keys_leave_the_pending_maps() {
        let mut eps = in_process::<u32>(2);
        let (mut a, mut b) = (eps.remove(0), eps.remove(0));
        for tag in 0..100u64 {
            a.send(1, tag, vec![tag as u32]).unwrap();
            a.send_values(1, tag, vec![tag as f64]).unwrap();
        }
        // In reverse, so that every message but the one asked for waits
        // among the pending ones first.
        for tag in (0..100u64).rev() {
            assert_eq!(b.recv(0, tag).unwrap(), vec![tag as u32]);
            assert_eq!(b.recv_values(0, tag).unwrap(), vec![tag as f64]);
        }
        assert!(b.cells.is_empty() && b.floats.is_empty());
    }

    /// Messages that arrive during each part of a wait (the spin, after
    /// the thread blocked) are received, in order.
    #[test]
    fn every_phase_of_a_wait_receives() {
        let delays = [0, 10, 300, 3_000, 30_000].map(Duration::from_micros);
        let mut eps = in_process::<u32>(2);
        let (mut a, mut b) = (eps.remove(0), eps.remove(0));
        assert_eq!(a.spin(), SPIN);
        std::thread::scope(|s| {
            s.spawn(move || {
                for (k, d) in delays.iter().enumerate() {
                    std::thread::sleep(*d);
                    b.send(0, 7, vec![k as u32]).unwrap();
                }
            });
            for k in 0..delays.len() {
                assert_eq!(a.recv(1, 7).unwrap(), vec![k as u32]);
            }
        });
    }

    #[test]
    fn dropped_peer_is_peer_gone() {
        conformance::dropped_peer_is_peer_gone::<u32, _>(in_process(2));
        conformance::dropped_peer_is_peer_gone::<u32, _>(in_process(4));
        conformance::dropped_peer_is_peer_gone::<u32, _>(blocking(3));
    }

    #[test]
    fn one_process_talks_to_itself() {
        for (_, check) in conformance::all::<u32, InProcess<u32>>() {
            run_in_process(1, check);
        }
    }

    /// An in-process endpoint with one promise broken, to show the suite
    /// notices.
    struct Broken {
        ep: InProcess<u32>,
        /// Receives ignore the tag (and sends drop it).
        tag_blind: bool,
        /// `barrier` returns at once.
        no_barrier: bool,
    }

    impl Transport<u32> for Broken {
        fn rank(&self) -> usize {
            self.ep.rank()
        }
        fn size(&self) -> usize {
            self.ep.size()
        }
        fn send(&mut self, to: usize, tag: u64, data: Vec<u32>) -> Result<(), TransportError> {
            let tag = if self.tag_blind { 0 } else { tag };
            self.ep.send(to, tag, data)
        }
        fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<u32>, TransportError> {
            let tag = if self.tag_blind { 0 } else { tag };
            self.ep.recv(from, tag)
        }
        fn send_values(
            &mut self,
            to: usize,
            tag: u64,
            values: Vec<f64>,
        ) -> Result<(), TransportError> {
            self.ep.send_values(to, tag, values)
        }
        fn recv_values(&mut self, from: usize, tag: u64) -> Result<Vec<f64>, TransportError> {
            self.ep.recv_values(from, tag)
        }
        fn all_gather(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>, TransportError> {
            self.ep.all_gather(values)
        }
        fn barrier(&mut self) -> Result<(), TransportError> {
            if self.no_barrier {
                Ok(())
            } else {
                self.ep.barrier()
            }
        }
    }

    fn broken(n: usize, tag_blind: bool, no_barrier: bool) -> Vec<Broken> {
        in_process(n)
            .into_iter()
            .map(|ep| Broken {
                ep,
                tag_blind,
                no_barrier,
            })
            .collect()
    }

    #[test]
    fn the_wrapper_alone_conforms() {
        for (_, check) in conformance::all::<u32, Broken>() {
            conformance::run_threads(broken(3, false, false), check);
        }
    }

    #[test]
    #[should_panic(expected = "assertion")]
    fn a_tag_blind_transport_fails() {
        conformance::run_threads(broken(3, true, false), conformance::other_tags_kept_aside);
    }

    #[test]
    #[should_panic(expected = "before rank 0 arrived")]
    fn a_barrier_that_does_not_wait_fails() {
        conformance::run_threads(
            broken(3, false, true),
            conformance::barrier_waits_for_everyone,
        );
    }
}

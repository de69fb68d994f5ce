//! The transport across MPI ranks (feature `mpi`): every virtual process is
//! an endpoint on `MPI_COMM_WORLD`, hosted by one rank; a rank may host
//! several (each in its own thread, which needs `MPI_THREAD_MULTIPLE`).
//!
//! Each message is two MPI messages with the same MPI tag: an 8-byte
//! little-endian header carrying the trait's 64-bit tag (MPI tags are only
//! guaranteed 15 bits),
//! then the payload, sent zero-copy as bytes. The MPI tag names the sending
//! and receiving virtual processes within their ranks and the kind of
//! message, so MPI's non-overtaking rule keeps each header next to its
//! payload; a receiver that meets another tag first keeps that message for
//! later, as the in-process transport does.
//!
//! MPI cannot tell that a peer is gone: a receive given a patience gives up
//! once its peer has sent nothing for that long (`TransportError::Silent`).

use super::{pop_oldest, Awaited, Transport, TransportError};
use bytemuck::Pod;
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Message, Source, Status};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, Process, SimpleCommunicator};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The MPI standard guarantees tags up to 32767; the top of that range is
/// left to the cluster's own control messages.
pub const MAX_TAG: i32 = 32_000;

/// The most virtual processes one rank may host: `3 n^2` tags must fit
/// under `MAX_TAG`.
const MAX_PER_RANK: usize = 103;
const _: () = assert!(3 * MAX_PER_RANK * MAX_PER_RANK <= MAX_TAG as usize);
const _: () = assert!(3 * (MAX_PER_RANK + 1) * (MAX_PER_RANK + 1) > MAX_TAG as usize);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Cells = 0,
    Values = 1,
    Collective = 2,
}

impl Kind {
    fn awaited(self, tag: u64) -> Awaited {
        match self {
            Kind::Cells => Awaited::Cells(tag),
            Kind::Values => Awaited::Values(tag),
            Kind::Collective => Awaited::Collective(tag),
        }
    }
}

/// How long a receive with a patience probes by default without giving up
/// the core; past it, it lets other threads have the core between probes,
/// as a long wait loses nothing by it. MPI offers no blocking probe with a
/// time limit, so the wait never blocks: it yields.
const YIELD_AFTER: Duration = Duration::from_millis(1);

/// A gap this long between two polls means this process was stopped (a
/// suspended job) or starved, not that the peer went quiet: the wait
/// starts again.
const STALL: Duration = Duration::from_secs(1);

/// Where the virtual processes live: `rank[p]` hosts process `p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    rank: Vec<usize>,
    /// Index of each process among those of its rank.
    slot: Vec<usize>,
    per_rank: usize,
}

impl Placement {
    /// Processes placed on ranks; fails when MPI tags cannot name every pair
    /// of processes that share a rank pair (more than 103 on one rank).
    pub fn new(rank: Vec<usize>) -> Result<Placement, TransportError> {
        let mut count: HashMap<usize, usize> = HashMap::new();
        let slot = rank
            .iter()
            .map(|r| {
                let c = count.entry(*r).or_default();
                *c += 1;
                *c - 1
            })
            .collect();
        let per_rank = count.values().copied().max().unwrap_or(1);
        if 3 * per_rank * per_rank > MAX_TAG as usize {
            return Err(TransportError::TooManyOnRank {
                per_rank,
                max: MAX_PER_RANK,
            });
        }
        Ok(Placement {
            rank,
            slot,
            per_rank,
        })
    }

    /// The rank hosting virtual process `p`.
    ///
    /// # Panics
    /// If `p >= self.len()`.
    pub fn rank_of(&self, p: usize) -> usize {
        self.rank[p]
    }

    /// How many virtual processes are placed.
    pub fn len(&self) -> usize {
        self.rank.len()
    }

    /// Whether no virtual process is placed.
    pub fn is_empty(&self) -> bool {
        self.rank.is_empty()
    }

    fn tag(&self, from: usize, to: usize, kind: Kind) -> i32 {
        ((self.slot[from] * self.per_rank + self.slot[to]) * 3 + kind as usize) as i32
    }
}

/// A payload handed to MPI: leaked so that a request may borrow it for
/// `'static`, and reclaimed once the request has completed. Owned buffers
/// need this because sends must not block: two neighbours that each send
/// before receiving would deadlock on any message too large for MPI's eager
/// protocol (a 4098-cell halo row already is, on shared memory).
///
/// Dropping a `Leaked` without `reclaim` leaks the buffer: never unsound.
struct Leaked<U> {
    ptr: *mut U,
    len: usize,
    cap: usize,
}

impl<U: Pod> Leaked<U> {
    fn new(v: Vec<U>) -> (Leaked<U>, &'static [u8]) {
        let mut v = std::mem::ManuallyDrop::new(v);
        let (ptr, len, cap) = (v.as_mut_ptr(), v.len(), v.capacity());
        // SAFETY: ptr is the start of `len` initialised values of U (from the
        // Vec), and U is Pod, so its `size_of_val` bytes are initialised and
        // may be read as u8. The Vec is never dropped (ManuallyDrop) and only
        // `reclaim`, an `unsafe fn` whose caller promises that nothing
        // borrows these bytes any more, frees them, so they stay valid for
        // as long as any borrow of the returned slice can be used.
        let bytes = unsafe {
            std::slice::from_raw_parts(ptr.cast::<u8>().cast_const(), std::mem::size_of_val(&v[..]))
        };
        (Leaked { ptr, len, cap }, bytes)
    }

    /// Frees the payload.
    ///
    /// # Safety
    /// No reference to the bytes `new` returned with this `Leaked` may be
    /// used afterwards: every MPI request made with them must have
    /// completed.
    unsafe fn reclaim(self) {
        // SAFETY: ptr/len/cap are the parts of the Vec leaked in `new` (never
        // changed since), and `self`, their only record, is consumed here, so
        // the Vec is rebuilt and freed once. The caller promises that nothing
        // still reads the bytes.
        drop(unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) });
    }
}

/// A message in flight: its two requests and the buffers they read.
///
/// The `'static` slices of the buffers exist only inside `start`, which
/// hands them to the two requests and nothing else, so once those requests
/// have completed nothing borrows the buffers. `free` therefore waits for
/// whatever requests are left before it reclaims: a safe fn, whatever the
/// caller does, at the price of blocking when called early (the outbox calls
/// it only on completed messages, or when it is dropped).
struct InFlight<U: Pod> {
    requests: Vec<Request<'static, [u8], StaticScope>>,
    header: Leaked<[u8; 8]>,
    body: Leaked<U>,
}

impl<U: Pod> InFlight<U> {
    /// Starts sending the header (`tag`, little-endian) and `data` to `dest`
    /// under `mpi_tag`.
    fn start(dest: &Process<'_>, mpi_tag: i32, tag: u64, data: Vec<U>) -> InFlight<U> {
        let (header, header_bytes) = Leaked::new(vec![tag.to_le_bytes()]);
        let (body, body_bytes) = Leaked::new(data);
        let requests = vec![
            dest.immediate_send_with_tag(StaticScope, header_bytes, mpi_tag),
            dest.immediate_send_with_tag(StaticScope, body_bytes, mpi_tag),
        ];
        InFlight {
            requests,
            header,
            body,
        }
    }

    /// Drops the requests that have completed; true when none is left.
    fn poll(&mut self) -> bool {
        self.requests = std::mem::take(&mut self.requests)
            .into_iter()
            .filter_map(|r| r.test().err())
            .collect();
        self.requests.is_empty()
    }

    /// Waits for the requests still running, then frees the buffers.
    fn free(mut self) {
        for r in self.requests.drain(..) {
            r.wait_without_status();
        }
        // SAFETY: the buffers' bytes went only to `self.requests` (see
        // `start`), and every one of them has completed: earlier, when
        // `poll` dropped it, or in the wait just above.
        unsafe {
            self.header.reclaim();
            self.body.reclaim();
        }
    }
}

/// Sends of one payload type: starts them, frees what has been sent.
struct Outbox<U: Pod> {
    in_flight: Vec<InFlight<U>>,
}

impl<U: Pod> Outbox<U> {
    fn new() -> Outbox<U> {
        Outbox {
            in_flight: Vec::new(),
        }
    }

    fn send(&mut self, dest: &Process<'_>, mpi_tag: i32, tag: u64, data: Vec<U>) {
        self.collect_finished();
        self.in_flight
            .push(InFlight::start(dest, mpi_tag, tag, data));
    }

    /// Frees the buffers of the sends that have completed.
    fn collect_finished(&mut self) {
        for mut f in std::mem::take(&mut self.in_flight) {
            if f.poll() {
                f.free();
            } else {
                self.in_flight.push(f);
            }
        }
    }
}

impl<U: Pod> Outbox<U> {
    /// Forgets the sends still running, their buffers leaked: a peer that
    /// stopped answering may never take them, and waiting would hang.
    fn abandon(&mut self) {
        self.in_flight.drain(..).for_each(std::mem::forget);
    }
}

impl<U: Pod> Drop for Outbox<U> {
    fn drop(&mut self) {
        // `free` waits for what is still being sent.
        self.in_flight.drain(..).for_each(InFlight::free);
    }
}

/// Where one virtual process sits, and the communicator it talks on.
struct Link {
    me: usize,
    placement: Arc<Placement>,
    world: SimpleCommunicator,
    /// How long a receive waits for a silent peer; `None`: for ever.
    patience: Option<Duration>,
    /// How long a receive with a patience probes before it yields between
    /// probes.
    spin: Duration,
}

/// Messages that arrived before they were asked for, by sender, kind and tag.
type Stash<U> = super::Pending<(usize, Kind, u64), Vec<U>>;

impl Link {
    fn check_peer(&self, q: usize) -> Result<(), TransportError> {
        if q >= self.placement.len() {
            Err(TransportError::NoSuchPeer {
                peer: q,
                size: self.placement.len(),
            })
        } else {
            Ok(())
        }
    }

    fn post<U: Pod>(
        &self,
        out: &mut Outbox<U>,
        to: usize,
        kind: Kind,
        tag: u64,
        data: Vec<U>,
    ) -> Result<(), TransportError> {
        self.check_peer(to)?;
        let mpi_tag = self.placement.tag(self.me, to, kind);
        let dest = self
            .world
            .process_at_rank(self.placement.rank_of(to) as i32);
        out.send(&dest, mpi_tag, tag, data);
        Ok(())
    }

    /// The next message of `kind` from `from` whose header says `tag`;
    /// messages with other tags wait in `stash` until asked for.
    fn take<U: Pod>(
        &self,
        stash: &mut Stash<U>,
        from: usize,
        kind: Kind,
        tag: u64,
    ) -> Result<Vec<U>, TransportError> {
        self.check_peer(from)?;
        if let Some(v) = pop_oldest(stash, &(from, kind, tag)) {
            return Ok(v);
        }
        loop {
            let (got, v) = self.next_message::<U>(from, kind, tag)?;
            if got == tag {
                return Ok(v);
            }
            stash.entry((from, kind, got)).or_default().push_back(v);
        }
    }

    /// The next message of `kind` from `from`, waited for as the one
    /// tagged `tag`: its tag and payload.
    fn next_message<U: Pod>(
        &self,
        from: usize,
        kind: Kind,
        tag: u64,
    ) -> Result<(u64, Vec<U>), TransportError> {
        let mpi_tag = self.placement.tag(from, self.me, kind);
        let source = self
            .world
            .process_at_rank(self.placement.rank_of(from) as i32);
        let probe = || self.probe(&source, mpi_tag, from, kind.awaited(tag));
        let mut header = [0u8; 8];
        let (msg, _) = probe()?;
        msg.matched_receive_into(&mut header[..]);
        let (msg, status) = probe()?;
        let bytes = status.count(u8::equivalent_datatype()) as usize;
        let elem = std::mem::size_of::<U>();
        if elem == 0 || !bytes.is_multiple_of(elem) {
            return Err(TransportError::Ragged { from, bytes, elem });
        }
        let mut v = vec![U::zeroed(); bytes / elem];
        msg.matched_receive_into(bytemuck::cast_slice_mut::<U, u8>(&mut v));
        Ok((u64::from_le_bytes(header), v))
    }

    /// The next MPI message from `source` under `mpi_tag`: waited for as
    /// MPI waits without a patience, else polled for until `from` has sent
    /// nothing for that long.
    fn probe(
        &self,
        source: &Process<'_>,
        mpi_tag: i32,
        from: usize,
        awaited: Awaited,
    ) -> Result<(Message, Status), TransportError> {
        let Some(patience) = self.patience else {
            return Ok(source.matched_probe_with_tag(mpi_tag));
        };
        let mut start = Instant::now();
        let mut polled = start;
        loop {
            if let Some(got) = source.immediate_matched_probe_with_tag(mpi_tag) {
                return Ok(got);
            }
            let now = Instant::now();
            if now - polled > STALL {
                start = now;
            }
            polled = now;
            let waited = now - start;
            if waited >= patience {
                return Err(TransportError::Silent {
                    peer: from,
                    rank: self.placement.rank_of(from),
                    awaited,
                    waited,
                });
            }
            if !super::spins(waited, self.spin) {
                std::thread::yield_now();
            }
        }
    }
}

/// One virtual process's endpoint on MPI.
///
/// Not `Send`: it owns MPI requests, so it is made in the thread that uses
/// it.
pub struct MpiTransport<T: Pod> {
    link: Link,
    cells_out: Outbox<T>,
    values_out: Outbox<f64>,
    cells: Stash<T>,
    values: Stash<f64>,
    collectives: u64,
    /// A receive gave up on a silent peer: sends to it may never complete.
    gave_up: bool,
}

impl<T: Pod> MpiTransport<T> {
    /// The endpoint of virtual process `me`; MPI must be initialised and
    /// `me` hosted by this rank.
    pub fn new(me: usize, placement: Arc<Placement>) -> Result<MpiTransport<T>, TransportError> {
        if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
            return Err(TransportError::MpiNotInitialised);
        }
        let world = SimpleCommunicator::world();
        if me >= placement.len() {
            return Err(TransportError::NoSuchPeer {
                peer: me,
                size: placement.len(),
            });
        }
        if placement.rank_of(me) != world.rank() as usize {
            return Err(TransportError::WrongRank {
                vp: me,
                owner: placement.rank_of(me),
                rank: world.rank() as usize,
            });
        }
        Ok(MpiTransport {
            link: Link {
                me,
                placement,
                world,
                patience: None,
                spin: YIELD_AFTER,
            },
            cells_out: Outbox::new(),
            values_out: Outbox::new(),
            cells: HashMap::new(),
            values: HashMap::new(),
            collectives: 0,
            gave_up: false,
        })
    }

    /// Gives every receive a patience: one whose peer sends nothing for
    /// `limit` fails with [`TransportError::Silent`] instead of waiting for
    /// ever (`None`, the default: it waits as MPI does).
    pub fn patience(mut self, limit: Option<Duration>) -> MpiTransport<T> {
        self.link.patience = limit;
        self
    }

    /// Sets how long a receive with a patience probes without giving up
    /// the core (default 1 ms) before it yields between probes; zero
    /// yields from the first probe, for a process whose threads outnumber
    /// its cores. A receive without a patience waits as MPI does, whatever
    /// the spin. What arrives, and in which order, does not depend on it.
    pub fn set_spin(&mut self, spin: Duration) {
        self.link.spin = spin;
    }

    /// How long a receive with a patience probes before it yields.
    pub fn spin(&self) -> Duration {
        self.link.spin
    }

    /// Notes a receive that gave up, so that dropping the endpoint does not
    /// wait for sends to the silent peer.
    fn noting<R>(&mut self, r: Result<R, TransportError>) -> Result<R, TransportError> {
        if matches!(r, Err(TransportError::Silent { .. })) {
            self.gave_up = true;
        }
        r
    }
}

impl<T: Pod> Drop for MpiTransport<T> {
    fn drop(&mut self) {
        if self.gave_up {
            self.cells_out.abandon();
            self.values_out.abandon();
        }
    }
}

impl<T: Pod> Transport<T> for MpiTransport<T> {
    fn rank(&self) -> usize {
        self.link.me
    }

    fn size(&self) -> usize {
        self.link.placement.len()
    }

    fn send(&mut self, to: usize, tag: u64, data: Vec<T>) -> Result<(), TransportError> {
        self.link
            .post(&mut self.cells_out, to, Kind::Cells, tag, data)
    }

    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<T>, TransportError> {
        let r = self.link.take(&mut self.cells, from, Kind::Cells, tag);
        self.noting(r)
    }

    fn send_values(&mut self, to: usize, tag: u64, values: Vec<f64>) -> Result<(), TransportError> {
        self.link
            .post(&mut self.values_out, to, Kind::Values, tag, values)
    }

    fn recv_values(&mut self, from: usize, tag: u64) -> Result<Vec<f64>, TransportError> {
        let r = self.link.take(&mut self.values, from, Kind::Values, tag);
        self.noting(r)
    }

    fn spin(&self) -> Duration {
        MpiTransport::spin(self)
    }

    fn set_spin(&mut self, spin: Duration) {
        MpiTransport::set_spin(self, spin);
    }

    fn all_gather(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>, TransportError> {
        let tag = self.collectives;
        self.collectives += 1;
        let (me, n) = (self.link.me, self.link.placement.len());
        for to in (0..n).filter(|&q| q != me) {
            self.link.post(
                &mut self.values_out,
                to,
                Kind::Collective,
                tag,
                values.to_vec(),
            )?;
        }
        let all = (0..n)
            .map(|from| {
                if from == me {
                    Ok(values.to_vec())
                } else {
                    self.link
                        .take(&mut self.values, from, Kind::Collective, tag)
                }
            })
            .collect();
        self.noting(all)
    }
}

//! Moving data between virtual processes. The skeleton talks only to the
//! `Transport` trait; threads in one process (`InProcess`) and MPI ranks
//! (`MpiTransport`, feature `mpi`) both implement it.

mod inproc;
#[cfg(feature = "mpi")]
mod mpi;

pub use inproc::{in_process, InProcess, SPIN};
#[cfg(feature = "mpi")]
pub use mpi::{MpiTransport, Placement, MAX_TAG};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;
use thiserror::Error;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

/// Why a transport operation failed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TransportError {
    /// The peer's endpoint is gone (dropped, its thread failed). In-process
    /// only: MPI has no way to tell. (The skeleton recognises this message
    /// by "is gone": keep the text.)
    #[error("virtual process {0} is gone (it failed or stopped early)")]
    PeerGone(usize),
    /// A rank outside `0..size`.
    #[error("no virtual process {peer}: there are {size}")]
    NoSuchPeer {
        /// The rank asked for.
        peer: usize,
        /// How many virtual processes there are.
        size: usize,
    },
    /// More virtual processes on one MPI rank than MPI tags can name.
    #[error(
        "{per_rank} virtual processes on one rank: MPI tags can name at most {max}; run more ranks"
    )]
    TooManyOnRank {
        /// The most virtual processes placed on one rank.
        per_rank: usize,
        /// The most that fit.
        max: usize,
    },
    /// An endpoint made before MPI was initialised or after it finalised.
    #[error("MPI is not initialised")]
    MpiNotInitialised,
    /// An endpoint made on a rank that does not host its virtual process.
    #[error("virtual process {vp} belongs to rank {owner}, not {rank}")]
    WrongRank {
        /// The virtual process.
        vp: usize,
        /// The rank that hosts it.
        owner: usize,
        /// The rank that tried to make its endpoint.
        rank: usize,
    },
    /// A peer sent nothing a receive waited for within the transport's
    /// patience (MPI only: a rank stopped, killed or cut off the network).
    #[error(
        "virtual process {peer} on rank {rank} sent nothing for {} s (awaited: {awaited})",
        waited.as_secs_f64()
    )]
    Silent {
        /// The virtual process waited for.
        peer: usize,
        /// The MPI rank that hosts it.
        rank: usize,
        /// The message waited for.
        awaited: Awaited,
        /// How long the receive waited.
        waited: Duration,
    },
    /// A payload whose length is not a whole number of values: the sender
    /// used another cell type.
    #[error(
        "a message from virtual process {from} has {bytes} bytes, not a whole number of {elem}-byte values"
    )]
    Ragged {
        /// The sender.
        from: usize,
        /// The payload's length.
        bytes: usize,
        /// The size of one value.
        elem: usize,
    },
}

/// The message a receive waits for, by the method that waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaited {
    /// Cells (`recv`) with this tag.
    Cells(u64),
    /// Values (`recv_values`) with this tag.
    Values(u64),
    /// The part of the `n`-th `all_gather` (or barrier) from one process.
    Collective(u64),
}

impl std::fmt::Display for Awaited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Awaited::Cells(tag) => write!(f, "cells tagged {tag}"),
            Awaited::Values(tag) => write!(f, "values tagged {tag}"),
            Awaited::Collective(n) => write!(f, "its part of collective {n}"),
        }
    }
}

/// Point-to-point messages of cells and small collectives of f64 values
/// between `size()` virtual processes.
///
/// Messages between a pair with the same tag arrive in the order sent.
///
/// Not `Send` in general: an MPI endpoint owns requests that stay in the
/// thread that made them, so endpoints are made where they are used.
///
/// The `conformance` module (feature `conformance`) checks these promises on any
/// implementation.
pub trait Transport<T> {
    /// This virtual process.
    fn rank(&self) -> usize;
    /// How many virtual processes there are.
    fn size(&self) -> usize;
    /// Starts sending `data`; never waits for the receiver.
    fn send(&mut self, to: usize, tag: u64, data: Vec<T>) -> Result<(), TransportError>;
    /// Waits for the next message from `from` with `tag`.
    fn recv(&mut self, from: usize, tag: u64) -> Result<Vec<T>, TransportError>;
    /// Starts sending a few f64 values (timings); never waits.
    fn send_values(&mut self, to: usize, tag: u64, values: Vec<f64>) -> Result<(), TransportError>;
    /// Waits for the next values from `from` with `tag`.
    fn recv_values(&mut self, from: usize, tag: u64) -> Result<Vec<f64>, TransportError>;
    /// Every process's `values`, indexed by rank. All processes must call it.
    fn all_gather(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>, TransportError>;
    /// Waits until every process has reached the barrier.
    fn barrier(&mut self) -> Result<(), TransportError> {
        self.all_gather(&[]).map(|_| ())
    }
    /// How long a receive polls for its message before the thread blocks
    /// (zero where the transport does not poll).
    fn spin(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// Sets how long a receive polls before it blocks, where the transport
    /// polls; what arrives, and in which order, does not depend on it.
    fn set_spin(&mut self, _spin: std::time::Duration) {}
}

/// Messages that arrived before they were asked for, oldest first per key.
type Pending<K, V> = HashMap<K, VecDeque<V>>;

/// The oldest pending message under `key`. Tags name iterations, so a key
/// whose queue empties never comes back: it leaves the map, which would
/// otherwise grow by every iteration's keys for the whole run.
fn pop_oldest<K: Hash + Eq, V>(pending: &mut Pending<K, V>, key: &K) -> Option<V> {
    let queue = pending.get_mut(key)?;
    let msg = queue.pop_front();
    if queue.is_empty() {
        pending.remove(key);
    }
    msg
}

/// Whether a receive that has waited `waited` for its message polls again
/// at once, keeping its core: within the endpoint's `spin`. Past it the
/// in-process transport blocks and MPI's probe (which cannot block with a
/// time limit) yields between probes. Never a yield within the window: it
/// would hand the core to any runnable thread of another program, a build
/// at low priority included, for a whole scheduler slice.
fn spins(waited: Duration, spin: Duration) -> bool {
    waited < spin
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait polls through the whole window and stops at its end, never
    /// before; an endpoint that does not poll stops at once.
    #[test]
    fn a_wait_polls_through_the_window_then_stops() {
        let us = Duration::from_micros;
        for waited in [0, 1, 50, 51, 500, 999].map(us) {
            assert!(spins(waited, SPIN), "{waited:?}");
        }
        for waited in [1_000, 1_001, 20_000].map(us) {
            assert!(!spins(waited, SPIN), "{waited:?}");
        }
        assert!(!spins(Duration::ZERO, Duration::ZERO));
        assert!(spins(us(1_500), SPIN * 2));
    }

    #[test]
    fn pending_messages_leave_oldest_first_and_take_their_key_with_the_last() {
        let mut p: Pending<(usize, u64), &str> = HashMap::new();
        p.entry((1, 7)).or_default().extend(["a", "b"]);
        p.entry((2, 7)).or_default().push_back("c");
        assert_eq!(pop_oldest(&mut p, &(1, 7)), Some("a"));
        assert!(p.contains_key(&(1, 7)), "one left");
        assert_eq!(pop_oldest(&mut p, &(1, 7)), Some("b"));
        assert!(!p.contains_key(&(1, 7)), "the emptied key goes");
        assert_eq!(pop_oldest(&mut p, &(1, 7)), None);
        assert_eq!(pop_oldest(&mut p, &(2, 8)), None);
        assert_eq!(p.len(), 1);
    }
}

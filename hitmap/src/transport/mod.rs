//! Moving data between virtual processes. The skeleton talks only to the
//! `Transport` trait; threads in one process (`InProcess`) and MPI ranks
//! (`MpiTransport`, feature `mpi`) both implement it.

mod inproc;
#[cfg(feature = "mpi")]
mod mpi;

pub use inproc::{in_process, InProcess};
#[cfg(feature = "mpi")]
pub use mpi::{MpiTransport, Placement, MAX_TAG};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum TransportError {
    #[error("virtual process {0} is gone (it failed or stopped early)")]
    PeerGone(usize),
    #[error("no virtual process {peer}: there are {size}")]
    NoSuchPeer { peer: usize, size: usize },
    #[error("transport failure: {0}")]
    Other(String),
}

/// Point-to-point messages of cells and small collectives of f64 values
/// between `size()` virtual processes.
///
/// Messages between a pair with the same tag arrive in the order sent.
///
/// Not `Send` in general: an MPI endpoint owns requests that stay in the
/// thread that made them, so endpoints are made where they are used.
pub trait Transport<T> {
    /// This virtual process.
    fn rank(&self) -> usize;
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
}

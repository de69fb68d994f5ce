//! The target's node as the compute term sees it: its cores, the devices
//! that share them, and the floor its memory bandwidth puts under compute.

use serde::{Deserialize, Serialize};

use super::error::ScalingError;
use super::signature::{ComputeClock, Signature};

/// What the target's node does to compute time beyond the fitted law.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Node {
    /// Cores of a node. With compute fitted on CPU time, the n devices of
    /// t threads on a node share them: wall = CPU × max(1, n·t / cores).
    /// Default: the cores the signatures were recorded on. May be a
    /// fraction: a node that other work shares gives a run only part of
    /// its cores.
    pub cores: Option<f64>,
    /// Devices on one node, sharing its cores and its memory bandwidth
    /// (absent: every device of the target on one node).
    pub devices_per_node: Option<usize>,
    /// A floor from the node's memory bandwidth, shared by its devices.
    pub bandwidth: Option<Bandwidth>,
}

/// The memory-bandwidth floor of compute: a device of `c` cells cannot
/// update them faster than its share of the node's bandwidth moves their
/// bytes, `c × bytes_per_cell / (bytes_per_second / devices on the node)`.
/// A power law fitted where each device still has bandwidth to spare keeps
/// halving the time with every doubling of P; the floor is where that
/// stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Bytes per second the node's memory moves (a measured copy: bytes
    /// read plus bytes written).
    pub bytes_per_second: f64,
    /// Bytes an update of one cell moves to or from memory (a streaming
    /// stencil: its cell read once, its result written once).
    pub bytes_per_cell: f64,
}

impl Bandwidth {
    /// The bandwidth a node's devices reached together: from the signature
    /// with the most devices whose threads still fit the node's `cores`
    /// (every core busy, none taking turns), its cells' bytes over its
    /// slowest kernel on `clock`. What the stencil itself moves with the
    /// whole node's cores at work, not what a copy moves: measured in the
    /// signatures, it needs no other run.
    pub fn from_signatures(
        signatures: &[Signature],
        bytes_per_cell: f64,
        clock: ComputeClock,
        cores: usize,
    ) -> Result<f64, ScalingError> {
        let threads = |s: &Signature| {
            s.processes
                .iter()
                .map(|p| p.threads.unwrap_or(1))
                .sum::<usize>()
        };
        let Some(full) = signatures
            .iter()
            .filter(|s| threads(s) <= cores)
            .max_by_key(|s| threads(s))
        else {
            return Err(ScalingError::BadNode(format!(
                "no signature fits {cores} cores to measure the node's bandwidth on"
            )));
        };
        Ok(full.total_cells() as f64 * bytes_per_cell / full.critical_on(clock)?)
    }

    /// Seconds per iteration below which a device of `cells` cannot go
    /// with `sharing` devices on its node.
    pub fn floor(&self, cells: f64, sharing: usize) -> f64 {
        cells * self.bytes_per_cell * sharing.max(1) as f64 / self.bytes_per_second
    }
}

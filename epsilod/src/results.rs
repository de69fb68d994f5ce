//! What a virtual process hands back: its block of the result and its
//! measurements, and their form on the wire between ranks; which
//! iterations a run records is `heuristics::sampling`'s rule.

use crate::report::{CheckpointRecord, DecisionRecord, DepthTrial, Redistribution};
use hitmap::Shape;
use serde::{Deserialize, Serialize};

// The rule is shared with the simulator, which samples its reports alike.
pub(crate) use heuristics::sampling::{
    default_records, is_recorded, record_every, recorded_in_block,
};

/// One iteration of one virtual process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct IterStats {
    pub wall: f64,
    /// Seconds since the loop started, at the end of this iteration.
    pub elapsed: f64,
    pub compute: f64,
    pub comm: f64,
    /// Kernel thread CPU seconds, where the device measures them and the
    /// run asks (`Skeleton::cpu_time`).
    pub cpu: Option<f64>,
    /// Instructions its kernels retired, where counted
    /// (`controllers::cpu_time::count_instructions`).
    #[serde(default)]
    pub instructions: Option<f64>,
    pub rows: usize,
}

/// What a virtual process hands back: its block of the result and its
/// measurements.
pub(crate) struct VpResult<T> {
    pub block: Shape,
    pub data: Vec<T>,
    pub stats: Vec<IterStats>,
    pub loop_seconds: f64,
    /// Every process records the same rebalances and decisions (all decide
    /// on the same numbers), so the report may take them from any.
    pub redistributions: Vec<Redistribution>,
    pub decisions: Vec<DecisionRecord>,
    /// Checks not in `decisions` (`heuristics::CheckLog`).
    pub decisions_dropped: u64,
    /// The checkpoints this process took part in, with its own time.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Halo messages it sent.
    pub messages: u64,
    /// Of those, the ones that stayed in device memory.
    pub device_messages: u64,
    /// Its device held cells with components in planes.
    pub planes: bool,
    /// The halo depth it ended at.
    pub depth: usize,
    /// `--halo-depth auto`'s measurements (every process has the same).
    pub depth_trials: Vec<DepthTrial>,
}

/// A result's place and measurements as they travel between ranks (its
/// cells travel apart, as bytes). Only the MPI job and the executor's
/// simulated ranks send results across a wire.
#[cfg(any(feature = "mpi", test))]
#[derive(Serialize, Deserialize)]
pub(crate) struct VpMeta {
    vp: usize,
    /// `(begin, end, stride)` per dimension.
    block: Vec<(i64, i64, i64)>,
    stats: Vec<IterStats>,
    loop_seconds: f64,
    redistributions: Vec<Redistribution>,
    decisions: Vec<DecisionRecord>,
    #[serde(default)]
    decisions_dropped: u64,
    checkpoints: Vec<CheckpointRecord>,
    messages: u64,
    #[serde(default)]
    device_messages: u64,
    #[serde(default)]
    planes: bool,
    depth: usize,
    depth_trials: Vec<DepthTrial>,
}

#[cfg(any(feature = "mpi", test))]
impl VpMeta {
    pub(crate) fn of<T>(vp: usize, r: &VpResult<T>) -> VpMeta {
        VpMeta {
            vp,
            block: r
                .block
                .sigs()
                .iter()
                .map(|s| (s.begin(), s.end(), s.stride()))
                .collect(),
            stats: r.stats.clone(),
            loop_seconds: r.loop_seconds,
            redistributions: r.redistributions.clone(),
            decisions: r.decisions.clone(),
            decisions_dropped: r.decisions_dropped,
            checkpoints: r.checkpoints.clone(),
            messages: r.messages,
            device_messages: r.device_messages,
            planes: r.planes,
            depth: r.depth,
            depth_trials: r.depth_trials.clone(),
        }
    }

    pub(crate) fn into_result<T>(self) -> (usize, VpResult<T>) {
        let block = Shape::new(
            self.block
                .iter()
                .map(|&(b, e, s)| hitmap::Sig::new(b, e, s))
                .collect(),
        );
        (
            self.vp,
            VpResult {
                block,
                data: Vec::new(),
                stats: self.stats,
                loop_seconds: self.loop_seconds,
                redistributions: self.redistributions,
                decisions: self.decisions,
                decisions_dropped: self.decisions_dropped,
                checkpoints: self.checkpoints,
                messages: self.messages,
                device_messages: self.device_messages,
                planes: self.planes,
                depth: self.depth,
                depth_trials: self.depth_trials,
            },
        )
    }
}

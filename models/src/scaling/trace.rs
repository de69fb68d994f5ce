//! What the model predicts and how it is judged: the logical trace of the
//! phase at one count (what a replay emulates, with the limits it checks)
//! and the validation against a held-back signature.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::ScalingError;
use super::signature::Message;

/// One process's part of the predicted phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedProcess {
    /// Compute seconds per iteration.
    pub compute_seconds: f64,
    /// Exchange seconds per iteration.
    pub comm_seconds: f64,
    /// Messages per iteration.
    pub sends: Vec<Message>,
}

/// The logical trace and time predicted for one device count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaledTrace {
    /// The device count.
    pub count: usize,
    /// Iterations (the phase's weight).
    pub weight: u64,
    /// Every process's phase.
    pub processes: Vec<PredictedProcess>,
    /// The slowest process's compute plus exchange.
    pub iteration_seconds: f64,
    /// `weight × iteration_seconds`.
    pub loop_seconds: f64,
}

/// The longest compute phase a replay emulates, in seconds per iteration:
/// a replay sleeps it once per iteration and process.
pub const MAX_REPLAY_COMPUTE_SECONDS: f64 = 60.0;
/// The largest message a replay sends (1 GiB): it allocates each.
pub const MAX_REPLAY_MESSAGE_BYTES: u64 = 1 << 30;

impl ScaledTrace {
    /// Errors unless this could be a run's trace that a replay can emulate:
    /// one process per device, times finite and >= 0 (compute at most
    /// [`MAX_REPLAY_COMPUTE_SECONDS`]), every message to another process of
    /// the trace, once, of at most [`MAX_REPLAY_MESSAGE_BYTES`].
    pub fn check(&self) -> Result<(), ScalingError> {
        let bad = |why: String| Err(ScalingError::BadTrace(why));
        if self.count == 0 || self.processes.len() != self.count {
            return bad(format!(
                "its count is {} but it has {} processes",
                self.count,
                self.processes.len()
            ));
        }
        for (rank, p) in self.processes.iter().enumerate() {
            if !(0.0..=MAX_REPLAY_COMPUTE_SECONDS).contains(&p.compute_seconds) {
                return bad(format!(
                    "process {rank} computes for {:e} s an iteration (0 to \
                     {MAX_REPLAY_COMPUTE_SECONDS} s can be replayed)",
                    p.compute_seconds
                ));
            }
            if !(p.comm_seconds.is_finite() && p.comm_seconds >= 0.0) {
                return bad(format!(
                    "process {rank} exchanges for {:e} s an iteration",
                    p.comm_seconds
                ));
            }
            let mut peers = BTreeSet::new();
            for m in &p.sends {
                if m.peer >= self.count || m.peer == rank || !peers.insert(m.peer) {
                    return bad(format!(
                        "process {rank} sends to {}: not another process, or twice",
                        m.peer
                    ));
                }
                if m.bytes > MAX_REPLAY_MESSAGE_BYTES {
                    return bad(format!(
                        "process {rank} sends {} bytes to {} (at most {MAX_REPLAY_MESSAGE_BYTES} \
                         can be replayed)",
                        m.bytes, m.peer
                    ));
                }
            }
        }
        Ok(())
    }
}

/// How a held-back signature compares with the model's prediction for its
/// count (P3S's acceptance rule: pattern and weight exact, volume and
/// compute within 10%).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Device count of the held-back signature.
    pub count: usize,
    /// Every process has exactly the predicted peers.
    pub pattern_exact: bool,
    /// The weight is the predicted one.
    pub weight_exact: bool,
    /// Largest relative error of a message's size (1 when the pattern is
    /// not exact).
    pub volume_error: f64,
    /// Relative error of the compute the prediction uses, on the fitted
    /// clock (`ScalingModel::compute_on_clock`): the critical process's, or
    /// where devices take turns the larger of the mean one's and the
    /// critical one's over the stretch.
    pub compute_error: f64,
    /// Relative error of the iteration time.
    pub time_error: f64,
}

impl Validation {
    /// The error bound on volume and compute for acceptance.
    pub const TOLERANCE: f64 = 0.10;

    /// Whether the model passes P3S's acceptance rule on this signature.
    pub fn accepted(&self) -> bool {
        self.pattern_exact
            && self.weight_exact
            && self.volume_error <= Self::TOLERANCE
            && self.compute_error <= Self::TOLERANCE
    }
}

//! What a virtual process hands back: its block of the result and its
//! measurements, and their form on the wire between ranks; and which
//! iterations a run records.

use crate::report::{CheckpointRecord, DecisionRecord, DepthTrial, Redistribution};
use hitmap::Shape;
use serde::{Deserialize, Serialize};

/// The most iterations a run records one by one by default, with at most
/// [`RECORD_BUDGET`] records of devices in all, so a long run's records
/// and report fit in memory (`Skeleton::iteration_records` sets another
/// limit).
pub(crate) const RECORDED_ITERATIONS: u64 = 1 << 20;

/// Device-iterations recorded at most by default: a report well under what
/// one MPI message can carry.
pub(crate) const RECORD_BUDGET: u64 = 1 << 22;

/// Iterations recorded one by one by default on `devices` devices.
pub(crate) fn default_records(devices: usize) -> u64 {
    (RECORD_BUDGET / devices.max(1) as u64).clamp(1, RECORDED_ITERATIONS)
}

/// Every how many iterations a run of `ran` iterations records one, to
/// record at most `max`: 1 up to `max`.
pub(crate) fn record_every(ran: u64, max: u64) -> u64 {
    ran.div_ceil(max.max(1)).max(1)
}

/// The iteration (from the run's start) recorded in block `b` of `every`
/// iterations: a place within the block that varies from block to block,
/// so that the sample never lines up with periodic events (ALB windows,
/// checkpoints, exchange periods) and its mean is not biased by them.
pub(crate) fn recorded_in_block(b: u64, every: u64) -> u64 {
    if every == 1 {
        return b;
    }
    // SplitMix64's finaliser: any fixed scramble of `b` does.
    let mut z = b.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    b * every + (z ^ (z >> 31)) % every
}

/// Whether iteration `i` (from the run's start) is recorded, one a block of
/// `every`.
pub(crate) fn is_recorded(i: u64, every: u64) -> bool {
    recorded_in_block(i / every, every) == i
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_record_at_most_a_bounded_number_of_iterations() {
        for max in [1, 10, RECORDED_ITERATIONS] {
            for ran in [0, 1, 9, 10, 11, 1000, max, max + 1, 10_000_000, u64::MAX] {
                let every = record_every(ran, max);
                assert!(ran.div_ceil(every) <= max, "{ran} {max}");
                assert_eq!(every == 1, ran <= max, "{ran} {max}");
                // The smallest such step.
                assert!(every == 1 || ran.div_ceil(every - 1) > max, "{ran} {max}");
            }
        }
        assert_eq!(default_records(1), RECORDED_ITERATIONS);
        assert_eq!(default_records(16), RECORD_BUDGET / 16);
        assert_eq!(default_records(usize::MAX), 1);
    }

    #[test]
    fn one_iteration_a_block_is_recorded_at_places_that_vary() {
        for every in [1, 2, 7, 10] {
            let recorded: Vec<u64> = (0..1000).filter(|&i| is_recorded(i, every)).collect();
            let blocks: Vec<u64> = recorded.iter().map(|i| i / every).collect();
            assert_eq!(
                blocks,
                (0..recorded.len() as u64).collect::<Vec<_>>(),
                "{every}"
            );
            for (b, &i) in recorded.iter().enumerate() {
                assert_eq!(recorded_in_block(b as u64, every), i);
            }
            let places: std::collections::BTreeSet<u64> =
                recorded.iter().map(|i| i % every).collect();
            assert_eq!(places.len() as u64, every, "every place is used: {every}");
        }
    }
}

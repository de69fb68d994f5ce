//! The JSON run report (keys fixed by cli.md: scripts rely on them).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

mod spells;

pub use spells::{slow_spells, SlowSpell, Timed, SLOW_FACTOR, SPELL_FRACTION, SPELL_RECORDS};

/// Everything measured in a run, as `--report` writes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// What ran.
    pub config: ReportConfig,
    /// The totals.
    pub summary: Summary,
    /// Per iteration, per device.
    pub iterations: Vec<IterationRecord>,
    /// Every rebalance.
    pub redistributions: Vec<Redistribution>,
    /// Every heuristic check that rebalanced, and the latest others
    /// ([`crate::Alb::checks_kept`]; `summary.heuristic_checks_dropped`
    /// counts the rest).
    pub heuristic: Vec<DecisionRecord>,
    /// Every checkpoint written.
    #[serde(default)]
    pub checkpoints: Vec<CheckpointRecord>,
    /// Every device lost and recovered from (`--on-failure recover`).
    #[serde(default)]
    pub failures: Vec<FailureRecord>,
    /// Iterations between halo exchanges (`--halo-depth`; with `auto`, the
    /// depth chosen).
    #[serde(default = "one")]
    pub halo_depth: usize,
    /// Why the run went at `halo_depth`: given, measured by `auto`, or the
    /// default's rule.
    #[serde(default)]
    pub halo_depth_reason: DepthReason,
    /// With `--halo-depth auto`: the seconds per iteration measured at each
    /// depth tried (the slowest process's), which chose `halo_depth`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depth_trials: Vec<DepthTrial>,
}

/// Why a run went at its halo depth (the report's `halo_depth_reason`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepthReason {
    /// The depth was given (`--halo-depth K`).
    #[default]
    Given,
    /// `auto`: the depth its trials chose.
    Measured,
    /// `auto`, in a run too short to repay the trials: depth 1.
    ShortRun,
    /// The kernel reads the previous time level, which deep halos do not
    /// carry: depth 1.
    ReadsPrevious,
    /// Default: every CPU device's tile outgrows its cores' second-level
    /// cache, so fused steps save memory traffic: [`CACHE_DEPTH`](crate::depth_choice::CACHE_DEPTH).
    TilesBeyondL2,
    /// Default: a tile fits (a few times) its cores' second-level cache,
    /// where fusing saves no memory traffic: depth 1.
    TilesInCache,
    /// Default: a device is not a plain CPU device (a GPU, emulated
    /// slowness or failure), where the default was not measured: depth 1.
    NotPlainCpu,
    /// Default: the kernel has auxiliary fields, which run step by step,
    /// unfused: depth 1.
    StepByStep,
    /// Default: several ranks, where deep halos cost exchange bytes
    /// between processes: depth 1.
    SeveralRanks,
    /// Default: load balancing moves rows during the run: depth 1.
    Balanced,
    /// Default: blocks too thin for the ring their neighbours compute
    /// twice: depth 1.
    ThinBlocks,
    /// Default: a grid of three or more dimensions, where fused CPU steps
    /// ran slower than single steps at most sizes measured: depth 1.
    ThreeOrMoreDims,
}

/// One depth `--halo-depth auto` tried.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DepthTrial {
    /// Iterations between exchanges.
    pub depth: usize,
    /// Median seconds per iteration at that depth.
    pub seconds: f64,
}

fn one() -> usize {
    1
}

/// A device that failed, and what recovering cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The device, as given.
    pub device: String,
    /// What went wrong.
    pub error: String,
    /// Seconds the run had been going when it failed (this attempt).
    pub attempt_seconds: f64,
    /// The checkpoint iteration the run went on from (0: the start).
    pub resumed_from: u64,
    /// Devices left to go on with.
    pub devices_left: usize,
}

/// One checkpoint: after which iteration, and how long the slowest process
/// took over writing its block (process 0: and the manifest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Iterations done when it was written.
    pub iter: u64,
    /// Seconds spent writing it, the slowest process's.
    pub seconds: f64,
}

/// What a heuristic check decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DecisionOutcome {
    /// Rebalanced.
    Rebalance,
    /// Kept the layout.
    Keep,
    /// Asked to rebalance, but the new blocks would be thinner than the stencil.
    SkippedTooThin,
}

const SKIPPED_TOO_THIN: &str = "skipped: blocks would be thinner than the stencil";

impl fmt::Display for DecisionOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecisionOutcome::Rebalance => "rebalance",
            DecisionOutcome::Keep => "keep",
            DecisionOutcome::SkippedTooThin => SKIPPED_TOO_THIN,
        })
    }
}

impl From<DecisionOutcome> for String {
    fn from(d: DecisionOutcome) -> String {
        d.to_string()
    }
}

/// A report's decision that names no outcome.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown decision '{0}'")]
pub struct UnknownDecision(pub String);

impl TryFrom<String> for DecisionOutcome {
    type Error = UnknownDecision;
    fn try_from(s: String) -> Result<DecisionOutcome, UnknownDecision> {
        match s.as_str() {
            "rebalance" => Ok(DecisionOutcome::Rebalance),
            "keep" => Ok(DecisionOutcome::Keep),
            SKIPPED_TOO_THIN => Ok(DecisionOutcome::SkippedTooThin),
            _ => Err(UnknownDecision(s)),
        }
    }
}

/// One heuristic check: the iteration, the outcome and the heuristic's own
/// values (flattened beside them in the JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The iteration checked.
    pub iter: u64,
    /// What was decided.
    pub decision: DecisionOutcome,
    /// The values behind the decision, by name. JSON has no infinity or
    /// NaN (next-alb's `gap` is infinite while no device is slower than
    /// the average, as with one device holding rows): those go as the
    /// strings `"inf"`, `"-inf"` and `"nan"`, and a `null` from an older
    /// report loads as NaN.
    #[serde(flatten, with = "values")]
    pub values: BTreeMap<String, f64>,
}

mod values {
    use serde::de::Error;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(v: &BTreeMap<String, f64>, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, &x) in v {
            match x {
                x if x.is_finite() => m.serialize_entry(k, &x)?,
                x if x.is_nan() => m.serialize_entry(k, "nan")?,
                x if x > 0.0 => m.serialize_entry(k, "inf")?,
                _ => m.serialize_entry(k, "-inf")?,
            }
        }
        m.end()
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Number {
        Finite(f64),
        Text(String),
        Null(()),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
        BTreeMap::<String, Number>::deserialize(d)?
            .into_iter()
            .map(|(k, n)| {
                let x = match n {
                    Number::Finite(x) => x,
                    Number::Text(t) => match t.as_str() {
                        "inf" => f64::INFINITY,
                        "-inf" => f64::NEG_INFINITY,
                        "nan" => f64::NAN,
                        _ => {
                            return Err(D::Error::custom(format!(
                                "heuristic value {k} is '{t}': expected a number, \"inf\", \"-inf\" or \"nan\""
                            )))
                        }
                    },
                    Number::Null(()) => f64::NAN,
                };
                Ok((k, x))
            })
            .collect()
    }
}

fn default_window() -> usize {
    heuristics::WINDOW
}

fn default_direct_times() -> usize {
    usize::MAX
}

/// What ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReportConfig {
    /// Stencil or app name.
    pub stencil: String,
    /// Global size, boundary included.
    pub size: Vec<usize>,
    /// Iterations.
    pub iters: u64,
    /// Every device, as `--devices` writes it.
    pub devices: Vec<String>,
    /// The ALB heuristic (`none` without).
    pub alb: String,
    /// ALB's moving window in iterations (`Alb::window`); absent in
    /// reports from before it was recorded, which ran the default.
    #[serde(default = "default_window")]
    pub alb_window: usize,
    /// Processes up to which ALB's kernel times went to every process
    /// directly, a tree beyond (`Alb::direct_times_up_to`); absent in
    /// reports from before the tree, which sent them directly.
    #[serde(default = "default_direct_times")]
    pub times_direct_up_to: usize,
    /// ALB's threshold for dropping a slow device (`Alb::drop_below`);
    /// absent in reports from before devices were dropped, which kept
    /// every device (0).
    #[serde(default)]
    pub alb_drop_below: f64,
    /// The partition.
    pub partition: String,
    /// The kernel kind.
    pub kernel: String,
    /// The iteration a restart resumed from (the first in `iterations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<u64>,
    /// The host each device ran on, in device order (its rank's: MPI's
    /// processor name under MPI); absent from simulated and older reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// The run's totals.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Setup, iterations and result assembly.
    pub total_seconds: f64,
    /// The iteration loop alone (the slowest virtual process).
    pub loop_seconds: f64,
    /// Mean of the iterations' `seconds`.
    pub mean_iteration_seconds: f64,
    /// Median of the iterations' `seconds`.
    pub median_iteration_seconds: f64,
    /// Rebalances done.
    pub rebalances: usize,
    /// Seconds spent redistributing, summed.
    pub redistribution_seconds_total: f64,
    /// Interior cells times iterations, over `loop_seconds`.
    pub cell_updates_per_second: f64,
    /// Mean per iteration of the iteration time not spent in the slowest
    /// device's kernels: halo packing, messages, waiting, bookkeeping.
    pub skeleton_overhead_seconds_per_iteration: f64,
    /// Halo messages sent by every device in all (rebalance refreshes
    /// included): deep halos divide them by the depth.
    #[serde(default)]
    pub halo_messages: u64,
    /// Of those, the ones that stayed in device memory (between devices
    /// of one process that share it).
    #[serde(default)]
    pub halo_messages_on_device: u64,
    /// Devices that held cells with components in planes (GPUs, for
    /// kernels that can read them so: docs/stencils.md).
    #[serde(default)]
    pub devices_in_planes: u64,
    /// `iterations` holds one iteration in each block of this many: 1
    /// unless the run was longer than its record limit
    /// (`Skeleton::iteration_records`; then its records are a sample, each
    /// still one iteration; means, medians and overhead are the sample's).
    #[serde(default = "every_iteration")]
    pub iterations_recorded_every: u64,
    /// Heuristic checks left out of `heuristic` (checks that did not
    /// rebalance, beyond the latest [`crate::Alb::checks_kept`]).
    #[serde(default)]
    pub heuristic_checks_dropped: u64,
    /// Devices whose kernel time per row stayed above their peers' for a
    /// long spell ([`slow_spells`]).
    #[serde(default)]
    pub slow_spells: Vec<SlowSpell>,
}

fn every_iteration() -> u64 {
    1
}

/// One iteration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IterationRecord {
    /// Its number, from 0.
    pub iter: u64,
    /// Wall time of the iteration on the slowest virtual process.
    pub seconds: f64,
    /// Loop time at the end of this iteration (slowest virtual process): the
    /// rate over a span of iterations is the difference of two of these,
    /// free of the upward bias of taking each iteration's maximum.
    #[serde(default)]
    pub elapsed_seconds: f64,
    /// Each device's part, in device order.
    pub devices: Vec<DeviceIteration>,
}

impl Timed for IterationRecord {
    fn iter(&self) -> u64 {
        self.iter
    }
    fn kernels(&self) -> impl Iterator<Item = (f64, usize)> {
        self.devices.iter().map(|d| (d.compute_seconds, d.rows))
    }
}

/// One device in one iteration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceIteration {
    /// Device-timed kernel seconds.
    pub compute_seconds: f64,
    /// Halo packing, sending, receiving (waiting included) and unpacking.
    pub comm_seconds: f64,
    /// Thread CPU seconds of its kernels (CPU devices: the launching
    /// thread's for one thread, the pool's for more); absent where not
    /// measured (GPUs, runs that did not ask: `--cpu-time`,
    /// `Skeleton::cpu_time`; signatures always do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// User-space instructions its kernels retired (a share of its period's
    /// under deep halos), where counted: CPU devices in a run that asked
    /// (`epsilod signature`) on a host that lends hardware counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<f64>,
    /// Rows it held along the balanced (or first cut) dimension.
    pub rows: usize,
}

/// One rebalance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Redistribution {
    /// The iteration after which it happened.
    pub iter: u64,
    /// Wall seconds on the slowest process.
    pub seconds: f64,
    /// Rows that changed owner.
    pub rows_moved: usize,
    /// Bytes of the cells that moved.
    pub bytes_moved: usize,
    /// Moves (regions from one process to another) that went device to
    /// device, between devices of one process that share memory; absent
    /// (0) in reports from before it was counted.
    #[serde(default)]
    pub moves_on_device: usize,
    /// Messages the moved rows travelled in, over all processes: one per
    /// slab ([`crate::Alb::slab_bytes`]) through the host, one per region
    /// and level in device memory; absent (0) in reports from before it
    /// was counted.
    #[serde(default)]
    pub messages: usize,
    /// Row shares before.
    pub weights_before: Vec<f64>,
    /// Row shares after.
    pub weights_after: Vec<f64>,
}

pub use heuristics::median;

impl Report {
    /// Names the hosts each device ran on (`hosts` one per rank, `owners`
    /// each device's rank) and finds the slow spells, which name them.
    pub(crate) fn locate(&mut self, owners: &[usize], hosts: &[String]) {
        self.config.hosts = owners
            .iter()
            .map(|&r| hosts.get(r).cloned().unwrap_or_default())
            .collect();
        self.find_slow_spells();
    }

    /// Fills `summary.slow_spells` from the iterations.
    pub fn find_slow_spells(&mut self) {
        self.summary.slow_spells =
            slow_spells(&self.iterations, &self.config.devices, &self.config.hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_keep_their_json_keys() {
        let d = DecisionRecord {
            iter: 7,
            decision: DecisionOutcome::SkippedTooThin,
            values: BTreeMap::from([("imbalance".to_string(), 0.25)]),
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["iter"], 7);
        assert_eq!(v["decision"], SKIPPED_TOO_THIN);
        assert_eq!(v["imbalance"], 0.25);
        let back: DecisionRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
        assert!(
            serde_json::from_str::<DecisionRecord>(r#"{"iter":1,"decision":"maybe"}"#).is_err()
        );
    }

    /// Infinite and NaN values survive the JSON (which has neither), and
    /// an older report's `null` loads.
    #[test]
    fn values_beyond_json_round_trip() {
        let d = DecisionRecord {
            iter: 61,
            decision: DecisionOutcome::Keep,
            values: BTreeMap::from([
                ("gap".to_string(), f64::INFINITY),
                ("low".to_string(), f64::NEG_INFINITY),
                ("odd".to_string(), f64::NAN),
                ("avg".to_string(), 1.5e-4),
            ]),
        };
        let text = serde_json::to_string(&d).unwrap();
        assert!(text.contains(r#""gap":"inf""#), "{text}");
        let back: DecisionRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.values["gap"], f64::INFINITY);
        assert_eq!(back.values["low"], f64::NEG_INFINITY);
        assert!(back.values["odd"].is_nan());
        assert_eq!(back.values["avg"], 1.5e-4);
        let old: DecisionRecord =
            serde_json::from_str(r#"{"iter":1,"decision":"keep","gap":null}"#).unwrap();
        assert!(old.values["gap"].is_nan());
        let bad =
            serde_json::from_str::<DecisionRecord>(r#"{"iter":1,"decision":"keep","gap":"big"}"#);
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("heuristic value gap is 'big'"));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}

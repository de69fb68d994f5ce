//! A simulator of the skeleton's loop on a virtual clock: the real layouts,
//! halo and redistribution plans (hitmap), the real ALB cycle and
//! heuristics (heuristics), with modelled devices and links in place of
//! kernels and messages.
//!
//! Each device keeps its own clock. In an iteration it computes its border
//! strips, posts its halo messages, computes its inner region and then
//! waits for its neighbours' halos, each of which left when that neighbour
//! finished its borders and took the link's time (a sender's messages
//! share its bandwidth one after another, their latencies overlap) (`max(inner, arrivals)`,
//! the schedule [`Method::Overlap`](crate::predict::Method::Overlap) models
//! in closed form). No device waits for another otherwise: kernel times
//! for ALB travel point to point and are read as late as the skeleton
//! reads them (one iteration, `⌈log2 P⌉` beyond
//! `Scenario::direct_times_up_to` devices, 32 by default:
//! `heuristics::gather`), each post costing the link's `o_s` (the tree's
//! growing message sizes and its final drain are not modelled), and only
//! a rebalance lines every clock up (its barrier).
//!
//! Kernel time is `(fixed_seconds + seconds_per_cell · cells) · tile factor
//! · slowdown · drift · ε` (the fixed part paid with the border strips; the
//! tile factor a calibrated device's curve at its cells, 1 without) with `ε`
//! lognormal of mean 1 and the device's coefficient of variation, or, in
//! trace mode, a real report's kernel times replayed as they were. Fed the
//! same kernel times and redistribution costs as a real run, the simulator
//! asks the heuristic at the same iterations on the same windows, so it
//! decides alike and moves to the same weights: trace mode checks that the
//! rows it computes are the rows the real run had, every iteration.
//!
//! At a halo depth `K` over 1 the loop goes by periods of `K` iterations,
//! as the skeleton's does: each device computes cones over ghost cells
//! `K` reaches deep (the rows its neighbours hold computed again) and
//! exchanges once; a period's times count `1/K` to each of its iterations.

use heuristics::HeuristicSpec;
use hitmap::{Footprint, HitmapError, Partition, Shape};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::link::Hockney;

mod engine;
mod geometry;
mod noise;
#[cfg(test)]
mod tests;

pub(crate) use geometry::Geometry;
pub use noise::{noise_ratios, NoiseSource, RATIO_HALF_WINDOW};

/// A number for an error line: plain where short, in exponent form where a
/// plain one would run to hundreds of digits.
fn short(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// Why a simulation cannot run or stopped.
#[derive(Debug, Error)]
pub enum SimError {
    /// No devices, or every device failed.
    #[error("no devices left to simulate")]
    NoDevices,
    /// Resampled noise with nothing to resample, or a ratio that is not a
    /// finite number >= 0.
    #[error(
        "the noise sample has no usable kernel time (finite ratios >= 0 over iterations with rows)"
    )]
    NoNoise,
    /// A device's speed, noise or slowdown is not a usable number.
    #[error("device {device}: {what} must be a finite number {bound}, got {}", short(*value))]
    BadDevice {
        /// Device index.
        device: usize,
        /// Which quantity.
        what: &'static str,
        /// What it must be.
        bound: &'static str,
        /// What it was.
        value: f64,
    },
    /// The layouts cannot be built (too many devices for the rows, ...).
    #[error(transparent)]
    Layout(#[from] HitmapError),
    /// ALB needs a weighted partition.
    #[error("load balancing needs a weighted partition (w<d>), not {0}")]
    AlbNeedsWeights(Partition),
    /// A trace does not cover the run.
    #[error("the trace has {got} {what}, the run needs {needed}")]
    TraceShape {
        /// What is short.
        what: &'static str,
        /// How many the run needs.
        needed: usize,
        /// How many the trace has.
        got: usize,
    },
    /// Trace mode computed other rows than the real run had: the
    /// simulator's cycle or relayout no longer matches the skeleton's.
    #[error("trace diverged at iteration {iter}: device {device} had {real} rows in the real run, {simulated} simulated")]
    TraceDiverged {
        /// Iteration.
        iter: u64,
        /// Device.
        device: usize,
        /// Rows in the trace.
        real: usize,
        /// Rows simulated.
        simulated: usize,
    },
    /// A trace with a failing device.
    #[error("trace mode replays runs without device failures")]
    TraceWithFailure,
    /// The heuristic proposed weights that are not one finite non-negative
    /// number per device holding rows, or that leave none any.
    #[error(transparent)]
    BadWeights(#[from] heuristics::WeightsError),
}

/// A change of speed from an iteration on: kernels take `factor` times as
/// long from iteration `from` (the `slowdown=F@ITER` of a device spec).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    /// At least 1 in a device spec; any positive factor here.
    pub factor: f64,
    /// First iteration affected.
    pub from: u64,
}

/// Thermal drift: the kernel time factor ramps linearly from 1 at iteration
/// `from` to `factor` at `until`, and stays there.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Factor reached at `until`.
    pub factor: f64,
    /// First iteration of the ramp.
    pub from: u64,
    /// Last iteration of the ramp.
    pub until: u64,
}

impl Drift {
    fn at(&self, it: u64) -> f64 {
        if it <= self.from {
            1.0
        } else if it >= self.until {
            self.factor
        } else {
            let x = (it - self.from) as f64 / (self.until - self.from) as f64;
            1.0 + (self.factor - 1.0) * x
        }
    }
}

/// A modelled device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimDevice {
    /// Display name (the report's device text).
    pub name: String,
    /// Seconds per cell update at full speed.
    pub seconds_per_cell: f64,
    /// Seconds per iteration the kernels cost whatever the cells (a
    /// calibrated machine's `fixed_seconds`), at full speed.
    #[serde(default)]
    pub fixed_seconds: f64,
    /// Coefficient of variation of the lognormal kernel-time noise.
    pub cv: f64,
    /// Initial weight under `w<d>`.
    pub weight: f64,
    /// Host (node) index: messages between hosts take the inter-host link
    /// and share their host's network interface.
    pub host: usize,
    /// Speed changes, applied multiplicatively.
    pub slowdowns: Vec<Slowdown>,
    /// Thermal drift.
    pub drift: Option<Drift>,
    /// The iteration at which the device fails (it is dropped and the run
    /// goes on over the others).
    pub fail_at: Option<u64>,
    /// The link between the device's own memory and the host's (a GPU's,
    /// from a calibrated machine's `host_link`): each halo to or from a
    /// device outside its peer group is read out through it before it
    /// leaves, or written in through it after it arrives. `None`: the
    /// device computes in host memory.
    #[serde(default)]
    pub host_link: Option<Hockney>,
    /// Devices of one group exchange halos in device memory, without
    /// staging (`None`: a group of its own).
    #[serde(default)]
    pub peer_group: Option<usize>,
    /// The kernel's time at other tile sizes over its line, as a
    /// calibrated machine's [`crate::predict::Device::tile_curve`]:
    /// `(cells, factor)` points, cells increasing. Empty: the line alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tile_curve: Vec<(f64, f64)>,
}

impl SimDevice {
    /// A device updating a cell in `seconds_per_cell`, noiseless, weight 1,
    /// on host 0.
    pub fn new(name: impl Into<String>, seconds_per_cell: f64) -> SimDevice {
        SimDevice {
            name: name.into(),
            seconds_per_cell,
            fixed_seconds: 0.0,
            cv: 0.0,
            weight: 1.0,
            host: 0,
            slowdowns: Vec::new(),
            drift: None,
            fail_at: None,
            host_link: None,
            peer_group: None,
            tile_curve: Vec::new(),
        }
    }

    /// Kernel seconds of one iteration over `cells` cells at full speed:
    /// the line times the tile curve's factor (as
    /// [`crate::predict::Device::time`]).
    fn line_time(&self, cells: f64) -> f64 {
        crate::curve::kernel_time(
            self.fixed_seconds,
            self.seconds_per_cell,
            &self.tile_curve,
            cells,
        )
    }

    /// Whether halos between this device and `other` stay in device
    /// memory.
    fn shares_memory_with(&self, other: &SimDevice) -> bool {
        matches!((self.peer_group, other.peer_group), (Some(a), Some(b)) if a == b)
    }

    /// The factor on kernel time at iteration `it`, noise aside.
    pub fn factor(&self, it: u64) -> f64 {
        let slow: f64 = self
            .slowdowns
            .iter()
            .filter(|s| it >= s.from)
            .map(|s| s.factor)
            .product();
        slow * self.drift.map_or(1.0, |d| d.at(it))
    }
}

/// The links: within a host and between hosts, plus the sender's cost of
/// posting one small message (each device sends its kernel time to every
/// other every iteration).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Links {
    /// Between devices of one host.
    pub intra: Hockney,
    /// Between hosts; the bytes leaving one host in an iteration share its
    /// interface (per-host contention).
    pub inter: Hockney,
    /// Seconds to post one small message.
    pub post: f64,
}

impl Default for Links {
    /// Free links: compute alone.
    fn default() -> Links {
        let free = Hockney {
            alpha: 0.0,
            beta: 0.0,
        };
        Links {
            intra: free,
            inter: free,
            post: 0.0,
        }
    }
}

/// Where kernel times come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Kernels {
    /// The device models, noise drawn from this seed.
    Modelled {
        /// Seed of the noise.
        seed: u64,
    },
    /// A real run's: `compute[i][d]` is device `d`'s kernel seconds in
    /// iteration `i`, `rows[i][d]` its rows (checked against the
    /// simulation's), `redistribution_seconds[k]` the cost of the `k`-th
    /// rebalance (heuristics learn from it).
    Trace {
        /// Kernel seconds by iteration and device.
        compute: Vec<Vec<f64>>,
        /// Rows by iteration and device.
        rows: Vec<Vec<usize>>,
        /// Seconds of each rebalance, in order.
        redistribution_seconds: Vec<f64>,
    },
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The cells computed (the global array's interior).
    pub domain: Shape,
    /// How it is cut.
    pub partition: Partition,
    /// The stencil's footprint (halo plans, border widths, thinnest block).
    pub footprint: Footprint,
    /// Bytes of one cell of one level.
    pub cell_bytes: f64,
    /// Levels moved by a rebalance (2 for kernels reading the level before).
    pub levels: usize,
    /// Iterations.
    pub iters: u64,
    /// The devices.
    pub devices: Vec<SimDevice>,
    /// The links.
    pub links: Links,
    /// The heuristic (none: no load balancing).
    pub heuristic: Option<HeuristicSpec>,
    /// ALB window.
    pub window: usize,
    /// Devices up to which ALB's kernel times go to every device
    /// directly, along a tree beyond (`heuristics::gather`), as the
    /// skeleton's `Alb::direct_times_up_to`: when the heuristic sees them
    /// and what posting them costs.
    pub direct_times_up_to: usize,
    /// The skeleton's `Alb::drop_below`: devices slower than this fraction
    /// of the fastest get no rows at a rebalance (`heuristics::roster`).
    pub drop_below: f64,
    /// Where modelled kernel times' noise comes from.
    pub noise: NoiseSource,
    /// Kernel times.
    pub kernels: Kernels,
    /// The skeleton's own seconds per iteration on every device beyond its
    /// kernels and messages (a machine's `iteration_overhead`).
    pub iteration_overhead: f64,
    /// A rebalance's seconds against the bytes of the cells it moves, one
    /// level (a machine's calibrated `rebalance`); `None`: each device's
    /// moves, every level, over the links.
    pub rebalance: Option<Hockney>,
    /// Keep one iteration's per-device record in each block of at least
    /// this many (1: all), and of as many as the skeleton's bound needs
    /// (`heuristics::sampling`: 2^22 device-iterations, 2^20 iterations at
    /// most), so the records of any run fit in memory.
    pub record_every: u64,
    /// Iterations between halo exchanges (the skeleton's halo depth, 1 or
    /// more): a period of that many computes cones over halos as many
    /// reaches deep, then exchanges them; ALB sees each period's mean.
    pub halo_depth: usize,
}

/// One device in one iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceStep {
    /// Kernel seconds.
    pub compute: f64,
    /// Seconds posting messages and waiting for halos.
    pub comm: f64,
    /// Rows held along the partitioned dimension.
    pub rows: usize,
    /// Cells computed, the ghost rows of a deep halo's cones included
    /// (per iteration: a period's over its length).
    #[serde(default)]
    pub cells: f64,
}

/// One recorded iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Its number.
    pub iter: u64,
    /// The slowest device's wall time in it.
    pub seconds: f64,
    /// Virtual time at its end, on the latest clock.
    pub elapsed: f64,
    /// Every device, in device order (failed ones: zeros).
    pub devices: Vec<DeviceStep>,
}

/// A rebalance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Move {
    /// Iteration after which it happened.
    pub iter: u64,
    /// Modelled (or, in trace mode, replayed) seconds.
    pub seconds: f64,
    /// Rows that changed owner.
    pub rows_moved: usize,
    /// Bytes of the cells that changed owner (one level, as run's report
    /// counts them).
    pub bytes_moved: f64,
    /// Row shares before, per live device.
    pub weights_before: Vec<f64>,
    /// Row shares after.
    pub weights_after: Vec<f64>,
}

/// What a check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Rebalanced.
    Rebalance,
    /// Kept the layout.
    Keep,
    /// Asked to rebalance, but the blocks would be thinner than the stencil.
    SkippedTooThin,
}

/// One heuristic check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Iteration checked.
    pub iter: u64,
    /// Outcome.
    pub outcome: Outcome,
    /// The heuristic's values behind it.
    pub values: Vec<(String, f64)>,
}

/// A device lost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Device index.
    pub device: usize,
    /// Iteration at which it failed (the run goes on from there).
    pub iter: u64,
    /// Virtual seconds at the failure.
    pub at_seconds: f64,
    /// Devices left.
    pub devices_left: usize,
}

/// A simulated run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Simulated {
    /// The recorded iterations: one in each block of `recorded_every`, at
    /// a place that varies from block to block, as the skeleton records.
    pub steps: Vec<Step>,
    /// The blocks `steps` sample (1: every iteration).
    pub recorded_every: u64,
    /// Iterations' wall times (the slowest device's): every iteration's up
    /// to `heuristics::sampling::RECORDED_ITERATIONS`, one in each block of
    /// `iteration_seconds_every` beyond.
    pub iteration_seconds: Vec<f64>,
    /// The blocks `iteration_seconds` samples (1: every iteration).
    pub iteration_seconds_every: u64,
    /// Mean wall time over every iteration.
    pub mean_iteration_seconds: f64,
    /// Mean over iterations of wall time minus the slowest kernel time.
    pub overhead_per_iteration: f64,
    /// Virtual loop time (the latest clock at the end).
    pub loop_seconds: f64,
    /// Every rebalance.
    pub moves: Vec<Move>,
    /// Every heuristic check that rebalanced, and the latest
    /// `heuristics::CHECKS_KEPT` others, as the skeleton keeps them.
    pub checks: Vec<Check>,
    /// Checks left out of `checks`.
    #[serde(default)]
    pub checks_dropped: u64,
    /// Devices lost.
    pub failures: Vec<Failure>,
    /// Halo messages sent in all.
    pub halo_messages: u64,
    /// Halo exchanges: one per period of the halo depth's iterations.
    #[serde(default)]
    pub exchanges: u64,
}

/// The largest coefficient of variation of a device's modelled noise.
pub const MAX_CV: f64 = 100.0;

fn check(s: &Scenario) -> Result<(), SimError> {
    if s.devices.is_empty() {
        return Err(SimError::NoDevices);
    }
    if let NoiseSource::Resampled { ratios, .. } = &s.noise {
        let width = ratios.first().map_or(0, Vec::len);
        let usable =
            |r: &Vec<f64>| r.len() == width && r.iter().all(|x| x.is_finite() && *x >= 0.0);
        if width == 0 || !ratios.iter().all(usable) {
            return Err(SimError::NoNoise);
        }
    }
    for (device, d) in s.devices.iter().enumerate() {
        let bad = |what, bound, value| SimError::BadDevice {
            device,
            what,
            bound,
            value,
        };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(d.seconds_per_cell) {
            return Err(bad("seconds per cell", "> 0", d.seconds_per_cell));
        }
        if !(d.fixed_seconds.is_finite() && d.fixed_seconds >= 0.0) {
            return Err(bad("fixed seconds per iteration", ">= 0", d.fixed_seconds));
        }
        if let Some((what, bound, value)) = crate::curve::tile_curve_fault(&d.tile_curve) {
            return Err(bad(what, bound, value));
        }
        // Past a cv of 100 the lognormal's variance overflows (and no
        // measured device comes near: a shared machine's is under 1).
        if !(0.0..=MAX_CV).contains(&d.cv) {
            return Err(bad("noise cv", "from 0 to 100", d.cv));
        }
        if !(d.weight.is_finite() && d.weight >= 0.0) {
            return Err(bad("weight", ">= 0", d.weight));
        }
        for sd in &d.slowdowns {
            if !positive(sd.factor) {
                return Err(bad("slowdown", "> 0", sd.factor));
            }
        }
        if let Some(dr) = d.drift {
            if !positive(dr.factor) {
                return Err(bad("drift", "> 0", dr.factor));
            }
        }
    }
    if s.heuristic.as_ref().is_some_and(|h| h.name() != "none")
        && !matches!(s.partition, Partition::Weighted(_))
    {
        return Err(SimError::AlbNeedsWeights(s.partition));
    }
    if let Kernels::Trace { compute, rows, .. } = &s.kernels {
        if s.devices.iter().any(|d| d.fail_at.is_some()) {
            return Err(SimError::TraceWithFailure);
        }
        for (what, len, widths) in [
            (
                "iterations of kernel times",
                compute.len(),
                compute.iter().map(Vec::len).collect::<Vec<_>>(),
            ),
            (
                "iterations of rows",
                rows.len(),
                rows.iter().map(Vec::len).collect(),
            ),
        ] {
            if len < s.iters as usize {
                return Err(SimError::TraceShape {
                    what,
                    needed: s.iters as usize,
                    got: len,
                });
            }
            if let Some(&w) = widths.iter().find(|&&w| w != s.devices.len()) {
                return Err(SimError::TraceShape {
                    what: "devices in an iteration",
                    needed: s.devices.len(),
                    got: w,
                });
            }
        }
    }
    Ok(())
}

/// Runs the scenario.
pub fn simulate(s: &Scenario) -> Result<Simulated, SimError> {
    check(s)?;
    engine::run(s)
}

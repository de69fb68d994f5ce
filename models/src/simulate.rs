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
//! Kernel time is `(fixed_seconds + seconds_per_cell · cells) · slowdown ·
//! drift · ε` (the fixed part paid with the border strips) with `ε`
//! lognormal of mean 1 and the device's coefficient of variation, or, in
//! trace mode, a real report's kernel times replayed as they were. Fed the
//! same kernel times and redistribution costs as a real run, the simulator
//! asks the heuristic at the same iterations on the same windows, so it
//! decides alike and moves to the same weights: trace mode checks that the
//! rows it computes are the rows the real run had, every iteration.

use heuristics::{relayout, Cycle, Heuristic, HeuristicSpec, Rebalanced, Roster, Snapshot};
use hitmap::{
    split_border, Footprint, HaloPlan, HitmapError, Layout, Partition, RedistributionPlan, Shape,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::link::Hockney;
use heuristics::gather::Gather;
use std::collections::VecDeque;

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
    #[error("device {device}: {what} must be a finite number {bound}, got {value}")]
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
        }
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
    /// Keep every `record_every`-th iteration's per-device record (1: all;
    /// 1024 devices x 10,000 iterations is 10 million records).
    pub record_every: u64,
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
    /// The recorded iterations.
    pub steps: Vec<Step>,
    /// Every iteration's wall time (the slowest device's).
    pub iteration_seconds: Vec<f64>,
    /// Mean over iterations of wall time minus the slowest kernel time.
    pub overhead_per_iteration: f64,
    /// Virtual loop time (the latest clock at the end).
    pub loop_seconds: f64,
    /// Every rebalance.
    pub moves: Vec<Move>,
    /// Every heuristic check.
    pub checks: Vec<Check>,
    /// Devices lost.
    pub failures: Vec<Failure>,
    /// Halo messages sent in all.
    pub halo_messages: u64,
}

/// The per-layout geometry: rows, cells, border share and halo messages
/// of each live device (also the planner's, for block partitions).
pub(crate) struct Geometry {
    layout: Layout,
    rows: Vec<usize>,
    pub(crate) cells: Vec<f64>,
    /// Cells of the border strips, computed before the halos leave.
    pub(crate) border: Vec<f64>,
    /// `(to, bytes)` per live device.
    pub(crate) sends: Vec<Vec<(usize, f64)>>,
}

impl Geometry {
    pub(crate) fn new(
        layout: Layout,
        fp: &Footprint,
        cell_bytes: f64,
    ) -> Result<Geometry, SimError> {
        let plan = HaloPlan::new(&layout, fp)?;
        let (low, high) = (fp.low(), fp.high());
        let (wl, wh): (Vec<i64>, Vec<i64>) = (
            high.iter().map(|&x| x as i64).collect(),
            low.iter().map(|&x| x as i64).collect(),
        );
        let cut = layout.split_along();
        let along = layout.cut_dims().first().copied().unwrap_or(0);
        let mut g = Geometry {
            rows: Vec::with_capacity(layout.procs()),
            cells: Vec::with_capacity(layout.procs()),
            border: Vec::with_capacity(layout.procs()),
            sends: Vec::with_capacity(layout.procs()),
            layout: layout.clone(),
        };
        for (p, b) in layout.blocks().iter().enumerate() {
            let (lo, hi) = plan.vp(p).send_widths(b, &wl, &wh);
            let (strips, _) = split_border(b, &lo, &hi, &cut);
            g.rows.push(b.sig(along).card());
            g.cells.push(b.card() as f64);
            g.border
                .push(strips.iter().map(Shape::card).sum::<usize>() as f64);
            g.sends.push(
                plan.vp(p)
                    .sends
                    .iter()
                    .map(|x| (x.peer, x.card() as f64 * cell_bytes))
                    .collect(),
            );
        }
        Ok(g)
    }
}

/// Where a modelled kernel time's factor `ε` comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum NoiseSource {
    /// Lognormal of mean 1 and each device's `cv` (none when it is 0).
    #[default]
    Lognormal,
    /// Drawn with replacement from measured ratios (every device alike,
    /// whatever its `cv`): a real run's kernel times over their local
    /// median ([`noise_ratios`]), stalls and all. A shared machine's kernel
    /// times have tails a lognormal of the robust spread never produces,
    /// and the t-test of `welch` reacts to exactly those.
    Resampled {
        /// The ratios, each source device's in iteration order.
        ratios: Vec<f64>,
        /// Consecutive ratios a device takes from one random start before
        /// it draws a new start (1: independent draws). Stalls come in
        /// spells; blocks keep them. A block may run from one source
        /// device's ratios into the next's.
        block: usize,
    },
}

/// Iterations either side of a kernel time whose median is its baseline in
/// [`noise_ratios`]: an odd window of 31, the ALB window's length.
pub const RATIO_HALF_WINDOW: usize = 15;

/// A real run's kernel-time noise as ratios: each device's seconds per row
/// in each iteration (from `skip` on, rows > 0) over the median of its
/// seconds per row in the [`RATIO_HALF_WINDOW`] iterations either side.
/// The local median follows rebalances and slowdowns: a step in speed
/// distorts no ratio, since a centred window always holds a majority from
/// the iteration's own side of the step. What is left is the noise itself,
/// stalls included, relative to the median, as calibration's seconds per
/// cell is a median too. `compute[i][d]` and `rows[i][d]` are the report's
/// kernel seconds and rows.
pub fn noise_ratios(
    compute: &[Vec<f64>],
    rows: &[Vec<usize>],
    skip: usize,
) -> Result<Vec<f64>, SimError> {
    if rows.len() != compute.len() {
        return Err(SimError::TraceShape {
            what: "iterations of rows",
            needed: compute.len(),
            got: rows.len(),
        });
    }
    let devices = compute.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for d in 0..devices {
        let series: Vec<f64> = compute
            .iter()
            .zip(rows)
            .skip(skip)
            .filter_map(|(c, r)| match (c.get(d), r.get(d)) {
                (Some(&t), Some(&n)) if n > 0 && t.is_finite() && t >= 0.0 => Some(t / n as f64),
                _ => None,
            })
            .collect();
        for (i, &x) in series.iter().enumerate() {
            let lo = i.saturating_sub(RATIO_HALF_WINDOW);
            let hi = (i + RATIO_HALF_WINDOW + 1).min(series.len());
            let base = heuristics::median(&series[lo..hi]);
            if base > 0.0 {
                out.push(x / base);
            }
        }
    }
    if out.is_empty() {
        return Err(SimError::NoNoise);
    }
    Ok(out)
}

/// A modelled kernel time's factor per device: lognormal of mean 1 and
/// coefficient of variation `cv`, or resampled from measured ratios.
struct Noise {
    rng: StdRng,
    dists: Vec<Option<LogNormal<f64>>>,
    ratios: Vec<f64>,
    block: usize,
    /// Per device: the next ratio's index and how many its block has left.
    cursor: Vec<(usize, usize)>,
}

impl Noise {
    fn new(devices: &[SimDevice], seed: u64, source: &NoiseSource) -> Noise {
        if let NoiseSource::Resampled { ratios, block } = source {
            return Noise {
                rng: StdRng::seed_from_u64(seed),
                dists: Vec::new(),
                ratios: ratios.clone(),
                block: (*block).max(1),
                cursor: vec![(0, 0); devices.len()],
            };
        }
        let dists = devices
            .iter()
            .map(|d| {
                (d.cv > 0.0).then(|| {
                    let s2 = (1.0 + d.cv * d.cv).ln();
                    LogNormal::new(-s2 / 2.0, s2.sqrt()).expect("a finite positive sigma")
                })
            })
            .collect();
        Noise {
            rng: StdRng::seed_from_u64(seed),
            dists,
            ratios: Vec::new(),
            block: 1,
            cursor: Vec::new(),
        }
    }

    fn draw(&mut self, d: usize) -> f64 {
        if !self.ratios.is_empty() {
            let (next, left) = &mut self.cursor[d];
            if *left == 0 || *next >= self.ratios.len() {
                *next = self.rng.gen_range(0..self.ratios.len());
                *left = self.block;
            }
            let x = self.ratios[*next];
            *next += 1;
            *left -= 1;
            return x;
        }
        match &self.dists[d] {
            Some(l) => l.sample(&mut self.rng),
            None => 1.0,
        }
    }
}

fn check(s: &Scenario) -> Result<(), SimError> {
    if s.devices.is_empty() {
        return Err(SimError::NoDevices);
    }
    if let NoiseSource::Resampled { ratios, .. } = &s.noise {
        if ratios.is_empty() || ratios.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
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
        if !(d.cv.is_finite() && d.cv >= 0.0) {
            return Err(bad("noise cv", ">= 0", d.cv));
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

/// One message of `bytes` from host `a` to host `b`, given the bytes
/// leaving `a` for other hosts this iteration.
fn link_time(l: &Links, a: usize, b: usize, bytes: f64, host_out: f64) -> f64 {
    if a == b {
        l.intra.time(bytes)
    } else {
        l.inter.alpha + l.inter.beta * host_out.max(bytes)
    }
}

/// Runs the scenario.
pub fn simulate(s: &Scenario) -> Result<Simulated, SimError> {
    check(s)?;
    let mut sim = Sim::new(s)?;
    for it in 0..s.iters {
        sim.fail_devices(it)?;
        sim.check_trace(it)?;
        sim.kernel_times(it);
        let (step, slowest) = sim.iterate(it);
        let row = sim.compute[..sim.live.len()].to_vec();
        sim.balance(it)?;
        // Kept for as long as the skeleton's gather takes to deliver it.
        sim.recent.push_back(row);
        if sim.recent.len() > sim.lag() {
            sim.recent.pop_front();
        }
        sim.record(it, step, slowest);
    }
    Ok(sim.finish())
}

/// A simulation in progress.
struct Sim<'a> {
    s: &'a Scenario,
    /// Live devices, in device order: layouts and windows are over these.
    live: Vec<usize>,
    geo: Geometry,
    heuristic: Option<Box<dyn Heuristic>>,
    cycle: Cycle,
    /// Which devices hold rows, by live index.
    roster: Roster,
    noise: Noise,
    /// Each device's virtual clock.
    clock: Vec<f64>,
    /// Kernel times of the last iterations, oldest first: ALB reads them
    /// as late as the skeleton's gather delivers them
    /// (`heuristics::gather`: one iteration up to
    /// `Scenario::direct_times_up_to` devices, 32 by default).
    recent: VecDeque<Vec<f64>>,
    out: Simulated,
    /// Sum of wall minus slowest kernel over iterations.
    overhead: f64,
    /// The stencil's reach below and above.
    low: Vec<usize>,
    high: Vec<usize>,
    // Scratch by live index: kernel seconds, when the halos left, when the
    // last one arrived, when the iteration began; bytes out per host.
    compute: Vec<f64>,
    /// The part of each kernel time spent on the border strips.
    border_share: Vec<f64>,
    sent_at: Vec<f64>,
    arrive: Vec<f64>,
    began: Vec<f64>,
    host_out: Vec<f64>,
}

impl<'a> Sim<'a> {
    fn new(s: &'a Scenario) -> Result<Sim<'a>, SimError> {
        let n = s.devices.len();
        let hosts = s.devices.iter().map(|d| d.host).max().unwrap_or(0) + 1;
        let weights: Vec<f64> = s.devices.iter().map(|d| d.weight).collect();
        let layout = Layout::new(&s.domain, s.partition, n, Some(&weights))?;
        let (low, high) = (s.footprint.low().to_vec(), s.footprint.high().to_vec());
        layout.check_width(&low, &high)?;
        let mut heuristic: Option<Box<dyn Heuristic>> = s
            .heuristic
            .as_ref()
            .filter(|h| h.name() != "none")
            .map(HeuristicSpec::build);
        if let Some(h) = heuristic.as_mut() {
            h.init(s.iters);
        }
        let seed = match s.kernels {
            Kernels::Modelled { seed } => seed,
            Kernels::Trace { .. } => 0,
        };
        Ok(Sim {
            s,
            live: (0..n).collect(),
            geo: Geometry::new(layout, &s.footprint, s.cell_bytes)?,
            heuristic,
            cycle: Cycle::new(n, s.window, 0, s.iters),
            roster: Roster::new(n, s.drop_below),
            noise: Noise::new(&s.devices, seed, &s.noise),
            clock: vec![0.0; n],
            recent: VecDeque::new(),
            out: Simulated {
                steps: Vec::new(),
                iteration_seconds: Vec::with_capacity(s.iters.min(1 << 20) as usize),
                overhead_per_iteration: 0.0,
                loop_seconds: 0.0,
                moves: Vec::new(),
                checks: Vec::new(),
                failures: Vec::new(),
                halo_messages: 0,
            },
            overhead: 0.0,
            low,
            high,
            compute: vec![0.0; n],
            border_share: vec![0.0; n],
            sent_at: vec![0.0; n],
            arrive: vec![0.0; n],
            began: vec![0.0; n],
            host_out: vec![0.0; hosts],
        })
    }

    /// The latest clock of the live devices.
    fn now(&self) -> f64 {
        self.live.iter().map(|&d| self.clock[d]).fold(0.0, f64::max)
    }

    /// Devices failing at `it` (their launch in it fails) are dropped; the
    /// others share their rows and start again together.
    fn fail_devices(&mut self, it: u64) -> Result<(), SimError> {
        let s = self.s;
        let failing: Vec<usize> = self
            .live
            .iter()
            .copied()
            .filter(|&d| s.devices[d].fail_at == Some(it))
            .collect();
        if failing.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let share: Vec<f64> = self
            .live
            .iter()
            .zip(&self.geo.rows)
            .filter(|(d, _)| !failing.contains(d))
            .map(|(_, &r)| r as f64)
            .collect();
        // Dropped devices (no rows) stay out, unless no other is left.
        let share = if share.iter().all(|&r| r == 0.0) {
            vec![1.0; share.len()]
        } else {
            share
        };
        let kept: Vec<bool> = self.live.iter().map(|d| !failing.contains(d)).collect();
        self.live.retain(|d| !failing.contains(d));
        if self.live.is_empty() {
            return Err(SimError::NoDevices);
        }
        for &d in &failing {
            self.out.failures.push(Failure {
                device: d,
                iter: it,
                at_seconds: now,
                devices_left: self.live.len(),
            });
        }
        let layout = Layout::new(&s.domain, s.partition, self.live.len(), Some(&share))?;
        layout.check_width(&self.low, &self.high)?;
        self.geo = Geometry::new(layout, &s.footprint, s.cell_bytes)?;
        self.cycle = Cycle::new(self.live.len(), s.window, it, s.iters);
        self.roster.retain(&kept);
        self.recent.clear();
        for &d in &self.live {
            self.clock[d] = now;
        }
        Ok(())
    }

    /// In trace mode, the rows must be the real run's.
    fn check_trace(&self, it: u64) -> Result<(), SimError> {
        let Kernels::Trace { rows, .. } = &self.s.kernels else {
            return Ok(());
        };
        for (i, &r) in self.geo.rows.iter().enumerate() {
            let real = rows[it as usize][self.live[i]];
            if real != r {
                return Err(SimError::TraceDiverged {
                    iter: it,
                    device: self.live[i],
                    real,
                    simulated: r,
                });
            }
        }
        Ok(())
    }

    fn kernel_times(&mut self, it: u64) {
        let s = self.s;
        for (i, &d) in self.live.iter().enumerate() {
            let (cells, border) = (self.geo.cells[i], self.geo.border[i]);
            let by_cells = if cells > 0.0 { border / cells } else { 0.0 };
            (self.compute[i], self.border_share[i]) = match &s.kernels {
                Kernels::Trace { compute, .. } => (compute[it as usize][d], by_cells),
                Kernels::Modelled { .. } => {
                    // Drawn for an empty block too: a seed's stream of
                    // draws does not depend on the partition.
                    let eps = self.noise.draw(d);
                    let dev = &s.devices[d];
                    if cells > 0.0 {
                        let base = dev.fixed_seconds + dev.seconds_per_cell * cells;
                        let share = (dev.fixed_seconds + dev.seconds_per_cell * border) / base;
                        (base * dev.factor(it) * eps, share)
                    } else {
                        (0.0, 0.0)
                    }
                }
            };
        }
    }

    /// Borders, halos out, inner rows, halos in, overhead: every live
    /// clock moves on by one iteration. Returns the devices' records (when
    /// this iteration is recorded) and the slowest kernel time.
    fn iterate(&mut self, it: u64) -> (Option<Vec<DeviceStep>>, f64) {
        let s = self.s;
        let (live, geo) = (&self.live, &self.geo);
        let m = live.len();
        // Each host's interface carries the bytes its devices send to
        // other hosts.
        self.host_out.iter_mut().for_each(|x| *x = 0.0);
        for (i, &d) in live.iter().enumerate() {
            let border = self.compute[i] * self.border_share[i];
            self.sent_at[i] = self.clock[d] + border;
            let h = s.devices[d].host;
            for &(q, bytes) in &geo.sends[i] {
                if s.devices[live[q]].host != h {
                    self.host_out[h] += bytes;
                }
            }
        }
        self.arrive[..m].iter_mut().for_each(|x| *x = 0.0);
        for (i, &d) in live.iter().enumerate() {
            let (dev, h) = (&s.devices[d], s.devices[d].host);
            // A device's messages leave one after another (bytes), while
            // their latencies overlap. A device with memory of its own reads
            // each halo out first, one after another; the receiver writes it
            // in after it arrives.
            let mut queued = 0.0;
            let mut read_out = 0.0;
            for &(q, bytes) in &geo.sends[i] {
                let to = &s.devices[live[q]];
                let staged = !dev.shares_memory_with(to);
                if staged {
                    read_out += dev.host_link.map_or(0.0, |l| l.time(bytes));
                }
                let write_in = if staged {
                    to.host_link.map_or(0.0, |l| l.time(bytes))
                } else {
                    0.0
                };
                let hq = to.host;
                let t = link_time(&s.links, h, hq, bytes, self.host_out[h]);
                let latency = if h == hq {
                    s.links.intra.alpha
                } else {
                    s.links.inter.alpha
                };
                queued += t - latency;
                self.arrive[q] =
                    self.arrive[q].max(self.sent_at[i] + read_out + queued + latency + write_in);
                self.out.halo_messages += 1;
            }
        }
        // With ALB every device posts its kernel time: to every other, or
        // a round of the tree's gather (`heuristics::gather`).
        let alb_posts = if self.heuristic.is_some() {
            s.links.post * Gather::of(m, s.direct_times_up_to).posts(m, self.recent.len()) as f64
        } else {
            0.0
        };
        let record = it.is_multiple_of(s.record_every.max(1)) || it + 1 == s.iters;
        let mut step = record.then(|| vec![DeviceStep::default(); s.devices.len()]);
        let mut slowest: f64 = 0.0;
        for (i, &d) in live.iter().enumerate() {
            let start = self.clock[d];
            self.began[i] = start;
            let posts = s.links.post * geo.sends[i].len() as f64;
            let inner_done = start + self.compute[i] + posts + alb_posts;
            let waited = inner_done.max(self.arrive[i]);
            // The skeleton's own time comes after the halos are in: it is
            // neither kernel nor message time in the report.
            self.clock[d] = waited + s.iteration_overhead;
            slowest = slowest.max(self.compute[i]);
            if let Some(st) = step.as_mut() {
                st[d] = DeviceStep {
                    compute: self.compute[i],
                    comm: waited - start - self.compute[i],
                    rows: geo.rows[i],
                };
            }
        }
        (step, slowest)
    }

    /// Iterations from a kernel time to the ALB decision that first sees
    /// it, as the skeleton gathers times over this many devices.
    fn lag(&self) -> usize {
        let n = self.live.len();
        Gather::of(n, self.s.direct_times_up_to).lag(n)
    }

    /// ALB after iteration `it`, on the times of iteration `it - lag`: the
    /// cycle says whether to ask, the heuristic decides, `relayout` gives
    /// the new layout.
    fn balance(&mut self, it: u64) -> Result<(), SimError> {
        let s = self.s;
        let lag = self.lag();
        let Some(h) = self.heuristic.as_mut() else {
            return Ok(());
        };
        // The times of iteration `it - lag`, once the gather delivers them.
        let arrived = (self.recent.len() == lag)
            .then(|| self.recent.front())
            .flatten()
            .map(|row| (it - lag as u64..it - lag as u64 + 1, row.as_slice()));
        if !self.cycle.after_period(it..it + 1, arrived) {
            return Ok(());
        }
        let windows = self.cycle.snapshot(&self.geo.rows);
        let holding = Roster::holding(&windows);
        let dec = self.roster.decide(
            &windows,
            h.check(&Snapshot {
                iter: it,
                rebalances: self.out.moves.len(),
                remaining: s.iters - 1 - it,
                devices: &holding,
            }),
        );
        let mut outcome = if dec.rebalance {
            Outcome::Rebalance
        } else {
            Outcome::Keep
        };
        if dec.rebalance {
            let proposed = self.roster.weights(&windows, dec.weights.as_deref())?;
            match relayout(&self.geo.layout, &proposed, &self.low, &self.high)? {
                None => outcome = Outcome::SkippedTooThin,
                Some((weights, layout)) => self.rebalance(it, &holding, weights, layout)?,
            }
        }
        self.out.checks.push(Check {
            iter: it,
            outcome,
            values: dec
                .values
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        });
        Ok(())
    }

    /// Moves to `layout`: the barrier (every clock to the latest), then the
    /// rebalance's cost (replayed in trace mode, else calibrated or
    /// modelled).
    fn rebalance(
        &mut self,
        it: u64,
        windows: &[heuristics::DeviceWindow],
        weights: Vec<f64>,
        layout: Layout,
    ) -> Result<(), SimError> {
        let s = self.s;
        let plan = RedistributionPlan::new(&self.geo.layout, &layout)?;
        let next = Geometry::new(layout, &s.footprint, s.cell_bytes)?;
        // The report counts the cells moved once; kernels reading the
        // level before move both levels, which the link model pays for.
        let cells_bytes = plan.cells_moved() as f64 * s.cell_bytes;
        let seconds = match (&s.kernels, s.rebalance) {
            (
                Kernels::Trace {
                    redistribution_seconds,
                    ..
                },
                _,
            ) => redistribution_seconds
                .get(self.out.moves.len())
                .copied()
                .unwrap_or(0.0),
            // Calibrated against the report's bytes_moved: the same measure.
            (Kernels::Modelled { .. }, Some(h)) => h.time(cells_bytes),
            (Kernels::Modelled { .. }, None) => {
                move_seconds(s, &self.live, &plan, &next, s.cell_bytes)
            }
        };
        let along = self.geo.layout.cut_dims().first().copied().unwrap_or(0);
        let total: f64 = self.geo.rows.iter().map(|&r| r as f64).sum();
        self.out.moves.push(Move {
            iter: it,
            seconds,
            rows_moved: plan
                .moves()
                .iter()
                .map(|mv| mv.region.sig(along).card())
                .sum(),
            bytes_moved: cells_bytes,
            weights_before: self.geo.rows.iter().map(|&r| r as f64 / total).collect(),
            weights_after: weights,
        });
        if let Some(h) = self.heuristic.as_mut() {
            h.on_redistribute(&Rebalanced {
                iter: it,
                rebalances: self.out.moves.len(),
                devices: windows,
                seconds,
                rows_moved: self.out.moves.last().map_or(0, |m| m.rows_moved),
            });
        }
        self.cycle.rebalanced(it);
        let done = self.now() + seconds;
        for &d in &self.live {
            self.clock[d] = done;
        }
        self.geo = next;
        Ok(())
    }

    /// The iteration's wall time (a rebalance's barrier and move
    /// included) and, when recorded, its devices.
    fn record(&mut self, it: u64, step: Option<Vec<DeviceStep>>, slowest: f64) {
        let wall = self
            .live
            .iter()
            .enumerate()
            .map(|(i, &d)| self.clock[d] - self.began[i])
            .fold(0.0, f64::max);
        self.overhead += wall - slowest;
        self.out.iteration_seconds.push(wall);
        let elapsed = self.now();
        if let Some(devices) = step {
            self.out.steps.push(Step {
                iter: it,
                seconds: wall,
                elapsed,
                devices,
            });
        }
    }

    fn finish(mut self) -> Simulated {
        if let Some(h) = self.heuristic.as_mut() {
            h.end();
        }
        self.out.loop_seconds = self.clock.iter().copied().fold(0.0, f64::max);
        self.out.overhead_per_iteration = self.overhead / self.s.iters.max(1) as f64;
        self.out
    }
}

/// A rebalance's modelled time: each live device sends and receives its
/// moves one after another, then refreshes its halos; the slowest decides.
fn move_seconds(
    s: &Scenario,
    live: &[usize],
    plan: &RedistributionPlan,
    next: &Geometry,
    cell_bytes: f64,
) -> f64 {
    let mut busy = vec![0.0f64; live.len()];
    for mv in plan.moves() {
        let bytes = mv.region.card() as f64 * cell_bytes * s.levels as f64;
        let (a, b) = (s.devices[live[mv.from]].host, s.devices[live[mv.to]].host);
        let t = link_time(&s.links, a, b, bytes, bytes);
        busy[mv.from] += t;
        busy[mv.to] += t;
    }
    for (i, sends) in next.sends.iter().enumerate() {
        for &(q, bytes) in sends {
            let (a, b) = (s.devices[live[i]].host, s.devices[live[q]].host);
            busy[q] += link_time(&s.links, a, b, bytes, bytes);
        }
    }
    busy.into_iter().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{Device, LinkClass, Machine, Method, Run};
    use heuristics::gather::DIRECT_UP_TO;
    use proptest::prelude::*;

    fn cross() -> Footprint {
        Footprint::new(2, vec![vec![-1, 0], vec![1, 0], vec![0, -1], vec![0, 1]])
    }

    fn scenario(devices: Vec<SimDevice>, rows: i64, iters: u64, alb: Option<&str>) -> Scenario {
        Scenario {
            domain: Shape::from_ranges(&[(1, rows + 1), (1, 1025)]),
            partition: Partition::Weighted(0),
            footprint: cross(),
            cell_bytes: 4.0,
            levels: 1,
            iters,
            devices,
            links: Links::default(),
            heuristic: alb.map(|a| a.parse().unwrap()),
            window: heuristics::WINDOW,
            direct_times_up_to: DIRECT_UP_TO,
            drop_below: heuristics::DROP_BELOW,
            kernels: Kernels::Modelled { seed: 1 },
            noise: NoiseSource::Lognormal,
            iteration_overhead: 0.0,
            rebalance: None,
            record_every: 1,
        }
    }

    /// Two identical noiseless devices: every iteration takes exactly the
    /// closed form of `Method::Overlap` (borders, then the exchange behind
    /// the inner rows), whether the exchange or the inner rows are longer.
    #[test]
    fn noiseless_identical_devices_match_the_overlap_closed_form() {
        // A fixed cost per iteration is paid with the borders, before the
        // halos leave, in both.
        // With memory of their own, each halo is read out and written in
        // over the host link: two transfers more in the exchange, as
        // `Machine::staging` has it.
        // (6e-4 s a transfer: the staged exchange outlasts the inner rows.)
        let pcie = Hockney {
            alpha: 6e-4,
            beta: 1e-9,
        };
        for (alpha, beta, fixed, staged) in [
            (1e-6, 1e-10, 0.0, false),
            (1e-3, 1e-8, 0.0, false),
            (1e-3, 1e-8, 4e-4, false),
            (1e-6, 1e-10, 0.0, true),
            (1e-4, 1e-9, 0.0, true),
        ] {
            let link = Hockney { alpha, beta };
            let mut s = scenario(
                (0..2)
                    .map(|i| {
                        let mut d = SimDevice::new(format!("d{i}"), 2e-9);
                        d.fixed_seconds = fixed;
                        d.host_link = staged.then_some(pcie);
                        d
                    })
                    .collect(),
                1024,
                50,
                None,
            );
            s.links = Links {
                intra: link,
                inter: link,
                post: 0.0,
            };
            let sim = simulate(&s).unwrap();
            let machine = Machine::new(
                (0..2)
                    .map(|i| {
                        let d = Device::new(format!("d{i}"), 2e-9).with_fixed(fixed);
                        if staged {
                            d.with_host_link("pcie")
                        } else {
                            d
                        }
                    })
                    .collect(),
                vec![
                    LinkClass::from_hockney("l", link),
                    LinkClass::from_hockney("pcie", pcie),
                ],
            )
            .unwrap();
            let run = Run::from_weights(1024, 1024, 1, 4096.0, 50, &[1.0; 2], "l").unwrap();
            let p = machine.predict(&run, Method::Overlap).unwrap();
            assert!(
                (sim.loop_seconds - p.loop_time).abs() < 1e-9 * p.loop_time,
                "{} vs {}",
                sim.loop_seconds,
                p.loop_time
            );
            assert_eq!(sim.halo_messages, 2 * 50);
            if fixed > 0.0 {
                // The inner rows (1.046 ms) still hide the exchange
                // (1.041 ms): the iteration is the kernel plus its fixed
                // cost, which the simulator charged too.
                let without = 2e-9 * 512.0 * 1024.0;
                assert!((p.iteration - (without + fixed)).abs() < 1e-15, "{p:?}");
            }
        }
    }

    /// Ratios over the local median: a step in speed (a slowdown, a
    /// rebalance halving the rows) leaves every ratio at 1; stalls come
    /// back as themselves, at their own rate.
    #[test]
    fn noise_ratios_keep_the_stalls_and_drop_the_steps() {
        let n = 400;
        let rows: Vec<Vec<usize>> = (0..n)
            .map(|i| vec![if i < 150 { 100 } else { 50 }, 100])
            .collect();
        let steady = |i: usize, d: usize| {
            let per_row = if d == 1 && i >= 200 { 3e-6 } else { 1e-6 };
            per_row * rows[i][d] as f64
        };
        let compute: Vec<Vec<f64>> = (0..n).map(|i| vec![steady(i, 0), steady(i, 1)]).collect();
        let r = noise_ratios(&compute, &rows, 2).unwrap();
        assert_eq!(r.len(), 2 * (n - 2));
        assert!(r.iter().all(|&x| (x - 1.0).abs() < 1e-12), "{r:?}");
        // One stall of 8x every 50 iterations on device 0.
        let mut stalled = compute.clone();
        for i in (10..n).step_by(50) {
            stalled[i][0] *= 8.0;
        }
        let r = noise_ratios(&stalled, &rows, 2).unwrap();
        let tails: Vec<f64> = r.iter().copied().filter(|&x| x > 1.5).collect();
        assert_eq!(tails.len(), 8);
        assert!(tails.iter().all(|&x| (x - 8.0).abs() < 1e-9));
        assert!(matches!(noise_ratios(&[], &[], 0), Err(SimError::NoNoise)));
        assert!(noise_ratios(&compute, &rows[1..], 0).is_err());
    }

    /// Resampled noise draws only the given ratios, repeats per seed,
    /// differs across seeds, and an empty or negative sample is refused.
    #[test]
    fn resampled_noise_draws_the_measured_ratios_per_seed() {
        let run = |seed: u64, ratios: Vec<f64>| {
            let mut s = scenario(
                vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
                64,
                100,
                None,
            );
            s.kernels = Kernels::Modelled { seed };
            s.noise = NoiseSource::Resampled { ratios, block: 1 };
            simulate(&s)
        };
        let base = 1e-9 * 32.0 * 1024.0;
        let a = run(3, vec![1.0, 10.0]).unwrap();
        let times: Vec<f64> = a
            .steps
            .iter()
            .flat_map(|st| st.devices.iter().map(|d| d.compute / base))
            .collect();
        assert!(times
            .iter()
            .all(|&x| (x - 1.0).abs() < 1e-9 || (x - 10.0).abs() < 1e-9));
        let tens = times.iter().filter(|&&x| x > 5.0).count();
        assert!((60..140).contains(&tens), "{tens} of 200 draws were 10");
        let again = run(3, vec![1.0, 10.0]).unwrap();
        assert_eq!(a.loop_seconds, again.loop_seconds);
        let other = run(4, vec![1.0, 10.0]).unwrap();
        assert_ne!(a.loop_seconds, other.loop_seconds);
        assert!(matches!(run(3, vec![]), Err(SimError::NoNoise)));
        assert!(matches!(run(3, vec![1.0, -1.0]), Err(SimError::NoNoise)));
    }

    /// Blocks of 5: a device takes runs of consecutive ratios from the
    /// source (ratios 1, 2, 3, ... make that visible as steps of +1), where
    /// independent draws rarely do.
    #[test]
    fn resampled_blocks_keep_consecutive_ratios_together() {
        let ratios: Vec<f64> = (1..=200).map(f64::from).collect();
        let steps = |block: usize| {
            let mut s = scenario(
                vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
                64,
                101,
                None,
            );
            s.noise = NoiseSource::Resampled {
                ratios: ratios.clone(),
                block,
            };
            let sim = simulate(&s).unwrap();
            let base = 1e-9 * 32.0 * 1024.0;
            (0..2)
                .map(|d| {
                    let r: Vec<f64> = sim
                        .steps
                        .iter()
                        .map(|st| (st.devices[d].compute / base).round())
                        .collect();
                    r.windows(2).filter(|w| w[1] == w[0] + 1.0).count()
                })
                .sum::<usize>()
        };
        // 2 devices x 100 transitions: 4 of each 5 inside a block (160),
        // less the blocks that hit the end of the ratios, plus the odd new
        // start that happens to follow the last ratio (1 in 200).
        let blocks = steps(5);
        assert!((140..=170).contains(&blocks), "{blocks}");
        assert!(steps(1) < 10, "{}", steps(1));
    }

    /// With no noise and speeds 1 : 1/3, the first rebalance moves to 3 : 1.
    /// The skeleton's drop rule, shared: a device 60x slower loses all
    /// its rows at the first rebalance (kept at threshold 0), and comes
    /// back when the fast one becomes 100x slower, as soon as the window
    /// shows it, under const-iters and under next-alb (which, watching one
    /// device, would never ask).
    #[test]
    fn a_far_slower_device_is_dropped_and_comes_back() {
        for alb in ["const-iters", "next-alb"] {
            let mut s = scenario(
                vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 60e-9)],
                1024,
                300,
                Some(alb),
            );
            s.devices[0].slowdowns.push(Slowdown {
                factor: 100.0,
                from: 100,
            });
            let sim = simulate(&s).unwrap();
            assert_eq!(sim.moves[0].iter, 30, "{alb}");
            assert_eq!(sim.moves[0].weights_after, vec![1.0, 0.0], "{alb}");
            assert_eq!(sim.steps[31].devices[1].rows, 0, "{alb}");
            assert_eq!(sim.steps[99].devices[1].rows, 0, "{alb}");
            let back = sim
                .moves
                .iter()
                .find(|m| m.weights_after[1] > 0.0)
                .expect("the slow device comes back");
            // const-iters rebalances every 31 iterations, its window full
            // only then: 93..=122 saw the fast device at 1x for 7
            // iterations and 100x for 23 (76.9 on average) against the
            // slow one's last 60: (1/60) / (1/60 + 1/76.9) = 0.562. next-alb
            // checks every iteration: at 102 its window 72..=101 holds two
            // slowed iterations (7.6 on average), the first past the
            // threshold: 0.112, and next-alb itself said no.
            let (at, share, asked_back) = match alb {
                "const-iters" => (123, 0.562, false),
                _ => (102, 0.1124, true),
            };
            assert_eq!(back.iter, at, "{alb}");
            assert!(
                (back.weights_after[1] - share).abs() < 1e-3,
                "{alb}: {back:?}"
            );
            let check = sim.checks.iter().find(|c| c.iter == at).unwrap();
            let readmit = check
                .values
                .iter()
                .any(|(k, v)| k == "readmit" && *v == 1.0);
            assert_eq!(readmit, asked_back, "{alb}: {check:?}");
        }
        let mut s = scenario(
            vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 60e-9)],
            1024,
            300,
            Some("const-iters"),
        );
        s.drop_below = 0.0;
        let kept = simulate(&s).unwrap();
        let rows = kept.steps[31].devices[1].rows;
        assert!((1..40).contains(&rows), "{rows}");
    }

    #[test]
    fn weights_converge_to_the_speed_ratio() {
        let s = scenario(
            vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 3e-9)],
            1024,
            200,
            Some("next-alb"),
        );
        let sim = simulate(&s).unwrap();
        let first = &sim.moves[0];
        assert_eq!(first.iter, 30, "the first full window");
        assert!((first.weights_after[0] - 0.75).abs() < 1e-9);
        assert_eq!(sim.steps[31].devices[0].rows, 768);
        assert_eq!(sim.steps[31].devices[1].rows, 256);
    }

    /// Up to 32 devices the times reach the heuristic one iteration late
    /// (the window of 30 is first full at iteration 30); beyond, as late
    /// as the skeleton's tree gather delivers them (40 devices: 6 rounds,
    /// first full at 35). Each device posts 39 times an iteration directly,
    /// along the tree one more each iteration up to 6, which the
    /// iterations pay (posts of 1 µs, noiseless devices, free links).
    #[test]
    fn times_reach_the_heuristic_as_late_as_the_gather_delivers_them() {
        let run = |n: usize, direct_up_to: usize| {
            let mut devices: Vec<SimDevice> = (0..n)
                .map(|i| SimDevice::new(format!("d{i}"), 1e-9))
                .collect();
            devices[0].seconds_per_cell = 3e-9;
            let mut s = scenario(devices, 8 * n as i64, 60, Some("next-alb"));
            s.links.post = 1e-6;
            s.direct_times_up_to = direct_up_to;
            simulate(&s).unwrap()
        };
        let (direct, tree) = (run(32, DIRECT_UP_TO), run(40, DIRECT_UP_TO));
        assert_eq!(direct.moves[0].iter, 30);
        assert_eq!(tree.moves[0].iter, 35);
        assert_eq!(direct.checks.first().map(|c| c.iter), Some(30));
        assert_eq!(tree.checks.first().map(|c| c.iter), Some(35));
        // The same 40 devices with their times sent directly: first full
        // at 30, and the iterations before any rebalance differ by the
        // posts alone.
        let all = run(40, 64);
        assert_eq!(all.moves[0].iter, 30);
        for (it, tree_posts) in [(0, 1.0), (3, 4.0), (10, 6.0), (20, 6.0)] {
            let extra = all.iteration_seconds[it] - tree.iteration_seconds[it];
            assert!(
                (extra - (39.0 - tree_posts) * 1e-6).abs() < 1e-12,
                "iteration {it}: {extra}"
            );
        }
    }

    /// A run fed back its own kernel times and rebalance costs decides alike
    /// at every check and moves to the same weights.
    #[test]
    fn trace_mode_reproduces_a_run_it_is_fed() {
        for alb in ["const-iters", "cost-aware", "welch", "next-alb"] {
            let mut slow = SimDevice::new("slow", 1e-9);
            slow.slowdowns.push(Slowdown {
                factor: 3.0,
                from: 200,
            });
            slow.cv = 0.1;
            let mut fast = SimDevice::new("fast", 1e-9);
            fast.cv = 0.1;
            let mut s = scenario(vec![fast, slow], 512, 600, Some(alb));
            s.links.intra = Hockney {
                alpha: 1e-5,
                beta: 1e-9,
            };
            let real = simulate(&s).unwrap();
            assert!(!real.moves.is_empty(), "{alb}");
            s.kernels = Kernels::Trace {
                compute: real
                    .steps
                    .iter()
                    .map(|st| st.devices.iter().map(|d| d.compute).collect())
                    .collect(),
                rows: real
                    .steps
                    .iter()
                    .map(|st| st.devices.iter().map(|d| d.rows).collect())
                    .collect(),
                redistribution_seconds: real.moves.iter().map(|m| m.seconds).collect(),
            };
            let replay = simulate(&s).unwrap();
            assert_eq!(replay.checks, real.checks, "{alb}");
            assert_eq!(replay.moves, real.moves, "{alb}");
        }
    }

    #[test]
    fn a_trace_that_disagrees_is_caught() {
        let s = scenario(
            vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
            64,
            3,
            None,
        );
        let mut t = s.clone();
        t.kernels = Kernels::Trace {
            compute: vec![vec![1.0, 1.0]; 3],
            rows: vec![vec![32, 32], vec![32, 32], vec![31, 33]],
            redistribution_seconds: vec![],
        };
        assert!(matches!(
            simulate(&t),
            Err(SimError::TraceDiverged {
                iter: 2,
                device: 0,
                real: 31,
                simulated: 32
            })
        ));
        t.kernels = Kernels::Trace {
            compute: vec![vec![1.0, 1.0]; 2],
            rows: vec![vec![32, 32]; 3],
            redistribution_seconds: vec![],
        };
        assert_eq!(
            simulate(&t).unwrap_err().to_string(),
            "the trace has 2 iterations of kernel times, the run needs 3"
        );
    }

    #[test]
    fn bad_devices_are_refused_by_name() {
        let mut d = SimDevice::new("a", 1e-9);
        d.cv = f64::NAN;
        let e = simulate(&scenario(vec![d], 64, 3, None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "device 0: noise cv must be a finite number >= 0, got NaN"
        );
        let e = simulate(&scenario(vec![SimDevice::new("a", 0.0)], 64, 3, None)).unwrap_err();
        assert!(e.to_string().contains("seconds per cell must be"));
        assert!(matches!(
            simulate(&scenario(vec![], 64, 3, None)),
            Err(SimError::NoDevices)
        ));
    }

    /// A failed device keeps no rows; the others share them all from then
    /// on, and the run goes to its end.
    #[test]
    fn a_failed_device_is_dropped() {
        let mut d = SimDevice::new("b", 1e-9);
        d.fail_at = Some(40);
        let s = scenario(
            vec![SimDevice::new("a", 1e-9), d, SimDevice::new("c", 1e-9)],
            300,
            100,
            Some("const-iters"),
        );
        let sim = simulate(&s).unwrap();
        assert_eq!(sim.failures.len(), 1);
        assert_eq!((sim.failures[0].device, sim.failures[0].iter), (1, 40));
        assert_eq!(sim.steps.len(), 100);
        assert!(sim.steps[39].devices[1].rows > 0);
        for st in &sim.steps[40..] {
            assert_eq!(st.devices[1].rows, 0);
            assert_eq!(st.devices.iter().map(|d| d.rows).sum::<usize>(), 300);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Whatever the speeds, noise and slowdowns: rows are conserved
        /// every iteration, no block is ever thinner than the stencil
        /// (without dropping: empty), the clock only moves forward, and a
        /// seed gives the same run twice.
        #[test]
        fn rows_are_conserved_and_blocks_stay_wide(
            speeds in prop::collection::vec((1e-10f64..1e-8, 0.0f64..0.5, 1.0f64..10.0, 0u64..150), 2..9),
            rows in 40i64..400,
            alb in prop::sample::select(vec!["const-iters", "next-alb", "cost-aware", "welch", "double-iters"]),
            seed in any::<u64>(),
        ) {
            let devices = speeds
                .iter()
                .enumerate()
                .map(|(i, &(spc, cv, f, at))| {
                    let mut d = SimDevice::new(format!("d{i}"), spc);
                    d.cv = cv;
                    d.slowdowns.push(Slowdown { factor: f, from: at });
                    d
                })
                .collect();
            let mut s = scenario(devices, rows, 200, Some(alb));
            s.kernels = Kernels::Modelled { seed };
            // Every device keeps rows at threshold 0; at the default, up
            // to all but one may be dropped (speeds here differ up to 1000x).
            for drop_below in [0.0, heuristics::DROP_BELOW] {
                s.drop_below = drop_below;
                let sim = simulate(&s).unwrap();
                let mut last = 0.0;
                for st in &sim.steps {
                    prop_assert_eq!(st.devices.iter().map(|d| d.rows).sum::<usize>(), rows as usize);
                    if drop_below == 0.0 {
                        prop_assert!(st.devices.iter().all(|d| d.rows >= 1));
                    }
                    prop_assert!(st.elapsed >= last);
                    last = st.elapsed;
                }
                prop_assert_eq!(simulate(&s).unwrap(), sim);
            }
        }
    }
}

//! heuristics: deciding when a rebalance pays off. Pure logic over timing
//! statistics: nothing here knows devices or data.
//!
//! EPSILOD's heuristics (reference.md §3) and two of our own:
//! - `cost-aware`: rebalance only when the predicted saving over the
//!   remaining iterations exceeds the measured cost of a rebalance, with a
//!   margin;
//! - `welch`: rebalance only when the slowest device is slower than the
//!   fastest with statistical significance (Welch's t-test on their windows)
//!   and by a margin worth acting on.
//!
//! Every built-in heuristic is one row of [`BUILTIN`]: its name, what it
//! does, its parameters and their defaults. [`HeuristicSpec`] parses
//! `name` or `name:key=value,...` (`welch:alpha=0.01`) against that table.
//! [`testing::assert_deterministic`] checks the one property the skeleton
//! relies on: two copies fed the same numbers decide alike.
//!
//! [`depth`] chooses how deep a halo to keep (`--halo-depth auto`) from
//! iteration times measured at a few depths; [`sampling`] which iterations
//! a long run records, for the skeleton and the simulator alike.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod check_log;
pub mod cycle;
pub mod depth;
mod epsilod;
pub mod gather;
mod ours;
mod registry;
pub mod roster;
pub mod sampling;
mod stats;
pub mod testing;

pub use check_log::{CheckLog, Ordered, CHECKS_KEPT};
pub use cycle::{floor_weights, relayout, Cycle, Windows, WINDOW};
pub use epsilod::{
    ConstIters, DoubleIters, Doubling, ExpIters, Exponential, NextAlb, NoAlb, Period, Schedule,
    Scheduled,
};
pub use ours::{rebalance_cost, rows_to_move, CostAware, Welch, PRIOR_COST_ITERATIONS};
pub use registry::{
    builtin, by_name, Args, Builtin, HeuristicSpec, Param, ParamKind, SpecError, UnknownHeuristic,
    Value, BUILTIN, NAMES,
};
pub use roster::{Roster, WeightsError, DROP_BELOW};
pub use stats::{
    balanced_time, mean, median, throughput_weights, variance, welch_t_test, WelchResult,
};

/// One device's timing window: its kernel seconds of the last iterations.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceWindow {
    /// Rows it owns (along the balanced dimension).
    pub rows: usize,
    /// Kernel (compute) seconds per iteration, oldest first.
    pub samples: Vec<f64>,
}

impl DeviceWindow {
    /// Mean of the samples (0 if none).
    pub fn mean(&self) -> f64 {
        stats::mean(&self.samples)
    }

    /// Median of the samples (0 if none): robust to the occasional spike a
    /// shared machine puts into a window.
    pub fn median(&self) -> f64 {
        stats::median(&self.samples)
    }

    /// This window summarised by its median: one sample, the same rows.
    pub fn robust(&self) -> DeviceWindow {
        DeviceWindow {
            rows: self.rows,
            samples: vec![self.median()],
        }
    }

    /// Unbiased sample variance (0 with fewer than two samples).
    pub fn variance(&self) -> f64 {
        stats::variance(&self.samples)
    }

    /// Rows per second over the window (`None` without rows or time).
    pub fn throughput(&self) -> Option<f64> {
        let t = self.seconds_per_row();
        (t.is_finite() && t > 0.0).then(|| 1.0 / t)
    }

    /// Mean seconds per row (infinite for a device with no rows).
    pub fn seconds_per_row(&self) -> f64 {
        if self.rows == 0 {
            f64::INFINITY
        } else {
            self.mean() / self.rows as f64
        }
    }
}

/// What a heuristic sees at a check: every device's full window.
#[derive(Clone, Debug)]
pub struct Snapshot<'a> {
    /// The iteration just completed (0-based).
    pub iter: u64,
    /// Rebalances so far.
    pub rebalances: usize,
    /// Iterations still to run after this one.
    pub remaining: u64,
    /// The windows of the devices holding rows, in device order (a device
    /// dropped for being too slow, [`roster`], holds none and is not here).
    pub devices: &'a [DeviceWindow],
}

impl Snapshot<'_> {
    /// The slowest device's mean kernel time: what an iteration costs now.
    pub fn worst(&self) -> f64 {
        self.devices
            .iter()
            .map(DeviceWindow::mean)
            .fold(0.0, f64::max)
    }
    /// Mean over devices of their mean kernel times.
    pub fn average(&self) -> f64 {
        self.devices.iter().map(DeviceWindow::mean).sum::<f64>() / self.devices.len().max(1) as f64
    }
}

/// A check's answer and the internal values behind it (for the report).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Whether to rebalance now.
    pub rebalance: bool,
    /// Named internal values behind the answer, for the report.
    pub values: Vec<(&'static str, f64)>,
    /// New weights, one per device of the snapshot (or one per device of
    /// the run, which may give a dropped device rows again); `None` (the
    /// usual) means proportional to each device's measured throughput.
    /// Either way a weight far below the largest becomes 0 ([`roster`]).
    pub weights: Option<Vec<f64>>,
}

impl Decision {
    /// Do not rebalance.
    pub fn no() -> Decision {
        Decision {
            rebalance: false,
            values: Vec::new(),
            weights: None,
        }
    }
    /// Rebalance, to throughput-proportional weights.
    pub fn yes() -> Decision {
        Decision {
            rebalance: true,
            values: Vec::new(),
            weights: None,
        }
    }
    /// Rebalance if `rebalance`.
    pub fn when(rebalance: bool) -> Decision {
        Decision {
            rebalance,
            ..Decision::no()
        }
    }
    /// Adds an internal value to the report of this decision.
    pub fn with(mut self, name: &'static str, v: f64) -> Decision {
        self.values.push((name, v));
        self
    }
}

/// A rebalance that happened, as heuristics learn from it.
#[derive(Clone, Debug)]
pub struct Rebalanced<'a> {
    /// The iteration after which it happened (0-based).
    pub iter: u64,
    /// Rebalances so far, this one included.
    pub rebalances: usize,
    /// Windows just before the rebalance, as the heuristic saw them.
    pub devices: &'a [DeviceWindow],
    /// Wall seconds of the redistribution on the slowest process.
    pub seconds: f64,
    /// Rows that changed owner (along the balanced dimension).
    pub rows_moved: usize,
}

/// When to rebalance. The skeleton calls `init` once, `check` after every
/// iteration whose windows are full (each window restarts after a
/// rebalance), `on_redistribute` after each rebalance, `end` at the end.
/// Every virtual process runs its own copy on the same gathered numbers, so
/// implementations must be deterministic.
pub trait Heuristic: Send {
    /// The name reports show (a built-in's is its [`BUILTIN`] name).
    fn name(&self) -> &str;
    /// Called once before the run, with the iterations it will do.
    fn init(&mut self, _total_iters: u64) {}
    /// Whether to rebalance now, given every device's full window.
    fn check(&mut self, s: &Snapshot<'_>) -> Decision;
    /// Called after each rebalance, with what it cost.
    fn on_redistribute(&mut self, _r: &Rebalanced<'_>) {}
    /// Called once after the run.
    fn end(&mut self) {}
    /// What a checkpoint keeps of this heuristic, as numbers: a run
    /// restarted from it [`restore`](Heuristic::restore)s them and decides
    /// as the uninterrupted run would have. None by default.
    fn state(&self) -> Vec<f64> {
        Vec::new()
    }
    /// Takes back what [`state`](Heuristic::state) gave (after `init`).
    fn restore(&mut self, _state: &[f64]) {}
}

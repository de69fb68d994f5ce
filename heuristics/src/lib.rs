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

mod epsilod;
mod ours;
mod stats;

pub use epsilod::{ConstIters, DoubleIters, ExpIters, NextAlb, NoAlb};
pub use ours::{CostAware, Welch};
pub use stats::{balanced_time, median, throughput_weights, welch_t_test, WelchResult};
use thiserror::Error;

/// One device's timing window: its kernel seconds of the last iterations.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceWindow {
    /// Rows it owns (along the balanced dimension).
    pub rows: usize,
    /// Kernel (compute) seconds per iteration, oldest first.
    pub samples: Vec<f64>,
}

impl DeviceWindow {
    pub fn mean(&self) -> f64 {
        if self.samples.is_empty() {
            0.0
        } else {
            self.samples.iter().sum::<f64>() / self.samples.len() as f64
        }
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
        let n = self.samples.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        self.samples.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64
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
    pub rebalance: bool,
    pub values: Vec<(&'static str, f64)>,
    /// New weights, one per device; `None` (the usual) means proportional to
    /// each device's measured throughput.
    pub weights: Option<Vec<f64>>,
}

impl Decision {
    pub fn no() -> Decision {
        Decision {
            rebalance: false,
            values: Vec::new(),
            weights: None,
        }
    }
    pub fn yes() -> Decision {
        Decision {
            rebalance: true,
            values: Vec::new(),
            weights: None,
        }
    }
    pub fn when(rebalance: bool) -> Decision {
        Decision {
            rebalance,
            ..Decision::no()
        }
    }
    pub fn with(mut self, name: &'static str, v: f64) -> Decision {
        self.values.push((name, v));
        self
    }
}

/// A rebalance that happened, as heuristics learn from it.
#[derive(Clone, Debug)]
pub struct Rebalanced<'a> {
    pub iter: u64,
    pub rebalances: usize,
    /// Windows just before the rebalance.
    pub devices: &'a [DeviceWindow],
    /// Wall seconds of the redistribution on the slowest process.
    pub seconds: f64,
}

/// When to rebalance. The skeleton calls `init` once, `check` after every
/// iteration whose windows are full (each window restarts after a
/// rebalance), `on_redistribute` after each rebalance, `end` at the end.
/// Every virtual process runs its own copy on the same gathered numbers, so
/// implementations must be deterministic.
pub trait Heuristic: Send {
    fn name(&self) -> &str;
    fn init(&mut self, _total_iters: u64) {}
    fn check(&mut self, s: &Snapshot<'_>) -> Decision;
    fn on_redistribute(&mut self, _r: &Rebalanced<'_>) {}
    fn end(&mut self) {}
}

#[derive(Debug, Clone, PartialEq, Error)]
#[error("unknown ALB heuristic '{0}': use {list}", list = NAMES.join(", "))]
pub struct UnknownHeuristic(pub String);

/// Every heuristic by its command-line name.
pub const NAMES: [&str; 7] = [
    "none",
    "const-iters",
    "exp-iters",
    "double-iters",
    "next-alb",
    "cost-aware",
    "welch",
];

pub fn by_name(name: &str) -> Result<Box<dyn Heuristic>, UnknownHeuristic> {
    Ok(match name {
        "none" => Box::new(NoAlb),
        "const-iters" => Box::new(ConstIters::new(30)),
        "exp-iters" => Box::new(ExpIters::default()),
        "double-iters" => Box::new(DoubleIters::default()),
        "next-alb" => Box::new(NextAlb::default()),
        "cost-aware" => Box::new(CostAware::default()),
        "welch" => Box::new(Welch::default()),
        _ => return Err(UnknownHeuristic(name.to_string())),
    })
}

//! Heuristics of our own: they know the remaining iteration count, the
//! measured cost of a rebalance and the noise of the measurements. Both
//! judge each device by the median of its window, not the mean, and choose
//! the new weights from those medians: one descheduled iteration in a window
//! of 30 otherwise skews the weights (measured: rebalances flipping between
//! 0.74/0.26 and 0.57/0.43 for a steady 3x slower device).

use crate::stats::{balanced_time, throughput_weights, welch_t_test};
use crate::{Decision, DeviceWindow, Heuristic, Rebalanced, Snapshot};

/// The default cost of a rebalance before any was measured, in iterations of
/// the current kind: a guess on the safe side (the skeleton's target is <= 5).
pub const PRIOR_COST_ITERATIONS: f64 = 5.0;

/// Rebalance when the predicted saving over the remaining iterations
/// (`remaining x (worst - balanced)`) exceeds `margin` times the cost of a
/// rebalance (the mean measured so far), and the imbalance is at least
/// `min_gain` of an iteration, below which it is indistinguishable from noise.
pub struct CostAware {
    /// How many times over the saving must pay for a rebalance.
    pub margin: f64,
    /// Smallest imbalance worth acting on, as a fraction of an iteration.
    pub min_gain: f64,
    /// Assumed cost of a rebalance until one is measured, in iterations.
    pub prior_cost: f64,
    costs: Vec<f64>,
}

impl CostAware {
    /// Default `margin`.
    pub const MARGIN: f64 = 2.0;
    /// Default `min_gain`.
    pub const MIN_GAIN: f64 = 0.05;
}

impl Default for CostAware {
    fn default() -> CostAware {
        CostAware {
            margin: CostAware::MARGIN,
            min_gain: CostAware::MIN_GAIN,
            prior_cost: PRIOR_COST_ITERATIONS,
            costs: Vec::new(),
        }
    }
}

/// The mean measured cost of a rebalance, or `prior` iterations of `worst`
/// seconds before any was measured.
fn cost_estimate(costs: &[f64], prior: f64, worst: f64) -> f64 {
    if costs.is_empty() {
        prior * worst
    } else {
        costs.iter().sum::<f64>() / costs.len() as f64
    }
}

impl Heuristic for CostAware {
    fn name(&self) -> &str {
        "cost-aware"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let robust: Vec<DeviceWindow> = s.devices.iter().map(DeviceWindow::robust).collect();
        let worst = robust.iter().map(DeviceWindow::mean).fold(0.0, f64::max);
        let balanced = balanced_time(&robust);
        let gain = (worst - balanced).max(0.0);
        let saving = gain * s.remaining as f64;
        let cost = cost_estimate(&self.costs, self.prior_cost, worst);
        let yes = worst > 0.0 && gain / worst >= self.min_gain && saving > self.margin * cost;
        Decision {
            weights: yes.then(|| throughput_weights(&robust)),
            ..Decision::when(yes)
        }
        .with("worst", worst)
        .with("balanced", balanced)
        .with("saving", saving)
        .with("cost", cost)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.costs.push(r.seconds);
    }
    fn state(&self) -> Vec<f64> {
        self.costs.clone()
    }
    fn restore(&mut self, state: &[f64]) {
        self.costs = state.to_vec();
    }
}

/// Rebalance only when the slowest device is slower than the fastest with
/// significance (one-sided Welch t-test on their windows, p < `alpha`), by at
/// least `min_gain` of an iteration, and the saving over the remaining
/// iterations pays `margin` times for a rebalance. Significance alone is not
/// enough: two devices that differ by 2% really do differ, and a window of 30
/// shows it, but moving rows for 2% does not pay on a noisy machine.
pub struct Welch {
    /// Significance level of the one-sided test.
    pub alpha: f64,
    /// Smallest imbalance worth acting on, as a fraction of an iteration.
    pub min_gain: f64,
    /// How many times over the saving must pay for a rebalance.
    pub margin: f64,
    /// Assumed cost of a rebalance until one is measured, in iterations.
    pub prior_cost: f64,
    costs: Vec<f64>,
}

impl Welch {
    /// Default `alpha`: strict, because the test runs every iteration.
    pub const ALPHA: f64 = 1e-3;
    /// Default `min_gain`.
    pub const MIN_GAIN: f64 = 0.05;
    /// Default `margin`.
    pub const MARGIN: f64 = 2.0;
}

impl Default for Welch {
    fn default() -> Welch {
        Welch {
            alpha: Welch::ALPHA,
            min_gain: Welch::MIN_GAIN,
            margin: Welch::MARGIN,
            prior_cost: PRIOR_COST_ITERATIONS,
            costs: Vec::new(),
        }
    }
}

impl Heuristic for Welch {
    fn name(&self) -> &str {
        "welch"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        // Medians once: each sorts its window.
        let robust: Vec<DeviceWindow> = s.devices.iter().map(DeviceWindow::robust).collect();
        let by_median =
            |a: &usize, b: &usize| robust[*a].samples[0].total_cmp(&robust[*b].samples[0]);
        let (Some(slow), Some(fast)) = (
            (0..robust.len()).max_by(by_median),
            (0..robust.len()).min_by(by_median),
        ) else {
            return Decision::no();
        };
        let (slow, fast, worst) = (&s.devices[slow], &s.devices[fast], robust[slow].samples[0]);
        let Some(test) = welch_t_test(&slow.samples, &fast.samples) else {
            return Decision::no();
        };
        let balanced = balanced_time(&robust);
        let gain = (worst - balanced).max(0.0);
        let cost = cost_estimate(&self.costs, self.prior_cost, worst);
        let yes = test.p_greater < self.alpha
            && worst > 0.0
            && gain / worst >= self.min_gain
            && gain * s.remaining as f64 > self.margin * cost;
        Decision {
            weights: yes.then(|| throughput_weights(&robust)),
            ..Decision::when(yes)
        }
        .with("t", test.t)
        .with("p", test.p_greater)
        .with("worst", worst)
        .with("balanced", balanced)
        .with("cost", cost)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.costs.push(r.seconds);
    }
    fn state(&self) -> Vec<f64> {
        self.costs.clone()
    }
    fn restore(&mut self, state: &[f64]) {
        self.costs = state.to_vec();
    }
}

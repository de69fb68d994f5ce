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
    /// `(rows moved, seconds)` of each rebalance so far.
    costs: Vec<(f64, f64)>,
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

/// What a rebalance moving `rows` rows will cost, from the rebalances
/// measured so far (`(rows moved, seconds)`): a least-squares line through
/// them once two moved different row counts; from one, a fixed part (at
/// most an iteration, `worst`: the barrier and the halo refresh cost that
/// whatever moves) plus the rest in proportion to the rows; before any,
/// `prior` iterations. A flat mean would price a one-row correction like
/// the first rebalance, which moves most of the rows, and keep a small
/// residual imbalance from ever being fixed.
pub fn rebalance_cost(costs: &[(f64, f64)], prior: f64, worst: f64, rows: f64) -> f64 {
    let n = costs.len() as f64;
    if costs.is_empty() {
        return prior * worst;
    }
    let mean_rows = costs.iter().map(|c| c.0).sum::<f64>() / n;
    let mean_secs = costs.iter().map(|c| c.1).sum::<f64>() / n;
    let var = costs.iter().map(|c| (c.0 - mean_rows).powi(2)).sum::<f64>();
    if var > 0.0 {
        let cov = costs
            .iter()
            .map(|c| (c.0 - mean_rows) * (c.1 - mean_secs))
            .sum::<f64>();
        let slope = cov / var;
        if slope >= 0.0 {
            let fixed = mean_secs - slope * mean_rows;
            return (fixed + slope * rows).max(0.0);
        }
    }
    let fixed = mean_secs.min(worst);
    if mean_rows > 0.0 {
        fixed + (mean_secs - fixed) * rows / mean_rows
    } else {
        mean_secs
    }
}

/// Rows that change owner when a weighted layout of `devices` (blocks in
/// device order along one dimension) moves to `weights`: how far each inner
/// boundary shifts, summed.
pub fn rows_to_move(devices: &[DeviceWindow], weights: &[f64]) -> f64 {
    let total: f64 = devices.iter().map(|d| d.rows as f64).sum();
    let sum: f64 = weights.iter().sum();
    if sum <= 0.0 {
        return 0.0;
    }
    let (mut old, mut new, mut moved) = (0.0, 0.0, 0.0);
    for (d, w) in devices
        .iter()
        .zip(weights)
        .take(devices.len().saturating_sub(1))
    {
        old += d.rows as f64;
        new += total * w / sum;
        moved += (new - old).abs();
    }
    moved
}

/// What moving to throughput weights would gain and cost, as both our
/// heuristics weigh it.
struct Price {
    /// Whether the move pays (`CostAware`'s rule).
    pays: bool,
    weights: Vec<f64>,
    balanced: f64,
    saving: f64,
    cost: f64,
}

impl CostAware {
    /// The move to the weights of `robust` (the median windows), the
    /// slowest of which takes `worst`.
    fn price(&self, s: &Snapshot<'_>, robust: &[DeviceWindow], worst: f64) -> Price {
        let balanced = balanced_time(robust);
        let gain = (worst - balanced).max(0.0);
        let saving = gain * s.remaining as f64;
        let weights = throughput_weights(robust);
        let rows = rows_to_move(s.devices, &weights);
        let cost = rebalance_cost(&self.costs, self.prior_cost, worst, rows);
        Price {
            pays: worst > 0.0 && gain / worst >= self.min_gain && saving > self.margin * cost,
            weights,
            balanced,
            saving,
            cost,
        }
    }
}

impl Price {
    /// Rebalance to these weights if `yes`.
    fn decide(self, yes: bool) -> Decision {
        Decision {
            weights: yes.then_some(self.weights),
            ..Decision::when(yes)
        }
    }
}

impl Heuristic for CostAware {
    fn name(&self) -> &str {
        "cost-aware"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let robust: Vec<DeviceWindow> = s.devices.iter().map(DeviceWindow::robust).collect();
        let worst = robust.iter().map(DeviceWindow::mean).fold(0.0, f64::max);
        let p = self.price(s, &robust, worst);
        let (yes, balanced, saving, cost) = (p.pays, p.balanced, p.saving, p.cost);
        p.decide(yes)
            .with("worst", worst)
            .with("balanced", balanced)
            .with("saving", saving)
            .with("cost", cost)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.costs.push((r.rows_moved as f64, r.seconds));
    }
    fn state(&self) -> Vec<f64> {
        flatten(&self.costs)
    }
    fn restore(&mut self, state: &[f64]) {
        self.costs = pairs(state);
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
    /// What a rebalance must gain and what it costs, weighed as
    /// [`CostAware`] does (its `margin`, `min_gain` and `prior_cost`).
    pub cost: CostAware,
}

impl Welch {
    /// Default `alpha`: strict, because the test runs every iteration.
    pub const ALPHA: f64 = 1e-3;
    /// Default `min_gain`.
    pub const MIN_GAIN: f64 = CostAware::MIN_GAIN;
    /// Default `margin`.
    pub const MARGIN: f64 = CostAware::MARGIN;
}

impl Default for Welch {
    fn default() -> Welch {
        Welch {
            alpha: Welch::ALPHA,
            cost: CostAware::default(),
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
        let p = self.cost.price(s, &robust, worst);
        let (yes, balanced, cost) = (test.p_greater < self.alpha && p.pays, p.balanced, p.cost);
        p.decide(yes)
            .with("t", test.t)
            .with("p", test.p_greater)
            .with("worst", worst)
            .with("balanced", balanced)
            .with("cost", cost)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.cost.on_redistribute(r);
    }
    fn state(&self) -> Vec<f64> {
        self.cost.state()
    }
    fn restore(&mut self, state: &[f64]) {
        self.cost.restore(state);
    }
}

/// `(rows, seconds)` pairs as a heuristic's state.
fn flatten(costs: &[(f64, f64)]) -> Vec<f64> {
    costs.iter().flat_map(|&(r, t)| [r, t]).collect()
}

/// The pairs [`flatten`] wrote (a trailing odd value is dropped).
fn pairs(state: &[f64]) -> Vec<(f64, f64)> {
    state.chunks_exact(2).map(|c| (c[0], c[1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(rows: usize, t: f64) -> DeviceWindow {
        crate::testing::steady(rows, t, 30)
    }

    #[test]
    fn costs_follow_the_rows_moved() {
        // Two measured rebalances fix a line: 100 rows 0.1 s, 10 rows 0.019 s
        // is 0.01 s plus 0.9 ms a row.
        let c = [(100.0, 0.1), (10.0, 0.019)];
        assert!((rebalance_cost(&c, 5.0, 1e-3, 1.0) - 0.0109).abs() < 1e-12);
        // One: at most an iteration fixed, the rest by rows.
        let one = [(3671.0, 0.120)];
        let small = rebalance_cost(&one, 5.0, 0.385e-3, 50.0);
        assert!((small - (0.385e-3 + (0.120 - 0.385e-3) * 50.0 / 3671.0)).abs() < 1e-15);
        assert_eq!(rebalance_cost(&[], 5.0, 2e-3, 50.0), 1e-2);
        // A line that falls with rows (noise) is not extrapolated: the mean.
        let odd = [(10.0, 0.2), (100.0, 0.1)];
        assert!(rebalance_cost(&odd, 5.0, 1.0, 10.0) > 0.0);
    }

    #[test]
    fn rows_moved_are_the_boundary_shifts() {
        let d = [window(600, 1.0), window(400, 1.0)];
        assert!((rows_to_move(&d, &[0.5, 0.5]) - 100.0).abs() < 1e-9);
        let d = [window(100, 1.0), window(100, 1.0), window(100, 1.0)];
        // Boundaries 100, 200 -> 50, 250.
        assert!((rows_to_move(&d, &[1.0, 4.0, 1.0]) - 100.0).abs() < 1e-9);
    }

    /// The H100 run of ../shared/gpu-measurements.md: after a first
    /// rebalance moved 3671 rows in 120 ms, the CPU (557 rows) took 0.385 ms
    /// a kernel against the GPU's 0.308 ms (7635 rows) with 570 iterations
    /// to go. A flat cost (120 ms) never pays; by rows moved it does.
    #[test]
    fn a_residual_imbalance_after_a_big_move_is_corrected() {
        let devices = [window(557, 0.385e-3), window(7635, 0.308e-3)];
        let s = Snapshot {
            iter: 600,
            rebalances: 1,
            remaining: 570,
            devices: &devices,
        };
        let moved = Rebalanced {
            iter: 30,
            rebalances: 1,
            devices: &devices,
            seconds: 0.120,
            rows_moved: 3671,
        };
        let mut cost_aware = CostAware {
            min_gain: 0.05,
            ..CostAware::default()
        };
        cost_aware.on_redistribute(&moved);
        let d = cost_aware.check(&s);
        assert!(d.rebalance, "{:?}", d.values);
        let w = d.weights.unwrap();
        assert!(w[0] < 557.0 / 8192.0, "the CPU gives rows: {w:?}");
        // The mean cost would have said no.
        let flat = 0.120 * CostAware::MARGIN;
        let saving = d.values.iter().find(|v| v.0 == "saving").unwrap().1;
        assert!(saving < flat, "{saving} vs {flat}");
    }
}

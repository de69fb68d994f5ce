//! EPSILOD's heuristics, as reference.md §3 states them. The skeleton calls
//! `check` only once the moving-average window is full, so "the first
//! opportunity" is the iteration that fills it (30 by default).

use crate::{Decision, Heuristic, Rebalanced, Snapshot};

/// Never rebalance.
pub struct NoAlb;

impl Heuristic for NoAlb {
    fn name(&self) -> &str {
        "none"
    }
    fn check(&mut self, _s: &Snapshot<'_>) -> Decision {
        Decision::no()
    }
}

/// Every `period` iterations, the first at iteration `period`.
pub struct ConstIters {
    period: u64,
    next: u64,
}

impl ConstIters {
    /// Default `period`: the moving window's length, so each check sees a
    /// window measured entirely since the last rebalance.
    pub const PERIOD: u64 = 30;

    /// Every `period` iterations (at least 1).
    pub fn new(period: u64) -> ConstIters {
        let period = period.max(1);
        ConstIters {
            period,
            next: period,
        }
    }

    /// Iterations between rebalances.
    pub fn period(&self) -> u64 {
        self.period
    }
}

impl Heuristic for ConstIters {
    fn name(&self) -> &str {
        "const-iters"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let done = s.iter + 1;
        let yes = done >= self.next;
        if yes {
            self.next = done + self.period;
        }
        Decision::when(yes).with("next", self.next as f64)
    }
    fn state(&self) -> Vec<f64> {
        vec![self.next as f64]
    }
    fn restore(&mut self, state: &[f64]) {
        if let [next] = state {
            self.next = *next as u64;
        }
    }
}

/// After the n-th rebalance at iteration i, the next at `i + 2^n`.
#[derive(Default)]
pub struct ExpIters {
    next: u64,
}

impl Heuristic for ExpIters {
    fn name(&self) -> &str {
        "exp-iters"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        Decision::when(s.iter + 1 >= self.next).with("next", self.next as f64)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.next = r.iter + 1 + (1u64 << r.rebalances.min(62));
    }
    fn state(&self) -> Vec<f64> {
        vec![self.next as f64]
    }
    fn restore(&mut self, state: &[f64]) {
        if let [next] = state {
            self.next = *next as u64;
        }
    }
}

/// After a rebalance at iteration i, the next at `2 i`.
#[derive(Default)]
pub struct DoubleIters {
    next: u64,
}

impl Heuristic for DoubleIters {
    fn name(&self) -> &str {
        "double-iters"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        Decision::when(s.iter + 1 >= self.next).with("next", self.next as f64)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.next = 2 * (r.iter + 1);
    }
    fn state(&self) -> Vec<f64> {
        vec![self.next as f64]
    }
    fn restore(&mut self, state: &[f64]) {
        if let [next] = state {
            self.next = *next as u64;
        }
    }
}

/// EPSILOD's NextALB: `avg` is the mean of the devices' average times,
/// `worst` their maximum, `avg_redis` the running mean of the (slowest)
/// redistribution times; the next rebalance comes `avg_redis / (worst - avg)`
/// iterations after the last, i.e. once the time lost to imbalance since
/// then would have paid for one. The first comes at the first opportunity.
#[derive(Default)]
pub struct NextAlb {
    redistributions: u32,
    avg_redis: f64,
    last: u64,
}

impl Heuristic for NextAlb {
    fn name(&self) -> &str {
        "next-alb"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let (avg, worst) = (s.average(), s.worst());
        if self.redistributions == 0 {
            return Decision::yes().with("avg", avg).with("worst", worst);
        }
        let gap = if worst > avg {
            self.avg_redis / (worst - avg)
        } else {
            f64::INFINITY
        };
        let since = (s.iter + 1 - self.last) as f64;
        Decision::when(since >= gap)
            .with("avg", avg)
            .with("worst", worst)
            .with("avg_redis", self.avg_redis)
            .with("gap", gap)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        self.redistributions += 1;
        self.avg_redis += (r.seconds - self.avg_redis) / self.redistributions as f64;
        self.last = r.iter + 1;
    }
    fn state(&self) -> Vec<f64> {
        vec![
            self.redistributions as f64,
            self.avg_redis,
            self.last as f64,
        ]
    }
    fn restore(&mut self, state: &[f64]) {
        if let [n, avg, last] = state {
            self.redistributions = *n as u32;
            self.avg_redis = *avg;
            self.last = *last as u64;
        }
    }
}

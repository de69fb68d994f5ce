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

/// A heuristic that rebalances once iteration `next` comes; its rule `S`
/// moves `next` when it fires or after a rebalance. The schedules differ in
/// that rule only, so they share the check and the state a checkpoint keeps.
pub struct Scheduled<S> {
    next: u64,
    rule: S,
}

/// When a [`Scheduled`] heuristic rebalances next.
pub trait Schedule: Send {
    /// The heuristic's name.
    const NAME: &'static str;
    /// The next iteration when the check fires after `done` iterations
    /// (`None`: it stays until a rebalance moves it).
    fn on_due(&self, _done: u64) -> Option<u64> {
        None
    }
    /// The next iteration after rebalance `r` (`None`: it stays).
    fn after(&self, _r: &Rebalanced<'_>) -> Option<u64> {
        None
    }
}

impl<S: Schedule> Heuristic for Scheduled<S> {
    fn name(&self) -> &str {
        S::NAME
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let done = s.iter + 1;
        let yes = done >= self.next;
        if let Some(next) = yes.then(|| self.rule.on_due(done)).flatten() {
            self.next = next;
        }
        Decision::when(yes).with("next", self.next as f64)
    }
    fn on_redistribute(&mut self, r: &Rebalanced<'_>) {
        if let Some(next) = self.rule.after(r) {
            self.next = next;
        }
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

/// The rules without a setting start at the first opportunity.
impl<S: Schedule + Default> Default for Scheduled<S> {
    fn default() -> Scheduled<S> {
        Scheduled {
            next: 0,
            rule: S::default(),
        }
    }
}

/// Every `period` iterations, the first at iteration `period`.
pub type ConstIters = Scheduled<Period>;

/// [`ConstIters`]' rule: `period` iterations after each firing.
pub struct Period(u64);

impl Schedule for Period {
    const NAME: &'static str = "const-iters";
    fn on_due(&self, done: u64) -> Option<u64> {
        Some(done + self.0)
    }
}

impl Scheduled<Period> {
    /// Default `period`: the moving window's length, so each check sees a
    /// window measured entirely since the last rebalance.
    pub const PERIOD: u64 = 30;

    /// Every `period` iterations (at least 1).
    pub fn new(period: u64) -> ConstIters {
        let period = period.max(1);
        Scheduled {
            next: period,
            rule: Period(period),
        }
    }

    /// Iterations between rebalances.
    pub fn period(&self) -> u64 {
        self.rule.0
    }
}

/// After the n-th rebalance at iteration i, the next at `i + 2^n`.
pub type ExpIters = Scheduled<Exponential>;

/// [`ExpIters`]' rule.
#[derive(Default)]
pub struct Exponential;

impl Schedule for Exponential {
    const NAME: &'static str = "exp-iters";
    fn after(&self, r: &Rebalanced<'_>) -> Option<u64> {
        Some(r.iter + 1 + (1u64 << r.rebalances.min(62)))
    }
}

/// After a rebalance at iteration i, the next at `2 i`.
pub type DoubleIters = Scheduled<Doubling>;

/// [`DoubleIters`]' rule.
#[derive(Default)]
pub struct Doubling;

impl Schedule for Doubling {
    const NAME: &'static str = "double-iters";
    fn after(&self, r: &Rebalanced<'_>) -> Option<u64> {
        Some(2 * (r.iter + 1))
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

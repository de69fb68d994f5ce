//! Checks for heuristic authors.
//!
//! The skeleton runs one copy of the heuristic in every virtual process and
//! relies on all of them deciding alike on the same gathered numbers; a
//! heuristic that reads a clock, a random source or shared state breaks that
//! silently (processes would disagree on when to rebalance).
//! [`assert_deterministic`] checks it.

use crate::{Decision, DeviceWindow, Heuristic, Rebalanced, Snapshot};

/// Iterations before the first check: the skeleton's window length.
const FIRST_CHECK: u64 = 30;

/// Runs two heuristics made by `factory` side by side on the same
/// sequence of snapshots, one per element of `windows` (one window per
/// device), and panics at the first check where their decisions differ.
/// Returns the iterations after which they rebalanced (so a test can also
/// check that the script made the heuristic act).
///
/// The run mimics the skeleton's: `init` with the total iteration count,
/// `check` on each snapshot (iterations 29, 30, ...; `remaining` counts
/// down), `on_redistribute` after every decision to rebalance (costing twice
/// the slowest device's mean time), `end` at the end. Decisions are compared
/// bit for bit, the reported values and weights included.
///
/// ```
/// use heuristics::{testing::assert_deterministic, DeviceWindow, Welch};
/// let slow = |t: f64| vec![
///     DeviceWindow { rows: 100, samples: vec![t, 1.1 * t, 0.9 * t] },
///     DeviceWindow { rows: 100, samples: vec![1.0, 1.1, 0.9] },
/// ];
/// let at = assert_deterministic(|| Box::new(Welch::default()), &[slow(1.0), slow(3.0)]);
/// assert!(at.is_empty(), "3 samples are too few to be significant");
/// ```
///
/// # Panics
/// When two copies decide differently, or `name()` differs between them.
pub fn assert_deterministic<F>(factory: F, windows: &[Vec<DeviceWindow>]) -> Vec<u64>
where
    F: Fn() -> Box<dyn Heuristic>,
{
    let (mut a, mut b) = (factory(), factory());
    assert_eq!(a.name(), b.name(), "two copies report different names");
    let total = FIRST_CHECK + windows.len() as u64;
    a.init(total);
    b.init(total);
    let mut at = Vec::new();
    for (step, devices) in windows.iter().enumerate() {
        let iter = FIRST_CHECK - 1 + step as u64;
        let s = Snapshot {
            iter,
            rebalances: at.len(),
            remaining: total - 1 - iter,
            devices,
        };
        let (da, db) = (a.check(&s), b.check(&s));
        assert!(
            same(&da, &db),
            "{}: two copies decided differently at check {step} (iteration {iter}):\n{da:?}\n{db:?}",
            a.name()
        );
        if da.rebalance {
            at.push(iter);
            let r = Rebalanced {
                iter,
                rebalances: at.len(),
                devices,
                seconds: 2.0 * s.worst(),
                rows_moved: 1 + iter as usize % 7,
            };
            a.on_redistribute(&r);
            b.on_redistribute(&r);
        }
    }
    a.end();
    b.end();
    at
}

/// Runs a heuristic from `factory` through `windows` as
/// [`assert_deterministic`] does, and at every check a second copy made
/// from the first's [`Heuristic::state`] (a restart from a checkpoint taken
/// there): panics where the restarted copy would decide differently for
/// the rest of the run.
pub fn assert_restorable<F>(factory: F, windows: &[Vec<DeviceWindow>])
where
    F: Fn() -> Box<dyn Heuristic>,
{
    let total = FIRST_CHECK + windows.len() as u64;
    for cut in 0..windows.len() {
        let (mut a, mut b) = (factory(), factory());
        a.init(total);
        b.init(total);
        let mut rebalances = 0;
        for (step, devices) in windows.iter().enumerate() {
            if step == cut {
                b.restore(&a.state());
            }
            let iter = FIRST_CHECK - 1 + step as u64;
            let s = Snapshot {
                iter,
                rebalances,
                remaining: total - 1 - iter,
                devices,
            };
            let da = a.check(&s);
            if step >= cut {
                let db = b.check(&s);
                assert!(
                    same(&da, &db),
                    "{}: restored at check {cut}, decided differently at check {step}:\n{da:?}\n{db:?}",
                    a.name()
                );
            }
            if da.rebalance {
                rebalances += 1;
                let r = Rebalanced {
                    iter,
                    rebalances,
                    devices,
                    seconds: 2.0 * s.worst() + step as f64 * 1e-3,
                    rows_moved: 1 + step % 5,
                };
                a.on_redistribute(&r);
                if step >= cut {
                    b.on_redistribute(&r);
                }
            }
        }
    }
}

/// A window of `samples` equal kernel times `seconds` over `rows` rows: a
/// device running steadily, for tests.
pub fn steady(rows: usize, seconds: f64, samples: usize) -> DeviceWindow {
    DeviceWindow {
        rows,
        samples: vec![seconds; samples],
    }
}

/// Equal bit for bit (so NaN values compare equal to themselves).
fn same(a: &Decision, b: &Decision) -> bool {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    a.rebalance == b.rebalance
        && a.values.len() == b.values.len()
        && a.values
            .iter()
            .zip(&b.values)
            .all(|((ka, va), (kb, vb))| ka == kb && va.to_bits() == vb.to_bits())
        && a.weights.as_deref().map(bits) == b.weights.as_deref().map(bits)
}

/// A heuristic that rebalances at fixed iterations to fixed weights, for
/// tests that need rebalances at known points whatever the timings (a
/// timing-driven heuristic on a shared machine may or may not fire). Each
/// listed iteration fires once, at the first check at or after it: checks
/// come only once the windows are full, and with deep halos only at the end
/// of a period.
///
/// ```
/// use heuristics::testing::Scripted;
/// let h = Scripted::new(&[(40, &[1.0, 3.0]), (80, &[2.0, 1.0])]);
/// ```
#[derive(Clone, Debug)]
pub struct Scripted {
    /// By iteration.
    script: Vec<(u64, Vec<f64>)>,
    /// Rebalances fired so far.
    fired: usize,
}

impl Scripted {
    /// Rebalances after each listed iteration to its weights (one per device).
    pub fn new(script: &[(u64, &[f64])]) -> Scripted {
        let mut script: Vec<(u64, Vec<f64>)> =
            script.iter().map(|(i, w)| (*i, w.to_vec())).collect();
        script.sort_by_key(|(i, _)| *i);
        Scripted { script, fired: 0 }
    }
}

impl Heuristic for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        match self.script.get(self.fired) {
            Some((i, w)) if *i <= s.iter => {
                self.fired += 1;
                let mut d = Decision::when(true).with("at", *i as f64);
                d.weights = Some(w.clone());
                d
            }
            _ => Decision::when(false),
        }
    }

    fn state(&self) -> Vec<f64> {
        vec![self.fired as f64]
    }

    fn restore(&mut self, state: &[f64]) {
        self.fired = state.first().map_or(0, |&f| f as usize);
    }
}

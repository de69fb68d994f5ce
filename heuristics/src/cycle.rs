//! The load-balancing cycle that is not device work, shared by the skeleton
//! and the simulator (`models::simulate`) so that both decide at the same
//! iterations on the same numbers: per-device moving windows filled one
//! iteration late, restarted after a rebalance, and the floor that keeps
//! every block wide enough for the stencil.

use crate::DeviceWindow;
use hitmap::{HitmapError, Layout, Partition};
use std::collections::VecDeque;

/// Iterations in EPSILOD's moving window: no decision until it is full.
pub const WINDOW: usize = 30;

/// Every device's last `len` kernel times.
#[derive(Clone, Debug)]
pub struct Windows {
    len: usize,
    times: Vec<VecDeque<f64>>,
}

impl Windows {
    /// Empty windows of `len` iterations for `devices` devices.
    pub fn new(devices: usize, len: usize) -> Windows {
        Windows {
            len,
            times: vec![VecDeque::with_capacity(len); devices],
        }
    }

    /// One iteration's times, one per device.
    pub fn push(&mut self, times: &[f64]) {
        for (w, &t) in self.times.iter_mut().zip(times) {
            if w.len() == self.len {
                w.pop_front();
            }
            w.push_back(t);
        }
    }

    /// Whether every window holds `len` times.
    pub fn full(&self) -> bool {
        self.times.iter().all(|w| w.len() == self.len)
    }

    /// Forgets every time (after a rebalance).
    pub fn clear(&mut self) {
        self.times.iter_mut().for_each(VecDeque::clear);
    }

    /// The windows as heuristics see them, with each device's rows.
    pub fn snapshot(&self, rows: &[usize]) -> Vec<DeviceWindow> {
        self.times
            .iter()
            .zip(rows)
            .map(|(w, &r)| DeviceWindow {
                rows: r,
                samples: w.iter().copied().collect(),
            })
            .collect()
    }
}

/// When the heuristic is asked, over iterations `start..iters`.
///
/// Kernel times travel between processes and are read one period late, or
/// `⌈log2 P⌉` periods late beyond 32 processes ([`crate::gather`]; no
/// process waits on a gather): after a period, the windows take the times
/// of the period the gather delivered, each of its iterations counting the period's time
/// per iteration (with deep halos a period is the iterations between two
/// exchanges; otherwise one iteration). Times measured before a rebalance
/// took effect are never pushed, and nothing is asked after the last
/// iteration (nothing left to gain).
#[derive(Clone, Debug)]
pub struct Cycle {
    windows: Windows,
    iters: u64,
    /// First iteration whose times describe the current layout.
    fresh_from: u64,
}

impl Cycle {
    /// The cycle of `devices` devices with windows of `window` iterations,
    /// for a run of iterations `start..iters`.
    pub fn new(devices: usize, window: usize, start: u64, iters: u64) -> Cycle {
        Cycle {
            windows: Windows::new(devices, window),
            iters,
            fresh_from: start,
        }
    }

    /// Iteration `it` has ended; `previous` holds every device's kernel time
    /// of iteration `it − 1` (`None` at the first iteration run). Returns
    /// whether the heuristic is to be asked now.
    pub fn after(&mut self, it: u64, previous: Option<&[f64]>) -> bool {
        let before = it.saturating_sub(1)..it;
        self.after_period(it..it + 1, previous.map(|row| (before, row)))
    }

    /// The iterations `period` have ended; `previous` holds the period the
    /// gather delivered now (the one before, or `lag` before) and every
    /// device's kernel time per iteration over it (`None` while none has
    /// arrived yet). Returns whether the heuristic is to be asked now.
    pub fn after_period(
        &mut self,
        period: std::ops::Range<u64>,
        previous: Option<(std::ops::Range<u64>, &[f64])>,
    ) -> bool {
        if let Some((before, row)) = previous {
            if before.start >= self.fresh_from {
                for _ in before {
                    self.windows.push(row);
                }
            }
        }
        self.windows.full() && period.end < self.iters
    }

    /// The windows as the heuristic sees them, with each device's rows.
    pub fn snapshot(&self, rows: &[usize]) -> Vec<DeviceWindow> {
        self.windows.snapshot(rows)
    }

    /// A rebalance happened after iteration `it`: the windows restart with
    /// the times of the next iteration.
    pub fn rebalanced(&mut self, it: u64) {
        self.windows.clear();
        self.fresh_from = it + 1;
    }
}

/// Raises tiny weights so that every device with a weight keeps at least
/// `min_rows` of the `rows`, renormalising; a zero weight (a device dropped,
/// `crate::roster`) stays zero. `None` when that cannot be done.
pub fn floor_weights(weights: &[f64], rows: usize, min_rows: usize) -> Option<Vec<f64>> {
    let n = weights.iter().filter(|&&x| x > 0.0).count();
    if n == 0 || n * (min_rows + 1) > rows {
        return None;
    }
    let total: f64 = weights.iter().sum();
    // One row above the minimum absorbs cumulative rounding (at most one row).
    let floor = (min_rows + 1) as f64 / rows as f64;
    let mut w: Vec<f64> = weights.iter().map(|x| x / total).collect();
    let floored = |x: f64| x > 0.0 && x <= floor;
    for _ in 0..n {
        let low: f64 = w.iter().filter(|&&x| floored(x)).count() as f64 * floor;
        let high: f64 = w.iter().filter(|&&x| x > floor).sum();
        if high <= 0.0 {
            return None;
        }
        let scale = (1.0 - low) / high;
        let next: Vec<f64> = w
            .iter()
            .map(|&x| {
                if x == 0.0 {
                    0.0
                } else if x <= floor {
                    floor
                } else {
                    x * scale
                }
            })
            .collect();
        if next.iter().all(|&x| x == 0.0 || x >= floor - 1e-15) {
            return Some(next);
        }
        w = next;
    }
    Some(w)
}

/// The layout a rebalance moves to from `old` (a weighted partition `w<d>`)
/// given the `proposed` weights (one per block, finite, non-negative) and
/// the stencil's reach below and above (`low`, `high`): weights floored so
/// that every block keeps at least the stencil's reach along `d`, with the
/// floored weights. `None` when the blocks would still be too thin (the
/// rebalance is skipped) or `old` is not weighted.
pub fn relayout(
    old: &Layout,
    proposed: &[f64],
    low: &[usize],
    high: &[usize],
) -> Result<Option<(Vec<f64>, Layout)>, HitmapError> {
    let Partition::Weighted(d) = old.partition() else {
        return Ok(None);
    };
    let rows = old.domain().sig(d).card();
    let min_rows = low[d].max(high[d]).max(1);
    let Some(weights) = floor_weights(proposed, rows, min_rows) else {
        return Ok(None);
    };
    let new = Layout::new(old.domain(), old.partition(), old.procs(), Some(&weights))?;
    if new.check_width(low, high).is_err() {
        return Ok(None);
    }
    Ok(Some((weights, new)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_slide() {
        let mut w = Windows::new(2, 3);
        for i in 0..5 {
            w.push(&[i as f64, 10.0 * i as f64]);
        }
        assert!(w.full());
        let s = w.snapshot(&[7, 8]);
        assert_eq!(s[0].samples, vec![2.0, 3.0, 4.0]);
        assert_eq!(s[1].rows, 8);
        w.clear();
        assert!(!w.full());
    }

    /// The first check comes after `window + 1` iterations (one late), the
    /// one after a rebalance `window + 1` iterations after it (the
    /// rebalancing iteration's own time predates the new layout), and the
    /// last iteration is never checked.
    #[test]
    fn checks_come_one_iteration_late_and_restart_after_a_rebalance() {
        let mut c = Cycle::new(2, 3, 0, 12);
        let mut asked = Vec::new();
        for it in 0..12 {
            let prev = (it > 0).then_some([it as f64 - 1.0, 0.0]);
            if c.after(it, prev.as_ref().map(|p| &p[..])) {
                asked.push(it);
                if it == 3 {
                    assert_eq!(c.snapshot(&[1, 1])[0].samples, vec![0.0, 1.0, 2.0]);
                    c.rebalanced(it);
                }
            }
        }
        assert_eq!(asked, vec![3, 7, 8, 9, 10]);
    }

    /// Periods of 3 iterations (deep halos): each period's time counts
    /// for each of its iterations, one period late; checks come at period
    /// ends, the first once the windows are full, never at the run's end.
    #[test]
    fn periods_fill_the_windows_per_iteration_one_period_late() {
        let mut c = Cycle::new(1, 4, 0, 15);
        let mut asked = Vec::new();
        let mut before: Option<(std::ops::Range<u64>, [f64; 1])> = None;
        for p in 0..5u64 {
            let period = 3 * p..3 * p + 3;
            let prev = before.as_ref().map(|(r, t)| (r.clone(), &t[..]));
            if c.after_period(period.clone(), prev) {
                asked.push((period.end - 1, c.snapshot(&[1])[0].samples.clone()));
            }
            before = Some((period, [p as f64]));
        }
        // Full once periods 0 and 1 are in (6 >= 4), i.e. at the end of
        // period 2; never after the last period.
        assert_eq!(
            asked,
            vec![
                (8, vec![0.0, 1.0, 1.0, 1.0]),
                (11, vec![1.0, 2.0, 2.0, 2.0])
            ]
        );
    }

    #[test]
    fn floors_keep_the_sum_and_the_minimum() {
        let f = floor_weights(&[1e-6, 1.0, 1.0], 100, 2).unwrap();
        assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((f[0] - 0.03).abs() < 1e-12);
        assert_eq!(floor_weights(&[1.0; 4], 11, 2), None);
        // A dropped device keeps nothing, and only the others need room.
        let g = floor_weights(&[0.0, 1e-6, 1.0], 100, 2).unwrap();
        assert_eq!(g[0], 0.0);
        assert!(
            (g[1] - 0.03).abs() < 1e-12 && (g[2] - 0.97).abs() < 1e-12,
            "{g:?}"
        );
        assert!(floor_weights(&[0.0, 1.0, 1.0, 1.0], 12, 2).is_some());
        assert_eq!(floor_weights(&[0.0, 0.0], 9, 2), None);
    }
}

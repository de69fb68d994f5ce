//! The automatic load balancing mechanism's pieces that are not device
//! work: configuration, the per-device moving windows, and the new weights.
//!
//! A heuristic of your own (the example of docs/alb.md): rebalance whenever
//! the slowest device's median kernel time is 20% above the fastest's.
//!
//! ```
//! use epsilod::{Alb, DeviceSpec, Partition, Skeleton, Stencil};
//! use heuristics::{Decision, Heuristic, Snapshot};
//! use kernels::{KernelChoice, Library};
//!
//! struct Spread(f64);
//!
//! impl Heuristic for Spread {
//!     fn name(&self) -> &str {
//!         "spread"
//!     }
//!     fn check(&mut self, s: &Snapshot<'_>) -> Decision {
//!         let medians: Vec<f64> = s.devices.iter().map(|d| d.median()).collect();
//!         let (lo, hi) = medians.iter().fold((f64::MAX, 0.0f64), |(l, h), &m| (l.min(m), h.max(m)));
//!         Decision::when(hi > self.0 * lo).with("spread", hi / lo)
//!     }
//! }
//!
//! let out = Skeleton::new(&[258, 258], Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized))
//!     .iterations(120)
//!     .devices(vec![
//!         DeviceSpec::parse("cpu:threads=1").unwrap(),
//!         DeviceSpec::parse("cpu:threads=1,slowdown=3").unwrap(),
//!     ])
//!     .partition(Partition::Weighted(0))
//!     .alb(Alb::custom("spread", || Box::new(Spread(1.2))))
//!     .run()
//!     .unwrap();
//! assert!(out.report.summary.rebalances >= 1);
//! ```

use heuristics::{DeviceWindow, Heuristic};
use std::collections::VecDeque;
use std::sync::Arc;

/// Makes one heuristic instance (each virtual process runs its own).
pub type HeuristicFactory = Arc<dyn Fn() -> Box<dyn Heuristic> + Send + Sync>;

/// Load balancing for a run: which heuristic, and the moving-average window.
#[derive(Clone)]
pub struct Alb {
    /// The heuristic's name, as reports show it.
    pub name: String,
    /// Makes each virtual process its copy of the heuristic.
    pub factory: HeuristicFactory,
    /// Iterations in the moving window (EPSILOD: 30). No decision until full.
    pub window: usize,
    /// Spare rows allocated on each side of a block along the balanced
    /// dimension, as a fraction of its rows: rebalances that stay within it
    /// move rows without reallocating.
    pub spare: f64,
}

impl Alb {
    /// A built-in heuristic as the command line writes it,
    /// `name[:key=value,...]` (see `heuristics::BUILTIN`); `none` is no load
    /// balancing. Reports name it in canonical form.
    pub fn parse(text: &str) -> Result<Option<Alb>, heuristics::SpecError> {
        let spec: heuristics::HeuristicSpec = text.parse()?;
        Ok(Alb::builtin(spec))
    }

    /// A built-in heuristic with its parameters; `None` for `none`.
    pub fn builtin(spec: heuristics::HeuristicSpec) -> Option<Alb> {
        if spec.name() == "none" {
            return None;
        }
        Some(Alb::custom(&spec.to_string(), move || spec.build()))
    }

    /// Your own heuristic.
    pub fn custom(
        name: &str,
        factory: impl Fn() -> Box<dyn Heuristic> + Send + Sync + 'static,
    ) -> Alb {
        Alb {
            name: name.to_string(),
            factory: Arc::new(factory),
            window: 30,
            spare: 1.0,
        }
    }

    /// Iterations in the moving window (at least 2).
    pub fn window(mut self, w: usize) -> Alb {
        self.window = w.max(2);
        self
    }
}

/// Every device's last `len` kernel times.
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

/// Raises tiny weights so that every device keeps at least `min_rows` of the
/// `rows`, renormalising; `None` when that cannot be done.
pub fn floor_weights(weights: &[f64], rows: usize, min_rows: usize) -> Option<Vec<f64>> {
    let n = weights.len();
    if n * (min_rows + 1) > rows {
        return None;
    }
    let total: f64 = weights.iter().sum();
    // One row above the minimum absorbs cumulative rounding (at most one row).
    let floor = (min_rows + 1) as f64 / rows as f64;
    let mut w: Vec<f64> = weights.iter().map(|x| x / total).collect();
    for _ in 0..n {
        let low: f64 = w.iter().filter(|&&x| x <= floor).count() as f64 * floor;
        let high: f64 = w.iter().filter(|&&x| x > floor).sum();
        if high <= 0.0 {
            return None;
        }
        let scale = (1.0 - low) / high;
        let next: Vec<f64> = w
            .iter()
            .map(|&x| if x <= floor { floor } else { x * scale })
            .collect();
        if next.iter().all(|&x| x >= floor - 1e-15) {
            return Some(next);
        }
        w = next;
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hitmap::{Layout, Partition, Shape};
    use proptest::prelude::*;

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

    proptest! {
        #[test]
        fn floored_weights_keep_every_block_wide_enough(w in prop::collection::vec(0.0001f64..10.0, 1..6),
                                                        rows in 10usize..300, min in 1usize..4) {
            let Some(f) = floor_weights(&w, rows, min) else {
                prop_assert!(w.len() * (min + 1) > rows);
                return Ok(());
            };
            prop_assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            let dom = Shape::from_ranges(&[(0, rows as i64), (0, 4)]);
            let l = Layout::new(&dom, Partition::Weighted(0), w.len(), Some(&f)).unwrap();
            for b in l.blocks() {
                prop_assert!(b.sig(0).card() >= min, "{:?} {:?}", f, l.blocks());
            }
        }
    }
}

//! Load balancing configuration. The mechanism's other pieces that are not
//! device work (the per-device moving windows, when to ask the heuristic,
//! the floor on new weights) are `heuristics::cycle`, shared with the
//! simulator.
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

use heuristics::Heuristic;
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
    /// Bytes of each time level in one message of rows moved by a rebalance
    /// (at least one row each; kernels that read the previous level send
    /// both levels of a slab's rows together): a region goes as slabs, so
    /// the sender packs one while the receiver unpacks the one before, and
    /// no buffer of the whole region is allocated (and faulted in page by
    /// page) at either end.
    pub slab_bytes: usize,
    /// Processes up to which each posts its kernel time to every other
    /// every period; more gather them along a tree, one round a period
    /// (`heuristics::gather`): default [`heuristics::gather::DIRECT_UP_TO`].
    pub direct_times_up_to: usize,
    /// A device whose throughput is below this fraction of the fastest's
    /// gets no rows at a rebalance, and comes back past twice it
    /// (`heuristics::roster`): default [`heuristics::DROP_BELOW`]; 0 keeps
    /// every device, as EPSILOD does.
    pub drop_below: f64,
    /// Heuristic checks that did not rebalance the report keeps, the
    /// latest ones (every check that did is kept): default
    /// [`heuristics::CHECKS_KEPT`]; the summary counts the others.
    pub checks_kept: usize,
}

/// The default [`Alb::slab_bytes`]: rows moved in slabs of this size
/// overlap their sending and receiving, where one message moves them in
/// series (docs/benchmarks.md, "Moved rows in slabs").
pub const SLAB_BYTES: usize = 1 << 20;

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
            window: heuristics::WINDOW,
            spare: 1.0,
            slab_bytes: SLAB_BYTES,
            direct_times_up_to: heuristics::gather::DIRECT_UP_TO,
            drop_below: heuristics::DROP_BELOW,
            checks_kept: heuristics::CHECKS_KEPT,
        }
    }

    /// Iterations in the moving window (at least 2).
    pub fn window(mut self, w: usize) -> Alb {
        self.window = w.max(2);
        self
    }

    /// Processes up to which times go to every process directly
    /// ([`Alb::direct_times_up_to`]; the report records it, and the
    /// simulator's trace mode replays it).
    pub fn direct_times_up_to(mut self, procs: usize) -> Alb {
        self.direct_times_up_to = procs.max(1);
        self
    }

    /// The throughput, as a fraction of the fastest device's, below which
    /// a device is dropped ([`Alb::drop_below`]; clamped to 0..0.5).
    pub fn drop_below(mut self, fraction: f64) -> Alb {
        self.drop_below = heuristics::Roster::new(0, fraction).drop_below();
        self
    }

    /// Checks that did not rebalance the report keeps ([`Alb::checks_kept`]).
    pub fn checks_kept(mut self, checks: usize) -> Alb {
        self.checks_kept = checks;
        self
    }

    /// Bytes of each level in one message of moved rows ([`Alb::slab_bytes`]).
    pub fn slab_bytes(mut self, bytes: usize) -> Alb {
        self.slab_bytes = bytes.max(1);
        self
    }
}

#[cfg(test)]
mod tests {
    use heuristics::floor_weights;
    use hitmap::{Layout, Partition, Shape};
    use proptest::prelude::*;

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

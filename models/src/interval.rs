//! A predicted loop time as a distribution: its median and a 90% interval
//! from the noise calibration measured, drawn as `simulate` draws it
//! (each kernel time times a lognormal factor of mean 1 and the device's
//! `cv`, independent per iteration), and the slow spells a shared machine
//! has, which last a whole run: each run's kernels times a lognormal of
//! median 1 and the device's `spell` (the log spread of its speed between
//! passes), drawn once per run.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal, StandardNormal};
use serde::{Deserialize, Serialize};

/// The interval's probability: from its 5th to its 95th percentile.
pub const INTERVAL_LEVEL: f64 = 0.90;

/// Runs drawn for the distribution.
const RUNS: usize = 1000;

/// Iterations drawn once and shared by every run: a run's loop time is
/// their mean and spread times the run's iterations (the central limit:
/// iteration noise is independent), so long runs cost no more to draw.
const ITERATIONS: usize = 1024;

/// The draws' seed: a prediction is the same every time it is made.
const SEED: u64 = 0x5eed;

/// One device's iteration as its kernels' noise factor `f` moves it:
/// `before · f + max(exchange, overlapped · f) + after` (`Overlap`: the
/// border, then the exchange behind the inner rows, then the skeleton's
/// overhead; the additive methods: compute before, exchange after).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationShape {
    /// Kernel seconds before the exchange.
    pub before: f64,
    /// Kernel seconds the exchange runs behind.
    pub overlapped: f64,
    /// Exchange seconds.
    pub exchange: f64,
    /// Seconds no noise moves.
    pub after: f64,
    /// Per-iteration noise: the kernel time's coefficient of variation.
    pub cv: f64,
    /// Slow spells: the log spread of a run's kernel speed.
    pub spell: f64,
}

impl IterationShape {
    fn at(&self, f: f64) -> f64 {
        self.before * f + self.exchange.max(self.overlapped * f) + self.after
    }
}

/// A loop time's median and its [`INTERVAL_LEVEL`] interval, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoopInterval {
    /// The median loop time.
    pub median: f64,
    /// The interval's lower end (5th percentile).
    pub low: f64,
    /// Its upper end (95th percentile).
    pub high: f64,
}

/// The loop time of `iterations` iterations, each the slowest device's
/// of `shapes`, under the noise each shape carries.
pub fn loop_interval(shapes: &[IterationShape], iterations: u64) -> LoopInterval {
    let n = iterations as f64;
    let mut rng = StdRng::seed_from_u64(SEED);
    let lognormal = |cv: f64| {
        (cv > 0.0).then(|| {
            let s2 = (1.0 + cv * cv).ln();
            LogNormal::new(-s2 / 2.0, s2.sqrt()).expect("a finite positive sigma")
        })
    };
    let dists: Vec<_> = shapes.iter().map(|s| lognormal(s.cv)).collect();
    let noise: Vec<Vec<f64>> = (0..ITERATIONS)
        .map(|_| {
            dists
                .iter()
                .map(|d| d.as_ref().map_or(1.0, |d| d.sample(&mut rng)))
                .collect()
        })
        .collect();
    let mut loops = Vec::with_capacity(RUNS);
    let mut spells = vec![1.0; shapes.len()];
    for _ in 0..RUNS {
        for (s, shape) in spells.iter_mut().zip(shapes) {
            let z: f64 = StandardNormal.sample(&mut rng);
            *s = (shape.spell * z).exp();
        }
        let (mut sum, mut sq) = (0.0, 0.0);
        for row in &noise {
            let it = shapes
                .iter()
                .zip(row)
                .zip(&spells)
                .map(|((shape, e), s)| shape.at(e * s))
                .fold(0.0, f64::max);
            sum += it;
            sq += it * it;
        }
        let m = ITERATIONS as f64;
        let mean = sum / m;
        let sd = (sq / m - mean * mean).max(0.0).sqrt();
        let z: f64 = StandardNormal.sample(&mut rng);
        loops.push((n * mean + n.sqrt() * sd * z).max(0.0));
    }
    loops.sort_by(f64::total_cmp);
    let at = |q: f64| loops[((RUNS - 1) as f64 * q).round() as usize];
    let tail = (1.0 - INTERVAL_LEVEL) / 2.0;
    LoopInterval {
        median: at(0.5),
        low: at(tail),
        high: at(1.0 - tail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(before: f64, overlapped: f64, cv: f64, spell: f64) -> IterationShape {
        IterationShape {
            before,
            overlapped,
            exchange: 1e-4,
            after: 1e-5,
            cv,
            spell,
        }
    }

    /// Without noise every run is the point prediction.
    #[test]
    fn no_noise_is_the_point() {
        let s = [shape(1e-4, 1e-3, 0.0, 0.0), shape(2e-4, 5e-4, 0.0, 0.0)];
        let i = loop_interval(&s, 300);
        let point = 300.0 * (1e-4 + 1e-3 + 1e-5);
        for x in [i.median, i.low, i.high] {
            assert!((x / point - 1.0).abs() < 1e-12, "{i:?}");
        }
    }

    /// Per-iteration noise averages out over a long loop; a slow spell,
    /// drawn once per run, does not: the 90% interval of a lone device is
    /// its spread's `exp(±1.645 σ)`.
    #[test]
    fn spells_widen_the_interval_and_iteration_noise_averages_out() {
        let noisy = loop_interval(&[shape(0.0, 1e-3, 0.2, 0.0)], 10_000);
        assert!(noisy.high / noisy.low < 1.02, "{noisy:?}");
        let spelled = loop_interval(&[shape(0.0, 1e-3, 0.0, 0.1)], 10_000);
        let want = (2.0 * 1.645 * 0.1f64).exp();
        assert!(
            (spelled.high / spelled.low / want - 1.0).abs() < 0.05,
            "{spelled:?}"
        );
        assert!((spelled.median / 10.1 - 1.0).abs() < 0.02, "{spelled:?}");
        // The same draws every time.
        assert_eq!(
            spelled,
            loop_interval(&[shape(0.0, 1e-3, 0.0, 0.1)], 10_000)
        );
    }

    /// The slowest of two noisy devices is slower on average than either:
    /// the median sits above the noiseless point.
    #[test]
    fn the_slowest_of_noisy_devices_is_later_than_the_point() {
        let s = [shape(0.0, 1e-3, 0.3, 0.0), shape(0.0, 1e-3, 0.3, 0.0)];
        let i = loop_interval(&s, 1000);
        let point = 1000.0 * (1e-3 + 1e-5);
        assert!(i.low > point, "{i:?}");
        assert!(i.low <= i.median && i.median <= i.high);
    }
}

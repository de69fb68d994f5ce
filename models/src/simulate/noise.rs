//! Kernel-time noise: lognormal, or resampled from a real run's ratios.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};

use super::{SimDevice, SimError};

/// Where a modelled kernel time's factor `ε` comes from.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum NoiseSource {
    /// Lognormal of mean 1 and each device's `cv` (none when it is 0).
    #[default]
    Lognormal,
    /// Drawn with replacement from measured ratios (every device alike,
    /// whatever its `cv`): a real run's kernel times over their local
    /// median ([`noise_ratios`]), stalls and all. A shared machine's kernel
    /// times have tails a lognormal of the robust spread never produces,
    /// and the t-test of `welch` reacts to exactly those.
    Resampled {
        /// The ratios, each source device's in iteration order.
        ratios: Vec<f64>,
        /// Consecutive ratios a device takes from one random start before
        /// it draws a new start (1: independent draws). Stalls come in
        /// spells; blocks keep them. A block may run from one source
        /// device's ratios into the next's.
        block: usize,
    },
}

/// Iterations either side of a kernel time whose median is its baseline in
/// [`noise_ratios`]: an odd window of 31, the ALB window's length.
pub const RATIO_HALF_WINDOW: usize = 15;

/// A real run's kernel-time noise as ratios: each device's seconds per row
/// in each iteration (from `skip` on, rows > 0) over the median of its
/// seconds per row in the [`RATIO_HALF_WINDOW`] iterations either side.
/// The local median follows rebalances and slowdowns: a step in speed
/// distorts no ratio, since a centred window always holds a majority from
/// the iteration's own side of the step. What is left is the noise itself,
/// stalls included, relative to the median, as calibration's seconds per
/// cell is a median too. `compute[i][d]` and `rows[i][d]` are the report's
/// kernel seconds and rows.
pub fn noise_ratios(
    compute: &[Vec<f64>],
    rows: &[Vec<usize>],
    skip: usize,
) -> Result<Vec<f64>, SimError> {
    if rows.len() != compute.len() {
        return Err(SimError::TraceShape {
            what: "iterations of rows",
            needed: compute.len(),
            got: rows.len(),
        });
    }
    let devices = compute.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for d in 0..devices {
        let series: Vec<f64> = compute
            .iter()
            .zip(rows)
            .skip(skip)
            .filter_map(|(c, r)| match (c.get(d), r.get(d)) {
                (Some(&t), Some(&n)) if n > 0 && t.is_finite() && t >= 0.0 => Some(t / n as f64),
                _ => None,
            })
            .collect();
        for (i, &x) in series.iter().enumerate() {
            let lo = i.saturating_sub(RATIO_HALF_WINDOW);
            let hi = (i + RATIO_HALF_WINDOW + 1).min(series.len());
            let base = heuristics::median(&series[lo..hi]);
            if base > 0.0 {
                out.push(x / base);
            }
        }
    }
    if out.is_empty() {
        return Err(SimError::NoNoise);
    }
    Ok(out)
}

/// A modelled kernel time's factor per device: lognormal of mean 1 and
/// coefficient of variation `cv`, or resampled from measured ratios.
pub(super) struct Noise {
    rng: StdRng,
    dists: Vec<Option<LogNormal<f64>>>,
    ratios: Vec<f64>,
    block: usize,
    /// Per device: the next ratio's index and how many its block has left.
    cursor: Vec<(usize, usize)>,
}

impl Noise {
    pub(super) fn new(devices: &[SimDevice], seed: u64, source: &NoiseSource) -> Noise {
        if let NoiseSource::Resampled { ratios, block } = source {
            return Noise {
                rng: StdRng::seed_from_u64(seed),
                dists: Vec::new(),
                ratios: ratios.clone(),
                block: (*block).max(1),
                cursor: vec![(0, 0); devices.len()],
            };
        }
        let dists = devices
            .iter()
            .map(|d| {
                (d.cv > 0.0).then(|| {
                    let s2 = (1.0 + d.cv * d.cv).ln();
                    LogNormal::new(-s2 / 2.0, s2.sqrt()).expect("a finite positive sigma")
                })
            })
            .collect();
        Noise {
            rng: StdRng::seed_from_u64(seed),
            dists,
            ratios: Vec::new(),
            block: 1,
            cursor: Vec::new(),
        }
    }

    pub(super) fn draw(&mut self, d: usize) -> f64 {
        if !self.ratios.is_empty() {
            let (next, left) = &mut self.cursor[d];
            if *left == 0 || *next >= self.ratios.len() {
                *next = self.rng.gen_range(0..self.ratios.len());
                *left = self.block;
            }
            let x = self.ratios[*next];
            *next += 1;
            *left -= 1;
            return x;
        }
        match &self.dists[d] {
            Some(l) => l.sample(&mut self.rng),
            None => 1.0,
        }
    }
}

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
    /// Resampled from a real run's kernel times over their median nearby
    /// ([`noise_ratios`]), stalls and all, whatever the devices' `cv`. A
    /// shared machine's kernel times have tails a lognormal of the robust
    /// spread never produces, and the t-test of `welch` reacts to exactly
    /// those. Every device takes the same measured iteration at once
    /// (modelled device `d` its source device `d mod width`'s ratio), so
    /// what slowed every core together stays a slowdown of all of them,
    /// which no heuristic should answer.
    Resampled {
        /// One row per measured iteration: the ratio of each source
        /// device.
        ratios: Vec<Vec<f64>>,
        /// Consecutive measured iterations taken from one random start
        /// before a new start is drawn (1: independent draws). Stalls and
        /// slow spells come in runs; blocks keep them.
        block: usize,
    },
}

/// The default iterations either side of a kernel time whose median is its
/// baseline in [`noise_ratios`]: an odd window of 31, the ALB window's
/// length, so only the noise within one window is kept.
pub const RATIO_HALF_WINDOW: usize = 15;

/// A real run's kernel-time noise as ratios: each device's seconds per row
/// in each iteration (from `skip` on, rows > 0) over the median of its
/// seconds per row in the `half_window` iterations either side
/// ([`RATIO_HALF_WINDOW`] by default).
/// The local median follows rebalances and slowdowns: a step in speed
/// distorts no ratio, since a centred window always holds a majority from
/// the iteration's own side of the step. What is left is the noise itself,
/// stalls included, relative to the median, as calibration's seconds per
/// cell is a median too. `compute[i][d]` and `rows[i][d]` are the report's
/// kernel seconds and rows.
///
/// A wider window keeps slow spells too: on a shared machine a device runs
/// 20-30% slower for a few hundred iterations at a time, which moves the
/// windows' means apart, and that is what makes the heuristics rebalance
/// again and again (measured: 6-16 rebalances in real runs where ratios
/// over the default window gave 2). Resample those in blocks as long.
pub fn noise_ratios(
    compute: &[Vec<f64>],
    rows: &[Vec<usize>],
    skip: usize,
    half_window: usize,
) -> Result<Vec<Vec<f64>>, SimError> {
    if rows.len() != compute.len() {
        return Err(SimError::TraceShape {
            what: "iterations of rows",
            needed: compute.len(),
            got: rows.len(),
        });
    }
    let devices = compute.iter().map(Vec::len).max().unwrap_or(0);
    // Per iteration, each device's seconds per row; None where it had no
    // rows or no usable time.
    let per_row: Vec<Vec<Option<f64>>> = compute
        .iter()
        .zip(rows)
        .skip(skip)
        .map(|(c, r)| {
            (0..devices)
                .map(|d| match (c.get(d), r.get(d)) {
                    (Some(&t), Some(&n)) if n > 0 && t.is_finite() && t >= 0.0 => {
                        Some(t / n as f64)
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    let mut ratio = vec![vec![None; devices]; per_row.len()];
    for d in 0..devices {
        // The device's usable times, with the iteration each came from.
        let (at, series): (Vec<usize>, Vec<f64>) = per_row
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r[d].map(|x| (i, x)))
            .unzip();
        for (k, &x) in series.iter().enumerate() {
            let lo = k.saturating_sub(half_window);
            let hi = (k + half_window + 1).min(series.len());
            let base = heuristics::median(&series[lo..hi]);
            if base > 0.0 {
                ratio[at[k]][d] = Some(x / base);
            }
        }
    }
    // Only iterations where every device has a ratio: the devices' noise
    // stays together.
    let out: Vec<Vec<f64>> = ratio
        .into_iter()
        .filter_map(|r| r.into_iter().collect::<Option<Vec<f64>>>())
        .collect();
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
    ratios: Vec<Vec<f64>>,
    block: usize,
    /// The block the last draw fell in, and the measured iteration it
    /// started from.
    current: Option<(u64, usize)>,
}

impl Noise {
    pub(super) fn new(devices: &[SimDevice], seed: u64, source: &NoiseSource) -> Noise {
        if let NoiseSource::Resampled { ratios, block } = source {
            return Noise {
                rng: StdRng::seed_from_u64(seed),
                dists: Vec::new(),
                ratios: ratios.clone(),
                block: (*block).max(1),
                current: None,
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
            current: None,
        }
    }

    /// Device `d`'s factor at iteration `it`. Resampled draws depend on
    /// the iteration only (one start per block of iterations), so which
    /// devices are live does not change the others' noise.
    pub(super) fn draw(&mut self, d: usize, it: u64) -> f64 {
        if !self.ratios.is_empty() {
            let b = it / self.block as u64;
            let start = match self.current {
                Some((cur, start)) if cur == b => start,
                _ => {
                    let start = self.rng.gen_range(0..self.ratios.len());
                    self.current = Some((b, start));
                    start
                }
            };
            let row = &self.ratios[(start + (it % self.block as u64) as usize) % self.ratios.len()];
            return row[d % row.len()];
        }
        match &self.dists[d] {
            Some(l) => l.sample(&mut self.rng),
            None => 1.0,
        }
    }
}

//! From measurements to a machine: a device's seconds per cell (median,
//! spread) from its per-iteration kernel times, and a link class's models
//! from ping-pong times. The measuring is `epsilod calibrate`'s; this is the
//! arithmetic, so it can be tested on synthetic data.

use serde::{Deserialize, Serialize};

use crate::link::{Hockney, LogGp, Overheads, Piecewise, Sample};
use crate::predict::{Device, LinkClass};
use crate::{check_finite, ModelError};

/// A device from its per-iteration seconds per cell (kernel seconds over
/// the cells it computed): the median, and as its spread the robust
/// coefficient of variation `1.4826 · MAD / median` (the standard
/// deviation's estimate for normal noise). Both ignore the odd iteration a
/// shared machine stalls for milliseconds, which would otherwise make the
/// simulator's noise wild (one stall can make a plain CV of several).
pub fn device(name: &str, seconds_per_cell: &[f64]) -> Result<Device, ModelError> {
    if seconds_per_cell.is_empty() {
        return Err(ModelError::TooFewPoints {
            what: "a device calibration",
            needed: 1,
            got: 0,
        });
    }
    for &s in seconds_per_cell {
        check_finite("seconds per cell", s)?;
    }
    let median = heuristics::median(seconds_per_cell);
    let deviations: Vec<f64> = seconds_per_cell
        .iter()
        .map(|s| (s - median).abs())
        .collect();
    let mad = heuristics::median(&deviations);
    let mut d = Device::new(name, median);
    d.cv = if median > 0.0 {
        MAD_TO_SD * mad / median
    } else {
        0.0
    };
    d.samples = seconds_per_cell.len();
    Ok(d)
}

/// One calibration pass of a device: the cells of its block and its kernel
/// seconds of each iteration kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Cells the device computed each iteration.
    pub cells: f64,
    /// Kernel seconds, one per iteration.
    pub seconds: Vec<f64>,
}

/// An intercept is a fixed cost only beyond this many of its standard
/// errors.
pub const INTERCEPT_SE: f64 = 2.0;

/// Tile sizes closer than this fraction give no slope: the difference of
/// their medians would be noise over a tiny run of cells.
pub const MIN_CELL_SPREAD: f64 = 0.1;

/// A device from passes at several tile sizes: its kernel time per
/// iteration as the line `a + b · cells` through each pass's median (least
/// squares weighted by `1/t²`: relative errors), `fixed_seconds = a` and
/// `seconds_per_cell = b`. Medians, not
/// every sample, so that a stall does not tilt the line. When the line
/// cannot be trusted (tiles within [`MIN_CELL_SPREAD`] of each other, a
/// negative intercept or a slope that is not positive: cache effects or
/// noise; or, with more points than two, an intercept within
/// [`INTERCEPT_SE`] standard errors of 0, the error estimated from the
/// residuals, which a tile measured twice turns into the machine's drift
/// between passes) the device gets no fixed cost and the slope of a line
/// through the origin, `Σ c·t / Σ c²`, which is the median seconds per cell
/// of a single pass. The spread (`cv`) is the last pass's robust spread of seconds per
/// cell, as [`device`] gives it; the slow spells (`spell`) are [`spell`]'s;
/// `samples` counts every pass.
pub fn device_line(name: &str, passes: &[Pass]) -> Result<Device, ModelError> {
    let Some(last) = passes.last() else {
        return Err(ModelError::TooFewPoints {
            what: "a device calibration",
            needed: 1,
            got: 0,
        });
    };
    let points = medians(passes)?;
    let per_cell: Vec<f64> = last.seconds.iter().map(|s| s / last.cells).collect();
    let mut d = device(name, &per_cell)?;
    d.samples = passes.iter().map(|p| p.seconds.len()).sum();
    d.spell = spell(passes);
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &(c, _)| {
            (lo.min(c), hi.max(c))
        });
    let line = if hi > lo * (1.0 + MIN_CELL_SPREAD) {
        // Weighted by 1/t²: a machine's drift scales its kernel times, so
        // a large tile's absolute error is larger and should not swamp the
        // small tile that shows the fixed cost (unweighted, a drifting
        // device's fixed cost was lost and its small tiles predicted
        // several times too fast).
        let w: Vec<f64> = points.iter().map(|p| 1.0 / (p.1 * p.1)).collect();
        let sw: f64 = w.iter().sum();
        let mc = points.iter().zip(&w).map(|(p, w)| w * p.0).sum::<f64>() / sw;
        let mt = points.iter().zip(&w).map(|(p, w)| w * p.1).sum::<f64>() / sw;
        let sxy: f64 = points
            .iter()
            .zip(&w)
            .map(|(p, w)| w * (p.0 - mc) * (p.1 - mt))
            .sum();
        let sxx: f64 = points
            .iter()
            .zip(&w)
            .map(|(p, w)| w * (p.0 - mc).powi(2))
            .sum();
        let b = sxy / sxx;
        let a = mt - b * mc;
        // The intercept's standard error, from the residuals when there
        // are degrees of freedom left (none with two points: the line is
        // exact, and believed).
        let se = if points.len() > 2 {
            let ssr: f64 = points
                .iter()
                .zip(&w)
                .map(|(p, w)| w * (p.1 - a - b * p.0).powi(2))
                .sum();
            let n = points.len() as f64;
            (ssr / (n - 2.0) * (1.0 / sw + mc * mc / sxx)).sqrt()
        } else {
            0.0
        };
        (b > 0.0 && a >= 0.0 && a > INTERCEPT_SE * se).then_some((a, b))
    } else {
        None
    };
    let (a, b) = line.unwrap_or_else(|| {
        let cc: f64 = points.iter().map(|p| p.0 * p.0).sum();
        let ct: f64 = points.iter().map(|p| p.0 * p.1).sum();
        (0.0, ct / cc)
    });
    d.fixed_seconds = a;
    d.seconds_per_cell = b;
    Ok(d)
}

/// Blocks a pass's iterations are cut into for [`spell`].
pub const SPELL_BLOCKS: usize = 4;

/// The log spread of a device's speed over spells longer than an
/// iteration: the larger of two estimates. Between passes of one tile
/// (cells within [`MIN_CELL_SPREAD`]): the RMS of the log differences of
/// their median seconds per cell over `√2` (each pass one draw). Within
/// the last pass: the standard deviation of the logs of its
/// [`SPELL_BLOCKS`] blocks' medians (none below two iterations a block).
/// Passes are taken as checked.
pub fn spell(passes: &[Pass]) -> f64 {
    let rate = |p: &Pass| heuristics::median(&p.seconds) / p.cells;
    let (mut sum, mut pairs) = (0.0, 0usize);
    for (i, a) in passes.iter().enumerate() {
        for b in &passes[i + 1..] {
            let near = a.cells.max(b.cells) <= a.cells.min(b.cells) * (1.0 + MIN_CELL_SPREAD);
            if near && rate(a) > 0.0 && rate(b) > 0.0 {
                sum += (rate(a) / rate(b)).ln().powi(2);
                pairs += 1;
            }
        }
    }
    let between = if pairs > 0 {
        (sum / (2.0 * pairs as f64)).sqrt()
    } else {
        0.0
    };
    let within = passes.last().map_or(0.0, |p| {
        let size = p.seconds.len() / SPELL_BLOCKS;
        if size < 2 {
            return 0.0;
        }
        let logs: Vec<f64> = p
            .seconds
            .chunks_exact(size)
            .take(SPELL_BLOCKS)
            .map(heuristics::median)
            .filter(|&m| m > 0.0)
            .map(f64::ln)
            .collect();
        if logs.len() < 2 {
            return 0.0;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    });
    between.max(within)
}

/// Each pass's cells and median kernel seconds, the passes checked.
fn medians(passes: &[Pass]) -> Result<Vec<(f64, f64)>, ModelError> {
    let mut points = Vec::with_capacity(passes.len());
    for p in passes {
        let c = check_finite("cells", p.cells)?;
        if c <= 0.0 {
            return Err(ModelError::InvalidValue {
                what: "cells",
                value: c,
            });
        }
        timings(&p.seconds, "a device calibration pass", "kernel seconds")?;
        points.push((c, heuristics::median(&p.seconds)));
    }
    Ok(points)
}

/// Checks the repeated timings of one measurement (`what`): at least one,
/// each a finite number of `each`.
fn timings(seconds: &[f64], what: &'static str, each: &'static str) -> Result<(), ModelError> {
    if seconds.is_empty() {
        return Err(ModelError::TooFewPoints {
            what,
            needed: 1,
            got: 0,
        });
    }
    for &s in seconds {
        check_finite(each, s)?;
    }
    Ok(())
}

/// A tile's factor must leave the line by this many of the line's own
/// noise (the RMS of its passes' log residuals) to be believed.
pub const TILE_NOISE_BAND: f64 = 2.0;

/// The least noise a line's passes are taken to have: two passes that
/// happen to agree must not make every small departure significant.
pub const MIN_TILE_NOISE: f64 = 0.05;

/// A device's tile curve ([`Device::tile_curve`]): its kernel time at the
/// tile sizes of `sweep` (`calibrate --tile-sweep`) over its line's time
/// there (the line fitted to `line`). Three rules keep noise out, so that a
/// factor other than 1 is a departure every pass of a tile shows:
/// - tiles within [`MIN_CELL_SPREAD`] of one another are one point that
///   departs only as far as its least departing pass; at and between the
///   line's own tiles the factor is 1;
/// - a factor within [`TILE_NOISE_BAND`] times the line's noise (at least
///   [`MIN_TILE_NOISE`]) of 1 is 1;
/// - factors never fall as tiles grow (a monotone fit in logs).
///
/// A curve whose factors are all 1 is empty: the line alone.
pub fn tile_curve(
    device: &Device,
    line: &[Pass],
    sweep: &[Pass],
) -> Result<Vec<(f64, f64)>, ModelError> {
    let at = |c: f64| device.fixed_seconds + device.seconds_per_cell * c;
    let log_factor = |(c, t): (f64, f64)| {
        if t > 0.0 {
            Ok((t / at(c)).ln())
        } else {
            Err(ModelError::InvalidValue {
                what: "kernel seconds",
                value: t,
            })
        }
    };
    let own = medians(line)?;
    if own.is_empty() {
        return Err(ModelError::TooFewPoints {
            what: "a tile curve's line",
            needed: 1,
            got: 0,
        });
    }
    let mut residual = 0.0;
    for &p in &own {
        residual += log_factor(p)?.powi(2);
    }
    let band = TILE_NOISE_BAND * (residual / own.len() as f64).sqrt().max(MIN_TILE_NOISE);
    // (cells, log factor, one of the line's tiles), every tile measured.
    let mut points: Vec<(f64, f64, bool)> = own.iter().map(|&(c, _)| (c, 0.0, true)).collect();
    for p in medians(sweep)? {
        let f = log_factor(p)?;
        points.push((p.0, if f.abs() <= band { 0.0 } else { f }, false));
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Groups of near tiles: log cells, log factor, the line's.
    let mut groups: Vec<(f64, f64, bool)> = Vec::new();
    let mut start = 0;
    for k in 1..=points.len() {
        if k == points.len() || points[k].0 > points[start].0 * (1.0 + MIN_CELL_SPREAD) {
            let g = &points[start..k];
            let n = g.len() as f64;
            let lc = g.iter().map(|p| p.0.ln()).sum::<f64>() / n;
            let line_tile = g.iter().any(|p| p.2);
            let lf = if line_tile {
                0.0
            } else {
                confirmed(g.iter().map(|p| p.1))
            };
            groups.push((lc, lf, line_tile));
            start = k;
        }
    }
    let first = groups
        .iter()
        .position(|g| g.2)
        .expect("the line has a tile");
    let last = groups
        .iter()
        .rposition(|g| g.2)
        .expect("the line has a tile");
    let fit = |range: std::ops::Range<usize>| {
        non_decreasing(&groups[range].iter().map(|g| g.1).collect::<Vec<_>>())
    };
    let factors: Vec<f64> = fit(0..first)
        .into_iter()
        .map(|f| f.min(0.0))
        .chain(std::iter::repeat_n(0.0, last + 1 - first))
        .chain(fit(last + 1..groups.len()).into_iter().map(|f| f.max(0.0)))
        .collect();
    if factors.iter().all(|&f| f == 0.0) {
        return Ok(Vec::new());
    }
    Ok(groups
        .iter()
        .zip(factors)
        .map(|(g, f)| (g.0.exp(), f.exp()))
        .collect())
}

/// The departure every one of `log_factors` shows: the one nearest 0
/// when all lie on one side of it, else 0.
fn confirmed(log_factors: impl Iterator<Item = f64>) -> f64 {
    let (lo, hi) = log_factors.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), f| {
        (lo.min(f), hi.max(f))
    });
    if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        hi
    } else {
        0.0
    }
}

/// The least-squares non-decreasing fit to `values` in order (pool
/// adjacent violators): each run of values that falls is replaced by its
/// mean, until none falls.
fn non_decreasing(values: &[f64]) -> Vec<f64> {
    // Blocks of (sum, values pooled).
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(values.len());
    for &v in values {
        blocks.push((v, 1));
        while let [.., (s0, n0), (s1, n1)] = blocks[..] {
            if s0 / n0 as f64 <= s1 / n1 as f64 {
                break;
            }
            blocks.pop();
            *blocks.last_mut().expect("two blocks") = (s0 + s1, n0 + n1);
        }
    }
    blocks
        .into_iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s / n as f64, n))
        .collect()
}

/// The median absolute deviation times this estimates a normal
/// distribution's standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// One message size's ping-pong: every repetition's one-way time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingPong {
    /// Message bytes.
    pub bytes: f64,
    /// One-way seconds (half a round trip), one per repetition.
    pub seconds: Vec<f64>,
}

/// Rivera's statistic: the mean without the smallest and the largest
/// (plain mean below three values), and the squared standard error of
/// that mean.
fn trimmed(xs: &[f64]) -> (f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() >= 3 {
        v = v[1..v.len() - 1].to_vec();
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var / n)
}

/// A link class from ping-pong times over message sizes: each size's
/// trimmed mean is one sample; Hockney and LogGP (with `overheads`
/// measured apart) by least squares; the piecewise model's penalty is the
/// samples' own noise, `ln n · Σ se²` (a Schwarz-style criterion: a
/// breakpoint must explain more than the measurement noise of all the
/// points), so protocol steps show and noise does not.
pub fn link(name: &str, pings: &[PingPong], overheads: Overheads) -> Result<LinkClass, ModelError> {
    let mut samples = Vec::with_capacity(pings.len());
    let mut noise = 0.0;
    for p in pings {
        check_finite("message bytes", p.bytes)?;
        timings(
            &p.seconds,
            "a message size's ping-pong",
            "ping-pong seconds",
        )?;
        let (mean, se2) = trimmed(&p.seconds);
        samples.push(Sample::new(p.bytes, mean));
        noise += se2;
    }
    let hockney = Hockney::fit(&samples)?;
    let loggp = LogGp::fit(&samples, overheads)?;
    let penalty = (samples.len() as f64).ln().max(1.0) * noise;
    let piecewise = Piecewise::fit(&samples, penalty)?;
    let mut class = LinkClass::from_hockney(name, hockney);
    class.loggp = loggp;
    class.piecewise = Some(piecewise);
    class.samples = samples;
    Ok(class)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn sizes() -> Vec<f64> {
        std::iter::once(0.0)
            .chain((0..=20).map(|p| f64::from(4u32 << p)))
            .collect()
    }

    fn pings(f: impl Fn(f64) -> f64, noise: f64, seed: u64) -> Vec<PingPong> {
        let mut rng = StdRng::seed_from_u64(seed);
        sizes()
            .into_iter()
            .map(|b| PingPong {
                bytes: b,
                seconds: (0..32)
                    .map(|_| f(b) * (1.0 + noise * rng.gen_range(-1.0..1.0)))
                    .collect(),
            })
            .collect()
    }

    /// modelling.md §6.1 test 2: alpha = 5 us, beta = 0.2 ns/B with 5%
    /// noise come back within 3%, and no breakpoint is invented.
    #[test]
    fn hockney_is_recovered_from_noisy_ping_pongs() {
        for seed in 0..5 {
            let l = link(
                "l",
                &pings(|b| 5e-6 + 2e-10 * b, 0.05, seed),
                Overheads::default(),
            )
            .unwrap();
            assert!(
                (l.hockney.alpha / 5e-6 - 1.0).abs() < 0.03,
                "{:?}",
                l.hockney
            );
            assert!(
                (l.hockney.beta / 2e-10 - 1.0).abs() < 0.03,
                "{:?}",
                l.hockney
            );
            assert_eq!(
                l.piecewise.unwrap().breakpoints(),
                Vec::<f64>::new(),
                "seed {seed}"
            );
            assert_eq!(l.samples.len(), sizes().len());
        }
    }

    /// A step at 4 KiB (an eager limit) is found within one size bin.
    #[test]
    fn a_protocol_step_is_detected() {
        for seed in 0..5 {
            let f = |b: f64| {
                if b < 4096.0 {
                    2e-6 + 1e-10 * b
                } else {
                    2e-5 + 1e-10 * b
                }
            };
            let l = link("l", &pings(f, 0.05, seed), Overheads::default()).unwrap();
            let bp = l.piecewise.unwrap().breakpoints();
            assert!(!bp.is_empty(), "seed {seed}");
            assert!(
                bp.iter().any(|&b| (2048.0..=8192.0).contains(&b)),
                "seed {seed}: {bp:?}"
            );
        }
    }

    fn pass(cells: f64, a: f64, b: f64, noise: &[f64]) -> Pass {
        Pass {
            cells,
            seconds: noise.iter().map(|e| (a + b * cells) * e).collect(),
        }
    }

    /// Two tile sizes recover the line; a stall in either pass does not
    /// move it (medians); the result predicts a third size exactly.
    #[test]
    fn a_line_through_two_tile_sizes_gives_the_fixed_cost() {
        let noise = [1.0, 1.01, 0.99, 1.0, 40.0];
        let d = device_line(
            "cpu",
            &[
                pass(500.0, 2e-4, 1e-9, &noise),
                pass(60_000.0, 2e-4, 1e-9, &noise),
            ],
        )
        .unwrap();
        assert!((d.fixed_seconds / 2e-4 - 1.0).abs() < 1e-9, "{d:?}");
        assert!((d.seconds_per_cell / 1e-9 - 1.0).abs() < 1e-9, "{d:?}");
        assert_eq!(d.samples, 10);
        assert!((d.time(1e6) - (2e-4 + 1e-3)).abs() < 1e-12);
        // The old single-rate model would have made the small tile 300x
        // cheaper per cell than it is.
        let single = device_line("cpu", &[pass(60_000.0, 2e-4, 1e-9, &noise)]).unwrap();
        assert_eq!(single.fixed_seconds, 0.0);
        assert!((single.seconds_per_cell - (2e-4 / 6e4 + 1e-9)).abs() < 1e-18);
    }

    /// No trustworthy line: equal tiles, a negative intercept (the larger
    /// tile dearer per cell, out of cache), a falling time. Each falls back
    /// to no fixed cost and the slope through the origin.
    #[test]
    fn an_untrustworthy_line_falls_back_to_the_rate_through_the_origin() {
        let one = [1.0];
        let cases = [
            [
                pass(1000.0, 1e-4, 1e-9, &one),
                pass(1050.0, 1e-4, 1e-9, &one),
            ],
            [pass(1000.0, 0.0, 1e-9, &one), pass(4000.0, 0.0, 2e-9, &one)],
            [
                pass(1000.0, 0.0, 4e-9, &one),
                pass(4000.0, 0.0, 0.5e-9, &one),
            ],
        ];
        for passes in cases {
            let d = device_line("cpu", &passes).unwrap();
            assert_eq!(d.fixed_seconds, 0.0, "{passes:?}");
            let t = |p: &Pass| p.seconds[0];
            let origin = (passes[0].cells * t(&passes[0]) + passes[1].cells * t(&passes[1]))
                / (passes[0].cells.powi(2) + passes[1].cells.powi(2));
            assert!((d.seconds_per_cell / origin - 1.0).abs() < 1e-12, "{d:?}");
            assert!(d.seconds_per_cell > 0.0);
        }
        assert!(device_line("cpu", &[]).is_err());
        assert!(device_line("cpu", &[pass(0.0, 0.0, 1e-9, &one)]).is_err());
        let empty = Pass {
            cells: 10.0,
            seconds: vec![],
        };
        assert!(device_line("cpu", &[empty]).is_err());
    }

    /// The first tile measured twice (A, B, A): a small drift between the
    /// passes leaves a real fixed cost standing; a drift as large as the
    /// intercept makes it noise, and the device falls back to the rate.
    #[test]
    fn a_tile_measured_twice_decides_whether_the_intercept_is_believed() {
        let one = [1.0];
        let aba = |drift: f64, a: f64| {
            device_line(
                "cpu",
                &[
                    pass(4e6, a, 5e-11, &one),
                    pass(4e6, a, 5e-11, &[1.0 + drift]),
                    pass(5e5, a, 5e-11, &one),
                ],
            )
            .unwrap()
        };
        // The 15-thread CPU beside the GPU: 0.3 ms fixed, a 2% drift.
        let d = aba(0.02, 3e-4);
        assert!((d.fixed_seconds / 3e-4 - 1.0).abs() < 0.3, "{d:?}");
        // The same beside an H200, whose host moved the device's speed by
        // 25% between passes (A 1.55 ms, A' 1.94 ms over 33.5 M cells, B
        // 0.46 ms over 3.5 M): the fixed cost stands.
        let h200 = device_line(
            "cpu",
            &[
                Pass {
                    cells: 33.5e6,
                    seconds: vec![1.55e-3],
                },
                Pass {
                    cells: 33.5e6,
                    seconds: vec![1.94e-3],
                },
                Pass {
                    cells: 3.5e6,
                    seconds: vec![0.46e-3],
                },
            ],
        )
        .unwrap();
        assert!(
            (h200.fixed_seconds / 3.15e-4 - 1.0).abs() < 0.05,
            "{h200:?}"
        );
        // Load drift on a shared VM: 20 µs "fixed" beside a 200 µs tile
        // measured 30% slower the second time, which alone would put the
        // intercept at 15 µs.
        let d = aba(0.3, 2e-5);
        assert_eq!(d.fixed_seconds, 0.0, "{d:?}");
    }

    /// Two passes of one tile 20% apart make a spell of `ln 1.2 / √2`;
    /// a quiet pass alone none; a pass whose second half ran 30% slower
    /// the spread of its blocks' logs.
    #[test]
    fn spells_come_from_repeated_tiles_and_blocks() {
        let flat = |cells: f64, t: f64| Pass {
            cells,
            seconds: vec![t; 8],
        };
        let s = spell(&[
            flat(1e6, 1e-3),
            flat(2e5, 1e-4),
            flat(1.05e6, 1.2e-3 * 1.05),
        ]);
        assert!((s - 1.2f64.ln() / 2f64.sqrt()).abs() < 1e-12, "{s}");
        assert_eq!(spell(&[flat(1e6, 1e-3)]), 0.0);
        let mut slow = flat(1e6, 1e-3);
        for t in &mut slow.seconds[4..] {
            *t *= 1.3;
        }
        // Logs 0, 0, l, l (l = ln 1.3): mean l/2, sample sd l/√3.
        let want = 1.3f64.ln() / 3f64.sqrt();
        assert!((spell(&[slow.clone()]) - want).abs() < 1e-12);
        let d = device_line("cpu", &[flat(1e6, 1e-3), slow]).unwrap();
        // Between the passes ln 1.15 / √2, under the blocks' spread.
        assert!((d.spell - want).abs() < 1e-12, "{d:?}");
    }

    #[test]
    fn devices_take_the_median_and_spread() {
        let d = device("cpu", &[1e-9, 1.1e-9, 0.9e-9, 5e-9]).unwrap();
        assert!((d.seconds_per_cell - 1.05e-9).abs() < 1e-20);
        assert_eq!(d.samples, 4);
        // Deviations 0.05, 0.05, 0.15, 3.95 (e-9): MAD 0.1e-9, the stall
        // ignored.
        assert!((d.cv - 1.4826 * 0.1 / 1.05).abs() < 1e-9, "{}", d.cv);
        assert!(device("cpu", &[]).is_err());
        assert!(matches!(
            device("cpu", &[f64::NAN]),
            Err(ModelError::InvalidValue { .. })
        ));
        let empty = PingPong {
            bytes: 4.0,
            seconds: vec![],
        };
        assert!(link("l", &[empty], Overheads::default()).is_err());
    }

    fn tiled(d: &Device, cells: f64, factor: f64) -> Pass {
        let t = (d.fixed_seconds + d.seconds_per_cell * cells) * factor;
        Pass {
            cells,
            seconds: vec![t * 0.9, t, t * 1.3],
        }
    }

    /// The curve's factors are the sweep's medians over the line, never
    /// falling as tiles grow: below the line's tiles at most 1, above at
    /// least 1, and 1 at the line's tiles and tiles near them.
    #[test]
    fn a_tile_curve_is_the_sweeps_medians_over_the_line() {
        let d = Device::new("d", 1e-9).with_fixed(1e-5);
        let line = [tiled(&d, 4e5, 1.0), tiled(&d, 8e5, 1.0)];
        let sweep = [
            tiled(&d, 3.2e6, 0.85),
            tiled(&d, 1e5, 0.5),
            tiled(&d, 4.04e5, 0.5),
            tiled(&d, 2e5, 1.2),
            tiled(&d, 1.6e6, 1.3),
            tiled(&d, 5e4, 0.6),
        ];
        let curve = tile_curve(&d, &line, &sweep).unwrap();
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs();
        // 5e4 and 1e5 fall (0.6, 0.5): pooled to 0.3^(1/2); 2e5 is slower
        // than the line, held to 1; 4.04e5 joins the line's 4e5 at 1; 1.6e6
        // and 3.2e6 fall (1.3, 0.85): pooled to (1.105)^(1/2), above 1.
        let want = [
            (5e4, 0.3f64.sqrt()),
            (1e5, 0.3f64.sqrt()),
            (2e5, 1.0),
            ((4e5f64 * 4.04e5).sqrt(), 1.0),
            (8e5, 1.0),
            (1.6e6, 1.105f64.sqrt()),
            (3.2e6, 1.105f64.sqrt()),
        ];
        assert_eq!(curve.len(), want.len(), "{curve:?}");
        for (got, want) in curve.iter().zip(want) {
            assert!(close(got.0, want.0) && close(got.1, want.1), "{curve:?}");
        }
    }

    /// A tile measured twice departs by the lesser of its two departures,
    /// and not at all when they disagree in sign.
    #[test]
    fn a_departure_must_show_in_every_pass_of_a_tile() {
        let d = Device::new("d", 1e-9);
        let line = [tiled(&d, 4e5, 1.0)];
        let curve = |a: f64, b: f64| {
            tile_curve(&d, &line, &[tiled(&d, 2e6, a), tiled(&d, 2e6, b)]).unwrap()
        };
        let c = curve(2.0, 1.3);
        assert!((c[1].1 - 1.3).abs() < 1e-12, "{c:?}");
        let c = curve(0.6, 0.8);
        assert!(
            c.is_empty(),
            "larger tiles run no faster than the line: {c:?}"
        );
        assert!(curve(1.5, 0.7).is_empty());
        let c = tile_curve(&d, &line, &[tiled(&d, 1e5, 0.6), tiled(&d, 1e5, 0.8)]).unwrap();
        assert!((c[0].1 - 0.8).abs() < 1e-12, "{c:?}");
    }

    /// Departures within the line's noise band are no departures: a
    /// sweep within 10% of a quiet line leaves the line alone, and a line
    /// whose passes disagree by 40% widens the band past a 25% departure.
    #[test]
    fn departures_within_the_noise_are_the_line() {
        let d = Device::new("d", 1e-9);
        let quiet = [tiled(&d, 4e5, 1.0), tiled(&d, 8e5, 1.0)];
        let small = [tiled(&d, 1e5, 0.92), tiled(&d, 2e6, 1.08)];
        assert_eq!(tile_curve(&d, &quiet, &small).unwrap(), vec![]);
        let big = [tiled(&d, 1e5, 0.75)];
        let curve = tile_curve(&d, &quiet, &big).unwrap();
        assert_eq!(curve.len(), 3, "{curve:?}");
        assert!((curve[0].0 - 1e5).abs() < 1e-6 && (curve[0].1 - 0.75).abs() < 1e-12);
        assert!(
            curve[1..].iter().all(|p| (p.1 - 1.0).abs() < 1e-12),
            "{curve:?}"
        );
        // Between the line's tiles the line is the model, whatever a sweep
        // tile there says.
        assert_eq!(
            tile_curve(&d, &quiet, &[tiled(&d, 6e5, 0.5)]).unwrap(),
            vec![]
        );
        let noisy = [
            tiled(&d, 4e5, 1.2),
            tiled(&d, 4e5, 0.8),
            tiled(&d, 8e5, 1.0),
        ];
        assert_eq!(tile_curve(&d, &noisy, &big).unwrap(), vec![]);
    }

    #[test]
    fn bad_tile_curve_inputs_are_refused() {
        let d = Device::new("d", 1e-9);
        assert!(matches!(
            tile_curve(&d, &[], &[tiled(&d, 1e5, 1.0)]),
            Err(ModelError::TooFewPoints { .. })
        ));
        let zero = Pass {
            cells: 1e5,
            seconds: vec![0.0],
        };
        assert_eq!(
            tile_curve(&d, &[tiled(&d, 4e5, 1.0)], &[zero])
                .unwrap_err()
                .to_string(),
            "invalid value for kernel seconds: 0"
        );
    }

    proptest::proptest! {
        /// The monotone fit is the least-squares one, by its min-max
        /// formula (fit_k = max over i <= k of min over j >= k of the mean
        /// of values i..=j), and leaves values that never fall as they are.
        #[test]
        fn the_monotone_fit_is_the_least_squares_one(
            values in proptest::collection::vec(-2.0f64..2.0, 1..12),
        ) {
            let fit = non_decreasing(&values);
            proptest::prop_assert_eq!(fit.len(), values.len());
            let mean = |i: usize, j: usize| values[i..=j].iter().sum::<f64>() / (j + 1 - i) as f64;
            let n = values.len();
            for (k, &f) in fit.iter().enumerate() {
                let want = (0..=k)
                    .map(|i| (k..n).map(|j| mean(i, j)).fold(f64::INFINITY, f64::min))
                    .fold(f64::NEG_INFINITY, f64::max);
                proptest::prop_assert!((f - want).abs() < 1e-12, "{k}: {fit:?}");
            }
            if values.windows(2).all(|w| w[0] <= w[1]) {
                proptest::prop_assert_eq!(fit, values);
            }
        }
    }
}

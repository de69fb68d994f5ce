//! Link models: the time to move a message of `m` bytes, and least-squares
//! fits of each model to ping-pong samples.

use serde::{Deserialize, Serialize};

use crate::{check_finite, ModelError};

/// One ping-pong measurement: message size and one-way time (half the round
/// trip).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Message size in bytes.
    pub bytes: f64,
    /// One-way time in seconds.
    pub seconds: f64,
}

impl Sample {
    /// A sample of `bytes` taking `seconds` one way.
    pub fn new(bytes: f64, seconds: f64) -> Self {
        Self { bytes, seconds }
    }
}

/// Ordinary least squares `seconds = a + b·bytes` over `samples`.
fn least_squares(samples: &[Sample]) -> Result<(f64, f64), ModelError> {
    for s in samples {
        check_finite("sample bytes", s.bytes)?;
        check_finite("sample seconds", s.seconds)?;
    }
    let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.bytes, s.seconds)).collect();
    crate::fit::line(&points, "a linear fit")
}

/// Hockney's model: `T(m) = alpha + beta·m`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hockney {
    /// Start-up latency in seconds.
    pub alpha: f64,
    /// Seconds per byte (the inverse of the bandwidth).
    pub beta: f64,
}

impl Hockney {
    /// Fits alpha and beta by least squares. A negative intercept (noise on
    /// a tiny latency) is clamped to zero, since a link cannot deliver
    /// before it is asked to.
    pub fn fit(samples: &[Sample]) -> Result<Self, ModelError> {
        let (a, b) = least_squares(samples)?;
        Ok(Self {
            alpha: a.max(0.0),
            beta: b.max(0.0),
        })
    }

    /// Predicted one-way time of an `bytes`-byte message.
    pub fn time(&self, bytes: f64) -> f64 {
        self.alpha + self.beta * bytes
    }

    /// Bandwidth in bytes per second (infinite when beta is zero).
    pub fn bandwidth(&self) -> f64 {
        1.0 / self.beta
    }
}

/// LogGP parameters (Alexandrov et al.): latency `l`, send and receive
/// overheads `o_s`, `o_r`, gap between messages `g`, and gap per byte `big_g`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogGp {
    /// Network latency in seconds.
    pub l: f64,
    /// Send overhead in seconds.
    pub o_s: f64,
    /// Receive overhead in seconds.
    pub o_r: f64,
    /// Minimum gap between consecutive messages, in seconds.
    pub g: f64,
    /// Gap per byte of a long message, in seconds per byte.
    pub big_g: f64,
}

/// The overheads and message gap of a link, measured apart from the
/// ping-pong (e.g. by Doerfler & Brightwell's method, or a message-rate
/// test for `g`): a ping-pong only sees their sum with `l`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Overheads {
    /// Send overhead in seconds.
    pub o_s: f64,
    /// Receive overhead in seconds.
    pub o_r: f64,
    /// Gap between messages in seconds.
    pub g: f64,
}

impl LogGp {
    /// One message of `bytes` bytes: `o_s + (k−1)·G + L + o_r` with
    /// `k = max(bytes, 1)` (modelling.md §2.4).
    pub fn time(&self, bytes: f64) -> f64 {
        let k = bytes.max(1.0);
        self.o_s + (k - 1.0) * self.big_g + self.l + self.o_r
    }

    /// Fits LogGP from ping-pong samples. The slope of the one-way time is
    /// `G`; the intercept is `o_s + L + o_r − G`, so `L` follows once the
    /// overheads are known. A ping-pong cannot separate `L` from the
    /// overheads, hence `overheads` is an input; with zero overheads all
    /// fixed cost lands in `L`, which predicts the same single-message time.
    pub fn fit(samples: &[Sample], overheads: Overheads) -> Result<Self, ModelError> {
        check_finite("o_s", overheads.o_s)?;
        check_finite("o_r", overheads.o_r)?;
        check_finite("g", overheads.g)?;
        let (a, b) = least_squares(samples)?;
        let big_g = b.max(0.0);
        let l = (a + big_g - overheads.o_s - overheads.o_r).max(0.0);
        Ok(Self {
            l,
            o_s: overheads.o_s,
            o_r: overheads.o_r,
            g: overheads.g,
            big_g,
        })
    }
}

/// One linear piece of a [`Piecewise`] model, valid from `from_bytes` up to
/// the next piece.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Smallest message size this piece covers.
    pub from_bytes: f64,
    /// The line on this piece.
    pub line: Hockney,
}

/// A piecewise-linear link model: protocol switches (eager to rendezvous,
/// TCP buffer sizes) put steps and slope changes into the time curve that
/// one Hockney line averages away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Piecewise {
    /// Pieces in increasing `from_bytes`; the first starts at the smallest
    /// sampled size.
    pub segments: Vec<Segment>,
}

impl Piecewise {
    /// Segmented least squares (Bellman's dynamic programme): over samples
    /// sorted by size, choose the breakpoints that minimise the total
    /// squared error plus `penalty` per segment. Each segment holds at least
    /// two distinct sizes. The penalty is in seconds², so scale it to the
    /// noise: a segment is added only when it cuts the squared error by
    /// more than `penalty`.
    pub fn fit(samples: &[Sample], penalty: f64) -> Result<Self, ModelError> {
        check_finite("penalty", penalty)?;
        let mut s: Vec<Sample> = samples.to_vec();
        for x in &s {
            check_finite("sample bytes", x.bytes)?;
            check_finite("sample seconds", x.seconds)?;
        }
        s.sort_by(|a, b| a.bytes.total_cmp(&b.bytes));
        let n = s.len();
        if n < 2 {
            return Err(ModelError::TooFewPoints {
                what: "a piecewise fit",
                needed: 2,
                got: n,
            });
        }
        // fit_err(i, j): one line through s[i..=j] and its squared error;
        // None when the range has a single distinct size.
        let fit_err = |i: usize, j: usize| -> Option<(Hockney, f64)> {
            let part = &s[i..=j];
            let (a, b) = least_squares(part).ok()?;
            let line = Hockney { alpha: a, beta: b };
            let e = part
                .iter()
                .map(|p| (p.seconds - line.time(p.bytes)).powi(2))
                .sum();
            Some((line, e))
        };
        let mut best = vec![f64::INFINITY; n + 1];
        let mut cut = vec![usize::MAX; n + 1];
        best[0] = 0.0;
        let lines: Vec<Vec<Option<(Hockney, f64)>>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i < j { fit_err(i, j) } else { None })
                    .collect()
            })
            .collect();
        for j in 1..=n {
            for i in 0..j.saturating_sub(1) {
                if let Some((_, e)) = lines[i][j - 1] {
                    let c = best[i] + e + penalty;
                    if c < best[j] {
                        best[j] = c;
                        cut[j] = i;
                    }
                }
            }
        }
        if !best[n].is_finite() {
            return Err(ModelError::DegenerateSizes);
        }
        let mut segments = Vec::new();
        let mut j = n;
        while j > 0 {
            let i = cut[j];
            let (line, _) = lines[i][j - 1].expect("chosen segments were fitted");
            segments.push(Segment {
                from_bytes: s[i].bytes,
                line,
            });
            j = i;
        }
        segments.reverse();
        Ok(Self { segments })
    }

    /// The sizes where a new piece starts (all but the first piece).
    pub fn breakpoints(&self) -> Vec<f64> {
        self.segments.iter().skip(1).map(|s| s.from_bytes).collect()
    }

    /// Predicted time of a `bytes`-byte message: the last piece starting at
    /// or below `bytes` (the first piece below its start).
    pub fn time(&self, bytes: f64) -> f64 {
        let seg = self
            .segments
            .iter()
            .rev()
            .find(|s| s.from_bytes <= bytes)
            .or(self.segments.first());
        seg.map_or(0.0, |s| s.line.time(bytes).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<f64> {
        (0..=22)
            .map(|p| if p == 0 { 0.0 } else { f64::from(1u32 << p) })
            .collect()
    }

    /// Deterministic noise in [-1, 1] so that tests need no RNG crate.
    fn noise(i: usize) -> f64 {
        let x = (i as f64 * 12.9898).sin() * 43758.5453;
        2.0 * (x - x.floor()) - 1.0
    }

    #[test]
    fn hockney_recovers_exact_parameters() {
        let s: Vec<Sample> = sizes()
            .into_iter()
            .map(|b| Sample::new(b, 3e-6 + 2e-10 * b))
            .collect();
        let h = Hockney::fit(&s).unwrap();
        assert!((h.alpha - 3e-6).abs() < 1e-12, "{h:?}");
        assert!((h.beta - 2e-10).abs() / 2e-10 < 1e-9, "{h:?}");
    }

    #[test]
    fn hockney_noisy_within_tolerance() {
        let s: Vec<Sample> = (0..200)
            .map(|i| {
                let b = i as f64 * 20_000.0;
                let t = 5e-5 + 1e-9 * b;
                Sample::new(b, t * (1.0 + 0.02 * noise(i)))
            })
            .collect();
        let h = Hockney::fit(&s).unwrap();
        assert!((h.beta - 1e-9).abs() / 1e-9 < 0.02, "{h:?}");
        assert!((h.alpha - 5e-5).abs() < 2e-5, "{h:?}");
    }

    #[test]
    fn hockney_rejects_degenerate_input() {
        assert!(matches!(
            Hockney::fit(&[Sample::new(8.0, 1.0)]),
            Err(ModelError::TooFewPoints { .. })
        ));
        let same = [Sample::new(8.0, 1.0), Sample::new(8.0, 2.0)];
        assert_eq!(Hockney::fit(&same), Err(ModelError::DegenerateSizes));
        let nan = [Sample::new(8.0, f64::NAN), Sample::new(9.0, 2.0)];
        assert!(matches!(
            Hockney::fit(&nan),
            Err(ModelError::InvalidValue { .. })
        ));
    }

    #[test]
    fn loggp_fit_recovers_parameters_given_overheads() {
        let truth = LogGp {
            l: 4e-6,
            o_s: 1e-6,
            o_r: 1.5e-6,
            g: 2e-6,
            big_g: 5e-10,
        };
        let s: Vec<Sample> = sizes()
            .into_iter()
            .map(|b| Sample::new(b.max(1.0), truth.time(b)))
            .collect();
        let fit = LogGp::fit(
            &s,
            Overheads {
                o_s: 1e-6,
                o_r: 1.5e-6,
                g: 2e-6,
            },
        )
        .unwrap();
        assert!((fit.l - truth.l).abs() < 1e-12, "{fit:?}");
        assert!(
            (fit.big_g - truth.big_g).abs() / truth.big_g < 1e-9,
            "{fit:?}"
        );
        assert_eq!(fit.g, truth.g);
        for b in [1.0, 1e3, 1e6] {
            assert!((fit.time(b) - truth.time(b)).abs() < 1e-12);
        }
    }

    #[test]
    fn loggp_formula_matches_definition() {
        let p = LogGp {
            l: 10.0,
            o_s: 1.0,
            o_r: 2.0,
            g: 0.0,
            big_g: 0.5,
        };
        assert_eq!(p.time(1.0), 13.0);
        assert_eq!(p.time(5.0), 15.0);
    }

    #[test]
    fn piecewise_finds_planted_break() {
        // A step and a slope change at 64 KiB, as a TCP buffer produces.
        let s: Vec<Sample> = (1..=40)
            .map(|i| {
                let b = i as f64 * 4096.0;
                let t = if b < 65536.0 {
                    2e-6 + 1e-9 * b
                } else {
                    5e-5 + 3e-9 * b
                };
                Sample::new(b, t * (1.0 + 0.001 * noise(i)))
            })
            .collect();
        let p = Piecewise::fit(&s, 1e-12).unwrap();
        assert_eq!(p.breakpoints(), vec![65536.0], "{p:?}");
        assert!((p.time(8192.0) - (2e-6 + 1e-9 * 8192.0)).abs() < 1e-7);
        assert!((p.time(1e5) - (5e-5 + 3e-9 * 1e5)).abs() < 1e-6);
    }

    #[test]
    fn piecewise_keeps_one_segment_on_a_line() {
        let s: Vec<Sample> = (1..=30)
            .map(|i| Sample::new(i as f64 * 1000.0, 1e-6 + 1e-9 * i as f64 * 1000.0))
            .collect();
        let p = Piecewise::fit(&s, 1e-15).unwrap();
        assert!(p.breakpoints().is_empty(), "{p:?}");
    }
}

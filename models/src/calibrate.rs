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
/// simulator's noise wild: one 5 ms stall among 48 iterations of 70 µs
/// gave a plain CV of 5.
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
        if p.seconds.is_empty() {
            return Err(ModelError::TooFewPoints {
                what: "a message size's ping-pong",
                needed: 1,
                got: 0,
            });
        }
        for &s in &p.seconds {
            check_finite("ping-pong seconds", s)?;
        }
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
}

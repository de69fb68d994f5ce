//! The simulator's scenario options as the command line writes them:
//! `H:F@ITER` (a slow host) and `FRACTION:F@A..B` (thermal drift on a share
//! of the devices), parsed into types that apply themselves to devices.

use std::str::FromStr;

use rand::rngs::StdRng;
use rand::SeedableRng;
use thiserror::Error;

use crate::simulate::{Drift, SimDevice, Slowdown};

/// A scenario option that does not parse, with what was expected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad {what} '{text}': {why}")]
pub struct ScenarioError {
    /// Which option.
    pub what: &'static str,
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

fn number<T: FromStr>(
    what: &'static str,
    text: &str,
    part: &str,
    expected: &str,
) -> Result<T, ScenarioError> {
    part.trim().parse::<T>().map_err(|_| ScenarioError {
        what,
        text: text.to_string(),
        why: format!("'{part}' is not {expected}"),
    })
}

fn factor(what: &'static str, text: &str, part: &str) -> Result<f64, ScenarioError> {
    let f: f64 = number(what, text, part, "a number")?;
    if f.is_finite() && f > 0.0 {
        Ok(f)
    } else {
        Err(ScenarioError {
            what,
            text: text.to_string(),
            why: format!("the factor must be a finite number > 0, got {part}"),
        })
    }
}

/// Every device of one host slower by a factor from an iteration on: an
/// anomalous node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowHost {
    /// The host.
    pub host: usize,
    /// Its slowdown.
    pub slowdown: Slowdown,
}

impl FromStr for SlowHost {
    type Err = ScenarioError;
    /// `H:F` or `H:F@ITER`.
    fn from_str(text: &str) -> Result<SlowHost, ScenarioError> {
        const WHAT: &str = "slow host";
        let (host, rest) = text.split_once(':').ok_or_else(|| ScenarioError {
            what: WHAT,
            text: text.to_string(),
            why: "expected HOST:FACTOR or HOST:FACTOR@ITER".into(),
        })?;
        let (f, from) = rest.split_once('@').unwrap_or((rest, "0"));
        let slower = factor(WHAT, text, f)?;
        if slower < 1.0 {
            return Err(ScenarioError {
                what: WHAT,
                text: text.to_string(),
                why: format!("a slow host's factor is 1 or more (F times slower), got {f}"),
            });
        }
        Ok(SlowHost {
            host: number(WHAT, text, host, "a host number")?,
            slowdown: Slowdown {
                factor: slower,
                from: number(WHAT, text, from, "an iteration")?,
            },
        })
    }
}

impl SlowHost {
    /// Slows every device on the host.
    pub fn apply(&self, devices: &mut [SimDevice]) {
        for d in devices.iter_mut().filter(|d| d.host == self.host) {
            d.slowdowns.push(self.slowdown);
        }
    }
}

/// Thermal drift on a fraction of the devices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriftSpec {
    /// Share of the devices that drift, in (0, 1].
    pub fraction: f64,
    /// Their drift.
    pub drift: Drift,
}

impl FromStr for DriftSpec {
    type Err = ScenarioError;
    /// `FRACTION:F@A..B`.
    fn from_str(text: &str) -> Result<DriftSpec, ScenarioError> {
        const WHAT: &str = "drift";
        let bad = |why: &str| ScenarioError {
            what: WHAT,
            text: text.to_string(),
            why: why.to_string(),
        };
        let (frac, rest) = text
            .split_once(':')
            .ok_or_else(|| bad("expected FRACTION:FACTOR@FROM..UNTIL"))?;
        let (f, span) = rest
            .split_once('@')
            .ok_or_else(|| bad("expected FRACTION:FACTOR@FROM..UNTIL"))?;
        let (a, b) = span
            .split_once("..")
            .ok_or_else(|| bad("expected an iteration span FROM..UNTIL"))?;
        let fraction: f64 = number(WHAT, text, frac, "a fraction")?;
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(bad("the fraction must be in (0, 1]"));
        }
        let (from, until): (u64, u64) = (
            number(WHAT, text, a, "an iteration")?,
            number(WHAT, text, b, "an iteration")?,
        );
        if until <= from {
            return Err(bad("the span must end after it starts"));
        }
        Ok(DriftSpec {
            fraction,
            drift: Drift {
                factor: factor(WHAT, text, f)?,
                from,
                until,
            },
        })
    }
}

impl DriftSpec {
    /// Gives the drift to `ceil(fraction · N)` devices drawn by `seed`;
    /// returns their indices, sorted.
    pub fn apply(&self, devices: &mut [SimDevice], seed: u64) -> Vec<usize> {
        let n = devices.len();
        let k = ((self.fraction * n as f64).ceil() as usize).min(n);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut picked = rand::seq::index::sample(&mut rng, n, k).into_vec();
        picked.sort_unstable();
        for &i in &picked {
            devices[i].drift = Some(self.drift);
        }
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn slow_hosts_parse() {
        let s: SlowHost = "3:2.5@100".parse().unwrap();
        assert_eq!((s.host, s.slowdown.factor, s.slowdown.from), (3, 2.5, 100));
        let s: SlowHost = "0:2".parse().unwrap();
        assert_eq!(s.slowdown.from, 0);
        assert_eq!(
            "x:2".parse::<SlowHost>().unwrap_err().to_string(),
            "bad slow host 'x:2': 'x' is not a host number"
        );
        assert!("1:0".parse::<SlowHost>().unwrap_err().why.contains("> 0"));
        assert!("1:0.5"
            .parse::<SlowHost>()
            .unwrap_err()
            .why
            .contains("a slow host's factor is 1 or more"));
        assert!("12".parse::<SlowHost>().is_err());
    }

    #[test]
    fn drifts_parse_and_pick_their_share() {
        let d: DriftSpec = "0.1:1.5@100..900".parse().unwrap();
        assert_eq!(d.drift.factor, 1.5);
        let mut devices: Vec<SimDevice> = (0..1024)
            .map(|i| SimDevice::new(format!("{i}"), 1e-9))
            .collect();
        let picked = d.apply(&mut devices, 7);
        assert_eq!(picked.len(), 103);
        assert_eq!(devices.iter().filter(|x| x.drift.is_some()).count(), 103);
        assert_eq!(d.apply(&mut devices.clone(), 7), picked);
        for bad in [
            "0:1.5@1..2",
            "1.5:1.5@1..2",
            "0.1:1.5@5..5",
            "0.1:1.5",
            "0.1:1.5@a..9",
        ] {
            assert!(bad.parse::<DriftSpec>().is_err(), "{bad}");
        }
    }

    proptest! {
        /// Any text is an option or one error, never a panic.
        #[test]
        fn options_never_panic(text in ".{0,24}|[0-9.:@]{0,16}") {
            let _ = text.parse::<SlowHost>();
            let _ = text.parse::<DriftSpec>();
        }
    }
}

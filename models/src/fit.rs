//! Least-squares fits the models share: a line, and a power law as a line
//! in log-log space.

use serde::{Deserialize, Serialize};

use crate::ModelError;

/// Ordinary least squares `y = a + b·x` over `(x, y)` points, as `(a, b)`.
/// `what` names the fit in errors.
pub(crate) fn line(points: &[(f64, f64)], what: &'static str) -> Result<(f64, f64), ModelError> {
    if points.len() < 2 {
        return Err(ModelError::TooFewPoints {
            what,
            needed: 2,
            got: points.len(),
        });
    }
    for &(x, y) in points {
        for (name, v) in [("x", x), ("y", y)] {
            if !v.is_finite() {
                return Err(ModelError::InvalidValue {
                    what: name,
                    value: v,
                });
            }
        }
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return Err(ModelError::DegenerateSizes);
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    Ok((my - b * mx, b))
}

/// `y = coefficient · x^exponent`, fitted as a line through `(ln x, ln y)`
/// (P3S's regressions of message volume and compute time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerLaw {
    /// The value at `x = 1`.
    pub coefficient: f64,
    /// How `y` scales with `x`: -1 for work split evenly over `x` parts.
    pub exponent: f64,
}

impl PowerLaw {
    /// The least-squares power law through `points`, every coordinate
    /// positive. Two distinct `x` at least.
    pub fn fit(points: &[(f64, f64)]) -> Result<PowerLaw, ModelError> {
        for &(x, y) in points {
            for (what, v) in [("power-law x", x), ("power-law y", y)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(ModelError::InvalidValue { what, value: v });
                }
            }
        }
        let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
        let (a, b) = line(&logs, "a power-law fit")?;
        Ok(PowerLaw {
            coefficient: a.exp(),
            exponent: b,
        })
    }

    /// The law at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.coefficient * x.powf(self.exponent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_power_law_is_recovered_exactly() {
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0]
            .iter()
            .map(|&x| (x, 3.0 * f64::powf(x, -0.5)))
            .collect();
        let law = PowerLaw::fit(&pts).unwrap();
        assert!((law.coefficient - 3.0).abs() < 1e-12);
        assert!((law.exponent + 0.5).abs() < 1e-12);
        assert!((law.at(16.0) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn bad_inputs_are_named() {
        assert_eq!(
            PowerLaw::fit(&[(1.0, 1.0), (2.0, 0.0)]),
            Err(ModelError::InvalidValue {
                what: "power-law y",
                value: 0.0
            })
        );
        assert_eq!(
            PowerLaw::fit(&[(2.0, 1.0), (2.0, 3.0)]),
            Err(ModelError::DegenerateSizes)
        );
        assert!(matches!(
            line(&[(1.0, 1.0)], "x"),
            Err(ModelError::TooFewPoints { needed: 2, .. })
        ));
    }
}

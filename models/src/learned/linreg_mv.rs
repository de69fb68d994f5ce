//! LinReg-MV: one linear model over every feature that varies, fitted
//! robustly with Huber weights on relative residuals.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::features::{Features, Sample, FEATURES};
use super::regression::{solve, Scale};
use crate::ModelError;

/// LinReg-MV: one linear model over every feature that varies, fitted
/// robustly (Huber weights on relative residuals, iterated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinRegMv {
    /// The features used, with their standardisation.
    pub(super) used: Vec<(usize, Scale)>,
    /// Intercept, then one coefficient per feature used.
    pub(super) coefficients: Vec<f64>,
}

impl LinRegMv {
    /// Huber's tuning constant (95% efficiency under normal errors).
    const HUBER: f64 = 1.345;

    pub(super) fn fit(samples: &[Sample]) -> Result<LinRegMv, ModelError> {
        let y: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
        let used: Vec<(usize, Scale)> = (0..FEATURES.len())
            .filter_map(|f| {
                let col: Vec<f64> = samples.iter().map(|s| s.features.values()[f]).collect();
                Scale::of(&col).map(|sc| (f, sc))
            })
            .collect();
        let rows: Vec<Vec<f64>> = samples
            .iter()
            .map(|s| {
                let v = s.features.values();
                std::iter::once(1.0)
                    .chain(used.iter().map(|(f, sc)| sc.apply(v[*f])))
                    .collect()
            })
            .collect();
        let k = used.len() + 1;
        let mut robust = vec![1.0; y.len()];
        let mut coefficients = vec![0.0; k];
        for _ in 0..20 {
            let w: Vec<f64> = y.iter().zip(&robust).map(|(t, h)| h / (t * t)).collect();
            let gram = DMatrix::from_fn(k, k, |i, j| {
                rows.iter().zip(&w).map(|(r, wr)| wr * r[i] * r[j]).sum()
            });
            let rhs = DVector::from_fn(k, |i, _| {
                rows.iter()
                    .zip(&w)
                    .zip(&y)
                    .map(|((r, wr), t)| wr * r[i] * t)
                    .sum()
            });
            let b = solve(gram, rhs).ok_or(ModelError::DegenerateSizes)?;
            coefficients = b.iter().copied().collect();
            let rel: Vec<f64> = rows
                .iter()
                .zip(&y)
                .map(|(r, t)| {
                    (r.iter().zip(&coefficients).map(|(a, c)| a * c).sum::<f64>() - t) / t
                })
                .collect();
            let mut abs: Vec<f64> = rel.iter().map(|r| r.abs()).collect();
            abs.sort_by(f64::total_cmp);
            let scale = 1.4826 * abs[abs.len() / 2];
            if scale <= 0.0 {
                break;
            }
            robust = rel
                .iter()
                .map(|r| (Self::HUBER * scale / r.abs()).min(1.0))
                .collect();
        }
        Ok(LinRegMv { used, coefficients })
    }

    pub(super) fn predict(&self, f: &Features) -> f64 {
        let v = f.values();
        self.coefficients[0]
            + self
                .used
                .iter()
                .zip(&self.coefficients[1..])
                .map(|((i, sc), c)| c * sc.apply(v[*i]))
                .sum::<f64>()
    }
}

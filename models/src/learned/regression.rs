//! What the linear regressions share: the study's transforms of a feature,
//! standardised columns, the weighted least-squares solve and the relative
//! error they are chosen by.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// A term's transform of a feature (the study's set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transform {
    /// 1.
    One,
    /// x.
    X,
    /// x².
    X2,
    /// x³.
    X3,
    /// log₂ x (of 1 for x < 1: features count bytes and messages).
    Log,
    /// log₂² x.
    Log2,
    /// log₂³ x.
    Log3,
    /// √x.
    Sqrt,
}

impl Transform {
    pub(super) const ALL: [Transform; 8] = [
        Transform::One,
        Transform::X,
        Transform::X2,
        Transform::X3,
        Transform::Log,
        Transform::Log2,
        Transform::Log3,
        Transform::Sqrt,
    ];

    pub(super) fn at(self, x: f64) -> f64 {
        let lg = x.max(1.0).log2();
        match self {
            Transform::One => 1.0,
            Transform::X => x,
            Transform::X2 => x * x,
            Transform::X3 => x * x * x,
            Transform::Log => lg,
            Transform::Log2 => lg * lg,
            Transform::Log3 => lg * lg * lg,
            Transform::Sqrt => x.max(0.0).sqrt(),
        }
    }
}

/// A column standardised for a well-conditioned solve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct Scale {
    pub(super) mean: f64,
    pub(super) sd: f64,
}

impl Scale {
    pub(super) fn of(col: &[f64]) -> Option<Scale> {
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        (sd > 0.0 && sd.is_finite()).then_some(Scale { mean, sd })
    }

    pub(super) fn apply(&self, v: f64) -> f64 {
        (v - self.mean) / self.sd
    }
}

/// Solves the weighted least squares `min Σ w (y - X b)²` from its normal
/// equations `XᵀWX b = XᵀWy` (given as `gram`, `rhs`), with a vanishing
/// ridge so that collinear features still give an answer.
pub(super) fn solve(gram: DMatrix<f64>, rhs: DVector<f64>) -> Option<DVector<f64>> {
    let k = gram.nrows();
    let ridge = 1e-10 * (0..k).map(|i| gram[(i, i)]).sum::<f64>().max(1e-300) / k as f64;
    let a = gram + DMatrix::identity(k, k) * ridge;
    let b = a.clone().cholesky().map(|c| c.solve(&rhs));
    let b = b.or_else(|| a.lu().solve(&rhs))?;
    b.iter().all(|v| v.is_finite()).then_some(b)
}

pub(super) fn mmre_of(pred: impl Iterator<Item = f64>, real: &[f64]) -> f64 {
    pred.zip(real)
        .map(|(p, r)| ((p - r) / r).abs())
        .sum::<f64>()
        / real.len() as f64
}

/// A product of two transforms of the feature, standardised.
pub(super) type Term = (Transform, Transform, Scale);

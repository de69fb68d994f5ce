//! LinReg-SV: the best single-feature model over products of transformed
//! terms, searched over every feature and term set.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::features::{Features, Sample, FEATURES};
use super::regression::{mmre_of, solve, Scale, Term, Transform};
use crate::ModelError;

/// LinReg-SV: `t = b0 + Σ b_i f(x)·g(x)` over at most three products of
/// transforms of one feature, the best by relative error of all features
/// and all such term sets (7,175 per feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinRegSv {
    /// Index into [`FEATURES`].
    pub feature: usize,
    /// The products, each standardised.
    pub(super) terms: Vec<Term>,
    /// Intercept, then one coefficient per term.
    pub(super) coefficients: Vec<f64>,
}

impl LinRegSv {
    /// The candidate products: every unordered pair of transforms but 1·1.
    fn products() -> Vec<(Transform, Transform)> {
        let mut out = Vec::new();
        for (i, &a) in Transform::ALL.iter().enumerate() {
            for &b in &Transform::ALL[i..] {
                if (a, b) != (Transform::One, Transform::One) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    pub(super) fn fit(samples: &[Sample]) -> Result<LinRegSv, ModelError> {
        let y: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
        let w: Vec<f64> = y.iter().map(|t| 1.0 / (t * t)).collect();
        let products = Self::products();
        // (mmre, terms, model) of the best so far per term count.
        let mut best: Vec<Option<(f64, LinRegSv)>> = vec![None, None, None];
        for feature in 0..FEATURES.len() {
            let x: Vec<f64> = samples
                .iter()
                .map(|s| s.features.values()[feature])
                .collect();
            // Standardised columns, the intercept first.
            let mut cols: Vec<(Option<Term>, Vec<f64>)> = vec![(None, vec![1.0; x.len()])];
            for &(a, b) in &products {
                let raw: Vec<f64> = x.iter().map(|&v| a.at(v) * b.at(v)).collect();
                if let Some(sc) = Scale::of(&raw) {
                    cols.push((Some((a, b, sc)), raw.iter().map(|&v| sc.apply(v)).collect()));
                }
            }
            let k = cols.len();
            let gram = DMatrix::from_fn(k, k, |i, j| {
                (0..y.len())
                    .map(|r| w[r] * cols[i].1[r] * cols[j].1[r])
                    .sum()
            });
            let rhs = DVector::from_fn(k, |i, _| {
                (0..y.len()).map(|r| w[r] * cols[i].1[r] * y[r]).sum()
            });
            let mut consider = |set: &[usize]| {
                let idx: Vec<usize> = std::iter::once(0).chain(set.iter().copied()).collect();
                let g = DMatrix::from_fn(idx.len(), idx.len(), |i, j| gram[(idx[i], idx[j])]);
                let r = DVector::from_fn(idx.len(), |i, _| rhs[idx[i]]);
                let Some(b) = solve(g, r) else { return };
                let pred = (0..y.len()).map(|row| {
                    idx.iter()
                        .zip(b.iter())
                        .map(|(&c, bc)| bc * cols[c].1[row])
                        .sum()
                });
                let m = mmre_of(pred, &y);
                let slot = &mut best[set.len() - 1];
                if m.is_finite() && slot.as_ref().is_none_or(|(bm, _)| m < *bm) {
                    *slot = Some((
                        m,
                        LinRegSv {
                            feature,
                            terms: set.iter().map(|&c| cols[c].0.expect("a term")).collect(),
                            coefficients: b.iter().copied().collect(),
                        },
                    ));
                }
            };
            for a in 1..k {
                consider(&[a]);
                for b in a + 1..k {
                    consider(&[a, b]);
                    for c in b + 1..k {
                        consider(&[a, b, c]);
                    }
                }
            }
        }
        // Fewer terms unless more terms are clearly better: an exact
        // one-term law is not displaced by three terms that include it.
        let floor = best
            .iter()
            .flatten()
            .map(|(m, _)| *m)
            .fold(f64::INFINITY, f64::min);
        best.into_iter()
            .flatten()
            .find(|(m, _)| *m <= floor + 0.002)
            .map(|(_, model)| model)
            .ok_or(ModelError::TooFewPoints {
                what: "LinReg-SV (no feature varies)",
                needed: 2,
                got: samples.len(),
            })
    }

    pub(super) fn predict(&self, f: &Features) -> f64 {
        let x = f.values()[self.feature];
        self.coefficients[0]
            + self
                .terms
                .iter()
                .zip(&self.coefficients[1..])
                .map(|((a, b, sc), c)| c * sc.apply(a.at(x) * b.at(x)))
                .sum::<f64>()
    }

    /// The model as a formula, e.g. `t = 2.1e-5 + 3.0e-12·(pd·log2 pd - 1.2e6)/3.4e5`.
    pub(super) fn describe(&self) -> String {
        let name = FEATURES[self.feature];
        let term = |t: Transform| match t {
            Transform::One => "1".to_string(),
            Transform::X => name.to_string(),
            Transform::X2 => format!("{name}²"),
            Transform::X3 => format!("{name}³"),
            Transform::Log => format!("log2 {name}"),
            Transform::Log2 => format!("log2² {name}"),
            Transform::Log3 => format!("log2³ {name}"),
            Transform::Sqrt => format!("√{name}"),
        };
        let mut s = format!("t = {:.4e}", self.coefficients[0]);
        for ((a, b, sc), c) in self.terms.iter().zip(&self.coefficients[1..]) {
            s += &format!(
                " + {c:.4e}·({}·{} - {:.4e})/{:.4e}",
                term(*a),
                term(*b),
                sc.mean,
                sc.sd
            );
        }
        s
    }
}

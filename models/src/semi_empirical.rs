//! The communication-modelling study's semi-empirical baseline (after
//! Gahvari et al. 2011, modelling.md §3): Hockney's alpha-beta with a
//! penalty on alpha for processes sharing a node, one on beta for
//! messages sharing a link, and a per-hop gamma term. The study names the
//! penalties (α_p, β_p, γ) but does not write its formulas out; this is
//! the form chosen here, per phase of a busiest process sending `m`
//! messages and `b` bytes:
//!
//! ```text
//! t = α·m·(1 + a·(p − 1)) + β·b·(1 + c_b·(c − 1)) + γ·h
//! ```
//!
//! - `p`, processes per rank: they share the rank's NIC and cores, so each
//!   message's start-up cost grows by `a·α` per extra process (Gahvari's
//!   multicore penalty, here on alpha);
//! - `c`, messages sharing the busiest rank's link at once: the bytes of
//!   each cost `c_b·β` more per extra message (Gahvari's contention
//!   penalty on beta); on one host every message shares its memory;
//! - `h`, hops past the first: `γ` each.
//!
//! All five constants (α, a·α, β, c_b·β, γ) are kept non-negative and
//! fitted by least squares on relative error, as the alpha-beta baseline
//! and the learned models are.

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::ModelError;

/// What the semi-empirical model reads of a communication phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Messages of the busiest process (`m`).
    pub messages: f64,
    /// Bytes of the busiest process (`b`).
    pub bytes: f64,
    /// Processes per rank (`p`).
    pub per_rank: f64,
    /// Messages sharing one link at once (`c`).
    pub concurrent: f64,
    /// Hops past the first, over the busiest process's messages (`h`).
    pub hops: f64,
}

impl Load {
    /// The model's terms, in [`SemiEmpirical::coefficients`] order.
    fn terms(&self) -> [f64; 5] {
        [
            self.messages,
            self.messages * (self.per_rank - 1.0).max(0.0),
            self.bytes,
            self.bytes * (self.concurrent - 1.0).max(0.0),
            self.hops,
        ]
    }
}

/// A fitted semi-empirical model: the five constants of the module's form.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SemiEmpirical {
    /// Seconds per message (`α`).
    pub alpha: f64,
    /// Seconds per message per extra process on the rank (`a·α`).
    pub alpha_multicore: f64,
    /// Seconds per byte (`β`).
    pub beta: f64,
    /// Seconds per byte per extra message sharing the link (`c_b·β`).
    pub beta_contention: f64,
    /// Seconds per hop past the first (`γ`).
    pub gamma: f64,
}

impl SemiEmpirical {
    /// Minimises `Σ ((t̂ − t) / t)²` over `(load, seconds)` rows, every
    /// constant non-negative. A term that is zero on every row (no hops on
    /// one host) is not determined by the data and stays zero.
    pub fn fit(rows: &[(Load, f64)]) -> Result<SemiEmpirical, ModelError> {
        if rows.len() < 2 {
            return Err(ModelError::TooFewPoints {
                what: "the semi-empirical model",
                needed: 2,
                got: rows.len(),
            });
        }
        for (load, t) in rows {
            crate::check_finite("a sample's seconds", *t)?;
            if *t == 0.0 {
                return Err(ModelError::ZeroMeasurement);
            }
            for v in load.terms() {
                crate::check_finite("a semi-empirical term", v)?;
            }
        }
        // Relative error: each row divided by its time, target 1.
        let x: Vec<[f64; 5]> = rows.iter().map(|(l, t)| l.terms().map(|v| v / t)).collect();
        let present: Vec<usize> = (0..5).filter(|&j| x.iter().any(|r| r[j] != 0.0)).collect();
        let theta = non_negative_least_squares(&x, &present);
        Ok(SemiEmpirical {
            alpha: theta[0],
            alpha_multicore: theta[1],
            beta: theta[2],
            beta_contention: theta[3],
            gamma: theta[4],
        })
    }

    /// The constants, in the order of the module's terms.
    pub fn coefficients(&self) -> [f64; 5] {
        [
            self.alpha,
            self.alpha_multicore,
            self.beta,
            self.beta_contention,
            self.gamma,
        ]
    }

    /// Predicted seconds of a phase with `load`.
    pub fn predict(&self, load: &Load) -> f64 {
        load.terms()
            .iter()
            .zip(self.coefficients())
            .map(|(x, c)| x * c)
            .sum()
    }

    /// The fitted constants, term by term (a penalty's own constant, so
    /// that it reads right when alpha or beta is fitted to zero).
    pub fn describe(&self) -> String {
        format!(
            "t = {:.4e}·m + {:.4e}·m·(p − 1) + {:.4e}·b + {:.4e}·b·(c − 1) + {:.4e}·h",
            self.alpha, self.alpha_multicore, self.beta, self.beta_contention, self.gamma
        )
    }
}

/// Least squares of `x·θ = 1` with `θ ≥ 0`, over the columns `present`:
/// with five columns every support is tried (the constrained optimum is
/// the unconstrained one on its support), the best feasible kept.
fn non_negative_least_squares(x: &[[f64; 5]], present: &[usize]) -> [f64; 5] {
    let mut best = ([0.0; 5], x.len() as f64);
    for mask in 1u32..(1 << present.len()) {
        let cols: Vec<usize> = (0..present.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| present[i])
            .collect();
        let Some(theta) = solve_on(x, &cols) else {
            continue;
        };
        if theta.iter().any(|&v| v < 0.0) {
            continue;
        }
        let residual: f64 = x
            .iter()
            .map(|r| (cols.iter().zip(&theta).map(|(&j, c)| r[j] * c).sum::<f64>() - 1.0).powi(2))
            .sum();
        if residual < best.1 {
            let mut full = [0.0; 5];
            for (&j, c) in cols.iter().zip(&theta) {
                full[j] = *c;
            }
            best = (full, residual);
        }
    }
    best.0
}

/// Unconstrained least squares on columns `cols`, by QR of the columns
/// scaled to unit norm (the terms span ten decades); `None` when they are
/// (numerically) dependent.
fn solve_on(x: &[[f64; 5]], cols: &[usize]) -> Option<Vec<f64>> {
    let norms: Vec<f64> = cols
        .iter()
        .map(|&j| x.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .collect();
    if x.len() < cols.len() || norms.contains(&0.0) {
        return None;
    }
    let a = DMatrix::from_fn(x.len(), cols.len(), |i, k| x[i][cols[k]] / norms[k]);
    let qr = a.qr();
    let r = qr.r();
    if (0..cols.len()).any(|k| r[(k, k)].abs() < 1e-10) {
        return None;
    }
    let rhs = qr.q().transpose() * DVector::from_element(x.len(), 1.0);
    let z = r.solve_upper_triangular(&rhs)?;
    Some(z.iter().zip(&norms).map(|(v, n)| v / n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads() -> Vec<Load> {
        let mut out = Vec::new();
        for messages in [1.0, 2.0, 3.0, 4.0] {
            for per_rank in [1.0, 2.0, 4.0, 8.0] {
                for l in [16.0, 1024.0, 65536.0, 1048576.0] {
                    for hops in [0.0, 1.0, 3.0] {
                        out.push(Load {
                            messages,
                            bytes: messages * l,
                            per_rank,
                            concurrent: per_rank * messages,
                            hops,
                        });
                    }
                }
            }
        }
        out
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-9 * want.abs()
    }

    #[test]
    fn the_fit_recovers_known_penalties_exactly() {
        let law = SemiEmpirical {
            alpha: 2e-6,
            alpha_multicore: 5e-7,
            beta: 3e-10,
            beta_contention: 1e-10,
            gamma: 4e-6,
        };
        let rows: Vec<(Load, f64)> = loads().into_iter().map(|l| (l, law.predict(&l))).collect();
        let fit = SemiEmpirical::fit(&rows).unwrap();
        for (got, want) in fit.coefficients().iter().zip(law.coefficients()) {
            assert!(close(*got, want), "{fit:?} against {law:?}");
        }
        assert_eq!(
            fit.describe(),
            "t = 2.0000e-6·m + 5.0000e-7·m·(p − 1) + 3.0000e-10·b + 1.0000e-10·b·(c − 1) + 4.0000e-6·h"
        );
    }

    #[test]
    fn a_term_the_data_never_sets_stays_zero() {
        // One host: no hops, and no contention penalty in the law.
        let law = SemiEmpirical {
            alpha: 7e-6,
            alpha_multicore: 1.5e-6,
            beta: 2e-10,
            beta_contention: 0.0,
            gamma: 0.0,
        };
        let rows: Vec<(Load, f64)> = loads()
            .into_iter()
            .filter(|l| l.hops == 0.0)
            .map(|l| (l, law.predict(&l)))
            .collect();
        let fit = SemiEmpirical::fit(&rows).unwrap();
        assert_eq!(fit.gamma, 0.0);
        assert!(fit.beta_contention.abs() <= 1e-9 * law.beta, "{fit:?}");
        for (got, want) in fit.coefficients()[..3].iter().zip(law.coefficients()) {
            assert!(close(*got, want), "{fit:?} against {law:?}");
        }
    }

    #[test]
    fn penalties_never_go_negative() {
        // Time falls with processes per rank: an unconstrained fit would
        // give alpha a negative penalty; the constrained one gives none.
        let rows: Vec<(Load, f64)> = loads()
            .into_iter()
            .map(|l| (l, 1e-5 * l.messages / l.per_rank + 1e-9 * l.bytes))
            .collect();
        let fit = SemiEmpirical::fit(&rows).unwrap();
        assert!(fit.coefficients().iter().all(|&c| c >= 0.0), "{fit:?}");
        assert_eq!(fit.alpha_multicore, 0.0, "{fit:?}");
    }

    #[test]
    fn bad_rows_are_named() {
        let l = loads()[0];
        assert_eq!(
            SemiEmpirical::fit(&[(l, 1e-5)]),
            Err(ModelError::TooFewPoints {
                what: "the semi-empirical model",
                needed: 2,
                got: 1
            })
        );
        assert_eq!(
            SemiEmpirical::fit(&[(l, 1e-5), (l, 0.0)]),
            Err(ModelError::ZeroMeasurement)
        );
    }
}

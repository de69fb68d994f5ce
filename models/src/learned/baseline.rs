//! The study's baselines, alpha-beta (Hockney) and the semi-empirical
//! model, fitted to the same data as a learned model, and the scores of
//! any model on a set of samples.

use serde::{Deserialize, Serialize};

use super::features::{Features, Sample};
use crate::metrics::Scores;
use crate::semi_empirical::{Load, SemiEmpirical};
use crate::ModelError;

/// The alpha-beta (Hockney) baseline of a phase: `alpha` per message plus
/// `beta` per byte of its busiest process, fitted to the same relative
/// error the learned models are (a plain least-squares fit lets the
/// longest phases set both constants and misses short ones by orders of
/// magnitude, which would flatter the learned models).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AlphaBeta {
    /// Seconds per message.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl AlphaBeta {
    /// Minimises `Σ ((alpha·pm + beta·pd − t) / t)²`, both constants kept
    /// non-negative: least squares through the origin on rows divided by
    /// their time.
    pub fn fit(samples: &[Sample]) -> AlphaBeta {
        let rows: Vec<(f64, f64, f64)> = samples
            .iter()
            .filter(|s| s.seconds > 0.0)
            .map(|s| (s.features.pm / s.seconds, s.features.pd / s.seconds, 1.0))
            .collect();
        let c = crate::scaling::ExchangeCost::fit(&rows);
        AlphaBeta {
            alpha: c.alpha,
            beta: c.beta,
        }
    }

    /// Predicted seconds of a phase with `features`.
    pub fn predict(&self, f: &Features) -> f64 {
        self.alpha * f.pm + self.beta * f.pd
    }
}

/// The study's two baselines, fitted to the same training data as a
/// learned model and scored beside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Baselines {
    /// Hockney's alpha-beta.
    pub alpha_beta: AlphaBeta,
    /// Alpha-beta with Gahvari's penalties.
    pub semi_empirical: SemiEmpirical,
}

/// The baselines' scores on one set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BaselineScores {
    /// [`AlphaBeta`]'s.
    pub alpha_beta: Scores,
    /// [`SemiEmpirical`]'s.
    pub semi_empirical: Scores,
}

impl Baselines {
    /// Fits both to `train`.
    pub fn fit(train: &[Sample]) -> Result<Baselines, ModelError> {
        Ok(Baselines {
            alpha_beta: AlphaBeta::fit(train),
            semi_empirical: fit_semi_empirical(train)?,
        })
    }

    /// Both baselines' scores on `set` (held-out data: the rows they were
    /// not fitted to).
    pub fn score(&self, set: &[Sample]) -> Result<BaselineScores, ModelError> {
        Ok(BaselineScores {
            alpha_beta: score(set, |f| self.alpha_beta.predict(f))?,
            semi_empirical: score(set, |f| self.semi_empirical.predict(&f.load()))?,
        })
    }
}

pub(super) fn fit_semi_empirical(train: &[Sample]) -> Result<SemiEmpirical, ModelError> {
    let rows: Vec<(Load, f64)> = train
        .iter()
        .map(|s| (s.features.load(), s.seconds))
        .collect();
    SemiEmpirical::fit(&rows)
}

/// The metrics of `predict` on `samples`.
pub fn score(samples: &[Sample], predict: impl Fn(&Features) -> f64) -> Result<Scores, ModelError> {
    let est: Vec<f64> = samples.iter().map(|s| predict(&s.features)).collect();
    let real: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
    Scores::of(&est, &real)
}

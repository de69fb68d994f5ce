//! A fitted model of a phase's time by any method, with the training range
//! it can be trusted in, checked when read back from JSON.

use gbdt::config::Config;
use gbdt::decision_tree::Data;
use gbdt::gradient_boost::GBDT;
use serde::{Deserialize, Serialize};

use super::baseline::fit_semi_empirical;
use super::features::{Features, Sample, FEATURES};
use super::linreg_mv::LinRegMv;
use super::linreg_sv::LinRegSv;
use super::method::Method;
use super::trees::{tree_data, TreeOptions};
use crate::forest::{Ensemble, Forest};
use crate::semi_empirical::SemiEmpirical;
use crate::ModelError;

/// How a model predicts.
#[derive(Serialize, Deserialize)]
pub(super) enum Kind {
    Sv(LinRegSv),
    Mv(LinRegMv),
    Trees(Box<GBDT>),
    /// A random forest or extra trees on ln t.
    Forest(Forest),
    /// The semi-empirical baseline.
    Semi(SemiEmpirical),
}

/// A fitted model of a communication phase's time, with the range of
/// every feature it was trained on. Read back from JSON, its shapes are
/// checked (a hand-edited file is refused, not a panic later); the trees'
/// insides are `gbdt`'s and trusted as written.
#[derive(Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct CommModel {
    /// How it was fitted.
    pub method: Method,
    /// Least and most of each feature in training.
    ranges: Vec<(f64, f64)>,
    /// Least and most seconds seen in training.
    seconds: (f64, f64),
    pub(super) kind: Kind,
}

/// A [`CommModel`] as read, before its shapes are checked.
#[derive(Deserialize)]
struct Unchecked {
    method: Method,
    ranges: Vec<(f64, f64)>,
    seconds: (f64, f64),
    kind: Kind,
}

impl TryFrom<Unchecked> for CommModel {
    type Error = ModelError;

    fn try_from(m: Unchecked) -> Result<CommModel, ModelError> {
        let mismatch = |left: usize, right: usize| ModelError::LengthMismatch { left, right };
        if m.ranges.len() != FEATURES.len() {
            return Err(mismatch(m.ranges.len(), FEATURES.len()));
        }
        let (lo, hi) = m.seconds;
        if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi) {
            return Err(ModelError::InvalidValue {
                what: "the model's range of seconds",
                value: if lo.is_finite() { hi } else { lo },
            });
        }
        let bad_feature = |f: usize| ModelError::InvalidValue {
            what: "a model's feature index",
            value: f as f64,
        };
        match &m.kind {
            Kind::Sv(sv) => {
                if sv.feature >= FEATURES.len() {
                    return Err(bad_feature(sv.feature));
                }
                if sv.coefficients.len() != sv.terms.len() + 1 {
                    return Err(mismatch(sv.coefficients.len(), sv.terms.len() + 1));
                }
            }
            Kind::Mv(mv) => {
                if let Some(&(f, _)) = mv.used.iter().find(|(f, _)| *f >= FEATURES.len()) {
                    return Err(bad_feature(f));
                }
                if mv.coefficients.len() != mv.used.len() + 1 {
                    return Err(mismatch(mv.coefficients.len(), mv.used.len() + 1));
                }
            }
            Kind::Trees(_) | Kind::Semi(_) => {}
            Kind::Forest(f) => f.check(FEATURES.len())?,
        }
        Ok(CommModel {
            method: m.method,
            ranges: m.ranges,
            seconds: m.seconds,
            kind: m.kind,
        })
    }
}

impl CommModel {
    /// Fits `method` to `samples` (at least 8, every time positive). The
    /// same samples and options give the same model on every run: the
    /// boosted trees draw nothing, the forests draw from their seed.
    pub fn fit(
        method: Method,
        samples: &[Sample],
        options: TreeOptions,
    ) -> Result<CommModel, ModelError> {
        let trees = options.gbrt;
        if samples.len() < 8 {
            return Err(ModelError::TooFewPoints {
                what: "a learned communication model",
                needed: 8,
                got: samples.len(),
            });
        }
        for s in samples {
            if !(s.seconds.is_finite() && s.seconds > 0.0) {
                return Err(ModelError::InvalidValue {
                    what: "a sample's seconds",
                    value: s.seconds,
                });
            }
            if let Some(v) = s
                .features
                .values()
                .into_iter()
                .find(|v| !(v.is_finite() && *v >= 0.0))
            {
                return Err(ModelError::InvalidValue {
                    what: "a sample's feature",
                    value: v,
                });
            }
        }
        let ranges = (0..FEATURES.len())
            .map(|f| {
                samples
                    .iter()
                    .map(|s| s.features.values()[f])
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                        (lo.min(v), hi.max(v))
                    })
            })
            .collect();
        let kind = match method {
            Method::LinRegSv => Kind::Sv(LinRegSv::fit(samples)?),
            Method::LinRegMv => Kind::Mv(LinRegMv::fit(samples)?),
            Method::Gbrt => {
                let mut cfg = Config::new();
                cfg.set_feature_size(FEATURES.len());
                cfg.set_max_depth(trees.depth);
                cfg.set_iterations(trees.trees);
                cfg.set_shrinkage(trees.shrinkage);
                cfg.set_min_leaf_size(trees.min_leaf);
                cfg.set_loss("LAD");
                // Every sample and feature in every tree: deterministic.
                cfg.set_data_sample_ratio(1.0);
                cfg.set_feature_sample_ratio(1.0);
                cfg.set_training_optimization_level(2);
                let mut model = GBDT::new(&cfg);
                model.fit(&mut tree_data(samples));
                Kind::Trees(Box::new(model))
            }
            Method::RandomForest | Method::ExtraTrees => {
                let ensemble = if method == Method::RandomForest {
                    Ensemble::RandomForest
                } else {
                    Ensemble::ExtraTrees
                };
                let x: Vec<Vec<f64>> = samples
                    .iter()
                    .map(|s| s.features.values().to_vec())
                    .collect();
                let y: Vec<f64> = samples.iter().map(|s| s.seconds.ln()).collect();
                Kind::Forest(Forest::fit(ensemble, &x, &y, options.forest)?)
            }
            Method::SemiEmpirical => Kind::Semi(fit_semi_empirical(samples)?),
        };
        Ok(CommModel {
            method,
            ranges,
            seconds: samples.iter().fold((f64::INFINITY, 0.0), |(lo, hi), s| {
                (lo.min(s.seconds), hi.max(s.seconds))
            }),
            kind,
        })
    }

    /// Predicted seconds of a phase with `features` (never below zero).
    pub fn predict(&self, features: &Features) -> f64 {
        let t = match &self.kind {
            Kind::Sv(m) => m.predict(features),
            Kind::Mv(m) => m.predict(features),
            Kind::Trees(m) => {
                let v: Vec<f32> = features.values().iter().map(|&x| x as f32).collect();
                let p = m.predict(&vec![Data::new_test_data(v, None)]);
                // Leaves combined in ways no training point saw could step
                // outside what was measured; trees only interpolate.
                f64::from(p[0]).exp().clamp(self.seconds.0, self.seconds.1)
            }
            // A mean of leaves stays within the training range by itself.
            Kind::Forest(f) => f.predict(&features.values()).exp(),
            Kind::Semi(m) => m.predict(&features.load()),
        };
        t.max(0.0)
    }

    /// The features of `features` outside the training range: trees cannot
    /// extrapolate, and regressions should not be trusted to.
    pub fn out_of_range(&self, features: &Features) -> Vec<&'static str> {
        features
            .values()
            .iter()
            .zip(&self.ranges)
            .zip(FEATURES)
            .filter(|((v, (lo, hi)), _)| *v < lo || *v > hi)
            .map(|(_, name)| name)
            .collect()
    }

    /// The most seconds seen in training.
    pub fn max_seconds(&self) -> f64 {
        self.seconds.1
    }

    /// One line about the model.
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Sv(m) => format!("linreg-sv: {}", m.describe()),
            Kind::Mv(m) => format!(
                "linreg-mv over {}",
                m.used
                    .iter()
                    .map(|(f, _)| FEATURES[*f])
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Kind::Trees(_) => "gbrt: boosted trees on ln t, absolute-deviation loss".to_string(),
            Kind::Forest(f) => match f.ensemble {
                Ensemble::RandomForest => {
                    "random-forest: bootstrapped trees on ln t, a third of the features per split"
                }
                Ensemble::ExtraTrees => "extra-trees: randomised trees on ln t, every feature",
            }
            .to_string(),
            Kind::Semi(m) => format!("semi-empirical: {}", m.describe()),
        }
    }
}

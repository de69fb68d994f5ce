//! Learned models of a communication phase's time (Papadopoulou 2017,
//! modelling.md §3): the phase's features, computed exactly from who sends
//! what to whom, and three regressions of its time on them: the best
//! single-feature model over transformed terms (LinReg-SV), a robust
//! multi-feature regression (LinReg-MV), gradient-boosted trees with
//! absolute-deviation loss (GBRT, the `gbdt` crate), and the seeded
//! ensembles of [`crate::forest`] (random forest, extra trees); beside
//! them the study's baselines, alpha-beta (Hockney) and
//! [`crate::semi_empirical`], which can be fitted as a model too.
//!
//! All weigh errors relatively (times span microseconds to seconds, and
//! the theses score relative error): the regressions by weighted least
//! squares with weights 1/t², the trees by fitting ln t.
//!
//! The files, each importing only those listed before it:
//! - `features`: [`Features`] of a phase and a measured [`Sample`];
//! - `method`: which learned [`Method`];
//! - `baseline`: alpha-beta and the semi-empirical model, and [`score`];
//! - `regression`: what the linear regressions share (transforms, solve);
//! - `linreg_sv`, `linreg_mv`: the two regressions;
//! - `trees`: the tree models' settings;
//! - `model`: [`CommModel`], fitted by any method, checked when read.

mod baseline;
mod features;
mod linreg_mv;
mod linreg_sv;
mod method;
mod model;
mod regression;
#[cfg(test)]
mod tests;
mod trees;

pub use baseline::{score, AlphaBeta, BaselineScores, Baselines};
pub use features::{random_pairs, Features, Sample, FEATURES};
pub use linreg_mv::LinRegMv;
pub use linreg_sv::LinRegSv;
pub use method::{Method, UnknownMethod};
pub use model::CommModel;
pub use regression::Transform;
pub use trees::{GbrtOptions, TreeOptions};

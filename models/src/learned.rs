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

use std::fmt;
use std::str::FromStr;

use gbdt::config::Config;
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use crate::forest::{Ensemble, Forest, ForestOptions};
use crate::metrics::Scores;
use crate::semi_empirical::{Load, SemiEmpirical};
use crate::ModelError;

/// Names of the features, in [`Features::values`] order.
pub const FEATURES: [&str; 15] = [
    "ranks", "per_rank", "l", "pm", "pd", "nd_min", "nd_avg", "nd_max", "nm_min", "nm_avg",
    "nm_max", "ind_max", "inm_max", "td", "tm",
];

/// A communication phase's features (the study's classes A and B; class
/// C, the network's switches and racks, has no counterpart on one host).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Ranks ("nodes").
    pub ranks: f64,
    /// Most processes on one rank ("ppn").
    pub per_rank: f64,
    /// Largest message, bytes.
    pub l: f64,
    /// Most messages sent by one process.
    pub pm: f64,
    /// Most bytes sent by one process.
    pub pd: f64,
    /// Bytes a rank sends to other ranks: least, mean, most.
    pub nd_min: f64,
    /// See `nd_min`.
    pub nd_avg: f64,
    /// See `nd_min`.
    pub nd_max: f64,
    /// Messages a rank sends to other ranks: least, mean, most.
    pub nm_min: f64,
    /// See `nm_min`.
    pub nm_avg: f64,
    /// See `nm_min`.
    pub nm_max: f64,
    /// Most bytes sent within one rank.
    pub ind_max: f64,
    /// Most messages sent within one rank.
    pub inm_max: f64,
    /// Bytes sent in all.
    pub td: f64,
    /// Messages sent in all.
    pub tm: f64,
}

impl Features {
    /// The features of a phase in which process `p`, on rank `owners[p]`,
    /// sends `sends[p]` (peer, bytes).
    pub fn of(sends: &[Vec<(usize, u64)>], owners: &[usize]) -> Features {
        let ranks = owners.iter().max().map_or(0, |&r| r + 1);
        let mut per_rank = vec![0usize; ranks];
        let (mut nd, mut nm) = (vec![0f64; ranks], vec![0f64; ranks]);
        let (mut ind, mut inm) = (vec![0f64; ranks], vec![0f64; ranks]);
        let (mut l, mut pm, mut pd, mut td, mut tm) = (0f64, 0f64, 0f64, 0f64, 0f64);
        for (p, mine) in sends.iter().enumerate() {
            let r = owners[p];
            per_rank[r] += 1;
            let bytes: u64 = mine.iter().map(|m| m.1).sum();
            pm = pm.max(mine.len() as f64);
            pd = pd.max(bytes as f64);
            for &(q, b) in mine {
                l = l.max(b as f64);
                td += b as f64;
                tm += 1.0;
                if owners[q] == r {
                    ind[r] += b as f64;
                    inm[r] += 1.0;
                } else {
                    nd[r] += b as f64;
                    nm[r] += 1.0;
                }
            }
        }
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        Features {
            ranks: ranks as f64,
            per_rank: per_rank.iter().copied().max().unwrap_or(0) as f64,
            l,
            pm,
            pd,
            nd_min: if ranks == 0 { 0.0 } else { min(&nd) },
            nd_avg: avg(&nd),
            nd_max: max(&nd),
            nm_min: if ranks == 0 { 0.0 } else { min(&nm) },
            nm_avg: avg(&nm),
            nm_max: max(&nm),
            ind_max: max(&ind),
            inm_max: max(&inm),
            td,
            tm,
        }
    }

    /// The values, in [`FEATURES`] order.
    pub fn values(&self) -> [f64; 15] {
        [
            self.ranks,
            self.per_rank,
            self.l,
            self.pm,
            self.pd,
            self.nd_min,
            self.nd_avg,
            self.nd_max,
            self.nm_min,
            self.nm_avg,
            self.nm_max,
            self.ind_max,
            self.inm_max,
            self.td,
            self.tm,
        ]
    }

    /// What the semi-empirical model reads: the busiest process's messages
    /// and bytes, the processes per rank, the busiest rank's messages per
    /// message of a process as those sharing its link at once (each round
    /// of a pattern sends one per process), and the messages that leave a
    /// rank per process of it as hops past the first.
    pub fn load(&self) -> Load {
        let per_message = |v: f64| if self.pm > 0.0 { v / self.pm } else { 0.0 };
        Load {
            messages: self.pm,
            bytes: self.pd,
            per_rank: self.per_rank,
            concurrent: per_message(self.inm_max + self.nm_max),
            hops: if self.per_rank > 0.0 {
                self.nm_max / self.per_rank
            } else {
                0.0
            },
        }
    }

    /// Features from values in [`FEATURES`] order.
    pub fn from_values(v: [f64; 15]) -> Features {
        Features {
            ranks: v[0],
            per_rank: v[1],
            l: v[2],
            pm: v[3],
            pd: v[4],
            nd_min: v[5],
            nd_avg: v[6],
            nd_max: v[7],
            nm_min: v[8],
            nm_avg: v[9],
            nm_max: v[10],
            ind_max: v[11],
            inm_max: v[12],
            td: v[13],
            tm: v[14],
        }
    }
}

/// The communication benchmark's pattern (the study's Alg. 3.1): in each
/// of `pm` rounds the processes are shuffled (seeded) and paired off, and
/// each pair exchanges one message both ways; an odd one out sits the
/// round out. Returns each process's partners with the round (a tag that
/// keeps repeated partners' messages apart).
pub fn random_pairs(procs: usize, pm: usize, seed: u64) -> Vec<Vec<(usize, u64)>> {
    let mut partners = vec![Vec::new(); procs];
    for round in 0..pm as u64 {
        let mut order: Vec<usize> = (0..procs).collect();
        order.sort_by_key(|&p| mix(seed ^ mix(round) ^ mix(p as u64 + 1)));
        for pair in order.chunks_exact(2) {
            partners[pair[0]].push((pair[1], round));
            partners[pair[1]].push((pair[0], round));
        }
    }
    partners
}

/// SplitMix64's finaliser: a well-spread hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// What it moved.
    pub features: Features,
    /// Its time, seconds (the slowest process).
    pub seconds: f64,
}

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

fn fit_semi_empirical(train: &[Sample]) -> Result<SemiEmpirical, ModelError> {
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
    const ALL: [Transform; 8] = [
        Transform::One,
        Transform::X,
        Transform::X2,
        Transform::X3,
        Transform::Log,
        Transform::Log2,
        Transform::Log3,
        Transform::Sqrt,
    ];

    fn at(self, x: f64) -> f64 {
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
struct Scale {
    mean: f64,
    sd: f64,
}

impl Scale {
    fn of(col: &[f64]) -> Option<Scale> {
        let n = col.len() as f64;
        let mean = col.iter().sum::<f64>() / n;
        let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        (sd > 0.0 && sd.is_finite()).then_some(Scale { mean, sd })
    }

    fn apply(&self, v: f64) -> f64 {
        (v - self.mean) / self.sd
    }
}

/// Solves the weighted least squares `min Σ w (y - X b)²` from its normal
/// equations `XᵀWX b = XᵀWy` (given as `gram`, `rhs`), with a vanishing
/// ridge so that collinear features still give an answer.
fn solve(gram: DMatrix<f64>, rhs: DVector<f64>) -> Option<DVector<f64>> {
    let k = gram.nrows();
    let ridge = 1e-10 * (0..k).map(|i| gram[(i, i)]).sum::<f64>().max(1e-300) / k as f64;
    let a = gram + DMatrix::identity(k, k) * ridge;
    let b = a.clone().cholesky().map(|c| c.solve(&rhs));
    let b = b.or_else(|| a.lu().solve(&rhs))?;
    b.iter().all(|v| v.is_finite()).then_some(b)
}

fn mmre_of(pred: impl Iterator<Item = f64>, real: &[f64]) -> f64 {
    pred.zip(real)
        .map(|(p, r)| ((p - r) / r).abs())
        .sum::<f64>()
        / real.len() as f64
}

/// A product of two transforms of the feature, standardised.
type Term = (Transform, Transform, Scale);

/// LinReg-SV: `t = b0 + Σ b_i f(x)·g(x)` over at most three products of
/// transforms of one feature, the best by relative error of all features
/// and all such term sets (7,175 per feature).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinRegSv {
    /// Index into [`FEATURES`].
    pub feature: usize,
    /// The products, each standardised.
    terms: Vec<Term>,
    /// Intercept, then one coefficient per term.
    coefficients: Vec<f64>,
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

    fn fit(samples: &[Sample]) -> Result<LinRegSv, ModelError> {
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

    fn predict(&self, f: &Features) -> f64 {
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
    fn describe(&self) -> String {
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

/// LinReg-MV: one linear model over every feature that varies, fitted
/// robustly (Huber weights on relative residuals, iterated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinRegMv {
    /// The features used, with their standardisation.
    used: Vec<(usize, Scale)>,
    /// Intercept, then one coefficient per feature used.
    coefficients: Vec<f64>,
}

impl LinRegMv {
    /// Huber's tuning constant (95% efficiency under normal errors).
    const HUBER: f64 = 1.345;

    fn fit(samples: &[Sample]) -> Result<LinRegMv, ModelError> {
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

    fn predict(&self, f: &Features) -> f64 {
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

/// Settings of the boosted trees (the study tuned 500-1000 trees of depth
/// 6-7 with learning rates 0.003-0.01 on thousands of points; these suit a
/// few hundred).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GbrtOptions {
    /// Trees.
    pub trees: usize,
    /// Learning rate.
    pub shrinkage: f32,
    /// Depth of each tree.
    pub depth: u32,
    /// Fewest samples in a leaf.
    pub min_leaf: usize,
}

impl Default for GbrtOptions {
    fn default() -> Self {
        GbrtOptions {
            trees: 300,
            shrinkage: 0.1,
            depth: 6,
            min_leaf: 2,
        }
    }
}

fn tree_data(samples: &[Sample]) -> DataVec {
    samples
        .iter()
        .map(|s| {
            let v: Vec<f32> = s.features.values().iter().map(|&x| x as f32).collect();
            Data::new_training_data(v, 1.0, s.seconds.ln() as f32, None)
        })
        .collect()
}

/// How a model predicts.
#[derive(Serialize, Deserialize)]
enum Kind {
    Sv(LinRegSv),
    Mv(LinRegMv),
    Trees(Box<GBDT>),
    /// A random forest or extra trees on ln t.
    Forest(Forest),
    /// The semi-empirical baseline.
    Semi(SemiEmpirical),
}

/// Settings of every tree model a fit may grow.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TreeOptions {
    /// The boosted trees.
    pub gbrt: GbrtOptions,
    /// The random forest and extra trees, and their seed.
    pub forest: ForestOptions,
}

/// Which learned model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Best single-feature regression over transformed terms.
    LinRegSv,
    /// Robust multi-feature regression.
    LinRegMv,
    /// Gradient-boosted regression trees, absolute-deviation loss.
    Gbrt,
    /// A random forest: bootstrap samples, a third of the features per split.
    RandomForest,
    /// Extremely randomised trees: random thresholds, every feature.
    ExtraTrees,
    /// The study's semi-empirical baseline ([`crate::semi_empirical`]).
    SemiEmpirical,
}

impl Method {
    /// Every method, by its command-line name.
    pub const ALL: [(Method, &'static str); 6] = [
        (Method::LinRegSv, "linreg-sv"),
        (Method::LinRegMv, "linreg-mv"),
        (Method::Gbrt, "gbrt"),
        (Method::RandomForest, "random-forest"),
        (Method::ExtraTrees, "extra-trees"),
        (Method::SemiEmpirical, "semi-empirical"),
    ];
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Method::ALL
            .iter()
            .find(|(m, _)| m == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// A name that is no [`Method`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown learned method '{0}': use linreg-sv, linreg-mv, gbrt, random-forest, extra-trees \
     or semi-empirical"
)]
pub struct UnknownMethod(pub String);

impl FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Method, UnknownMethod> {
        Method::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(m, _)| *m)
            .ok_or_else(|| UnknownMethod(s.to_string()))
    }
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
    kind: Kind,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase of `procs` processes, `per_rank` to a rank, each sending
    /// `pm` messages of `l` bytes to its next `pm` neighbours on a ring.
    fn ring(procs: usize, per_rank: usize, pm: usize, l: u64) -> Features {
        let owners: Vec<usize> = (0..procs).map(|p| p / per_rank).collect();
        let sends: Vec<Vec<(usize, u64)>> = (0..procs)
            .map(|p| (1..=pm).map(|k| ((p + k) % procs, l)).collect())
            .collect();
        Features::of(&sends, &owners)
    }

    fn grid(f: impl Fn(&Features) -> f64) -> Vec<Sample> {
        let mut out = Vec::new();
        for procs in [4, 8, 16] {
            for per_rank in [1, 2, 4] {
                for pm in [1, 2, 3] {
                    for l in [16u64, 256, 4096, 65536, 1 << 20] {
                        let features = ring(procs, per_rank, pm, l);
                        out.push(Sample {
                            features,
                            seconds: f(&features),
                        });
                    }
                }
            }
        }
        out
    }

    #[test]
    fn random_pairs_are_symmetric_and_reseeded() {
        for (procs, pm) in [(2, 1), (5, 3), (8, 4)] {
            let p = random_pairs(procs, pm, 7);
            for (a, mine) in p.iter().enumerate() {
                assert!(mine.len() <= pm);
                for &(b, round) in mine {
                    assert_ne!(a, b);
                    assert!(
                        p[b].contains(&(a, round)),
                        "{a}->{b} in round {round} not mirrored"
                    );
                }
            }
            let idle: usize = p.iter().map(|m| pm - m.len()).sum();
            assert_eq!(
                idle,
                (procs % 2) * pm,
                "one process sits out each round when odd"
            );
        }
        assert_ne!(random_pairs(16, 2, 1), random_pairs(16, 2, 2));
        assert_eq!(random_pairs(16, 2, 1), random_pairs(16, 2, 1));
    }

    #[test]
    fn features_are_counted_exactly() {
        // 4 processes, 2 per rank, each sending 2 messages of 100 bytes to
        // the next two on a ring: 0→1 (same rank), 0→2 (other rank), ...
        let f = ring(4, 2, 2, 100);
        assert_eq!(
            (f.ranks, f.per_rank, f.l, f.pm, f.pd),
            (2.0, 2.0, 100.0, 2.0, 200.0)
        );
        // Rank 0 (processes 0, 1): 0→1 inside; 0→2, 1→2, 1→3 outside.
        assert_eq!((f.nd_min, f.nd_avg, f.nd_max), (300.0, 300.0, 300.0));
        assert_eq!(
            (f.nm_min, f.nm_max, f.ind_max, f.inm_max),
            (3.0, 3.0, 100.0, 1.0)
        );
        assert_eq!((f.td, f.tm), (800.0, 8.0));
        assert_eq!(Features::from_values(f.values()), f);
    }

    #[test]
    fn linreg_sv_finds_the_generating_law() {
        let samples = grid(|f| 2e-5 + 3e-11 * f.pd * f.pd.log2());
        let model = CommModel::fit(Method::LinRegSv, &samples, TreeOptions::default()).unwrap();
        let Kind::Sv(sv) = &model.kind else {
            unreachable!()
        };
        assert_eq!(sv.terms.len(), 1, "{}", model.describe());
        let (a, b, _) = sv.terms[0];
        assert_eq!(
            (a, b),
            (Transform::X, Transform::Log),
            "{}",
            model.describe()
        );
        // The chosen feature is pd itself or one equal to it on this data.
        let col = |i: usize| {
            samples
                .iter()
                .map(|s| s.features.values()[i])
                .collect::<Vec<_>>()
        };
        assert_eq!(col(sv.feature), col(4));
        for s in &samples {
            let p = model.predict(&s.features);
            assert!(((p - s.seconds) / s.seconds).abs() < 1e-6);
        }
    }

    #[test]
    fn linreg_mv_shrugs_off_outliers() {
        let law = |f: &Features| 5e-6 + 1e-9 * f.pd + 2e-6 * f.nm_max;
        let mut samples = grid(law);
        for s in samples.iter_mut().step_by(10) {
            s.seconds *= 20.0;
        }
        let model = CommModel::fit(Method::LinRegMv, &samples, TreeOptions::default()).unwrap();
        let clean = grid(law);
        let errs: Vec<f64> = clean
            .iter()
            .map(|s| ((model.predict(&s.features) - s.seconds) / s.seconds).abs())
            .collect();
        let mut sorted = errs.clone();
        sorted.sort_by(f64::total_cmp);
        assert!(
            sorted[sorted.len() / 2] < 0.01,
            "median relative error {}",
            sorted[sorted.len() / 2]
        );
    }

    #[test]
    fn gbrt_fits_in_range_and_warns_outside_it() {
        let law = |f: &Features| 1e-5 * (1.0 + f.pm) + 2e-10 * f.pd * (1.0 + 0.3 * f.per_rank);
        let samples = grid(law);
        let model = CommModel::fit(Method::Gbrt, &samples, TreeOptions::default()).unwrap();
        let est: Vec<f64> = samples.iter().map(|s| model.predict(&s.features)).collect();
        let real: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
        let m = crate::metrics::mmre(&est, &real).unwrap();
        assert!(m < 0.05, "in-range MMRE {m}");
        let far = ring(64, 8, 3, 1 << 24);
        assert!(model.predict(&far) <= model.max_seconds() * 1.0001);
        let out = model.out_of_range(&far);
        assert!(out.contains(&"l") && out.contains(&"per_rank"), "{out:?}");
        assert!(model.out_of_range(&samples[7].features).is_empty());
        // The model survives a round trip through JSON.
        let text = serde_json::to_string(&model).unwrap();
        let back: CommModel = serde_json::from_str(&text).unwrap();
        assert_eq!(back.predict(&far), model.predict(&far));
    }

    #[test]
    fn forests_fit_in_range_reproduce_and_round_trip() {
        let law = |f: &Features| 1e-5 * (1.0 + f.pm) + 2e-10 * f.pd * (1.0 + 0.3 * f.per_rank);
        let samples = grid(law);
        let real: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
        let far = ring(64, 8, 3, 1 << 24);
        for method in [Method::RandomForest, Method::ExtraTrees] {
            let model = CommModel::fit(method, &samples, TreeOptions::default()).unwrap();
            let est: Vec<f64> = samples.iter().map(|s| model.predict(&s.features)).collect();
            let m = crate::metrics::mmre(&est, &real).unwrap();
            assert!(m < 0.15, "{method}: in-range MMRE {m}");
            assert!(model.predict(&far) <= model.max_seconds() * 1.0001);
            // Seeded: the same options grow the same trees, bit for bit.
            let again = CommModel::fit(method, &samples, TreeOptions::default()).unwrap();
            let other = TreeOptions {
                forest: ForestOptions {
                    seed: 1,
                    ..ForestOptions::default()
                },
                ..TreeOptions::default()
            };
            let reseeded = CommModel::fit(method, &samples, other).unwrap();
            let text = serde_json::to_string(&model).unwrap();
            assert_eq!(serde_json::to_string(&again).unwrap(), text, "{method}");
            assert_ne!(serde_json::to_string(&reseeded).unwrap(), text, "{method}");
            let back: CommModel = serde_json::from_str(&text).unwrap();
            assert_eq!(back.predict(&far), model.predict(&far));
            assert!(model.describe().starts_with(&method.to_string()));
            // A tree pointing at a feature the model has not is refused.
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["kind"]["Forest"]["trees"][0][0]["Split"]["feature"] = 15.into();
            let err = serde_json::from_value::<CommModel>(v)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("feature index: 15"), "{err}");
        }
    }

    #[test]
    fn alpha_beta_recovers_an_exact_law_across_five_decades() {
        let samples = grid(|f| 3e-6 * f.pm + 2e-10 * f.pd);
        let ab = AlphaBeta::fit(&samples);
        assert!((ab.alpha - 3e-6).abs() < 1e-12, "{ab:?}");
        assert!((ab.beta - 2e-10).abs() < 1e-16, "{ab:?}");
        for s in &samples {
            assert!(((ab.predict(&s.features) - s.seconds) / s.seconds).abs() < 1e-6);
        }
    }

    #[test]
    fn baselines_are_scored_on_the_held_out_rows_only() {
        let law = SemiEmpirical {
            alpha: 4e-6,
            alpha_multicore: 1e-6,
            beta: 5e-10,
            beta_contention: 2e-10,
            gamma: 3e-6,
        };
        let train = grid(|f| law.predict(&f.load()));
        // Held out: other message sizes, each measured 25% above the law.
        let held_out: Vec<Sample> = [(8, 2, 1, 100u64), (16, 4, 2, 3000), (16, 1, 3, 50_000)]
            .into_iter()
            .map(|(procs, per_rank, pm, l)| {
                let features = ring(procs, per_rank, pm, l);
                Sample {
                    features,
                    seconds: 1.25 * law.predict(&features.load()),
                }
            })
            .collect();
        let fitted = Baselines::fit(&train).unwrap();
        for (got, want) in fitted
            .semi_empirical
            .coefficients()
            .iter()
            .zip(law.coefficients())
        {
            assert!((got - want).abs() <= 1e-9 * want, "{fitted:?}");
        }
        let s = fitted.score(&held_out).unwrap().semi_empirical;
        // |t̂ − 1.25 t̂| / 1.25 t̂ = 0.2 on every held-out row; a training
        // row (error 0) would pull the mean below it.
        assert!((s.mmre - 0.2).abs() < 1e-9, "{s:?}");
        assert_eq!((s.pred25, s.rcc), (1.0, 1.0));
        assert_eq!(fitted.score(&train).unwrap().semi_empirical.pred25, 1.0);
        assert!(fitted.score(&train).unwrap().semi_empirical.mmre < 1e-9);
        // As a model, the same fit and the same predictions.
        let model = CommModel::fit(Method::SemiEmpirical, &train, TreeOptions::default()).unwrap();
        assert_eq!(
            score(&held_out, |f| model.predict(f)).unwrap(),
            fitted.score(&held_out).unwrap().semi_empirical
        );
        assert!(model
            .describe()
            .starts_with("semi-empirical: t = 4.0000e-6"));
    }

    #[test]
    fn a_model_file_with_wrong_shapes_is_refused() {
        let samples = grid(|f| 1e-5 + 1e-9 * f.pd);
        let model = CommModel::fit(Method::LinRegSv, &samples, TreeOptions::default()).unwrap();
        let text = serde_json::to_string(&model).unwrap();
        let back: CommModel = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.predict(&samples[3].features),
            model.predict(&samples[3].features)
        );
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["kind"]["Sv"]["feature"] = 99.into();
        let err = serde_json::from_value::<CommModel>(v)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("feature index: 99"), "{err}");
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["ranges"].as_array_mut().unwrap().pop();
        let err = serde_json::from_value::<CommModel>(v)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("length mismatch: 14"), "{err}");
    }

    #[test]
    fn bad_training_data_is_named() {
        let mut samples = grid(|_| 1e-5);
        assert!(matches!(
            CommModel::fit(Method::Gbrt, &samples[..3], TreeOptions::default()),
            Err(ModelError::TooFewPoints {
                needed: 8,
                got: 3,
                ..
            })
        ));
        samples[2].seconds = 0.0;
        assert!(matches!(
            CommModel::fit(Method::LinRegSv, &samples, TreeOptions::default()),
            Err(ModelError::InvalidValue {
                what: "a sample's seconds",
                ..
            })
        ));
        assert_eq!("gbrt".parse::<Method>(), Ok(Method::Gbrt));
        assert_eq!(
            "trees".parse::<Method>().unwrap_err().to_string(),
            "unknown learned method 'trees': use linreg-sv, linreg-mv, gbrt, random-forest, \
             extra-trees or semi-empirical"
        );
    }
}

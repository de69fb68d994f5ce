//! The features against hand-counted phases, each model on exact laws and
//! noisy data, the baselines on held-out rows, and bad training data and
//! model files refused.

use super::model::Kind;
use super::*;
use crate::forest::ForestOptions;
use crate::semi_empirical::SemiEmpirical;
use crate::ModelError;

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

//! The table of built-ins, the `name:key=value` syntax and its errors.

use heuristics::testing::assert_deterministic;
use heuristics::*;
use proptest::prelude::*;

use crate::common;

#[test]
fn every_row_parses_builds_and_names_itself() {
    assert!(!BUILTIN.is_empty());
    for (i, row) in BUILTIN.iter().enumerate() {
        assert_eq!(NAMES[i], row.name);
        let spec: HeuristicSpec = row.name.parse().unwrap();
        assert_eq!(
            spec.to_string(),
            row.name,
            "defaults print as the bare name"
        );
        assert_eq!(spec.build().name(), row.name);
        assert_eq!(by_name(row.name).unwrap().name(), row.name);
        assert!(!row.about.is_empty());
        for p in row.params {
            assert!(p.kind.accepts(p.default), "{}:{} default", row.name, p.key);
            assert_eq!(spec.get(p.key), Some(p.default));
            // Every parameter reaches the constructor (its accessor would
            // panic on a kind or key the row does not declare).
            let text = format!("{}:{}={}", row.name, p.key, p.default);
            assert_eq!(
                text.parse::<HeuristicSpec>().unwrap().build().name(),
                row.name
            );
        }
        let keys: Vec<_> = row.params.iter().map(|p| p.key).collect();
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(keys.len(), unique.len(), "{}: repeated key", row.name);
    }
    let mut names = NAMES.to_vec();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), BUILTIN.len(), "repeated name");
}

#[test]
fn names_are_the_documented_seven() {
    // The CLI help and docs/alb.md list these; a new row must update them.
    assert_eq!(
        NAMES,
        [
            "none",
            "const-iters",
            "exp-iters",
            "double-iters",
            "next-alb",
            "cost-aware",
            "welch"
        ]
    );
}

#[test]
fn parameters_reach_the_heuristic() {
    let spec: HeuristicSpec = "const-iters:every=50".parse().unwrap();
    assert_eq!(spec.get("every"), Some(Value::Count(50)));
    let s = "welch:alpha=0.01,margin=3,min-gain=0.1,prior=4"
        .parse::<HeuristicSpec>()
        .unwrap();
    assert_eq!(s.get("alpha"), Some(Value::Real(0.01)));
    assert_eq!(s.get("min-gain"), Some(Value::Real(0.1)));
    assert_eq!(s.get("margin"), Some(Value::Real(3.0)));
    assert_eq!(s.get("prior"), Some(Value::Real(4.0)));
    assert_eq!(s.get("nope"), None);
    // A ConstIters of period 50 rebalances at 50, not the default 30.
    let w = [DeviceWindow {
        rows: 1,
        samples: vec![1.0],
    }];
    let mut h = spec.build();
    let at: Vec<u64> = (29..120)
        .filter(|&iter| {
            h.check(&Snapshot {
                iter,
                rebalances: 0,
                remaining: 200 - iter,
                devices: &w,
            })
            .rebalance
        })
        .map(|i| i + 1)
        .collect();
    assert_eq!(at, vec![50, 100]);
    // margin=0 against the default 2: a cheap rebalance now pays.
    let slow = [
        DeviceWindow {
            rows: 100,
            samples: vec![1.2; 30],
        },
        DeviceWindow {
            rows: 100,
            samples: vec![1.0; 30],
        },
    ];
    let snap = Snapshot {
        iter: 29,
        rebalances: 0,
        remaining: 40,
        devices: &slow,
    };
    assert!(!by_name("cost-aware").unwrap().check(&snap).rebalance);
    let eager: HeuristicSpec = "cost-aware:margin=0".parse().unwrap();
    assert!(eager.build().check(&snap).rebalance);
}

#[test]
fn canonical_text_orders_and_drops_defaults() {
    let s: HeuristicSpec = "welch:margin=3,alpha=0.01".parse().unwrap();
    assert_eq!(s.to_string(), "welch:alpha=0.01,margin=3");
    let s: HeuristicSpec = "cost-aware:margin=2,min-gain=0.25".parse().unwrap();
    assert_eq!(s.to_string(), "cost-aware:min-gain=0.25");
    let s = HeuristicSpec::named("const-iters")
        .unwrap()
        .with("every", Value::Count(7))
        .unwrap();
    assert_eq!(s.to_string(), "const-iters:every=7");
    assert_eq!(s.clone(), s.to_string().parse().unwrap());
}

#[test]
fn unknown_name_lists_every_name() {
    let e = "sometimes".parse::<HeuristicSpec>().unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "unknown ALB heuristic 'sometimes': use {}",
            NAMES.join(", ")
        )
    );
    assert_eq!(
        e.to_string(),
        "unknown ALB heuristic 'sometimes': use none, const-iters, exp-iters, double-iters, \
         next-alb, cost-aware, welch"
    );
    assert_eq!(
        e,
        SpecError::UnknownName(UnknownHeuristic("sometimes".into()))
    );
    assert_eq!(
        by_name("sometimes").err().unwrap().to_string(),
        e.to_string()
    );
    // by_name takes names only; parameters go through HeuristicSpec.
    assert!(by_name("welch:alpha=0.01").is_err());
    assert!(matches!(
        "welch2:alpha=1".parse::<HeuristicSpec>(),
        Err(SpecError::UnknownName(UnknownHeuristic(n))) if n == "welch2"
    ));
}

#[test]
fn unknown_parameter_lists_that_heuristics_parameters() {
    assert_eq!(
        "welch:beta=1"
            .parse::<HeuristicSpec>()
            .unwrap_err()
            .to_string(),
        "ALB heuristic 'welch' has no parameter 'beta': its parameters are alpha, min-gain, \
         margin, prior"
    );
    assert_eq!(
        "none:every=3"
            .parse::<HeuristicSpec>()
            .unwrap_err()
            .to_string(),
        "ALB heuristic 'none' has no parameter 'every': its parameters are none"
    );
    assert_eq!(
        HeuristicSpec::named("const-iters")
            .unwrap()
            .with("period", Value::Count(3))
            .unwrap_err(),
        SpecError::UnknownParam {
            heuristic: "const-iters",
            key: "period".into(),
            known: "every".into()
        }
    );
}

#[test]
fn bad_values_say_what_is_expected() {
    let msg = |t: &str| t.parse::<HeuristicSpec>().unwrap_err().to_string();
    assert_eq!(
        msg("const-iters:every=0"),
        "bad value '0' for 'every' of ALB heuristic 'const-iters': expected a whole number of \
         at least 1"
    );
    assert_eq!(
        msg("const-iters:every=2.5"),
        "bad value '2.5' for 'every' of ALB heuristic 'const-iters': expected a whole number \
         of at least 1"
    );
    assert_eq!(
        msg("welch:alpha=1"),
        "bad value '1' for 'alpha' of ALB heuristic 'welch': expected a number strictly \
         between 0 and 1"
    );
    assert_eq!(
        msg("cost-aware:margin=-1"),
        "bad value '-1' for 'margin' of ALB heuristic 'cost-aware': expected a finite number \
         of at least 0"
    );
    assert_eq!(
        msg("cost-aware:margin=inf"),
        "bad value 'inf' for 'margin' of ALB heuristic 'cost-aware': expected a finite number \
         of at least 0"
    );
    assert_eq!(
        msg("cost-aware:margin=NaN"),
        "bad value 'NaN' for 'margin' of ALB heuristic 'cost-aware': expected a finite number \
         of at least 0"
    );
    assert_eq!(
        msg("cost-aware:margin"),
        "parameter 'margin' of ALB heuristic 'cost-aware' has no value: write key=value"
    );
    assert_eq!(
        msg("cost-aware:margin=1,margin=2"),
        "parameter 'margin' of ALB heuristic 'cost-aware' is given twice"
    );
    assert_eq!(
        HeuristicSpec::named("welch")
            .unwrap()
            .with("alpha", Value::Count(1))
            .unwrap_err()
            .to_string(),
        "bad value '1' for 'alpha' of ALB heuristic 'welch': expected a number strictly \
         between 0 and 1"
    );
}

/// A value `kind` accepts, and sometimes its text in another spelling.
fn value(kind: ParamKind) -> BoxedStrategy<Value> {
    match kind {
        ParamKind::Count => (1u64..=u64::MAX).prop_map(Value::Count).boxed(),
        ParamKind::NonNegative => prop_oneof![
            (0.0f64..1e6),
            (0.0f64..=f64::MAX),
            Just(0.0),
            Just(f64::MIN_POSITIVE / 4.0),
        ]
        .prop_map(Value::Real)
        .boxed(),
        ParamKind::Probability => {
            prop_oneof![(f64::EPSILON..1.0 - f64::EPSILON), Just(1e-300), Just(0.5),]
                .prop_map(Value::Real)
                .boxed()
        }
    }
}

/// Any spec: a row, and for each of its parameters maybe a value.
fn spec() -> impl Strategy<Value = HeuristicSpec> {
    (0..BUILTIN.len()).prop_flat_map(|i| {
        let row = &BUILTIN[i];
        let values: Vec<_> = row
            .params
            .iter()
            .map(|p| proptest::option::of(value(p.kind)))
            .collect();
        values.prop_map(move |vs| {
            row.params
                .iter()
                .zip(vs)
                .fold(
                    HeuristicSpec::named(row.name).unwrap(),
                    |s, (p, v)| match v {
                        Some(v) => s.with(p.key, v).unwrap(),
                        None => s,
                    },
                )
        })
    })
}

proptest! {
    #[test]
    fn display_and_parse_round_trip(s in spec()) {
        let text = s.to_string();
        let back: HeuristicSpec = text.parse().unwrap();
        prop_assert_eq!(&back, &s);
        prop_assert_eq!(back.to_string(), text);
        let built = s.build();
        prop_assert_eq!(built.name(), s.name());
    }

    #[test]
    fn any_order_of_parameters_reads_the_same(s in spec(), rev in any::<bool>()) {
        // Every parameter written out, in table or reverse order.
        let mut items: Vec<String> = s.params().map(|(p, v)| format!("{}={v}", p.key)).collect();
        if rev {
            items.reverse();
        }
        let text = if items.is_empty() {
            s.name().to_string()
        } else {
            format!("{}:{}", s.name(), items.join(","))
        };
        prop_assert_eq!(text.parse::<HeuristicSpec>().unwrap(), s);
    }
}

/// Windows of two devices, the first `slow` times slower, with 10% noise.
fn windows(slow: f64, seed: u64) -> Vec<DeviceWindow> {
    common::windows(&[slow * 1e-3, 1e-3], &[500, 500], 0.1, seed)
}

#[test]
fn every_builtin_is_deterministic() {
    // Balanced, then one device slows down, then it recovers.
    let script: Vec<Vec<DeviceWindow>> = (0..400u64)
        .map(|i| {
            let slow = match i {
                0..100 => 1.0,
                100..250 => 3.0,
                _ => 1.2,
            };
            windows(slow, i)
        })
        .collect();
    for row in BUILTIN {
        let at = assert_deterministic(|| HeuristicSpec::named(row.name).unwrap().build(), &script);
        assert_eq!(at.is_empty(), row.name == "none", "{}: {at:?}", row.name);
        let tuned = match row.params.first() {
            Some(p) if p.kind == ParamKind::Count => format!("{}:{}=7", row.name, p.key),
            Some(p) => format!("{}:{}=0.5", row.name, p.key),
            None => row.name.to_string(),
        };
        let spec: HeuristicSpec = tuned.parse().unwrap();
        assert_deterministic(|| spec.build(), &script);
    }
}

/// Decides from a counter shared by every copy: not deterministic.
struct Shared;

static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Heuristic for Shared {
    fn name(&self) -> &str {
        "shared"
    }
    fn check(&mut self, _s: &Snapshot<'_>) -> Decision {
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Decision::when(n.is_multiple_of(2))
    }
}

#[test]
#[should_panic(expected = "shared: two copies decided differently at check 0")]
fn a_heuristic_with_shared_state_is_caught() {
    assert_deterministic(|| Box::new(Shared), &[windows(1.0, 1)]);
}

/// Reports a value that differs between copies while deciding alike.
struct Counted(u64);

impl Heuristic for Counted {
    fn name(&self) -> &str {
        "counted"
    }
    fn check(&mut self, _s: &Snapshot<'_>) -> Decision {
        Decision::no().with("id", self.0 as f64)
    }
}

#[test]
#[should_panic(expected = "counted: two copies decided differently")]
fn differing_report_values_are_caught() {
    let next = std::sync::atomic::AtomicU64::new(0);
    assert_deterministic(
        || {
            Box::new(Counted(
                next.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            ))
        },
        &[windows(1.0, 1)],
    );
}

/// A restart from a checkpoint restores each built-in's state: it goes on
/// deciding as the uninterrupted run would, wherever the cut falls.
#[test]
fn every_builtin_restarts_from_its_state_deciding_alike() {
    use heuristics::testing::assert_restorable;
    use heuristics::DeviceWindow;
    // Imbalanced, then balanced, then imbalanced the other way.
    let window = |a: f64, b: f64| {
        vec![
            DeviceWindow {
                rows: 100,
                samples: (0..30).map(|i| a * (1.0 + 0.01 * (i % 5) as f64)).collect(),
            },
            DeviceWindow {
                rows: 100,
                samples: (0..30).map(|i| b * (1.0 + 0.01 * (i % 3) as f64)).collect(),
            },
        ]
    };
    let script: Vec<_> = (0..60)
        .map(|i| match i / 20 {
            0 => window(3.0, 1.0),
            1 => window(1.0, 1.0),
            _ => window(1.0, 2.5),
        })
        .collect();
    for b in heuristics::BUILTIN {
        assert_restorable(|| heuristics::by_name(b.name).unwrap(), &script);
    }
}

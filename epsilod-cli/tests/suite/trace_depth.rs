//! Trace mode on deep-halo runs: a run at halo depth 4 (the default's
//! temporal blocking) replays period by period, as one at depth 1 does.

use crate::common;
use common::{fails_with, ok};

use serde_json::Value;

/// A run of 2d4 at `size` over `iters` iterations on two one-thread
/// devices at `--halo-depth depth` (`extra` added), replayed: the real
/// report, the simulated one, and what simulate printed.
fn run_and_trace(
    dir: &std::path::Path,
    (size, iters): (&str, &str),
    depth: usize,
    extra: &[&str],
) -> (Value, Value, String) {
    let real = dir.join(format!("d{depth}.json"));
    let sim = dir.join(format!("d{depth}-sim.json"));
    let depth_arg = depth.to_string();
    let args = [
        &[
            "run",
            "2d4",
            "--size",
            size,
            "--iters",
            iters,
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1",
            "--partition",
            "w0",
            "--halo-depth",
            &depth_arg,
            "--quiet",
            "--report",
            real.to_str().unwrap(),
        ][..],
        extra,
    ]
    .concat();
    ok(&args);
    common::replayed(&real, &sim)
}

/// At depth 4 the replay exchanges once per 4 iterations (the real run's
/// messages, 12 exchanges of one message each way), holds the real rows
/// and records every iteration's share of its period. How close its loop
/// time comes is a timing, measured in docs/modelling.md, not asserted.
#[test]
fn trace_mode_replays_deep_halo_runs() {
    let dir = tempfile::tempdir().unwrap();
    let run = ("1538x1026", "48");
    let (r1, s1, _) = run_and_trace(dir.path(), run, 1, &[]);
    let (r4, s4, out) = run_and_trace(dir.path(), run, 4, &[]);
    assert!(out.contains("identical to the report"), "{out}");
    assert_eq!(r4["halo_depth"], 4);
    assert_eq!(s4["halo_depth"], 4);
    assert_eq!(r1["summary"]["halo_messages"], 96);
    assert_eq!(s1["summary"]["halo_messages"], 96);
    assert_eq!(r4["summary"]["halo_messages"], 24);
    assert_eq!(s4["summary"]["halo_messages"], 24);
    let its = |v: &Value| v["iterations"].as_array().unwrap().clone();
    assert_eq!(its(&s4).len(), 48);
    for (a, b) in its(&r4).iter().zip(&its(&s4)) {
        for d in 0..2 {
            assert_eq!(a["devices"][d]["rows"], b["devices"][d]["rows"]);
            let c = |v: &Value| v["devices"][d]["compute_seconds"].as_f64().unwrap();
            assert!((c(a) / c(b) - 1.0).abs() < 1e-12, "{a} vs {b}");
        }
    }
    // A report whose periods were cut (here: one iteration's kernel time
    // changed) is refused, naming the iteration.
    let mut r = r4.clone();
    r["iterations"][5]["devices"][0]["compute_seconds"] = Value::from(1e-3);
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, r.to_string()).unwrap();
    fails_with(
        &["simulate", "--trace-from", cut.to_str().unwrap()],
        "its records do not go by periods of its halo depth 4 (iteration 5)",
    );
}

/// A deep-halo run under ALB with a device slowed from iteration 60
/// replays with the same checks and weights: the heuristic sees each
/// period once, as the skeleton's does.
#[test]
fn trace_mode_replays_deep_halo_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let (r, s, out) = run_and_trace(
        dir.path(),
        ("770x258", "200"),
        4,
        &[
            "--devices",
            "cpu:threads=1,slowdown=3@60",
            "--alb",
            "const-iters",
        ],
    );
    assert!(out.contains("identical to the report"), "{out}");
    assert!(!r["heuristic"].as_array().unwrap().is_empty());
    assert_eq!(r["heuristic"], s["heuristic"]);
    // Checks fall at the ends of periods.
    for c in r["heuristic"].as_array().unwrap() {
        assert_eq!((c["iter"].as_u64().unwrap() + 1) % 4, 0, "{c}");
    }
    let moves = |v: &Value| v["redistributions"].as_array().unwrap().len();
    assert!(moves(&r) >= 1);
    assert_eq!(moves(&r), moves(&s));
}

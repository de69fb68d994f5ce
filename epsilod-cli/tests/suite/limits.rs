//! Inputs that must neither crash nor eat memory: a run too large for the
//! host refused in one line before anything is built, app parameters
//! checked as the kernel sees them (f32), counts of 0 that mean nothing
//! refused, and a long simulation's report a bounded sample that says so.

use crate::common::{epsilod, fails_with, json, ok, plan, INVENTORY};

/// gaussian built its image before the memory check: a 4 TB image aborted
/// with a backtrace (status 134).
#[test]
fn a_run_too_large_for_memory_is_one_line() {
    if !cfg!(target_os = "linux") {
        return;
    }
    for app in ["gaussian", "wavesim", "2d4"] {
        let args = ["run", app, "--size", "1000000x1000000", "--iters", "1"];
        fails_with(&args, "error: the run needs ");
        fails_with(&args, " GB of memory on host ");
        assert_eq!(epsilod(&args).status.code(), Some(1), "{app}");
    }
}

#[test]
fn parameters_beyond_f32_and_wavesims_t_are_refused() {
    let wavesim = |iters, param| {
        [
            "run", "wavesim", "--size", "34", "--iters", iters, "--param", param,
        ]
    };
    fails_with(
        &wavesim("5", "dt=1e39"),
        "error: --param dt=1e39: not a finite number in f32, the type the kernel computes in",
    );
    fails_with(
        &wavesim("5", "T=100"),
        "error: --param T=100 at dt=0.25 is 400 iterations (EPSILOD runs (int)((float)T/dt)), not 5: give --iters 400, or leave T out",
    );
    let out = ok(&wavesim("400", "T=100"));
    assert!(out.starts_with("wavesim 34x34 x 400 iterations"), "{out}");
}

/// Every count or size whose 0 means nothing is refused, naming the
/// option (plan's --cell-bytes and replay's --per-rank took 0).
#[test]
fn counts_of_zero_are_refused() {
    let plan = plan(INVENTORY, "4098x4098", "10", &[]);
    let simulate = |iters, count, extra: &[&'static str]| {
        let counts = ["--iters", iters, "--devices-count", count];
        [&["simulate", "2d4", "--size", "34"][..], &counts, extra].concat()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            [&plan[..], &["--cell-bytes", "0"]].concat(),
            "error: invalid value '0' for '--cell-bytes <CELL_BYTES>': 0 is not in 1..=4096",
        ),
        (
            [&plan[..], &["--halo-rows", "0"]].concat(),
            "'--halo-rows <HALO_ROWS>': 0 is not in 1..=64",
        ),
        (
            vec!["replay", "trace.json", "--per-rank", "0"],
            "error: invalid value '0' for '--per-rank <PER_RANK>': expected a whole number of at least 1",
        ),
        (
            vec!["replay", "trace.json", "--iters", "0"],
            "'--iters <ITERS>': expected a whole number of at least 1",
        ),
        (
            simulate("0", "2", &[]),
            "bad iteration count '0': expected a whole number >= 1",
        ),
        (
            simulate("5", "0", &[]),
            "'--devices-count <DEVICES_COUNT>': 0 is not in 1..=1048576",
        ),
        (
            simulate("5", "4", &["--per-host", "0"]),
            "'--per-host <PER_HOST>': expected a whole number of at least 1",
        ),
        (
            simulate("5", "2", &["--record-every", "0"]),
            "'--record-every <RECORD_EVERY>': expected a whole number of at least 1",
        ),
        (
            vec!["run", "2d4", "--size", "34", "--devices", "cpu:threads=0"],
            "threads=0: a device needs at least one thread",
        ),
        (
            vec!["run", "2d4", "--size", "0"],
            "bad size '0': sizes must be at least 1",
        ),
        (
            vec!["run", "2d4", "--size", "34", "--halo-depth", "0"],
            "'0' is not auto, cache or a whole number from 1 to 64",
        ),
        (
            vec!["scale", "s.json", "--target", "0"],
            "'--target <TARGET>': 0 is not in 1..=1048576",
        ),
        (
            vec!["scale", "s.json", "--target", "4", "--cores", "0"],
            "`0` is not a positive number",
        ),
        (
            vec!["commbench", "--per-rank", "0"],
            "'--per-rank <PER_RANK>': expected a whole number from 1 to 1024",
        ),
    ];
    for (args, want) in cases {
        fails_with(&args, want);
    }
}

/// Ten million simulated iterations keep the records asked for, and the
/// report says the blocks it sampled (it said 1 whatever it kept).
#[test]
fn a_long_simulation_reports_its_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("sim.json");
    ok(&[
        "simulate",
        "2d4",
        "--size",
        "10x10",
        "--iters",
        "10000000",
        "--devices-count",
        "2",
        "--record-every",
        "1000000",
        "--report",
        report.to_str().unwrap(),
    ]);
    let r = json(&report);
    assert_eq!(r["summary"]["iterations_recorded_every"], 1_000_000);
    let iters: Vec<u64> = r["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["iter"].as_u64().unwrap())
        .collect();
    assert_eq!(iters.len(), 10);
    for (b, i) in iters.iter().enumerate() {
        assert_eq!(i / 1_000_000, b as u64, "one in each block: {iters:?}");
    }
}

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
            "error: invalid value '0' for '--cell-bytes <CELL_BYTES>': expected a whole number from 1 to 4096",
        ),
        (
            [&plan[..], &["--halo-rows", "0"]].concat(),
            "'--halo-rows <HALO_ROWS>': expected a whole number from 1 to 64",
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
            "'--devices-count <DEVICES_COUNT>': expected a whole number from 1 to 1048576",
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
            "'--target <TARGET>': expected a whole number from 1 to 1048576",
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

/// Every option bounded on both sides says its bounds in words, in the
/// whole line the user sees (clap's own said "0 is not in 1..=64"), and
/// `--help` still shows the defaults.
#[test]
fn bounded_options_say_their_bounds_in_words() {
    let plan = plan(INVENTORY, "34", "3", &[]);
    let simulate = ["simulate", "2d4", "--size", "34", "--iters", "5"];
    let predict = ["predict", "--model", "m.json", "--size", "34"];
    let cases: Vec<(Vec<&str>, &str, &str, &str)> = vec![
        (
            vec!["scale", "s.json"],
            "--target <TARGET>",
            "0",
            "from 1 to 1048576",
        ),
        (
            vec!["view", "a.npy", "-o", "a.gif"],
            "--delay <DELAY>",
            "655351",
            "from 0 to 655350",
        ),
        (
            predict.to_vec(),
            "--halo-rows <HALO_ROWS>",
            "65",
            "from 1 to 64",
        ),
        (
            predict.to_vec(),
            "--cell-bytes <CELL_BYTES>",
            "0",
            "from 1 to 4096",
        ),
        (
            vec!["calibrate", "2d4"],
            "--max-bytes <MAX_BYTES>",
            "3",
            "from 4 to 1073741824",
        ),
        (plan.clone(), "--halo-rows <HALO_ROWS>", "0", "from 1 to 64"),
        (
            plan.clone(),
            "--cell-bytes <CELL_BYTES>",
            "4097",
            "from 1 to 4096",
        ),
        (
            simulate.to_vec(),
            "--devices-count <DEVICES_COUNT>",
            "0",
            "from 1 to 1048576",
        ),
    ];
    for (command, flag, value, bounds) in cases {
        let name = flag.split(' ').next().unwrap();
        let args = [&command[..], &[name, value]].concat();
        let out = epsilod(&args);
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "error: invalid value '{value}' for '{flag}': expected a whole number {bounds} \
                 (see 'epsilod --help')\n"
            ),
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // Past the type's largest value: too large, and the most it may be.
    fails_with(
        &["view", "a.npy", "-o", "a.gif", "--delay", "99999999999"],
        "'--delay <DELAY>': 99999999999 is too large: at most 655350 (see",
    );
    for (command, default) in [
        (
            &["plan", "--help"][..],
            "1 to 64), and the boundary's depth on every side [default: 1]",
        ),
        (
            &["plan", "--help"],
            "Bytes of one cell (1 to 4096) [default: 4]",
        ),
        (&["view", "--help"], "in 16 bits) [default: 200]"),
        (
            &["calibrate", "--help"],
            "at most 1 GiB (1073741824) [default: 4194304]",
        ),
    ] {
        let help = ok(command);
        assert!(
            help.contains(default),
            "{command:?} lacks {default:?}:\n{help}"
        );
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

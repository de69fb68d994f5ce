//! The modelling commands end to end: `simulate` (model and trace mode),
//! `calibrate` and `plan`, on the real binary.

use crate::common;
use common::{fails_with, json, ok, one_cpu_each, plan, INVENTORY, QUICK_CALIBRATION};

use serde_json::Value;

/// A real run of 2d4 258² over 300 iterations on two one-thread devices,
/// the second `slowdown=SLOW`, under `alb`, then its trace replayed:
/// the real report, the simulated one, and what simulate printed. Both
/// reports are written to `dir` as NAME.json and NAME-sim.json.
fn run_and_trace(
    dir: &std::path::Path,
    name: &str,
    slow: &str,
    alb: &str,
) -> (Value, Value, String) {
    let real = dir.join(format!("{name}.json"));
    let sim = dir.join(format!("{name}-sim.json"));
    ok(&[
        "run",
        "2d4",
        "--size",
        "258x258",
        "--iters",
        "300",
        "--devices",
        "cpu:threads=1",
        "--devices",
        &format!("cpu:threads=1,slowdown={slow}"),
        "--partition",
        "w0",
        "--alb",
        alb,
        "--quiet",
        "--report",
        real.to_str().unwrap(),
    ]);
    common::replayed(&real, &sim)
}

/// A run that drops a device (60x slower from iteration 100) replays in
/// trace mode with the same drop: the simulator shares the rule. The
/// report loads although next-alb's gap is infinite with one device
/// holding rows (written as "inf").
#[test]
fn trace_mode_reproduces_a_run_that_drops_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let (r, s, out) = run_and_trace(dir.path(), "real", "60@100", "next-alb");
    let dropped = r["redistributions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["weights_after"][1] == 0.0)
        .expect("the slow device is dropped");
    assert!(dropped["iter"].as_u64().unwrap() >= 100, "{dropped}");
    assert_eq!(r["config"]["alb_drop_below"], 0.05);
    assert!(out.contains("identical to the report"), "{out}");
    assert_eq!(r["heuristic"], s["heuristic"]);
    assert!(
        r["heuristic"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["gap"] == "inf"),
        "no infinite gap recorded"
    );
}

/// Trace mode fed real runs (a device three times slower from iteration
/// 100) decides exactly as they did, check by check, and moves to the same
/// weights; a report whose kernel times were tampered with is caught.
#[test]
fn trace_mode_reproduces_real_runs() {
    let dir = tempfile::tempdir().unwrap();
    for alb in ["const-iters", "cost-aware", "welch"] {
        let (r, s, out) = run_and_trace(dir.path(), alb, "3@100", alb);
        assert!(out.contains("identical to the report"), "{alb}: {out}");
        assert!(!r["heuristic"].as_array().unwrap().is_empty(), "{alb}");
        assert_eq!(r["heuristic"], s["heuristic"], "{alb}");
        let after = |v: &Value| -> Vec<Value> {
            v["redistributions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["weights_after"].clone())
                .collect()
        };
        assert_eq!(after(&r), after(&s), "{alb}");
        // The same redistribution plans: rows and bytes moved alike.
        let moved = |v: &Value| -> Vec<(Value, Value)> {
            v["redistributions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (m["rows_moved"].clone(), m["bytes_moved"].clone()))
                .collect()
        };
        assert_eq!(moved(&r), moved(&s), "{alb}");
        assert_eq!(s["config"]["kernel"], "simulated (trace)");
    }
    // A report from before the window and the gather were recorded loads
    // as those runs ran (window 30, times sent directly) and replays the
    // same; one that claims another window decides otherwise; one that
    // claims an impossible window is one line.
    let edited = |f: &dyn Fn(&mut Value)| {
        let mut r = json(dir.path().join("cost-aware.json"));
        f(&mut r);
        let p = dir.path().join("edited.json");
        std::fs::write(&p, r.to_string()).unwrap();
        p
    };
    let older = edited(&|r| {
        let c = r["config"].as_object_mut().unwrap();
        assert!(c.remove("alb_window").is_some() && c.remove("times_direct_up_to").is_some());
        assert!(c.remove("alb_drop_below").is_some());
    });
    let out = ok(&["simulate", "--trace-from", older.to_str().unwrap()]);
    assert!(out.contains("identical to the report"), "{out}");
    let other = edited(&|r| r["config"]["alb_window"] = Value::from(10));
    fails_with(
        &["simulate", "--trace-from", other.to_str().unwrap()],
        "trace",
    );
    // The stencil, heuristic and seed come from the report: one given
    // beside it is refused, not silently ignored.
    for (extra, named) in [
        (&["2d9"][..], "'[STENCIL]'"),
        (&["--alb", "welch"], "'--alb <ALB>'"),
        (&["--seed", "3"], "'--seed <SEED>'"),
    ] {
        let args = [
            &["simulate", "--trace-from", older.to_str().unwrap()][..],
            extra,
        ]
        .concat();
        fails_with(&args, &format!("cannot be used with {named}"));
    }
    let impossible = edited(&|r| r["config"]["alb_window"] = Value::from(1));
    fails_with(
        &["simulate", "--trace-from", impossible.to_str().unwrap()],
        "config.alb_window 1 and config.times_direct_up_to 32 cannot come from a run",
    );
    // Kernel times that say the slow device is fast: other decisions.
    let mut r = json(dir.path().join("const-iters.json"));
    for it in r["iterations"].as_array_mut().unwrap() {
        it["devices"][1]["compute_seconds"] = Value::from(1e-9);
    }
    let bad = dir.path().join("tampered.json");
    std::fs::write(&bad, r.to_string()).unwrap();
    fails_with(
        &["simulate", "--trace-from", bad.to_str().unwrap()],
        "trace",
    );
}

/// Model mode writes run's report schema (plot draws it), several
/// heuristics print compare's table, and the scenario options reach the
/// devices: an anomalous host makes the balancing heuristics rebalance.
#[test]
fn simulated_runs_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("sim.json");
    let out = ok(&[
        "simulate",
        "2d4",
        "--size",
        "1026x258",
        "--iters",
        "400",
        "--devices-count",
        "16",
        "--per-host",
        "4",
        "--slow-host",
        "2:3@50",
        "--drift",
        "0.25:1.5@100..300",
        "--alb",
        "const-iters",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(out.contains("16 device(s)"), "{out}");
    let r = json(&report);
    assert_eq!(r["iterations"].as_array().unwrap().len(), 400);
    assert!(r["summary"]["rebalances"].as_u64().unwrap() >= 1);
    let last = &r["iterations"][399]["devices"];
    // Host 2 (devices 8..12) ends with fewer rows than host 0.
    let rows = |d: usize| last[d]["rows"].as_u64().unwrap();
    assert!(rows(8) * 2 < rows(0), "{} vs {}", rows(8), rows(0));
    let png = dir.path().join("sim.png");
    ok(&[
        "plot",
        report.to_str().unwrap(),
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(std::fs::metadata(&png).unwrap().len() > 0);
    let csv = dir.path().join("table.csv");
    let table = ok(&[
        "simulate",
        "2d4",
        "--size",
        "1026x258",
        "--iters",
        "200",
        "--devices-count",
        "8",
        "--slow-host",
        "0:2",
        "--per-host",
        "2",
        "--alb",
        "none,const-iters,welch",
        "--reps",
        "3",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    for h in ["none", "const-iters", "welch"] {
        assert!(table.contains(h), "{table}");
    }
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap().lines().count(),
        4,
        "a header and three rows"
    );
}

#[test]
fn simulate_rejects_bad_input_with_one_line() {
    // A spec reading the domain's size n[d] is bound to --size (it panicked
    // unbound before).
    let wavesim = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/specs/wavesim.toml"
    );
    let out = ok(&[
        "simulate",
        wavesim,
        "--size",
        "34",
        "--iters",
        "5",
        "--devices-count",
        "2",
    ]);
    assert!(
        out.contains("simulated wavesim-spec x 5 iterations"),
        "{out}"
    );
    let base = ["simulate", "2d4", "--size", "100x100", "--iters", "10"];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    for (extra, want) in [
        (
            &["--devices-count", "2", "--devices", "cpu"][..],
            "not both",
        ),
        (&[][..], "give the devices"),
        (
            &["--devices-count", "100000000"][..],
            "expected a whole number from 1 to 1048576",
        ),
        (
            &["--devices-count", "2", "--drift", "2:1.5@1..9"][..],
            "fraction",
        ),
        (
            &["--devices-count", "2", "--slow-host", "5:2"][..],
            "no host 5",
        ),
        (
            &["--devices-count", "2", "--noise", "1e300"][..],
            "noise cv must be a finite number from 0 to 100, got 1e300",
        ),
        (
            &[
                "--devices-count",
                "2",
                "--alb",
                "welch,none",
                "--report",
                "x.json",
            ][..],
            "--report is for one run",
        ),
        (
            &["--devices-count", "2", "--alb", "sometimes"][..],
            "sometimes",
        ),
        (
            &["--devices-count", "2", "--partition", "w2"][..],
            "cannot simulate",
        ),
    ] {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, want);
    }
    // A device staged through a host link the machine does not have.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.json");
    std::fs::write(
        &m,
        r#"{"devices":[{"name":"gpu","seconds_per_cell":1e-10,"host_link":"pcie"}],
            "links":[{"name":"local","hockney":{"alpha":1e-6,"beta":1e-10},
                      "loggp":{"l":1e-6,"o_s":0,"o_r":0,"g":0,"big_g":1e-10}}]}"#,
    )
    .unwrap();
    let args = with(&["--devices-count", "2", "--model", m.to_str().unwrap()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(
        &args,
        "device 0's host link 'pcie' is not among the machine's links",
    );
    fails_with(
        &[
            "simulate",
            "--size",
            "10",
            "--iters",
            "3",
            "--devices-count",
            "1",
        ],
        "give a stencil",
    );
    fails_with(
        &[
            "simulate",
            "poisson",
            "--size",
            "34",
            "--iters",
            "3",
            "--devices-count",
            "1",
        ],
        "is an app",
    );
    fails_with(
        &["simulate", "--trace-from", "/nonexistent/r.json"],
        "cannot read report",
    );
}

/// Calibration writes a machine that names the run's devices, sets the
/// slowest device's power to 1, holds ping-pong samples from 0 B up to the
/// largest size with the run's halo size among them, and is read back by
/// predict, simulate and --weights-from.
#[test]
fn calibrate_writes_a_machine_the_other_commands_read() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("machine.json");
    let m = m.to_str().unwrap();
    let devices = ["cpu:threads=1", "cpu:threads=1,slowdown=2"];
    // The grid and devices every command here is given.
    let on = |cmd: &'static str, rest: &[&'static str]| {
        let grid = ["2d4", "--size", "66x34", "--devices", devices[0]];
        [&[cmd][..], &grid, &["--devices", devices[1]], rest].concat()
    };
    let out = ok(&[
        &on("calibrate", &QUICK_CALIBRATION)[..],
        &["--max-bytes", "4096", "--out", m],
    ]
    .concat());
    assert!(out.contains("link in-process"), "{out}");
    let v = json(std::path::Path::new(m));
    let ds = v["devices"].as_array().unwrap();
    assert_eq!(ds.len(), 2);
    for (d, name) in ds.iter().zip(devices) {
        // The report's canonical text (slowdown=2 reads slowdown=2@0).
        assert!(d["name"].as_str().unwrap().starts_with(name), "{d}");
        assert!(d["seconds_per_cell"].as_f64().unwrap() > 0.0);
        assert!(d["fixed_seconds"].as_f64().unwrap() >= 0.0);
        assert_eq!(
            d["samples"], 9,
            "three passes (equal, seeded, equal again) of 6 iterations, the first half not kept"
        );
    }
    let powers: Vec<f64> = ds
        .iter()
        .map(|d| d["relative_power"].as_f64().unwrap())
        .collect();
    assert_eq!(powers.iter().cloned().fold(f64::MAX, f64::min), 1.0);
    let link = &v["links"][0];
    assert_eq!(link["name"], "in-process");
    let sizes: Vec<f64> = link["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_f64().unwrap())
        .collect();
    // 0, 4 .. 4096 doubling, and the halo: one row of 32 f32 cells = 128 B
    // (already a power of two).
    assert_eq!(sizes.first(), Some(&0.0));
    assert_eq!(sizes.last(), Some(&4096.0));
    assert!(sizes.contains(&128.0));
    assert_eq!(sizes.len(), 12);
    assert!(link["hockney"]["alpha"].as_f64().unwrap() >= 0.0);
    assert!(link["piecewise"]["segments"].as_array().is_some());
    // CPU devices compute in the host's memory, whose copy rate was
    // measured at working sets of 2 MiB to 512 MiB.
    assert!(ds.iter().all(|d| d["host_memory"] == true), "{ds:?}");
    let rates = v["memory"]["rates"].as_array().unwrap();
    let sets: Vec<f64> = rates.iter().map(|r| r[0].as_f64().unwrap()).collect();
    assert_eq!(
        sets,
        (0..9)
            .map(|k| (2u64 << (20 + k)) as f64)
            .collect::<Vec<_>>()
    );
    assert!(rates.iter().all(|r| r[1].as_f64().unwrap() > 0.0));
    assert!(
        out.contains("host memory (copy GB/s by working set"),
        "{out}"
    );
    // Read back by the others.
    ok(&["predict", "--model", m, "--size", "66x34", "--iters", "10"]);
    let run = on("run", &["--iters", "3", "--partition", "w0", "--quiet"]);
    ok(&[&run[..], &["--weights-from", m]].concat());
    ok(&[&on("simulate", &["--iters", "10"])[..], &["--model", m]].concat());
    fails_with(
        &["calibrate", "poisson", "--size", "34", "--out", m],
        "is an app",
    );
}

/// A tile sweep times every device at the partitioned extent scaled by
/// each factor (68 rows: tiles of 33 rows of 32 cells, then 16 and 67),
/// up and back down, prints those tiles, and writes the curve it prints,
/// from the smallest tile to the largest and never falling; a run seeded
/// from it has the rows predict gives; a factor leaving a device no cells,
/// or a calibration without the --size a sweep scales, is refused by name
/// before anything is timed.
#[test]
fn calibrate_sweeps_tile_sizes_into_a_curve() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("machine.json");
    let m = m.to_str().unwrap();
    let two = [
        &["--size", "68x34"][..],
        &one_cpu_each(2),
        &["--partition", "w0"],
    ]
    .concat();
    let base = [
        &["calibrate", "2d4"][..],
        &two[..],
        // A small link calibration: predict reads the machine back.
        &[
            "--calib-iters",
            "6",
            "--max-bytes",
            "64",
            "--reps",
            "3",
            "--out",
            m,
        ],
    ]
    .concat();
    // Given in any order, swept up and back down.
    let out = ok(&[&base[..], &["--tile-sweep", "2,0.5"]].concat());
    let sweeps: Vec<&str> = out.lines().filter(|l| l.contains("tile sweep")).collect();
    assert_eq!(sweeps.len(), 2, "{out}");
    for l in sweeps {
        let cells: Vec<&str> = l
            .split("; ")
            .map(|p| p.rsplit(" over ").next().unwrap())
            .collect();
        assert_eq!(
            cells,
            [
                "5.1200e2 cells",
                "2.1440e3 cells",
                "2.1440e3 cells",
                "5.1200e2 cells"
            ],
            "up the factors and back: {l}"
        );
    }
    // Whether this machine's tiles depart from the line is the load's
    // to say (the curve's rules are the unit tests'); what is printed is
    // what is written, and a curve written spans the sweep and never falls.
    let v = json(std::path::Path::new(m));
    let printed: Vec<&str> = out.lines().filter(|l| l.contains(" tile curve")).collect();
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(printed.len(), devices.len(), "{out}");
    for (d, line) in devices.iter().zip(printed) {
        let Some(curve) = d["tile_curve"].as_array() else {
            assert!(
                line.ends_with("tile curve: none beyond the line's noise"),
                "{line}"
            );
            continue;
        };
        let points: Vec<(f64, f64)> = curve
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        let text: Vec<String> = points
            .iter()
            .map(|(c, f)| format!("{c:.4e} cells x{f:.3}"))
            .collect();
        assert!(
            line.ends_with(&text.join("; ")),
            "{line} against {points:?}"
        );
        assert!(points[0].0 <= 544.0, "{points:?}");
        // 2144 cells, or with a seeded-pass tile within 10% of it (a
        // device timed many times slower than its twin) their mean.
        let last = points.last().unwrap().0;
        assert!((1900.0..=2144.0 + 1e-9).contains(&last), "{points:?}");
        assert!(
            points
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{points:?}"
        );
    }
    // Seeded from the curved machine: the rows predict gives it (told the
    // stencil, so that it costs the same tiles: 2d4's cells are 4 bytes).
    let report = dir.path().join("seeded.json");
    ok(&[
        &["run", "2d4", "--iters", "3", "--weights-from", m, "--quiet"][..],
        &two[..],
        &["--report", report.to_str().unwrap()],
    ]
    .concat());
    let r = json(&report);
    let predicted = ok(&[
        "predict",
        "--model",
        m,
        "--stencil",
        "2d4",
        "--size",
        "68x34",
        "--iters",
        "3",
    ]);
    for (d, dev) in r["iterations"][0]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let rows = format!("device {d}: rows {} ", dev["rows"]);
        assert!(predicted.contains(&rows), "{rows} in {predicted}");
    }
    // Refused before anything is timed: no machine is written.
    let fresh = dir.path().join("never.json");
    let refused = |extra: &[&str], why: &str| {
        let args = [
            &["calibrate", "2d4"][..],
            extra,
            &[
                "--calib-iters",
                "6",
                "--no-links",
                "--out",
                fresh.to_str().unwrap(),
            ],
        ]
        .concat();
        fails_with(&args, why);
        assert!(!fresh.exists(), "{args:?} wrote a machine");
    };
    refused(
        &[&two[..], &["--tile-sweep", "2,0.01"]].concat(),
        "cannot calibrate: --tile-sweep 0.01 makes the size 1x34, where bad size '1x34': \
         dimension 0 needs more than 2 cells (the boundary of '2d4') to leave an interior; \
         leave that factor out",
    );
    // One interior row for two devices.
    refused(
        &[&two[..], &["--tile-sweep", "0.05"]].concat(),
        "cannot calibrate: --tile-sweep 0.05 makes the size 3x34, where device 1 has no \
         cells to time: use fewer devices or a larger --size; leave that factor out",
    );
    refused(
        &[&two[2..], &["--tile-sweep", "2"]].concat(),
        "the following required arguments were not provided: --size",
    );
    fails_with(
        &[&base[..], &["--tile-sweep", "0"]].concat(),
        "`0` is not a positive number",
    );
}

/// A GPU device's halos cross the link between its memory and the host's
/// (PoCL stands in for a GPU): calibrate measures that link per device,
/// names it in the device, and groups the devices of one context, whose
/// halos stay in device memory; predict reads the machine back.
#[cfg(feature = "opencl")]
#[test]
fn calibrate_measures_the_link_between_device_and_host_memory() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("machine.json");
    let m = m.to_str().unwrap();
    let out = ok(&[
        "calibrate",
        "2d4",
        "--size",
        "66x34",
        "--devices",
        "opencl",
        "--devices",
        "opencl",
        "--devices",
        "cpu:threads=1",
        "--calib-iters",
        "6",
        // Seven, not three: the trimmed mean then drops a stall, where
        // with three a loaded machine's two stalls at 4 KiB (764 µs among
        // 33-52 µs) made the mean and tilted the line to alpha 0.
        "--reps",
        "7",
        "--max-bytes",
        "4096",
        "--out",
        m,
    ]);
    let v = json(std::path::Path::new(m));
    let ds = v["devices"].as_array().unwrap();
    let links = v["links"].as_array().unwrap();
    for (d, dev) in ds.iter().enumerate().take(2) {
        let name = format!("host-device:{d}");
        assert_eq!(dev["host_link"], name.as_str(), "{dev}");
        assert_eq!(dev["host_memory"], false);
        let link = links.iter().find(|l| l["name"] == name.as_str()).unwrap();
        let sizes: Vec<f64> = link["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["bytes"].as_f64().unwrap())
            .collect();
        // 4 .. 4096 doubling (a transfer of nothing is no transfer) and
        // the halo's 128 B among them.
        assert_eq!(sizes.first(), Some(&4.0), "{link}");
        assert_eq!(sizes.last(), Some(&4096.0));
        assert_eq!(sizes.len(), 11);
        // Every size costs time, and so does the halo's by the fit. Not
        // alpha itself: one stalled size on a loaded machine (4 KiB at
        // 450 µs among 7-9 µs, even through seven repetitions) tilts the
        // least-squares line to alpha 0.
        assert!(
            link["samples"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["seconds"].as_f64().unwrap() > 0.0),
            "{link}"
        );
        let h = &link["hockney"];
        let halo = h["alpha"].as_f64().unwrap() + 128.0 * h["beta"].as_f64().unwrap();
        assert!(halo > 0.0, "{link}");
        assert!(
            out.contains(&format!(
                "reaches host memory over link {name} (peer group 0)"
            )),
            "{out}"
        );
    }
    // One OpenCL context: one group, so their halos pay no staging.
    assert_eq!(ds[0]["peer_group"], 0);
    assert_eq!(ds[1]["peer_group"], 0);
    // The CPU device computes in host memory and has neither.
    assert!(ds[2].get("host_link").is_none(), "{}", ds[2]);
    assert!(ds[2].get("peer_group").is_none(), "{}", ds[2]);
    assert_eq!(ds[2]["host_memory"], true);
    ok(&["predict", "--model", m, "--size", "66x34", "--iters", "10"]);
}

/// The example inventory: at a large size every device pays off over the
/// faster network; at a small one the single fastest device wins; the
/// front's times fall as devices are added; bad inventories are one line.
#[test]
fn plan_chooses_devices_and_writes_the_front() {
    let inv = INVENTORY;
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("plan.json");
    let j = j.to_str().unwrap();
    let out = ok(&plan(inv, "4098x4098", "1000", &["--json", j]));
    assert!(out.starts_with("best: "), "{out}");
    let v = json(j);
    assert_eq!(v["best"]["devices"], 10);
    assert_eq!(v["best"]["network"], "infiniband");
    let front = v["pareto"].as_array().unwrap();
    assert_eq!(front.len(), 10);
    let times: Vec<f64> = front
        .iter()
        .map(|c| c["seconds"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[1] < w[0]));
    assert_eq!(v["best"]["seconds"], front[9]["seconds"]);
    // The sweep holds slabs and blocks for each devices-per-rank, each
    // naming its partition; the text says which.
    let sweep = v["sweep"].as_array().unwrap();
    let parts: Vec<&str> = sweep
        .iter()
        .map(|c| c["partition"].as_str().unwrap())
        .collect();
    assert_eq!(parts.iter().filter(|&&p| p == "m").count(), sweep.len() / 3);
    assert!(out.contains("partition m, weights Equal"), "{out}");
    // An inventory with a fixed cost per iteration loads.
    let fixed = dir.path().join("fixed.toml");
    std::fs::write(
        &fixed,
        "in_process = { alpha = 1e-6, beta = 0 }\n[[device]]\nname = \"x\"\nhost = \"h\"\nseconds_per_cell = 1e-9\nfixed_seconds = 1e-4\n",
    )
    .unwrap();
    let out = ok(&plan(
        fixed.to_str().unwrap(),
        "102x102",
        "10",
        &["--json", j],
    ));
    // One device: 1e-4 + 1e4 cells (the interior, 100 x 100) x 1 ns = 110
    // µs an iteration.
    assert!(out.starts_with("best: 0.0011 s"), "{out}");
    let seconds = json(j)["best"]["seconds"].as_f64().unwrap();
    assert!((seconds / 1.1e-3 - 1.0).abs() < 1e-9, "{seconds}");
    ok(&plan(
        inv,
        "258x258",
        "1000",
        &["--estimate", "additive", "--json", j],
    ));
    let v = json(j);
    assert_eq!(v["best"]["devices"], 1);
    assert!(v["best"]["network"].is_null());
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "in_process = { alpha = 1e-6, beta = 0 }\n[[device]]\nname = \"x\"\nhost = \"h\"\nseconds_per_cel = 1e-9\n",
    )
    .unwrap();
    let b = bad.to_str().unwrap();
    fails_with(&plan(b, "10x10", "1", &[]), "seconds_per_cel");
    std::fs::write(
        &bad,
        "in_process = { alpha = 1e-6, beta = 0 }\n[[device]]\nname = \"x\"\nhost = \"h\"\nseconds_per_cell = -1\n",
    )
    .unwrap();
    fails_with(
        &plan(b, "10x10", "1", &[]),
        "device x seconds_per_cell must be a finite number > 0, got -1",
    );
    fails_with(
        &plan(inv, "10x10", "1", &["--estimate", "guess"]),
        "unknown estimate",
    );
    fails_with(
        &plan(inv, "10x2", "1", &[]),
        "--size 10x2: dimension 1 needs more than 2 cells (--halo-rows 1 each side) to leave an interior",
    );
}

/// `--noise-from` resamples a real run's kernel times: the same seed gives
/// the same simulated run, another seed another, the noise differs from the
/// lognormal's; a missing report or `--noise` beside it is one line.
#[test]
fn simulate_resamples_noise_from_a_real_report() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    let real = real.to_str().unwrap();
    let base = ["2d4", "--size", "66x34", "--partition", "w0"];
    let devs = one_cpu_each(2);
    ok(&[
        &["run"][..],
        &base,
        &devs[..],
        &["--iters", "40", "--quiet", "--report", real],
    ]
    .concat());
    let sim = |seed: &str, noise: &[&str], name: &str| -> Vec<f64> {
        let out = dir.path().join(name);
        let out = out.to_str().unwrap();
        ok(&[
            &["simulate"][..],
            &base,
            &devs[..],
            &["--iters", "60", "--seed", seed, "--report", out],
            noise,
        ]
        .concat());
        json(std::path::Path::new(out))["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|it| {
                it["devices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["compute_seconds"].as_f64().unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let a = sim("1", &["--noise-from", real], "a.json");
    assert_eq!(a, sim("1", &["--noise-from", real], "b.json"));
    assert_ne!(a, sim("2", &["--noise-from", real], "c.json"));
    assert_ne!(a, sim("1", &[], "d.json"));
    let blocks = sim(
        "1",
        &["--noise-from", real, "--noise-block", "31"],
        "e.json",
    );
    assert_eq!(
        blocks,
        sim(
            "1",
            &["--noise-from", real, "--noise-block", "31"],
            "f.json"
        )
    );
    assert_ne!(a, blocks);
    // A baseline over the whole run instead of 31 iterations: other ratios.
    let wide = sim(
        "1",
        &["--noise-from", real, "--noise-window", "40"],
        "g.json",
    );
    assert_ne!(a, wide);
    for lone in [["--noise-block", "4"], ["--noise-window", "100"]] {
        fails_with(
            &[
                &["simulate"][..],
                &base,
                &devs[..],
                &["--iters", "6"],
                &lone,
            ]
            .concat(),
            "--noise-from",
        );
    }
    fails_with(
        &[
            &["simulate"][..],
            &base,
            &devs[..],
            &["--iters", "6", "--noise-from", "/nonexistent/r.json"],
        ]
        .concat(),
        "cannot read report",
    );
    fails_with(
        &[
            &["simulate"][..],
            &base,
            &devs[..],
            &["--iters", "6", "--noise-from", real, "--noise", "0.1"],
        ]
        .concat(),
        "cannot be used with",
    );
}

/// A machine file with no devices says so in the commands that read one:
/// it said "a machine needs at least 1 points, got 0".
#[test]
fn a_machine_without_devices_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"devices": [], "links": []}"#).unwrap();
    let m = empty.to_str().unwrap();
    let want = format!(
        "machine model {m}: the machine describes no devices: calibrate some (epsilod \
         calibrate), or list them under \"devices\""
    );
    let commands = [
        format!("predict --model {m} --size 34 --iters 3"),
        format!(
            "run 2d4 --size 34 --iters 3 --partition w0 --devices cpu:threads=1 --weights-from {m}"
        ),
        format!("simulate 2d4 --size 34 --iters 3 --devices-count 2 --model {m}"),
    ];
    for line in &commands {
        common::fails_with(&line.split(' ').collect::<Vec<_>>(), &want);
    }
}

/// A comma list that names an item twice is refused, as `--alb` is:
/// `predict --method overlap,overlap` printed the same rows twice, and
/// commbench timed each repeated configuration twice into its CSV.
#[test]
fn a_list_that_names_an_item_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("machine.json").display().to_string();
    std::fs::write(&machine, crate::hostile::MACHINE).unwrap();
    let predict = format!("predict --model {machine} --size 34 --iters 3 --method");
    let cases = [
        (
            format!("{predict} overlap,hockney,overlap"),
            "--method names overlap twice: give each method once",
        ),
        (
            "commbench --csv b.csv --per-rank 2,4,2".to_string(),
            "--per-rank names 2 twice: give each count once",
        ),
        (
            "commbench --csv b.csv --sizes 16,16".to_string(),
            "--sizes names 16 twice: give each size once",
        ),
        (
            "commbench --csv b.csv --pm 1,1".to_string(),
            "--pm names 1 twice: give each count once",
        ),
        (
            "scale s.json --targets 8,16,8".to_string(),
            "--targets names 8 twice: give each device count once",
        ),
        (
            "calibrate 2d4 --size 34 --out m.json --tile-sweep 0.5,2,0.5".to_string(),
            "--tile-sweep names 0.5 twice: give each factor once",
        ),
    ];
    for (line, want) in &cases {
        common::fails_with(&line.split(' ').collect::<Vec<_>>(), want);
    }
    // A stray comma is said where it is, not as an unknown method "".
    let args: Vec<&str> = predict.split(' ').chain(["overlap,"]).collect();
    common::fails_with(
        &args,
        "--method 'overlap,' ends with a comma: drop it, or name a method after it (hockney,overlap)",
    );
    // Each once: every row once.
    let args: Vec<&str> = predict.split(' ').chain(["overlap,hockney"]).collect();
    let rows = common::ok(&args);
    for method in ["overlap", "hockney"] {
        let n = rows.lines().filter(|l| l.starts_with(method)).count();
        assert_eq!(n, 1, "{method}: {rows}");
    }
    assert!(!std::path::Path::new("b.csv").exists());
}

/// A simulated slow spell from past the last iteration, and
/// `--alb-drop-below` without a heuristic, change nothing: each is a
/// warning naming both numbers, not silence.
#[test]
fn simulate_warns_of_options_it_never_acts_on() {
    let sim = |extra: &str| {
        let line =
            format!("simulate 2d4 --size 34 --iters 100 --devices-count 4 --per-host 2 {extra}");
        let o = common::epsilod(&line.split(' ').collect::<Vec<_>>());
        assert!(o.status.success(), "{line}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert_eq!(
        sim("--slow-host 1:3@100"),
        "warning: --slow-host 1:3@100 starts at iteration 100, beyond --iters 100: the host never \
         slows down (give an iteration below 100)\n"
    );
    assert_eq!(
        sim("--drift 0.5:2@150..300"),
        "warning: --drift 0.5:2@150..300 starts at iteration 150, beyond --iters 100: no device \
         drifts (give an iteration below 100)\n"
    );
    assert_eq!(
        sim("--alb-drop-below 0.3"),
        "warning: --alb-drop-below 0.3 does nothing without load balancing (--alb none): give a \
         heuristic with --alb, or leave it out\n"
    );
    assert_eq!(sim("--slow-host 1:3@99"), "");
    assert_eq!(sim("--alb next-alb --alb-drop-below 0.3"), "");
}

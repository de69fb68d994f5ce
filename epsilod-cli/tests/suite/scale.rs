//! `epsilod signature` and `epsilod scale`: signatures name each device's
//! real cells and messages, and the model built from them predicts the
//! messages of a larger count exactly.

use crate::common;
use common::{epsilod, fails_with, ok};

use std::path::Path;

/// The signature of 500 iterations of 2d4 66x66 on `devices` devices.
fn take(dir: &Path, devices: usize) -> String {
    common::signature(dir, "66", devices, &["--iters", "500", "--sig-iters", "4"])
}

#[test]
fn signatures_record_the_layout_and_scale_predicts_the_messages() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = [2, 3, 4].iter().map(|&d| take(dir.path(), d)).collect();
    let s3: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&paths[1]).unwrap()).unwrap();
    assert_eq!(s3["weight"], 500);
    assert_eq!(s3["ndims"], 2);
    let procs = s3["processes"].as_array().unwrap();
    let cells: u64 = procs.iter().map(|p| p["cells"].as_u64().unwrap()).sum();
    assert_eq!(cells, 64 * 64);
    // The middle slab sends one 64-cell f32 row to each side.
    assert_eq!(
        procs[1]["sends"],
        serde_json::json!([{"peer": 0, "bytes": 256}, {"peer": 2, "bytes": 256}])
    );

    // One-thread CPU devices record their kernels' thread CPU time (no
    // more than their wall time: they run on the process's own thread),
    // their threads, and the cores they shared.
    assert_eq!(
        s3["cores"].as_u64(),
        std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u64)
    );
    for p in procs {
        let (cpu, wall) = (
            p["cpu_seconds"].as_f64().unwrap(),
            p["compute_seconds"].as_f64().unwrap(),
        );
        assert!(cpu > 0.0 && cpu <= wall * 1.05 + 1e-5, "{p}");
        assert_eq!(p["threads"], 1);
    }

    let trace = dir.path().join("t8.json");
    let args: Vec<&str> = ["scale"]
        .into_iter()
        .chain(paths.iter().map(String::as_str))
        .chain(["--target", "8", "--out", trace.to_str().unwrap()])
        .collect();
    let text = ok(&args);
    assert!(
        text.contains("pattern: rank -1, +1 where P in a line"),
        "{text}"
    );
    assert!(
        text.contains("prediction at 8 devices: 1-2 messages and 256-512 bytes"),
        "{text}"
    );
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(t["processes"].as_array().unwrap().len(), 8);
    assert_eq!(
        t["processes"][7]["sends"],
        serde_json::json!([{"peer": 6, "bytes": 256}])
    );

    // The trace replays one range at a time, every process measured once.
    let trace = trace.to_str().unwrap();
    let replayed = ok(&["replay", trace, "--range-size", "3", "--iters", "2"]);
    for want in [
        "range 0-2:",
        "range 3-5:",
        "range 6-7:",
        "8 of 8 processes measured",
    ] {
        assert!(replayed.contains(want), "{want} missing from {replayed}");
    }
    // With the noise pair, the outside's own messages travel too: 256
    // bytes each way between neighbours 3-7 while 0-2 are measured.
    let noisy = ok(&[
        "replay",
        trace,
        "--range-size",
        "3",
        "--iters",
        "2",
        "--noise",
    ]);
    for want in [
        "range 0-2: phase",
        "noise 2048 bytes per phase",
        "noise 1536 bytes per phase",
        "noise 2560 bytes per phase",
        "8 of 8 processes measured",
    ] {
        assert!(noisy.contains(want), "{want} missing from {noisy}");
    }
    fails_with(
        &["replay", trace, "--range-size", "4", "--per-rank", "1"],
        "cannot replay: range 0-3 needs 5 processes, the job has 1",
    );

    // Prime counts alone cannot tell a line from a grid; 2 and 4 can.
    fails_with(
        &["scale", &paths[0], &paths[1], "--target", "4"],
        "fit both a line of P and a 2-d grid",
    );
    let held = ok(&[
        "scale",
        &paths[0],
        &paths[2],
        "--validate",
        &paths[1],
        "--target",
        "6",
    ]);
    assert!(
        held.contains("validation at 3 devices: pattern exact, weight exact, volume error 0.0%"),
        "{held}"
    );

    // Every case below predicts 8 devices from the 2- and 4-device ones.
    let base = ["scale", &paths[0], &paths[2], "--target", "8"];
    let to8 = |extra: &[&'static str]| [&base[..], extra].concat();
    // Cores serve the CPU clock or the signatures' bandwidth; alone they
    // would be ignored.
    fails_with(
        &to8(&["--cores", "4"]),
        "--cores is used by --compute cpu or --node-bandwidth signatures",
    );
    fails_with(
        &to8(&["--bytes-per-cell", "4"]),
        "required arguments were not provided: --node-bandwidth",
    );
    // Devices per node share its cores (on CPU time) or its bandwidth;
    // alone they would be ignored.
    fails_with(
        &to8(&["--devices-per-node", "4"]),
        "--devices-per-node is used by --compute cpu or --node-bandwidth: add one",
    );
    // With the signatures' bandwidth the cores pick the signature that
    // fills them: taken on the wall clock too.
    let wall = ok(&to8(&["--cores", "4", "--node-bandwidth", "signatures"]));
    assert!(
        wall.contains("bandwidth floor: cells per device x 8 B / ("),
        "{wall}"
    );

    // Compute on CPU time, for a target of 4 cores; a bandwidth floor.
    let cpu = ok(&to8(&[
        "--compute",
        "cpu",
        "--cores",
        "4",
        "--node-bandwidth",
        "1e-6",
    ]));
    for want in [
        "compute (critical CPU s/iteration)",
        "compute (mean CPU s/iteration, where devices take turns on the cores)",
        "wall compute: max(critical CPU, mean CPU x P x 1.00 threads / 4 cores where that is above the cores)",
        "bandwidth floor: cells per device x 8 B / (0.00 GB/s / devices on a node)",
    ] {
        assert!(cpu.contains(want), "{want} missing from {cpu}");
    }
    // 1 kB/s: the floor (64² cells x 8 B through 1 kB/s, about 33 s) is
    // the compute at any count.
    assert!(cpu.contains("compute 32768.000 ms"), "{cpu}");
    // The bandwidth the kernels reached where they filled the cores: none
    // of 2 or 4 one-thread devices fits one core.
    fails_with(
        &to8(&[
            "--compute",
            "cpu",
            "--cores",
            "1",
            "--node-bandwidth",
            "signatures",
        ]),
        "no signature fits 1 cores to measure the node's bandwidth on",
    );
    let from_sigs = ok(&to8(&[
        "--compute",
        "cpu",
        "--cores",
        "4",
        "--node-bandwidth",
        "signatures",
    ]));
    assert!(
        from_sigs.contains("bandwidth floor: cells per device x 8 B / ("),
        "{from_sigs}"
    );
    fails_with(
        &to8(&["--node-bandwidth", "fast"]),
        "`fast` is not a positive number",
    );
}

/// `--targets` prints the curve, a line per count, and `--json` writes the
/// figures the text prints (`-`: on stdout, in place of the text); a
/// target beyond 8 times the signatures' largest count warns in one line;
/// devices spread over nodes take turns on their own node's cores only.
#[test]
fn scale_prints_a_curve_and_writes_the_figures_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let (s2, s3, s4) = (
        take(dir.path(), 2),
        take(dir.path(), 3),
        take(dir.path(), 4),
    );
    let j = dir.path().join("scale.json");
    let curve = [
        "scale",
        &s2,
        &s4,
        "--validate",
        &s3,
        "--targets",
        "8,16,32,64",
    ];
    let out = epsilod(&[&curve[..], &["--json", j.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{out:?}");
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        err,
        "warning: target 64 is more than 8x the signatures' largest device count (4), beyond \
         what P3S validated: take signatures at more devices, or trust the prediction less\n"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let model = &doc["model"];
    assert_eq!(model["counts"], serde_json::json!([2, 4]));
    assert_eq!(model["weight"], 500);
    assert_eq!(model["clock"], "wall");
    let law = |l: &serde_json::Value| {
        format!(
            "{:.4e} * P^{:.3}",
            l["coefficient"].as_f64().unwrap(),
            l["exponent"].as_f64().unwrap()
        )
    };
    let head = format!(
        "signatures at 2, 4 devices\npattern: {}\nweight: 500 iterations\ncompute (critical \
         wall s/iteration): {} ({} before far points)\nexchange: {:.3e} s per message + {:.3e} \
         s per byte\n",
        model["pattern"].as_str().unwrap(),
        law(&model["compute"]),
        law(&model["compute_initial"]),
        model["exchange"]["alpha"].as_f64().unwrap(),
        model["exchange"]["beta"].as_f64().unwrap()
    );
    assert!(text.starts_with(&head), "{head}\n{text}");
    let v = &doc["validations"][0];
    assert_eq!(v["count"], 3);
    assert_eq!(v["pattern_exact"], true);
    let pct = |x: &serde_json::Value| format!("{:.1}%", x.as_f64().unwrap() * 100.0);
    assert!(text.contains(&format!(
        "validation at 3 devices: pattern exact, weight exact, volume error {}, compute error \
         {}, iteration time error {}: {}",
        pct(&v["volume_error"]),
        pct(&v["compute_error"]),
        pct(&v["time_error"]),
        if v["accepted"] == true {
            "accepted"
        } else {
            "REJECTED"
        }
    )));
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("prediction at "))
        .collect();
    let predictions = doc["predictions"].as_array().unwrap();
    assert_eq!(lines.len(), 4);
    assert_eq!(predictions.len(), 4);
    for ((line, p), count) in lines.iter().zip(predictions).zip([8, 16, 32, 64]) {
        assert_eq!(p["devices"], count);
        assert_eq!(
            *line,
            format!(
                "prediction at {count} devices: {}-{} messages and {}-{} bytes per device per \
                 iteration, compute {:.3} ms, iteration {:.3} ms, loop {:.3} s ({} iterations)",
                p["messages_min"],
                p["messages_max"],
                p["bytes_min"],
                p["bytes_max"],
                p["compute_seconds"].as_f64().unwrap() * 1e3,
                p["iteration_seconds"].as_f64().unwrap() * 1e3,
                p["loop_seconds"].as_f64().unwrap(),
                p["iterations"]
            )
        );
    }
    // A line of slabs: the ends send one message, the others two.
    assert_eq!(predictions[0]["messages_min"], 1);
    assert_eq!(predictions[0]["messages_max"], 2);
    // `--target 8` prints the curve's first line, and within 8x no
    // warning.
    let one = epsilod(&["scale", &s2, &s4, "--target", "8"]);
    assert!(one.status.success() && one.stderr.is_empty(), "{one:?}");
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(one.ends_with(&format!("{}\n", lines[0])), "{one}");
    // On stdout: the document alone.
    let only = ok(&[&curve[..], &["--json"]].concat());
    let parsed: serde_json::Value = serde_json::from_str(&only).unwrap();
    assert_eq!(parsed, doc);
    fails_with(
        &["scale", &s2, &s4, "--target", "8", "--targets", "8,16"],
        "cannot be used with",
    );
    fails_with(
        &["scale", &s2, &s4, "--targets", "8,16", "--out", "t.json"],
        "cannot be used with",
    );
    fails_with(&["scale", &s2, &s4], "--target");

    // 1024 one-thread devices, 16 to a node of 16 cores: each has a core,
    // as on one node of 1024 cores. (All on one node of 16 they take turns:
    // models' devices_take_turns_on_their_own_nodes_cores_only checks that
    // on fixed laws; the laws fitted here from two short runs may put the
    // mean device's turns below the slowest device alone.)
    let compute = |extra: &[&str]| {
        let args = [
            &[
                "scale",
                &s2,
                &s4,
                "--target",
                "1024",
                "--compute",
                "cpu",
                "--json",
                "-",
            ][..],
            extra,
        ]
        .concat();
        let doc: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
        doc["predictions"][0]["compute_seconds"].as_f64().unwrap()
    };
    let nodes = compute(&["--cores", "16", "--devices-per-node", "16"]);
    assert_eq!(nodes, compute(&["--cores", "1024"]));
}

#[test]
fn devices_without_threads_record_their_share_of_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    ok(&[
        "signature",
        "2d4",
        "--size",
        "34",
        "--partition",
        "w0",
        "--sig-iters",
        "3",
        "--quiet",
        "--devices",
        "cpu",
        "--devices",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: Vec<u64> = s["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["threads"].as_u64().unwrap())
        .collect();
    // The two split the cores, at least one thread each.
    assert_eq!(
        threads.iter().sum::<u64>(),
        cores.max(2) as u64,
        "{threads:?}"
    );
}

#[test]
fn bad_signature_input_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let s2 = take(dir.path(), 2);
    fails_with(
        &["signature", "gas-sim", "--size", "8", "--out", "x.json"],
        "signatures cover library stencils and spec files, not apps",
    );
    fails_with(
        &["scale", &s2, "/nonexistent/s.json", "--target", "4"],
        "cannot read /nonexistent/s.json",
    );
    fails_with(
        &["scale", &s2, &s2, "--target", "4"],
        "needs signatures at 2 or more device counts, got 1",
    );
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"weight\": 3}").unwrap();
    fails_with(
        &["scale", &s2, junk.to_str().unwrap(), "--target", "4"],
        "not a signature",
    );
}

/// A signature records the halo depth its run went at: 1 by default, one
/// step a launch, even where `run`'s default fuses 4 (one one-thread device
/// on 2050², two 16 MiB buffers against any L2 up to 8 MiB); with
/// `--halo-depth cache`, the 4 that ran. `scale` refuses signatures at
/// different depths in one line naming each file with its depth, and
/// `auto`, whose trials would mix depths in one signature, is refused.
#[test]
fn signatures_record_their_halo_depth_and_scale_refuses_mixed_depths() {
    let dir = tempfile::tempdir().unwrap();
    let short = ["--iters", "100", "--sig-iters", "2"];
    let fused = common::signature(
        dir.path(),
        "2050",
        1,
        &[&short[..], &["--halo-depth", "cache"]].concat(),
    );
    let plain = common::signature(dir.path(), "2050", 2, &short);
    let depth = |path: &str| {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v["halo_depth"].clone()
    };
    assert_eq!(depth(&fused), 4);
    assert_eq!(depth(&plain), 1);

    let out = epsilod(&["scale", &fused, &plain, "--target", "4"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: cannot model scaling: the signatures ran at different halo depths ({fused} \
             at depth 4, {plain} at depth 1), which no one model fits: record them all at one \
             step a launch, `epsilod signature ... --halo-depth 1`\n"
        )
    );
    fails_with(
        &[
            "signature",
            "2d4",
            "--size",
            "66",
            "--halo-depth",
            "auto",
            "--out",
            dir.path().join("a.json").to_str().unwrap(),
        ],
        "a signature runs at one halo depth: give --halo-depth K, or leave it out (1)",
    );
}

/// commbench's 16 configurations (2 and 3 processes a rank, messages of 16
/// and 1024 bytes, 1 and 2 a pair), `sweeps` times, into `csv`.
pub(crate) fn commbench(csv: &str, sweeps: &str) -> String {
    ok(&[
        "commbench",
        "--per-rank",
        "2,3",
        "--sizes",
        "16,1024",
        "--pm",
        "1,2",
        "--reps",
        "2",
        "--iters",
        "3",
        "--sweeps",
        sweeps,
        "--csv",
        csv,
    ])
}

#[test]
fn commbench_writes_exact_features_and_fit_comm_scores_them() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("train.csv");
    let csv = csv.to_str().unwrap();
    let out = commbench(csv, "3");
    assert!(out.contains("16 configurations timed"), "{out}");
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "ranks,per_rank,l,pm,pd,nd_min,nd_avg,nd_max,nm_min,nm_avg,nm_max,ind_max,inm_max,td,tm,seconds"
    );
    // Two processes, one round of 16 bytes: each sends one message to the
    // other, inside the one rank.
    let first: Vec<f64> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(
        &first[..15],
        &[1., 2., 16., 1., 16., 0., 0., 0., 0., 0., 0., 32., 2., 32., 2.]
    );
    assert!(first[15] > 0.0);
    assert_eq!(text.lines().count(), 17);

    let model = dir.path().join("m.json");
    let fitted = ok(&[
        "fit-comm",
        csv,
        "--method",
        "linreg-mv",
        "--test",
        csv,
        "--out",
        model.to_str().unwrap(),
    ]);
    for want in [
        "linreg-mv on 16 samples",
        "held out (linreg-mv): MMRE",
        "held out (alpha-beta): MMRE",
        "held out (semi-empirical): MMRE",
        "semi-empirical baseline: t = ",
    ] {
        assert!(fitted.contains(want), "{want} missing from {fitted}");
    }
    assert!(std::fs::metadata(&model).unwrap().len() > 0);

    // The baseline as the model: its scores are the baseline's, and the
    // JSON alone goes to stdout.
    let doc = ok(&[
        "fit-comm",
        csv,
        "--method",
        "semi-empirical",
        "--test",
        csv,
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(v["method"], "semi-empirical");
    assert_eq!(v["samples"], 16);
    let held = &v["sets"][0];
    assert_eq!(held["set"], "held out");
    assert_eq!(held["model"], held["semi_empirical"]);
    assert_eq!(held["model"], v["training"]);
    for key in ["mmre", "pred25", "r_squared", "spearman", "rcc"] {
        assert!(held["alpha_beta"][key].is_f64(), "{key}: {held}");
    }
    assert!(v["baselines"]["semi_empirical"]["beta"].as_f64().unwrap() >= 0.0);

    fails_with(
        &["fit-comm", csv, "--method", "trees"],
        "unknown learned method 'trees'",
    );
    let junk = dir.path().join("junk.csv");
    std::fs::write(&junk, "a,b\n1,2\n").unwrap();
    fails_with(
        &["fit-comm", junk.to_str().unwrap()],
        "not commbench output",
    );
}

#[test]
fn fit_comm_scores_real_runs_halo_exchanges_from_their_plans() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("train.csv");
    let csv = csv.to_str().unwrap();
    commbench(csv, "1");
    let report = |partition: &str, devices: usize| {
        let path = dir.path().join(format!("{partition}-{devices}.json"));
        let path = path.to_str().unwrap().to_string();
        let mut args = vec!["run", "2d4", "--size", "34x34", "--partition", partition];
        args.extend(["--iters", "5", "--quiet", "--report", &path]);
        for _ in 0..devices {
            args.extend(["--devices", "cpu:threads=1"]);
        }
        ok(&args);
        path
    };
    let (two, three) = (report("w0", 2), report("w0", 3));
    let out = ok(&[
        "fit-comm",
        csv,
        "--method",
        "extra-trees",
        "--test",
        csv,
        "--runs",
        &format!("{two},{three}"),
    ]);
    // 32 interior cells of 4 bytes a row, one halo row: two devices send
    // one message each, three devices four in all.
    for want in [
        format!("{two}: 2 messages, largest 128 B: measured "),
        format!("{three}: 4 messages, largest 128 B: measured "),
        "real runs (extra-trees): MMRE".to_string(),
        "real runs (alpha-beta): MMRE".to_string(),
        "real runs (semi-empirical): MMRE".to_string(),
        "held out (extra-trees): MMRE".to_string(),
    ] {
        assert!(out.contains(&want), "{want} missing from {out}");
    }
    // Training, then each set's model, alpha-beta and semi-empirical.
    assert_eq!(out.matches(", RCC ").count(), 7, "{out}");
    // One run is listed with its times but too few to score, in its place
    // after the training scores, and the model is still written.
    let model = dir.path().join("model.json");
    let model = model.to_str().unwrap();
    let out = ok(&["fit-comm", csv, "--runs", &two, "--out", model]);
    let at = |s: &str| {
        out.find(s)
            .unwrap_or_else(|| panic!("{s} missing from {out}"))
    };
    assert!(
        at("training: MMRE") < at("real runs: 1 sample, too few to score (2 at least)\n"),
        "{out}"
    );
    assert!(out.contains(&format!("{two}: 2 messages, largest 128 B: measured ")));
    assert!(std::path::Path::new(model).is_file());
    let blocks = report("m", 4);
    fails_with(
        &["fit-comm", csv, "--runs", &blocks],
        "partition m: only runs cut along the first axis (w0, s0) are described",
    );
}

/// A machine of three CPU devices and a slow link, written by hand.
fn machine(dir: &Path) -> String {
    let path = dir.join("machine.json");
    let dev = |n: &str| format!(r#"{{"name":"{n}","seconds_per_cell":1e-9}}"#);
    let text = format!(
        r#"{{"devices":[{},{},{}],"links":[{{"name":"local","hockney":{{"alpha":1e-3,"beta":1e-6}},
        "loggp":{{"l":1e-3,"o_s":0,"o_r":0,"g":0,"big_g":1e-6}}}}]}}"#,
        dev("a"),
        dev("b"),
        dev("c")
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn predict_times_halo_exchanges_by_a_learned_model_of_the_plans_features() {
    let dir = tempfile::tempdir().unwrap();
    // Chains of 2-4 processes on one rank, each message l bytes, timed by
    // t = 2e-5 + 1e-9·pd: the law the single-feature regression recovers.
    let mut csv =
        "ranks,per_rank,l,pm,pd,nd_min,nd_avg,nd_max,nm_min,nm_avg,nm_max,ind_max,inm_max,td,tm,seconds\n"
            .to_string();
    for p in 2..=4u32 {
        for l in [100.0, 300.0, 1000.0, 3000.0, 10000.0] {
            let pm = f64::from(p.min(3) - 1);
            let tm = 2.0 * f64::from(p - 1);
            let seconds = 2e-5 + 1e-9 * pm * l;
            csv += &format!(
                "1,{p},{l},{pm},{},0,0,0,0,0,0,{},{tm},{},{tm},{seconds:e}\n",
                pm * l,
                tm * l,
                tm * l
            );
        }
    }
    let train = dir.path().join("train.csv");
    std::fs::write(&train, csv).unwrap();
    let model = dir.path().join("comm.json");
    let model = model.to_str().unwrap();
    ok(&[
        "fit-comm",
        train.to_str().unwrap(),
        "--method",
        "linreg-sv",
        "--out",
        model,
    ]);
    let m = machine(dir.path());
    let predict = |cols: &str| {
        epsilod(&[
            "predict", "--model", &m, "--method", "hockney", "--size", cols, "--iters", "10",
            "--comm", model,
        ])
    };
    // 30 rows of 100 8-byte cells (the interior of 32x102) over three
    // devices: the middle one sends two 800-byte halos, so pd = 1600 and t
    // = 2.16e-5 s.
    let out = predict("32x102");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "no warning in range: {stderr}");
    assert!(
        stdout.contains("exchange by linreg-sv (4 messages, largest 800 B): 2.16000"),
        "{stdout}"
    );
    let exchanges: Vec<f64> = stdout
        .lines()
        .filter_map(|l| l.split("exchange ").nth(1))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(exchanges.len(), 3, "{stdout}");
    for e in exchanges {
        assert!((e - 2.16e-5).abs() < 1e-9, "{stdout}");
    }
    // Without the model, the link: two messages of 1 ms + 800 µs.
    let linked = ok(&[
        "predict", "--model", &m, "--method", "hockney", "--size", "32x102", "--iters", "10",
    ]);
    assert!(linked.contains("exchange 3.600000e-3 s"), "{linked}");

    // Messages of 80,000 bytes lie beyond every training size: one warning.
    let out = predict("32x10002");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("warning: the halo exchange's l, pd, ind_max, td lie outside"),
        "{stderr}"
    );

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{}").unwrap();
    fails_with(
        &[
            "predict",
            "--model",
            &m,
            "--size",
            "30x100",
            "--iters",
            "1",
            "--comm",
            junk.to_str().unwrap(),
        ],
        "not a model of `epsilod fit-comm --out`",
    );
}

/// Signatures carry P3S's instruction counts where the host lends a
/// hardware counter (each device's kernels retire at least one vector
/// instruction per 8 cells), and say that cells stand in where it does not
/// (most virtual machines, this project's CI).
#[test]
fn signatures_count_instructions_where_the_hardware_allows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let text = ok(&[
        "signature",
        "2d4",
        "--size",
        "130",
        "--sig-iters",
        "4",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let procs = s["processes"].as_array().unwrap();
    if controllers::cpu_time::thread_instructions().is_some() {
        assert!(
            text.contains("instructions counted on 2 of 2 devices"),
            "{text}"
        );
        for p in procs {
            let (instructions, cells) = (
                p["instructions"].as_f64().unwrap(),
                p["cells"].as_f64().unwrap(),
            );
            assert!(instructions >= cells / 8.0, "{p}");
        }
    } else {
        assert!(
            text.contains(
                "no hardware instruction counts (none lent to this process): cells stand in"
            ),
            "{text}"
        );
        assert!(
            procs.iter().all(|p| p.get("instructions").is_none()),
            "{procs:?}"
        );
    }
}

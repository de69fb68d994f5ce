//! What commands print: with `--json`, one document holding the figures
//! the text prints (docs/json.md), and into a pipe whose reader went away
//! (`| head -1`), a quiet end.

use crate::common;
use common::{epsilod, json, ok, plan, INVENTORY, QUICK_CALIBRATION};

use serde_json::Value;
use std::io::BufRead;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `v` as a number, formatted as the text formats it.
fn fmt(v: &Value, precision: usize) -> String {
    format!(
        "{:.*}",
        precision,
        v.as_f64().unwrap_or_else(|| panic!("{v}"))
    )
}

/// `v` as a number in the text's exponent form (`{:.6e}`).
fn fmt_e(v: &Value, precision: usize) -> String {
    format!(
        "{:.*e}",
        precision,
        v.as_f64().unwrap_or_else(|| panic!("{v}"))
    )
}

/// A machine of two CPU devices, 1 and 3 ns a cell, and one link.
fn machine(dir: &Path) -> String {
    let path = dir.join("machine.json");
    std::fs::write(
        &path,
        r#"{"devices":[{"name":"a","seconds_per_cell":1e-9},{"name":"b","seconds_per_cell":3e-9}],
        "links":[{"name":"local","hockney":{"alpha":1e-6,"beta":1e-9},
        "loggp":{"l":1e-6,"o_s":0,"o_r":0,"g":0,"big_g":1e-9}}]}"#,
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs `args` with `--json FILE` and with `--json -`: the file holds the
/// document, the text goes to stdout; with `-` the same document goes to
/// stdout and no text (for commands whose figures do not vary by run).
fn text_and_json(args: &[&str], dir: &Path) -> (String, Value) {
    let file = dir.join("figures.json");
    let text = ok(&[args, &["--json", file.to_str().unwrap()]].concat());
    let doc = json(&file);
    for stdout in [&["--json", "-"][..], &["--json"]] {
        let only = ok(&[args, stdout].concat());
        let parsed: Value = serde_json::from_str(&only).unwrap_or_else(|e| {
            panic!("{args:?} {stdout:?}: not one JSON document ({e}):\n{only}")
        });
        assert_eq!(parsed, doc, "{args:?} {stdout:?}");
    }
    (text, doc)
}

#[test]
fn predict_writes_the_figures_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine(dir.path());
    let (text, doc) = text_and_json(
        &[
            "predict",
            "--model",
            &m,
            "--method",
            "hockney,overlap",
            "--size",
            "66x34",
            "--iters",
            "10",
        ],
        dir.path(),
    );
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("method   iteration_s   loop_s   balanced_loop_s   rel_error")
    );
    let predictions = doc["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 2);
    for (p, method) in predictions.iter().zip(["hockney", "overlap"]) {
        assert_eq!(p["method"], method);
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            row,
            [
                method,
                &fmt_e(&p["iteration_seconds"], 6),
                &fmt(&p["loop_seconds"], 4),
                &fmt(&p["balanced_loop_seconds"], 4),
                "-",
            ]
        );
        assert!(p["relative_error"].is_null());
        let devices = p["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 2);
        // 64 interior rows split 3:1 by speed.
        assert_eq!(devices[0]["rows"], 48);
        for (k, d) in devices.iter().enumerate() {
            assert_eq!(
                lines.next().unwrap(),
                format!(
                    "  device {k}: rows {} compute {} s exchange {} s",
                    d["rows"],
                    fmt_e(&d["compute_seconds"], 6),
                    fmt_e(&d["exchange_seconds"], 6)
                )
            );
        }
        // Then the loop time's median and 90% interval.
        let interval = &p["interval_loop_seconds"];
        assert_eq!(
            lines.next().unwrap(),
            format!(
                "  loop median {} s, 90% interval {} to {} s",
                fmt(&p["median_loop_seconds"], 4),
                fmt(&interval[0], 4),
                fmt(&interval[1], 4)
            )
        );
        assert!(p["interval_contains_measured"].is_null());
    }
    assert_eq!(lines.next(), None);
    assert!(doc["measured_loop_seconds"].is_null());
    assert!(doc["learned_exchange"].is_null());
}

#[test]
fn plan_writes_the_figures_it_prints_each_sweep_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let (text, doc) = text_and_json(&plan(INVENTORY, "4098x4098", "1000", &[]), dir.path());
    // The devices the choices count, in the inventory's order.
    let names: Vec<String> = doc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}@{}",
                d["name"].as_str().unwrap(),
                d["host"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(names, ["gpu@node1", "core@node2"]);
    let describe = |c: &Value| {
        let using: Vec<String> = c["counts"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&names)
            .filter(|(n, _)| n.as_u64() != Some(0))
            .map(|(n, name)| format!("{n} x {name}"))
            .collect();
        format!(
            "{} s  {} device(s): {}; network {}",
            fmt(&c["seconds"], 4),
            c["devices"],
            using.join(", "),
            c["network"].as_str().unwrap_or("none (one host)")
        )
    };
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("best: {}", describe(&doc["best"]))
    );
    assert_eq!(lines.next(), Some("pareto front (devices, time):"));
    for c in doc["pareto"].as_array().unwrap() {
        assert_eq!(lines.next().unwrap(), format!("  {}", describe(c)));
    }
    assert_eq!(lines.next(), Some("layouts of the best, fastest first:"));
    let sweep: Vec<&str> = lines.collect();
    // Every configuration in the JSON; in the text, the devices per rank
    // that give a layout the same time share its line.
    let rows = doc["sweep"].as_array().unwrap();
    let mut want: Vec<(String, Vec<u64>)> = Vec::new();
    for c in rows {
        let layout = format!(
            "  {} s  partition {}, weights {}",
            fmt(&c["seconds"], 4),
            c["partition"].as_str().unwrap(),
            c["weights"].as_str().unwrap()
        );
        let per_rank = c["per_rank"].as_u64().unwrap();
        match want.iter_mut().find(|(l, _)| *l == layout) {
            Some((_, p)) => p.push(per_rank),
            None => want.push((layout, vec![per_rank])),
        }
    }
    let want: Vec<String> = want
        .into_iter()
        .map(|(layout, p)| {
            // The example's 8 cores on one host: 1 to 8 per rank, the
            // exchange hidden behind the compute at this size.
            assert_eq!(p, (1..=8).collect::<Vec<_>>(), "{layout}");
            format!("{layout}, 1-8 device(s) per rank")
        })
        .collect();
    assert_eq!(sweep, want);
    assert_eq!(rows.len(), 8 * sweep.len());
    let mut distinct = sweep.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), sweep.len(), "a line twice: {sweep:#?}");
}

#[test]
fn calibrate_writes_the_summary_it_prints() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("machine.json");
    let file = dir.path().join("summary.json");
    let mut args = vec!["calibrate", "2d4", "--size", "66x34"];
    args.extend(common::one_cpu_each(2));
    args.extend(QUICK_CALIBRATION);
    args.extend(["--max-bytes", "64", "--tile-sweep", "0.5"]);
    args.extend([
        "--out",
        m.to_str().unwrap(),
        "--json",
        file.to_str().unwrap(),
    ]);
    let text = ok(&args);
    let doc = json(&file);
    let machine = json(&m);
    let devices = doc["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("device  seconds/cell  fixed_s/iteration  cv  R_p  samples")
    );
    for (d, written) in devices.iter().zip(machine["devices"].as_array().unwrap()) {
        assert_eq!(d["name"], written["name"]);
        assert_eq!(d["seconds_per_cell"], written["seconds_per_cell"]);
        assert_eq!(
            lines.next().unwrap(),
            format!(
                "  {}  {}  {}  {}  {}  {}",
                d["name"].as_str().unwrap(),
                fmt_e(&d["seconds_per_cell"], 4),
                fmt_e(&d["fixed_seconds"], 4),
                fmt(&d["cv"], 3),
                fmt(&d["relative_power"], 3),
                d["samples"]
            )
        );
    }
    let points = |ps: &Value| {
        ps.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                format!(
                    "{} s over {} cells",
                    fmt_e(&p["median_seconds"], 4),
                    fmt_e(&p["cells"], 4)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    for d in devices {
        let name = d["name"].as_str().unwrap();
        // Equal rows, seeded rows, equal rows again.
        assert_eq!(d["passes"].as_array().unwrap().len(), 3);
        let line = format!("  {name} passes (median kernel): {}", points(&d["passes"]));
        assert!(text.contains(&line), "{line} missing from {text}");
        // 0.5 and back: two passes.
        assert_eq!(d["tile_sweep"].as_array().unwrap().len(), 2);
        let line = format!(
            "  {name} tile sweep (median kernel): {}",
            points(&d["tile_sweep"])
        );
        assert!(text.contains(&line), "{line} missing from {text}");
    }
    let link = &doc["links"][0];
    assert_eq!(link["name"], "in-process");
    assert!(
        text.contains(&format!(
            "link in-process: hockney alpha {} s beta {} s/B; loggp L {}",
            fmt_e(&link["hockney"]["alpha"], 3),
            fmt_e(&link["hockney"]["beta"], 3),
            fmt_e(&link["loggp"]["l"], 3)
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "skeleton overhead {} s/iteration; halo message sizes [128] B",
            fmt_e(&doc["iteration_overhead_seconds"], 3)
        )),
        "{text}"
    );
    assert_eq!(doc["halo_bytes"], serde_json::json!([128]));
    let rebalance = &doc["rebalance"];
    assert!(
        text.contains(&format!(
            "rebalance {} s + {} s/B moved",
            fmt_e(&rebalance["alpha"], 3),
            fmt_e(&rebalance["beta"], 3)
        )),
        "{text}"
    );
    let memory = doc["host_memory"].as_array().unwrap();
    assert_eq!(memory.len(), 9);
    assert_eq!(memory[0]["bytes"], (2u64 << 20) as f64);
    assert!(
        text.contains(&format!(
            "host memory (copy GB/s by working set, all cores): 2 MiB {}",
            fmt(
                &Value::from(memory[0]["bytes_per_second"].as_f64().unwrap() / 1e9),
                1
            )
        )),
        "{text}"
    );
}

/// `compare --json -` prints the document its `--json FILE` writes, in
/// place of the table.
#[test]
fn compare_prints_its_document_in_place_of_the_table() {
    let run = [
        "compare",
        "2d4",
        "--size",
        "34",
        "--iters",
        "3",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--partition",
        "w0",
        "--alb",
        "none,next-alb",
        "--reps",
        "2",
        "--quiet",
    ];
    let only = ok(&[&run[..], &["--json", "-"]].concat());
    let doc: Value = serde_json::from_str(&only).unwrap();
    let table = doc["table"].as_array().unwrap();
    assert_eq!(table.len(), 2);
    assert_eq!(table[1]["heuristic"], "next-alb");
    assert_eq!(table[0]["runs"], 2);
    assert_eq!(doc["runs"][0]["summaries"].as_array().unwrap().len(), 2);
}

/// Whether `out` ended quietly: status 0, or 141 (or killed by SIGPIPE)
/// as a command whose reader went away, and nothing on stderr of a panic.
fn ended_quietly(args: &[&str], out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 141)) || out.status.signal() == Some(13),
        "{args:?}: {:?}\n{err}",
        out.status
    );
    for panic in ["panicked", "Broken pipe", "backtrace"] {
        assert!(!err.contains(panic), "{args:?}: {err}");
    }
}

/// Runs `args` with stdout a pipe whose reader has gone before the first
/// line: every print fails, the worst case of `| head -1`.
fn into_closed_pipe(args: &[&str]) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_epsilod"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    ended_quietly(args, &out);
}

/// Runs `args` into a reader that reads one line and closes, as `| head
/// -1` does.
fn into_head(args: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_epsilod"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    ended_quietly(args, &out);
}

/// Every command that prints, into a reader that went away: no panic, no
/// backtrace, status 0 or 141.
#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine(dir.path());
    let sig = |n| common::signature(dir.path(), "66", n, &["--iters", "100", "--sig-iters", "3"]);
    let (s2, s4) = (sig(2), sig(4));
    let calibrated = dir.path().join("calibrated.json");
    let two = ["--devices", "cpu:threads=1", "--devices", "cpu:threads=1"];
    let commands: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["predict", "--model", &m, "--size", "66x34", "--iters", "10"],
        vec![
            "predict", "--model", &m, "--size", "66x34", "--iters", "10", "--json",
        ],
        plan(INVENTORY, "4098x4098", "1000", &[]),
        vec!["scale", &s2, &s4, "--targets", "8,16,32"],
        vec!["scale", &s2, &s4, "--target", "8", "--json", "-"],
        [
            &[
                "calibrate",
                "2d4",
                "--size",
                "34",
                "--calib-iters",
                "4",
                "--no-links",
            ][..],
            &two,
            &["--out", calibrated.to_str().unwrap()],
        ]
        .concat(),
        [
            &[
                "compare",
                "2d4",
                "--size",
                "34",
                "--iters",
                "3",
                "--partition",
                "w0",
            ][..],
            &two,
            &["--alb", "none,next-alb", "--reps", "2", "--quiet"],
        ]
        .concat(),
        [
            &["simulate", "2d4", "--size", "66", "--iters", "10"][..],
            &two,
        ]
        .concat(),
        [&["run", "2d4", "--size", "34", "--iters", "3"][..], &two].concat(),
    ];
    for args in &commands {
        into_closed_pipe(args);
    }
    // Half-way through the output, as `| head -1` stops reading.
    for args in &commands[..5] {
        into_head(args);
    }
    // Not a closed pipe: a failure is still one clear line.
    let out = epsilod(&plan("/nonexistent.toml", "8", "1", &[]));
    assert_eq!(out.status.code(), Some(1));
}

/// A command into a closed pipe (`| head -1`) still writes the files it
/// was asked for: files first, then the text whose first print may end
/// the process.
#[test]
fn files_are_written_before_the_text_into_a_closed_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (report, table) = (file("sim.json"), file("sim.csv"));
    let (train, model, scores) = (file("train.csv"), file("model.json"), file("scores.json"));
    crate::scale::commbench(&train, "1");
    let two = ["--devices", "cpu", "--devices", "cpu"];
    let sim = ["simulate", "2d4", "--size", "66", "--iters", "10"];
    let commands: Vec<(Vec<&str>, Vec<&String>)> = vec![
        (
            [&sim[..], &two, &["--report", &report]].concat(),
            vec![&report],
        ),
        (
            [&sim[..], &two, &["--alb", "none,next-alb", "--csv", &table]].concat(),
            vec![&table],
        ),
        (
            vec!["fit-comm", &train, "--out", &model, "--json", &scores],
            vec![&model, &scores],
        ),
    ];
    for (args, files) in &commands {
        into_closed_pipe(args);
        for f in files {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("{args:?}: {f} not written: {e}"));
            assert!(!text.is_empty(), "{args:?}: {f} is empty");
        }
    }
    // The text is still what it was, in its order.
    let text = ok(&["fit-comm", &train]);
    assert!(text.starts_with("gbrt on 16 samples: "), "{text}");
    assert!(
        text.lines().nth(2).unwrap().starts_with("training: MMRE "),
        "{text}"
    );
}

/// Printing onto a full disk (stdout a file on it) is one line and status
/// 1, for a command's output and for `--help`, never a panic or status 0
/// with nothing written.
#[test]
#[cfg(target_os = "linux")]
fn printing_onto_a_full_disk_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = machine(dir.path());
    let commands: [&[&str]; 5] = [
        &["list"],
        &["--help"],
        &["run", "--help"],
        &["run", "2d4", "--size", "10", "--iters", "1"],
        &[
            "predict", "--model", &m, "--size", "66x34", "--iters", "10", "--json",
        ],
    ];
    for args in commands {
        let out = Command::new(env!("CARGO_BIN_EXE_epsilod"))
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "error: cannot write to stdout: No space left on device (os error 28)\n",
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

//! A hostile user's inputs: each is refused in one clear line or gives the
//! right answer, never a silently wrong or short file.

use crate::common;
use common::{epsilod, fails_with, json, ok, path};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A machine of two devices and one link, as docs/modelling.md shows it.
pub(crate) const MACHINE: &str = r#"{"devices": [{"name": "cpu0", "seconds_per_cell": 1e-9},
 {"name": "cpu1", "seconds_per_cell": 3e-9}],
 "links": [{"name": "local", "hockney": {"alpha": 1e-6, "beta": 1e-10},
 "loggp": {"l": 1e-6, "o_s": 0, "o_r": 0, "g": 0, "big_g": 1e-10},
 "piecewise": null, "switch_latency": 0}]}"#;

/// Every output format, and the report, says when the disk is full: a
/// `.vti` writer dropped its last buffered write's error and succeeded.
#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_is_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["npy", "txt", "dat", "vti", "pgm"] {
        let out = path(dir.path(), &format!("full.{ext}"));
        std::os::unix::fs::symlink("/dev/full", &out).unwrap();
        fails_with(
            &[
                "run", "2d4", "--size", "34", "--iters", "2", "--output", &out,
            ],
            "No space left on device",
        );
    }
    let report = path(dir.path(), "full.json");
    std::os::unix::fs::symlink("/dev/full", &report).unwrap();
    fails_with(
        &[
            "run", "2d4", "--size", "34", "--iters", "2", "--report", &report,
        ],
        "No space left on device",
    );
}

/// Ctrl-C while the result is written leaves no output, or all of it:
/// never a shorter `.txt` whose lines read as a whole result.
#[test]
#[cfg(target_os = "linux")]
fn ctrl_c_while_writing_leaves_no_short_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let partial = dir.path().join("out.txt.partial");
    let side = 1026usize;
    let mut child = Command::new(env!("CARGO_BIN_EXE_epsilod"))
        .args(["run", "2d4", "--size", &side.to_string(), "--iters", "1"])
        .args(["--quiet", "--output", out.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The moment the write starts, whichever file it writes first.
    let start = Instant::now();
    while !out.exists() && !partial.exists() && child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(120), "no output came");
        std::thread::sleep(Duration::from_millis(1));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // Interrupted, or (a fast disk) finished first: then whole.
    if let Ok(text) = std::fs::read_to_string(&out) {
        assert_eq!(text.lines().count(), side * side, "a short output file");
    }
}

/// Weights near f64::MAX sum past it: equal ones still split the rows
/// equally, where every row went to the last device.
#[test]
fn equal_huge_weights_split_the_rows_equally() {
    let dir = tempfile::tempdir().unwrap();
    let report = path(dir.path(), "r.json");
    let device = "cpu:threads=1,weight=1e308";
    ok(&[
        "run",
        "2d4",
        "--size",
        "34",
        "--iters",
        "1",
        "--partition",
        "w0",
        "--devices",
        device,
        "--devices",
        device,
        "--quiet",
        "--report",
        &report,
    ]);
    let rows: Vec<u64> = json(&report)["iterations"][0]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, vec![16, 16]);
    let machine = path(dir.path(), "machine.json");
    std::fs::write(&machine, MACHINE).unwrap();
    let out = ok(&[
        "predict",
        "--model",
        &machine,
        "--size",
        "34",
        "--iters",
        "3",
        "--weights",
        "1e308,1e308",
    ]);
    assert!(
        out.contains("device 0: rows 16 ") && out.contains("device 1: rows 16 "),
        "{out}"
    );
}

#[test]
fn out_of_range_inputs_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let machine = path(dir.path(), "machine.json");
    std::fs::write(&machine, MACHINE).unwrap();
    let no_links = path(dir.path(), "no-links.json");
    std::fs::write(
        &no_links,
        r#"{"devices": [{"name": "cpu0", "seconds_per_cell": 1e-9}], "links": []}"#,
    )
    .unwrap();
    let twice = path(dir.path(), "twice.npy");
    let both_output_and_report =
        format!("--output and --report both name {twice}: give each its own file");
    let file = path(dir.path(), "checkpoints.json");
    std::fs::write(&file, "{}").unwrap();
    let predict = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["predict", "--model", &machine, "--iters", "3"];
        a.extend(extra);
        a.into_iter().map(String::from).collect()
    };
    let cases: Vec<(Vec<String>, &str)> =
        vec![
        // The interior's count wrapped into zero rows and a tiny time.
        (
            predict(&["--size", "18446744073709551615x18446744073709551615"]),
            "bad size '18446744073709551615x18446744073709551615': its interior has more cells, \
             or a row more bytes, than a 64-bit count holds",
        ),
        (
            predict(&["--size", "9223372036854775810x3"]),
            "than a 64-bit count holds",
        ),
        // Read as an unknown option '-1'.
        (
            predict(&["--size", "34", "--weights", "-1,1"]),
            "cannot predict: --weights: -1 is not a positive share of the rows",
        ),
        (
            ["predict", "--model", &no_links, "--size", "34", "--iters", "3"]
                .map(String::from)
                .to_vec(),
            "the machine has no link class (calibrated with --no-links?): calibrate without \
             --no-links, or add one under \"links\"",
        ),
        // The factor written out in 301 digits.
        (
            [
                "calibrate", "2d4", "--size", "34", "--out", &machine, "--no-links",
                "--tile-sweep", "1e300",
            ]
            .map(String::from)
            .to_vec(),
            "cannot calibrate: --tile-sweep 1e300 makes the size ",
        ),
        // One file for two: the later write replaced the output, or the
        // input read.
        (
            ["run", "2d4", "--size", "34", "--iters", "1", "--output", &twice, "--report", &twice]
                .map(String::from)
                .to_vec(),
            both_output_and_report.as_str(),
        ),
        (
            predict(&["--size", "34", "--json", &machine]),
            "--json and --model both name",
        ),
        (
            ["calibrate", "2d4", "--size", "34", "--out", &twice, "--json", &twice, "--no-links"]
                .map(String::from)
                .to_vec(),
            "--out and --json both name",
        ),
        (
            [
                "simulate", "2d4", "--size", "34", "--iters", "3", "--devices-count", "2",
                "--report", &twice, "--model", &twice,
            ]
            .map(String::from)
            .to_vec(),
            "--report and --model both name",
        ),
        // A file, said to be missing.
        (
            ["run", "2d4", "--size", "34", "--restart", &file]
                .map(String::from)
                .to_vec(),
            "not a directory: give the --checkpoint-dir of the run to resume",
        ),
    ];
    for (args, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, want);
    }
    // A size within the counts still predicts.
    assert!(
        epsilod(&["predict", "--model", &machine, "--size", "34", "--iters", "3"])
            .status
            .success()
    );
}

/// A device option's message says the range its check takes: `threads=`
/// said "a whole number >= 0", then refused 0; `weight=inf` is >= 0 but
/// refused as not finite.
#[test]
fn device_options_say_the_range_they_take() {
    let run = |device: &str| {
        [
            "run",
            "2d4",
            "--size",
            "34",
            "--iters",
            "1",
            "--quiet",
            "--devices",
            device,
        ]
        .map(String::from)
    };
    for (device, want) in [
        (
            "cpu:threads=",
            "bad device 'cpu:threads=': threads=: expected a whole number from 1 to 1024",
        ),
        ("cpu:threads=-1", "expected a whole number from 1 to 1024"),
        ("cpu:threads=0", "a device needs at least one thread"),
        ("cpu:threads=1025", "at most 1024 threads"),
        (
            "cpu:weight=inf",
            "weight=inf: expected a number >= 0 and finite",
        ),
        (
            "opencl:platform=",
            "platform=: expected a whole number >= 0",
        ),
    ] {
        let args = run(device);
        fails_with(&args.each_ref().map(String::as_str), want);
    }
    // The low ends of the stated ranges are taken.
    ok(&run("cpu:threads=1,weight=0").each_ref().map(String::as_str));
}

/// `plot` and `view` name a picture they cannot write by its cause: the
/// bitmap backend's errors printed as Rust Debug text
/// (`ImageError(IoError(Custom { kind: Other, .. }))`).
#[test]
#[cfg(target_os = "linux")]
fn plot_and_view_say_why_a_picture_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let report = path(dir.path(), "r.json");
    let field = path(dir.path(), "f.npy");
    ok(&[
        "run", "2d4", "--size", "34", "--iters", "2", "--quiet", "--report", &report, "--output",
        &field,
    ]);
    let full = |name: &str| {
        let p = path(dir.path(), name);
        std::os::unix::fs::symlink("/dev/full", &p).unwrap();
        p
    };
    let (png, svg, gif, one) = (full("a.png"), full("b.svg"), full("c.gif"), full("d.png"));
    let cases = [
        vec!["plot", "-o", &png, &report],
        vec!["plot", "-o", &svg, &report],
        vec!["view", "-o", &gif, &field, &field],
        vec!["view", "-o", &one, &field],
    ];
    for args in &cases {
        let out = args[2];
        let what = if args[0] == "plot" { "plot" } else { "picture" };
        fails_with(
            args,
            &format!("cannot write {what} {out}: No space left on device (os error 28)"),
        );
    }
    // The readers' errors were lines already; they stay so.
    let missing = path(dir.path(), "missing.json");
    fails_with(
        &["plot", "-o", &path(dir.path(), "x.png"), &missing],
        &format!("cannot read report {missing}: No such file or directory (os error 2)"),
    );
}

/// An endless or huge input is refused at a bound, in one line: each
/// reader read `/dev/zero` (or a 1 TiB sparse file) until the allocator
/// refused.
#[test]
#[cfg(target_os = "linux")]
fn endless_and_huge_inputs_are_refused_at_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = path(dir.path(), "sparse.toml");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let too_much = "it holds more than 256 MiB, the most this input may";
    for file in ["/dev/zero", sparse.as_str()] {
        let run = ["run", "2d4", "--size", "34", "--iters", "1", "--quiet"];
        fails_with(&[&run[..], &["--device-file", file]].concat(), too_much);
        fails_with(&[&run[..], &["--weights-from", file]].concat(), too_much);
        fails_with(&["run", file, "--size", "34", "--iters", "1"], too_much);
        fails_with(
            &["predict", "--model", file, "--size", "34", "--iters", "1"],
            too_much,
        );
    }
    // Reports grow with a run: theirs is a larger bound (4 GiB, so not
    // tried on /dev/zero here: that would hold it all in memory first).
    fails_with(
        &["plot", "-o", &path(dir.path(), "x.png"), &sparse],
        "it holds more than 4096 MiB, the most this input may",
    );
    // A P2 image's header on a 1 TiB file: no more is read than its pixels
    // can take.
    let image = path(dir.path(), "huge.pgm");
    std::fs::write(&image, "P2\n2 2\n255\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    fails_with(
        &["run", "gaussian", "--input", &image, "--iters", "1"],
        "a 2x2 P2 image holds at most 266 bytes (64 a pixel after the header); this file holds more",
    );
}

/// A list of heuristics with an empty name says so: two empty pieces (`,`)
/// read as "--alb names  twice".
#[test]
fn an_empty_name_in_a_list_of_heuristics_says_so() {
    let two = ["--devices", "cpu:threads=1", "--devices", "cpu:threads=1"];
    for alb in [",", "none,,next-alb"] {
        let want = format!(
            "--alb '{alb}' has an empty name between commas: separate heuristics by single \
             commas (none,next-alb)"
        );
        let words = |text: &'static str| text.split(' ').chain([alb]).chain(two);
        let simulate: Vec<&str> = words("simulate 2d4 --size 34 --iters 3 --alb").collect();
        fails_with(&simulate, &want);
        let compare: Vec<&str> =
            words("compare 2d4 --size 34 --iters 3 --partition w0 --reps 2 --quiet --alb")
                .collect();
        fails_with(&compare, &want);
    }
}

/// A file the run writes or reads that is also one of its snapshots is
/// refused before the run: `--report snap_2.npy` replaced the snapshot
/// after iteration 2 with the report, status 0.
#[test]
fn a_file_that_is_also_a_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = path(dir.path(), "snap_{iter}.npy");
    let snap = |n: u64| path(dir.path(), &format!("snap_{n}.npy"));
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = "run 2d4 --size 10 --iters 4 --quiet --snapshot-every 2 --snapshot"
            .split(' ')
            .chain([pattern.as_str()])
            .collect();
        a.extend(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let (two, four) = (snap(2), snap(4));
    // The last snapshot's name, written another way.
    let four_here = format!("{}/./snap_4.npy", dir.path().display());
    for (option, file, n) in [("--report", &two, 2), ("--output", &four_here, 4)] {
        let args = run(&[option, file]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(
            &args,
            &format!(
                "{option} and --snapshot both name {file} (the snapshot after iteration {n}): \
                 give each its own file"
            ),
        );
    }
    assert!(!std::path::Path::new(&two).exists());
    // Not a snapshot: iteration 3 is not one of every 2, 6 lies past the end.
    for n in [3, 6] {
        let report = snap(n);
        let args = run(&["--report", &report]);
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        json(std::path::Path::new(&report));
    }
    assert_eq!(&std::fs::read(&four).unwrap()[..6], b"\x93NUMPY");
}

/// An `--aux` file named again for the result or the report is refused
/// before the run, as `--input` is: `--output` replaced the field's values.
#[test]
fn an_aux_file_named_as_an_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let field = path(dir.path(), "k.npy");
    ok(&[
        "run", "2d4", "--size", "34", "--iters", "0", "--quiet", "--output", &field,
    ]);
    let before = std::fs::read(&field).unwrap();
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/specs/varcoef.toml"
    );
    let aux = format!("k={field}");
    for option in ["--output", "--report"] {
        fails_with(
            &[
                "run", spec, "--size", "34", "--iters", "2", "--quiet", "--aux", &aux, option,
                &field,
            ],
            &format!("{option} and --aux k both name {field}: give each its own file"),
        );
    }
    assert_eq!(std::fs::read(&field).unwrap(), before);
}

/// Inputs may repeat: one file for two `--aux` fields runs, with the bits
/// of the same values from two files.
#[test]
fn one_file_for_two_aux_fields_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = path(dir.path(), "two.toml");
    std::fs::write(
        &spec,
        "name = \"two\"\nlow = [1, 1]\nhigh = [1, 1]\naux = { kx = \"0.1\", ky = \"0.2\" }\n\
         update = \"u[0,0] + kx[0,0] * (u[-1,0] - u[0,0]) + ky[0,0] * (u[0,1] - u[0,0])\"\n",
    )
    .unwrap();
    let field = path(dir.path(), "k.npy");
    let copy = path(dir.path(), "k2.npy");
    ok(&[
        "run", "2d4", "--size", "34", "--iters", "0", "--quiet", "--init", "random", "--output",
        &field,
    ]);
    std::fs::copy(&field, &copy).unwrap();
    let run = |a: &str, b: &str, out: &str| {
        let (a, b) = (format!("kx={a}"), format!("ky={b}"));
        ok(&[
            "run", &spec, "--size", "34", "--iters", "3", "--quiet", "--init", "random", "--aux",
            &a, "--aux", &b, "--output", out,
        ]);
        std::fs::read(out).unwrap()
    };
    let (once, twice) = (path(dir.path(), "once.npy"), path(dir.path(), "twice.npy"));
    assert_eq!(run(&field, &field, &once), run(&field, &copy, &twice));
}

/// Every command that writes refuses to write over a file it reads, as
/// `run` and `predict` do: `signature --out` and `calibrate --out` replaced
/// their `--device-file`, `compare --csv` its `--device-file`, `fit-comm
/// --json` its training data, each with status 0.
#[test]
fn no_command_writes_over_a_file_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let devices = path(dir.path(), "devices.toml");
    let text =
        "[[device]]\nkind = \"cpu\"\nthreads = 1\n\n[[device]]\nkind = \"cpu\"\nthreads = 1\n";
    std::fs::write(&devices, text).unwrap();
    let train = path(dir.path(), "train.csv");
    crate::scale::commbench(&train, "1");
    let data = std::fs::read(&train).unwrap();
    let run = "2d4 --size 34 --partition w0 --device-file";
    let cases: Vec<(String, &str)> = vec![
        (format!("signature {run} {devices} --iters 10 --sig-iters 3 --out {devices}"), "--out and --device-file"),
        (format!("calibrate {run} {devices} --calib-iters 4 --no-links --out {devices}"), "--out and --device-file"),
        (
            format!("compare {run} {devices} --iters 3 --alb none,next-alb --reps 2 --quiet --csv {devices}"),
            "--csv and --device-file",
        ),
        (format!("fit-comm {train} --json {train}"), "--json and the training data"),
    ];
    for (line, options) in &cases {
        let args: Vec<&str> = line.split(' ').collect();
        let named = if line.starts_with("fit-comm") {
            &train
        } else {
            &devices
        };
        fails_with(
            &args,
            &format!("{options} both name {named}: give each its own file"),
        );
    }
    assert_eq!(std::fs::read_to_string(&devices).unwrap(), text);
    assert_eq!(std::fs::read(&train).unwrap(), data);
    // Inputs may repeat: the training data scored as held-out data.
    ok(&["fit-comm", &train, "--test", &train]);
}

/// An `EPSILOD_FONT` that names no file says so, rather than asking for a
/// font package or the variable.
#[test]
fn a_font_variable_naming_no_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (report, field) = (path(dir.path(), "r.json"), path(dir.path(), "f.npy"));
    let run = format!("run 2d4 --size 20 --iters 1 --quiet --report {report} --output {field}");
    ok(&run.split(' ').collect::<Vec<_>>());
    let font = path(dir.path(), "no-such-font.ttf");
    let png = path(dir.path(), "p.png");
    for args in [["plot", "-o", &png, &report], ["view", "-o", &png, &field]] {
        let out = Command::new(env!("CARGO_BIN_EXE_epsilod"))
            .args(args)
            .env("EPSILOD_FONT", &font)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "error: EPSILOD_FONT={font} is not a file: set it to a TrueType \
                 font's path, or unset it for a system font\n"
            ),
            "{args:?}"
        );
    }
    assert!(!std::path::Path::new(&png).exists());
}

/// A directory left where a result is first written (`out.npy.partial`)
/// is named: the line said "cannot write output out.npy: Is a directory",
/// of a result that is none.
#[test]
fn a_directory_in_the_way_of_a_whole_write_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for (option, name) in [("--output", "out.npy"), ("--report", "r.json")] {
        let file = path(dir.path(), name);
        let partial = format!("{file}.partial");
        std::fs::create_dir(&partial).unwrap();
        let what = if option == "--output" {
            "output"
        } else {
            "report"
        };
        fails_with(
            &[
                "run", "2d4", "--size", "10", "--iters", "1", "--quiet", option, &file,
            ],
            &format!(
                "cannot write {what} {file}: {partial} is in the way (not a plain file): remove it"
            ),
        );
        assert!(std::path::Path::new(&partial).is_dir());
    }
}

/// Each file a command cannot write is named by what it holds (a CSV, a
/// machine model, a signature, a snapshot, a plot), not as a report.
#[test]
fn a_file_that_cannot_be_written_is_named_by_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let train = path(dir.path(), "train.csv");
    crate::scale::commbench(&train, "1");
    let report = path(dir.path(), "r.json");
    ok(&[
        "run", "2d4", "--size", "34", "--iters", "2", "--quiet", "--report", &report,
    ]);
    let missing = "/nonexistent/dir";
    let run = "2d4 --size 34 --iters 3 --quiet";
    let sim = "2d4 --size 34 --iters 3 --devices-count 2";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("run {run} --report {missing}/r.json"),
            "report",
            "r.json",
        ),
        (
            format!("run {run} --output {missing}/f.npy"),
            "output",
            "f.npy",
        ),
        (
            format!(
                "compare {run} --partition w0 --alb none,next-alb --reps 2 --csv {missing}/t.csv"
            ),
            "CSV",
            "t.csv",
        ),
        (
            format!("simulate {sim} --csv {missing}/t.csv"),
            "CSV",
            "t.csv",
        ),
        (
            format!("simulate {sim} --report {missing}/r.json"),
            "report",
            "r.json",
        ),
        (
            format!("calibrate {run} --calib-iters 4 --no-links --out {missing}/m.json"),
            "machine model",
            "m.json",
        ),
        (
            format!("signature {run} --sig-iters 2 --out {missing}/s.json"),
            "signature",
            "s.json",
        ),
        (format!("commbench --csv {missing}/b.csv"), "CSV", "b.csv"),
        (
            format!("fit-comm {train} --out {missing}/c.json"),
            "model",
            "c.json",
        ),
        (
            format!("fit-comm {train} --json {missing}/c.json"),
            "JSON",
            "c.json",
        ),
        (format!("plot {report} -o {missing}/p.png"), "plot", "p.png"),
    ];
    for (line, what, file) in &cases {
        let args: Vec<&str> = line.split(' ').collect();
        fails_with(
            &args,
            &format!(
                "cannot write {what} {missing}/{file}: No such file or directory (os error 2)"
            ),
        );
    }
    // A snapshot, before the run (its first file's place) and during it.
    let snap = path(dir.path(), "s_{iter}.npy");
    let first = path(dir.path(), "s_1.npy");
    std::fs::create_dir(format!("{first}.partial")).unwrap();
    let snapshots = ["--snapshot-every", "1", "--snapshot", &snap];
    let args = [&run.split(' ').collect::<Vec<_>>()[..], &snapshots].concat();
    fails_with(
        &[&["run"][..], &args].concat(),
        &format!("cannot write snapshot {first}: {first}.partial is in the way (not a plain file): remove it"),
    );
    std::fs::remove_dir(format!("{first}.partial")).unwrap();
    let third = path(dir.path(), "s_3.npy");
    std::os::unix::fs::symlink("/dev/full", &third).unwrap();
    fails_with(
        &[&["run"][..], &args].concat(),
        &format!("cannot write snapshot {third}: No space left on device (os error 28)"),
    );
}

/// A list of heuristics or methods with a stray comma at an end says where
/// it is, not "between commas".
#[test]
fn a_stray_comma_at_a_lists_end_says_so() {
    let two = "--devices cpu:threads=1 --devices cpu:threads=1";
    let cases = [
        (
            "none,",
            "--alb 'none,' ends with a comma: drop it, or name a heuristic after it (none,next-alb)",
        ),
        (
            ",none",
            "--alb ',none' starts with a comma: drop it (none,next-alb)",
        ),
    ];
    for (alb, want) in cases {
        for command in [
            "simulate 2d4 --size 34 --iters 3",
            "compare 2d4 --size 34 --iters 3 --partition w0 --reps 2 --quiet",
        ] {
            let line = format!("{command} {two} --alb");
            let args: Vec<&str> = line.split(' ').chain([alb]).collect();
            fails_with(&args, want);
        }
    }
}

/// A number list with a stray comma names the empty item, and a number
/// out of its range says the range in words.
#[test]
fn a_number_lists_stray_comma_and_range_are_said() {
    for (args, want) in [
        (
            "scale s.json --targets 8,",
            "an empty item: a comma too many?",
        ),
        (
            "scale s.json --targets ,8",
            "an empty item: a comma too many?",
        ),
        (
            "commbench --per-rank 2,",
            "an empty item: a comma too many?",
        ),
        (
            "commbench --sizes 16,,256",
            "an empty item: a comma too many?",
        ),
        ("commbench --pm 1,", "an empty item: a comma too many?"),
        (
            "calibrate 2d4 --size 34 --out m.json --tile-sweep 0.5,",
            "an empty item: a comma too many?",
        ),
        (
            "scale s.json --targets 8,0",
            "expected a whole number from 1 to 1048576",
        ),
        (
            "commbench --per-rank 2000",
            "expected a whole number from 1 to 1024",
        ),
    ] {
        let args: Vec<&str> = args.split(' ').collect();
        fails_with(&args, want);
    }
}

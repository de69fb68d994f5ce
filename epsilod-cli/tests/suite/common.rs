//! What the binary's end-to-end tests share: running it, checking that a
//! run succeeded or failed with one clear line, reading what it wrote, and
//! comparing a run on several processes with one process.

// Each test file uses a part.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The example inventory of docs/examples, as `plan` reads it.
pub const INVENTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/examples/inventory.toml"
);

/// A calibration short enough for a test: rows by weight, six timed
/// iterations a pass, three repetitions of each message size.
pub const QUICK_CALIBRATION: [&str; 6] = ["--partition", "w0", "--calib-iters", "6", "--reps", "3"];

/// A signature of 2d4 of `size`, rows by weight, on `devices` one-thread
/// devices, with `extra` (iterations, traced iterations), written into
/// `dir` as `s<devices>.json`: its path.
pub fn signature(dir: &Path, size: &str, devices: usize, extra: &[&str]) -> String {
    let out = path(dir, &format!("s{devices}.json"));
    let mut args = vec!["signature", "2d4", "--size", size, "--partition", "w0"];
    args.extend(extra);
    args.extend(["--quiet", "--out", &out]);
    args.extend(one_cpu_each(devices));
    ok(&args);
    out
}

/// `plan`'s arguments: `inventory`, `size`, `iters`, then `extra`.
pub fn plan<'a>(
    inventory: &'a str,
    size: &'a str,
    iters: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let args = [
        "plan",
        "--inventory",
        inventory,
        "--size",
        size,
        "--iters",
        iters,
    ];
    [&args[..], extra].concat()
}

/// Runs the binary with `args`, backtraces on (so a panic would show).
pub fn epsilod(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epsilod"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the epsilod binary runs")
}

/// Runs `args`, which must succeed; returns what it printed.
pub fn ok(args: &[&str]) -> String {
    let out = epsilod(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `args` and checks it fails with exactly one stderr line, `error: `
/// and then what says `want`, with no panic or backtrace.
pub fn fails_with(args: &[&str], want: &str) {
    let out = epsilod(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line:\n{err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {err:?} lacks {want:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{args:?}: {err}"
    );
}

/// Waits for `child` at most `limit`: one still running then is a hang,
/// killed, and the test fails naming `what`.
pub fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} hung for {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collecting output")
}

/// Checks that the finished command `o` succeeded, naming `what` and its
/// status and stderr where it did not.
pub fn succeeded(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `name` in `dir`, as a command line takes it.
pub fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// The JSON document in the file at `path` (a report, a machine, figures).
pub fn json(path: impl AsRef<Path>) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `simulate --trace-from real --report sim`: the real report, the
/// replay's and what simulate printed.
pub fn replayed(real: &Path, sim: &Path) -> (Value, Value, String) {
    let out = ok(&[
        "simulate",
        "--trace-from",
        real.to_str().unwrap(),
        "--report",
        sim.to_str().unwrap(),
    ]);
    (json(real), json(sim), out)
}

/// Whether the files at `a` and `b` hold the same bytes.
pub fn same_bytes(a: impl AsRef<Path>, b: impl AsRef<Path>) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

/// One device of one thread, the device of most distributed tests.
pub const CPU1: &str = "cpu:threads=1";

/// `--devices cpu:threads=1` `n` times: one device for each of `n` ranks.
pub fn one_cpu_each(n: usize) -> Vec<&'static str> {
    ["--devices", CPU1].repeat(n)
}

/// Runs `args` in one process (`alone`) and on several (`many`, which `on`
/// names: "3 ranks", "2 nodes"), each writing its output and report into
/// `dir` under `tag`: the outputs must be byte-identical and the reports'
/// configurations equal. Where the processes ran on `hosts` hosts, more
/// than one, the configurations differ only in those hosts: one host alone,
/// `hosts` hosts on several. Returns the two reports, one process's first.
pub fn same_as_one_process(
    args: &[&str],
    dir: &Path,
    tag: &str,
    on: &str,
    hosts: usize,
    alone: impl FnOnce(&[&str]) -> Output,
    many: impl FnOnce(&[&str]) -> Output,
) -> (Value, Value) {
    let (a, b) = (
        path(dir, &format!("{tag}-1.dat")),
        path(dir, &format!("{tag}-n.dat")),
    );
    let (ra, rb) = (
        path(dir, &format!("{tag}-1.json")),
        path(dir, &format!("{tag}-n.json")),
    );
    let mut one = args.to_vec();
    one.extend(["--quiet", "--output", &a, "--report", &ra]);
    succeeded(&alone(&one), tag);
    let mut several = args.to_vec();
    several.extend(["--quiet", "--output", &b, "--report", &rb]);
    succeeded(&many(&several), &format!("{tag} on {on}"));
    assert!(same_bytes(&a, &b), "{tag}: {on} differ from one process");
    let (ra, rb) = (json(&ra), json(&rb));
    let (mut ca, mut cb) = (ra["config"].clone(), rb["config"].clone());
    if hosts > 1 {
        let distinct = |c: &mut Value| {
            let h = c.as_object_mut().unwrap().remove("hosts").unwrap();
            let mut h: Vec<String> = serde_json::from_value(h).unwrap();
            h.sort();
            h.dedup();
            h.len()
        };
        assert_eq!(
            (distinct(&mut ca), distinct(&mut cb)),
            (1, hosts),
            "{tag}: hosts"
        );
    }
    assert_eq!(ca, cb, "{tag}");
    (ra, rb)
}

/// 2d8 on 40x40 over 5 iterations, rows by weight, on the devices `file`
/// deals to the processes `many` starts: the report numbers them as
/// `dealt` (rank by rank), and one process given `dealt` writes the same
/// bytes.
pub fn a_device_file_deals(dir: &Path, file: &str, many: &Runner, dealt: &[&str]) {
    let (out, rep, one) = (
        path(dir, "placed.dat"),
        path(dir, "placed.json"),
        path(dir, "one.dat"),
    );
    let base = [
        "run",
        "2d8",
        "--size",
        "40",
        "--iters",
        "5",
        "--partition",
        "w0",
        "--quiet",
    ];
    let mut args = base.to_vec();
    args.extend(["--device-file", file, "--output", &out, "--report", &rep]);
    succeeded(&many(&args), "device file");
    assert_eq!(
        json(&rep)["config"]["devices"],
        serde_json::json!(dealt),
        "devices numbered rank by rank"
    );
    let mut args = base.to_vec();
    for d in dealt {
        args.extend(["--devices", d]);
    }
    args.extend(["--output", &one]);
    succeeded(&epsilod(&args), "one process");
    assert!(
        same_bytes(&out, &one),
        "the devices dealt differ from one process"
    );
}

/// Runs the binary with the arguments it is given, somewhere: alone, on
/// ranks, on nodes.
pub type Runner<'a> = dyn Fn(&[&str]) -> Output + 'a;

/// A 3d27 run checkpointed every 5 iterations up to 17 by `write` (on
/// `written_on`), then resumed to 30 by each of `resumes` (a name and a
/// runner; the runners add their devices): each resumes from iteration 15
/// and ends with the bytes of the run never stopped.
pub fn restarts_end_as_the_run_never_stopped(
    dir: &Path,
    written_on: &str,
    write: impl FnOnce(&[&str]) -> Output,
    resumes: &[(&str, &Runner)],
) {
    let ck = path(dir, "ck");
    let base = ["run", "3d27", "--size", "18x14x12", "--quiet"];
    let full = path(dir, "full.dat");
    let mut args = base.to_vec();
    args.extend(["--iters", "30", "--devices", CPU1, "--output", &full]);
    succeeded(&epsilod(&args), "uninterrupted");
    let mut args = base.to_vec();
    args.extend(["--iters", "17", "--partition", "s0"]);
    args.extend(["--checkpoint-every", "5", "--checkpoint-dir", &ck]);
    succeeded(&write(&args), &format!("checkpoints on {written_on}"));
    for (i, (on, resume)) in resumes.iter().enumerate() {
        let (out, rep) = (
            path(dir, &format!("resumed-{i}.dat")),
            path(dir, &format!("resumed-{i}.json")),
        );
        let mut args = base.to_vec();
        args.extend(["--iters", "30", "--restart", &ck]);
        args.extend(["--output", &out, "--report", &rep]);
        succeeded(&resume(&args), &format!("restart on {on}"));
        assert_eq!(json(&rep)["config"]["resumed_from"], 15, "{on}");
        assert!(
            same_bytes(&full, &out),
            "the restart on {on} differs from the uninterrupted run"
        );
    }
}

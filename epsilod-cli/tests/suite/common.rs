//! What the binary's end-to-end tests share: running it, checking that a
//! run succeeded or failed with one clear line, reading what it wrote, and
//! comparing a run on several processes with one process.

// Each test file uses a part.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The example inventory of docs/examples, as `plan` reads it.
pub const INVENTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/examples/inventory.toml"
);

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

/// Whether the files at `a` and `b` hold the same bytes.
pub fn same_bytes(a: impl AsRef<Path>, b: impl AsRef<Path>) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

/// Runs `args` in one process (`alone`) and on several (`many`, which `on`
/// names: "3 ranks", "2 nodes"), each writing its output and report into
/// `dir` under `tag`: the outputs must be byte-identical and the reports'
/// configurations equal. Returns the two reports, one process's first.
pub fn same_as_one_process(
    args: &[&str],
    dir: &Path,
    tag: &str,
    on: &str,
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
    assert_eq!(ra["config"], rb["config"], "{tag}");
    (ra, rb)
}

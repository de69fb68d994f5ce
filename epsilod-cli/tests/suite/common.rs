//! What the binary's end-to-end tests share: running it, and checking that
//! a run succeeded, or failed with one clear line.

// Each test file uses a part.
#![allow(dead_code)]

use std::process::{Command, Output};

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

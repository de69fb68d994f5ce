//! Stencil spec files through the binary: update expressions run, equal
//! the library stencil they spell out, and bad ones are one clear line.

mod common;
use common::epsilod;

use std::path::Path;

fn specs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/specs")
}

#[test]
fn the_2d4_expression_writes_the_library_2d4s_output() {
    let dir = tempfile::tempdir().unwrap();
    let spec = specs().join("2d4.toml");
    let (a, b, r) = (
        dir.path().join("a.txt"),
        dir.path().join("b.txt"),
        dir.path().join("r.json"),
    );
    for (stencil, out) in [(spec.to_str().unwrap(), &a), ("2d4", &b)] {
        let o = epsilod(&[
            "run",
            stencil,
            "--size",
            "66",
            "--iters",
            "30",
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1",
            "--output",
            out.to_str().unwrap(),
            "--report",
            r.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// `n[d]` is the run's domain: the wavesim spec writes what the same
/// spec with the sizes written in writes, on two devices.
#[test]
fn the_domain_size_is_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(specs().join("wavesim.toml")).unwrap();
    let literal = text.replace("n[0]", "34").replace("n[1]", "26");
    assert_ne!(literal, text);
    let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
    std::fs::write(&a, &text).unwrap();
    std::fs::write(&b, &literal).unwrap();
    let out = |spec: &Path, name: &str| {
        let path = dir.path().join(name);
        let o = epsilod(&[
            "run",
            spec.to_str().unwrap(),
            "--size",
            "34x26",
            "--iters",
            "9",
            "--init",
            "random",
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1",
            "--quiet",
            "--output",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(path).unwrap()
    };
    assert!(out(&a, "a.npy") == out(&b, "b.npy"));
}

#[test]
fn every_example_spec_runs() {
    let mut n = 0;
    for entry in std::fs::read_dir(specs()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("\ncell = ") {
            // Array cells run from Rust (epsilod-apps/tests/dsl_specs.rs);
            // the binary says so in one line.
            let o = epsilod(&["run", path.to_str().unwrap(), "--size", "34"]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && err.lines().count() == 1, "{err}");
            assert!(
                err.contains("has cells of 19 components (cell = 19)"),
                "{err}"
            );
            continue;
        }
        let r = tempfile::NamedTempFile::new().unwrap();
        let o = epsilod(&[
            "run",
            path.to_str().unwrap(),
            "--size",
            "34",
            "--iters",
            "5",
            "--report",
            r.path().to_str().unwrap(),
            "--quiet",
        ]);
        assert!(
            o.status.success(),
            "{path:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(r.path()).unwrap()).unwrap();
        let want = if text.contains("update") {
            "expression"
        } else {
            "generic"
        };
        assert_eq!(report["config"]["kernel"], want, "{path:?}");
        n += 1;
    }
    assert!(n >= 3);
}

#[test]
fn a_bad_expression_is_one_line_naming_the_file_and_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bad.toml");
    std::fs::write(
        &spec,
        "name = \"bad\"\nlow = [1, 1]\nhigh = [1, 1]\nupdate = \"u[0,0] * (2 + k)\"\n",
    )
    .unwrap();
    let o = epsilod(&["run", spec.to_str().unwrap(), "--size", "10"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.toml") && err.contains("in update, at character 14: unknown name 'k'"),
        "{err}"
    );
}

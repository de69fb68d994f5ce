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
        let size = if text.contains("\ncell = ") {
            "18"
        } else {
            "34"
        };
        let r = tempfile::NamedTempFile::new().unwrap();
        let o = epsilod(&[
            "run",
            path.to_str().unwrap(),
            "--size",
            size,
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

/// The `.npy` header's shape: `(34, 34, 34, 19)`.
fn npy_shape(bytes: &[u8]) -> String {
    let header = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned();
    let at = header.find("'shape': (").expect("a shape in the header") + 10;
    header[at..at + header[at..].find(')').unwrap()].to_string()
}

#[test]
fn array_cell_specs_run_the_same_bits_on_any_layout() {
    let dir = tempfile::tempdir().unwrap();
    let spec = specs().join("gassim.toml");
    let run = |name: &str, layout: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "run",
            spec.to_str().unwrap(),
            "--size",
            "20x22x18",
            "--iters",
            "6",
            "--init",
            "random",
            "--quiet",
            "--output",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(layout);
        let o = epsilod(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out).unwrap()
    };
    let one = run("one.npy", &["--devices", "cpu:threads=1"]);
    assert_eq!(npy_shape(&one), "20, 22, 18, 19");
    for (name, layout) in [
        (
            "rows.npy",
            &[
                "--devices",
                "cpu:threads=1",
                "--devices",
                "cpu:threads=2",
                "--partition",
                "s0",
            ][..],
        ),
        (
            "blocks.npy",
            &[
                "--devices",
                "cpu:threads=1",
                "--devices",
                "cpu:threads=1",
                "--devices",
                "cpu:threads=1",
                "--partition",
                "m",
            ][..],
        ),
    ] {
        assert!(run(name, layout) == one, "{name}");
    }
    // The random init differs by component: a run is not 19 copies of one.
    let data = &one[one.len() - 20 * 22 * 18 * 19 * 4..];
    let floats: Vec<f32> = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert!(floats
        .chunks_exact(19)
        .any(|c| c.iter().any(|&x| x != c[0])));
}

#[test]
fn array_cells_the_binary_cannot_run_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let five = dir.path().join("five.toml");
    let updates: Vec<String> = (0..5)
        .map(|k| format!("\"u[0,-1][{k}] + u[0,1][{k}]\""))
        .collect();
    std::fs::write(
        &five,
        format!(
            "name = \"five\"\ncell = 5\nlow = [0, 1]\nhigh = [0, 1]\nupdate = [{}]\n",
            updates.join(", ")
        ),
    )
    .unwrap();
    common::fails_with(
        &["run", five.to_str().unwrap(), "--size", "8"],
        "has cells of 5 components (cell = 5): epsilod runs cells of 2, 3, 4, 9, 19 or 27",
    );
    let gas = specs().join("gassim.toml");
    common::fails_with(
        &[
            "signature",
            gas.to_str().unwrap(),
            "--size",
            "18",
            "--out",
            "x.json",
        ],
        "this command models runs of scalar cells; `epsilod run` runs it",
    );
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

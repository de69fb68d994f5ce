//! Stencil spec files through the binary: update expressions run, equal
//! the library stencil they spell out, and bad ones are one clear line.

use crate::common;
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

/// `--aux k=FILE.npy` replaces a field's definition by a file's values:
/// the file of the definition's own values gives the same bytes (f32 and
/// f64 files, several devices, a deeper halo), another file other bytes,
/// and bad uses are one line.
#[test]
fn aux_fields_from_npy_files() {
    use epsilod_testkit::write_npy;
    let dir = tempfile::tempdir().unwrap();
    let spec = specs().join("varcoef.toml");
    let spec = spec.to_str().unwrap();
    let (rows, cols) = (30usize, 22usize);
    // varcoef.toml's k, written out in f32.
    let k = |r: usize, q: usize| -> f32 {
        let base: f32 = if (r as f32) < rows as f32 / 2.0 {
            0.2
        } else {
            0.05
        };
        base + q as f32 / (cols as f32 * 16.0)
    };
    let same = ndarray::Array2::from_shape_fn((rows, cols), |(r, q)| k(r, q));
    let write = |name: &str, a: &dyn Fn(&std::path::Path)| {
        let p = dir.path().join(name);
        a(&p);
        p.to_str().unwrap().to_string()
    };
    let values = |a: ndarray::Array2<f32>| a.iter().copied().collect::<Vec<_>>();
    let f32_file = write("k32.npy", &|p| {
        write_npy(p, "<f4", &[rows, cols], &values(same.clone()))
    });
    let f64_file = write("k64.npy", &|p| {
        let v: Vec<f64> = same.iter().map(|&v| f64::from(v)).collect();
        write_npy(p, "<f8", &[rows, cols], &v)
    });
    let other = write("other.npy", &|p| {
        write_npy(p, "<f4", &[rows, cols], &values(same.mapv(|v| v * 0.5)))
    });
    let run = |extra: &[&str], out: &str| {
        let out = dir.path().join(out);
        let mut args = vec![
            "run",
            spec,
            "--size",
            "30x22",
            "--iters",
            "12",
            "--init",
            "random",
            "--quiet",
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1",
            "--output",
        ];
        args.push(out.to_str().unwrap());
        args.extend(extra);
        common::ok(&args);
        std::fs::read(out).unwrap()
    };
    let defined = run(&[], "a.npy");
    let k32 = format!("k={f32_file}");
    let k64 = format!("k={f64_file}");
    let ko = format!("k={other}");
    assert_eq!(run(&["--aux", &k32], "b.npy"), defined);
    assert_eq!(run(&["--aux", &k64, "--halo-depth", "3"], "c.npy"), defined);
    assert_ne!(run(&["--aux", &ko], "d.npy"), defined);
    let base = ["run", spec, "--size", "30x22", "--iters", "2", "--aux"];
    let with = |a: &str| {
        let mut v = base.to_vec();
        v.push(a);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let fails = |a: &str, want: &str| {
        let v = with(a);
        let v: Vec<&str> = v.iter().map(String::as_str).collect();
        common::fails_with(&v, want);
    };
    fails("k", "--aux k: expected name=FILE.npy");
    fails("k=", "--aux k=: expected name=FILE.npy");
    fails(
        &format!("c={f32_file}"),
        "the spec declares aux fields [\"k\"], not 'c'",
    );
    fails(
        "k=/nonexistent.npy",
        "--aux k=/nonexistent.npy: No such file",
    );
    let small = write("small.npy", &|p| write_npy(p, "<f4", &[3, 4], &[0f32; 12]));
    fails(
        &format!("k={small}"),
        "the array is [3, 4], the run's --size is [30, 22]",
    );
    common::fails_with(
        &["run", "2d4", "--size", "10", "--aux", &k32],
        "the stencil declares no aux fields",
    );
    let mut twice = with(&k32);
    twice.extend(["--aux".to_string(), k32.clone()]);
    let twice: Vec<&str> = twice.iter().map(String::as_str).collect();
    common::fails_with(&twice, "'k' is given twice");
}

/// A spec with both `weights` and `update` says so, in one line naming
/// both, rather than calling `weights` an unknown field.
#[test]
fn a_spec_with_weights_and_an_update_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("both.toml");
    std::fs::write(
        &spec,
        "name = \"both\"\nlow = [1, 1]\nhigh = [1, 1]\nweights = [0, 1, 0, 1, 0, 1, 0, 1, 0]\n\
         update = \"u[0,0]\"\n",
    )
    .unwrap();
    let spec = spec.display().to_string();
    common::fails_with(
        &["run", &spec, "--size", "10", "--iters", "1"],
        &format!(
            "error: invalid stencil spec {spec}: stencil spec has both weights (a weighted sum) \
             and update (an expression): give one of them"
        ),
    );
}

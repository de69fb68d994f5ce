//! The example programs run as their docs say and give the reference results.

use kernels::reference;
use kernels::{basic_init, Library};
use std::process::Command;

#[test]
fn basic_stencils_writes_epsilod_text_identical_to_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.txt");
    for (lib, size, iters) in [
        (Library::S3dnc12, 10, 100),
        (Library::S2df5, 32, 100),
        (Library::S1dnc4, 32, 1),
    ] {
        let st = Command::new(env!("CARGO_BIN_EXE_basic-stencils"))
            .args([
                lib.name(),
                &size.to_string(),
                &iters.to_string(),
                path.to_str().unwrap(),
                "--devices",
                "3",
            ])
            .status()
            .unwrap();
        assert!(st.success());
        let spec = lib.spec();
        let sizes = vec![size; lib.ndims()];
        let want = reference::run(
            &sizes,
            &spec.low,
            &spec.high,
            iters,
            |i| basic_init(i, &sizes, &spec.low, &spec.high),
            reference::library_formula(lib),
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let want: Vec<String> = want
            .iter()
            .map(|v| format!("{:042.40}", *v as f64))
            .collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), want, "{lib}");
    }
}

#[test]
fn examples_run_and_reject_bad_input_in_one_line() {
    for (bin, args) in [
        (
            env!("CARGO_BIN_EXE_stencil2d4"),
            vec!["--size", "66", "--iters", "20"],
        ),
        (
            env!("CARGO_BIN_EXE_stencil3d27"),
            vec!["--size", "18", "--iters", "3"],
        ),
        (env!("CARGO_BIN_EXE_gas-sim"), vec!["20", "20", "10", "5"]),
    ] {
        let out = Command::new(bin).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{bin}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_basic-stencils"))
        .args(["9d9", "10", "1", "x.txt"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: unknown stencil '9d9'"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_stencil2d4"))
        .args(["--size", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
}

//! The example programs run as their docs say and give the reference results.

use epsilod::{basic_init, Library};
use kernels::reference;
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
        (env!("CARGO_BIN_EXE_laplace"), vec!["12", "10", "8", "5"]),
        (env!("CARGO_BIN_EXE_poisson"), vec!["20", "16", "5"]),
        (env!("CARGO_BIN_EXE_wavesim"), vec!["24", "20", "8"]),
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

/// The gaussian example names its output as the original does and
/// writes the app's pixels; a missing image is one line.
#[test]
fn the_gaussian_example_blurs_a_pgm() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pgm");
    let mut pgm = b"P5\n21 17\n255\n".to_vec();
    pgm.extend((0..21 * 17).map(|k| ((k * 53) % 256) as u8));
    std::fs::write(&input, pgm).unwrap();
    let prefix = dir.path().join("out").display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_gaussian"))
        .args(["3", "5", input.to_str().unwrap(), &prefix])
        .args(["--device", "cpu:threads=1", "--device", "cpu:threads=1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = epsilod::pgm::read(&dir.path().join("out_3_5.ascii.pgm")).unwrap();
    let img = epsilod_apps::gaussian::load(&input).unwrap().2;
    let grid = epsilod::Skeleton::new(
        &epsilod_apps::gaussian::global_size(17, 21, 5),
        epsilod_apps::gaussian::stencil(5, 1.0),
    )
    .iterations(3)
    .init(epsilod_apps::gaussian::init(img, 17, 21, 5))
    .run()
    .unwrap()
    .grid;
    let want: Vec<u16> = (0..17 * 21)
        .map(|k| grid[[k / 21 + 2, k % 21 + 2]] as u16)
        .collect();
    assert_eq!(got.pixels, want);
    assert_eq!((got.rows, got.cols), (17, 21));
    let out = Command::new(env!("CARGO_BIN_EXE_gaussian"))
        .args(["3", "5", "/no/such.pgm", &prefix])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: cannot read /no/such.pgm"), "{err}");
}

/// The examples under real mpirun write what they write alone.
#[cfg(feature = "mpi")]
#[test]
fn examples_under_mpirun_write_what_they_write_alone() {
    let dir = tempfile::tempdir().unwrap();
    let run = |np: Option<usize>, exe: &str, args: &[&str], out: &std::path::Path| {
        let mut c = match np {
            None => Command::new(exe),
            Some(n) => {
                let mut c = Command::new("mpirun");
                c.args(["--oversubscribe", "-np", &n.to_string(), exe])
                    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                c
            }
        };
        let o = c
            .args(args)
            .arg(out)
            .output()
            .expect("mpirun (openmpi-bin) is installed");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let s2 = env!("CARGO_BIN_EXE_stencil2d4");
    let args = [
        "--size",
        "66",
        "--iters",
        "20",
        "--devices",
        "3",
        "--output",
    ];
    let (a, b) = (dir.path().join("a.dat"), dir.path().join("b.dat"));
    let alone = run(None, s2, &args, &a);
    let ranks = run(Some(3), s2, &args, &b);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Rank 0 alone prints the probe line.
    let probe = |s: &str| s.lines().filter(|l| l.starts_with("temperature")).count();
    assert_eq!((probe(&alone), probe(&ranks)), (1, 1), "{ranks}");
    let gas = env!("CARGO_BIN_EXE_gas-sim");
    let args = ["--devices", "2", "10", "8", "6", "4"];
    let (a, b) = (dir.path().join("ga.dat"), dir.path().join("gb.dat"));
    run(None, gas, &args, &a);
    run(Some(2), gas, &args, &b);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// A bad option is one line and status 2, as `epsilod`'s: clap's own
/// message was an error, a usage and a hint over five lines.
#[test]
fn examples_refuse_a_bad_option_in_one_line() {
    for (bin, name) in [
        (env!("CARGO_BIN_EXE_basic-stencils"), "basic-stencils"),
        (env!("CARGO_BIN_EXE_gas-sim"), "gas-sim"),
        (env!("CARGO_BIN_EXE_gaussian"), "gaussian"),
        (env!("CARGO_BIN_EXE_laplace"), "laplace"),
        (env!("CARGO_BIN_EXE_poisson"), "poisson"),
        (env!("CARGO_BIN_EXE_stencil2d4"), "stencil2d4"),
        (env!("CARGO_BIN_EXE_stencil3d27"), "stencil3d27"),
        (env!("CARGO_BIN_EXE_wavesim"), "wavesim"),
    ] {
        let out = Command::new(bin).arg("--bogus").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(
            err,
            format!("error: unexpected argument '--bogus' found (see '{name} --help')\n")
        );
    }
    let help = Command::new(env!("CARGO_BIN_EXE_stencil2d4"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: stencil2d4"));
}

/// A user domain of usize::MAX cells a side is refused as too large,
/// naming the size: it wrapped round to 1 and read as too small.
#[test]
fn gas_sim_refuses_a_side_of_usize_max() {
    let out = Command::new(env!("CARGO_BIN_EXE_gas-sim"))
        .args(["18446744073709551615", "4", "4", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: bad size '18446744073709551615x6x6'")
            && err.contains("more bytes than memory can address"),
        "{err}"
    );
}

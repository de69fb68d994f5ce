//! The `epsilod` binary: bad input gives one clear line and a non-zero exit,
//! never a panic; good runs write the files cli.md promises.

use crate::common;
use common::{epsilod, fails_with, json};

use kernels::reference;
use kernels::{basic_init, Library};
use std::path::Path;

#[test]
fn an_unknown_heuristic_lists_every_known_one() {
    let out = epsilod(&["run", "2d4", "--size", "10", "--alb", "sometimes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for name in heuristics::NAMES {
        assert!(err.contains(name), "{name} missing from {err}");
    }
}

#[test]
fn bad_input_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(
        d("bad-devices.toml"),
        "[[device]]\nkind = \"cpu\"\nthreads = 0\n",
    )
    .unwrap();
    std::fs::write(d("garbage.toml"), "this is = = not toml").unwrap();
    std::fs::write(
        d("bad-spec.toml"),
        "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0]\nfactor = 2\n",
    )
    .unwrap();
    macro_rules! a {
        ($($x:expr),*) => { vec![$($x.to_string()),*] };
    }
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            a!["run", "wavesim", "--size", "34x26", "--param", "step=1"],
            "--param step: wavesim takes dt, T (see 'epsilod list')",
        ),
        (
            a!["run", "wavesim", "--size", "34x26", "--param", "dt=fast"],
            "--param dt=fast: not a finite number",
        ),
        (
            a!["run", "2d4", "--size", "34", "--param", "dt=1"],
            "--param is for apps; '2d4' takes none",
        ),
        (a!["run", "5d7", "--size", "10"], "unknown stencil '5d7'"),
        (
            a!["run", "2d4", "--size", "10x10x10"],
            "3 dimensions given, the stencil has 2",
        ),
        (a!["run", "2d4", "--size", "2"], "to leave an interior"),
        (a!["run", "2d4", "--size", "0x10"], "at least 1"),
        (a!["run", "2d4", "--size", "-5"], "not a whole number"),
        (a!["run", "2d4", "--size", "ten"], "not a whole number"),
        (a!["run", "2d4", "--size", "10x"], "bad size '10x': an extent is missing"),
        (
            a!["run", "2d4", "--size", "10", "--iters", "-3"],
            "bad iteration count '-3': expected a whole number >= 0",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--devices",
                "cpu:weight=0",
                "--devices",
                "cpu:weight=0",
                "--partition",
                "w0"
            ],
            "error: every device has weight 0 under --partition w0: give at least one a positive weight (weight=W)\n",
        ),
        (
            a!["run", "2d4", "--size", "10", "--iters", "many"],
            "bad iteration count 'many'",
        ),
        (
            a!["run", "2d4", "--size", "10", "--devices", "tpu"],
            "unknown device kind 'tpu'",
        ),
        (
            a!["run", "2d4", "--size", "10", "--devices", "cpu:threads=99999"],
            "threads=99999: a device may have at most 1024 threads",
        ),

        (
            a!["run", "3d27", "--size", "10000000x10000000x10000000"],
            "bad size '10000000x10000000x10000000': a grid of 4-byte cells this large has more bytes than memory can address",
        ),
        (
            a!["run", "2d4", "--size", "10", "--devices", "cpu:slowdown=-2"],
            "factor must be a number from 1 to 1000",
        ),
        (
            a!["run", "2d4", "--size", "10", "--devices", "cpu:weight=-1"],
            "expected a number >= 0",
        ),
        (
            a!["run", "2d4", "--size", "10", "--partition", "x3"],
            "unknown partition 'x3'",
        ),
        (
            a!["run", "2d4", "--size", "10", "--partition", "s2"],
            "partition on dimension 2",
        ),
        (
            a!["run", "2d4", "--size", "10", "--partition", "m99"],
            "m99 cuts the first 99 dimensions, but the domain has 2",
        ),
        // A negative number is a value its option refuses, not an option.
        (
            a!["run", "2d4", "--size", "10", "--halo-depth", "-1"],
            "invalid value '-1' for '--halo-depth <HALO_DEPTH>'",
        ),
        (
            a!["run", "gaussian", "--size", "34", "--param", "sigma=1e300"],
            "--param sigma=1e300: sigma must be a number above 0 that an f32 holds",
        ),
        (
            a!["run", "2d4", "--size", "10", "--alb", "sometimes"],
            "unknown ALB heuristic 'sometimes'",
        ),
        (
            a!["run", "2d4", "--size", "10", "--alb", "next-alb"],
            "--partition w0",
        ),
        (
            a!["run", "2d4", "--size", "10", "--kernel", "fast"],
            "unknown kernel 'fast'",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--device-file",
                "/nonexistent/devices.toml"
            ],
            "bad device file /nonexistent/devices.toml",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--device-file",
                d("bad-devices.toml")
            ],
            "at least one thread",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--device-file",
                d("garbage.toml")
            ],
            "bad device file",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--device-file",
                d("bad-devices.toml"),
                "--devices",
                "cpu"
            ],
            "not both",
        ),
        (
            a!["run", "/nonexistent/stencil.toml", "--size", "10"],
            "cannot read stencil spec",
        ),
        (
            a!["run", d("bad-spec.toml"), "--size", "10"],
            "needs 3 weights",
        ),
        (
            a!["run", d("garbage.toml"), "--size", "10"],
            "invalid stencil spec",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--output",
                "/nonexistent/dir/out.npy"
            ],
            "cannot write output",
        ),
        (
            a!["run", "2d4", "--size", "10", "--output", "out.csv"],
            "unknown output format",
        ),
        (
            a![
                "run",
                "2d4",
                "--size",
                "10",
                "--report",
                "/nonexistent/dir/r.json"
            ],
            "cannot write report",
        ),
        if cfg!(feature = "opencl") {
            (
                a![
                    "run",
                    "2d4",
                    "--size",
                    "10",
                    "--devices",
                    "opencl:platform=9"
                ],
                "no OpenCL platform 9",
            )
        } else {
            (
                a!["run", "2d4", "--size", "10", "--devices", "opencl"],
                "rebuild with --features opencl",
            )
        },
        (
            a![
                "run",
                "2dnc8",
                "--size",
                "10",
                "--devices",
                "cpu",
                "--devices",
                "cpu",
                "--devices",
                "cpu",
                "--devices",
                "cpu",
                "--partition",
                "s0"
            ],
            "thinner than the stencil border",
        ),
        (
            a!["run", "gas-sim", "--size", "2x10x10"],
            "gas-sim needs at least 3 cells",
        ),
        (
            a!["run", "2d4", "--size", "10", "--bogus"],
            "unexpected argument '--bogus'",
        ),
        (a!["launch"], "unrecognized subcommand 'launch'"),
        (
            a!["run", "2d4", "--size", "10", "--init", "lumpy"],
            "unknown init 'lumpy'",
        ),
    ];
    for (args, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, want);
    }
}

/// An app parameter's error is said once, not again as its own cause.
#[test]
fn a_parameter_error_is_said_once() {
    let out = epsilod(&["run", "wavesim", "--size", "34x26", "--param", "dt"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --param dt: write name=value (see 'epsilod list')\n"
    );
}

/// `--iters 0` computes nothing and writes the initial state, as EPSILOD
/// does: the init values bit for bit, on any devices, and a report of no
/// iterations whose times are all +0.
#[test]
fn zero_iterations_write_the_initial_state() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let sizes = [12usize, 10];
    let spec = Library::S2d8.spec();
    let init: Vec<f32> = (0..sizes[0] * sizes[1])
        .map(|k| {
            let i = [(k / sizes[1]) as i64, (k % sizes[1]) as i64];
            basic_init(&i, &sizes, &spec.low, &spec.high)
        })
        .collect();
    assert!(init.iter().any(|&v| v != 0.0), "boundary values");
    for devices in [
        &["cpu:threads=1"][..],
        &["cpu:threads=1", "cpu:threads=1,weight=2"],
    ] {
        let mut args = vec!["run", "2d8", "--size", "12x10", "--iters", "0", "--quiet"];
        for d in devices {
            args.extend(["--devices", d]);
        }
        let (out, report) = (p("z.dat"), p("z.json"));
        args.extend(["--partition", "w0", "--output", &out, "--report", &report]);
        common::ok(&args);
        let raw = std::fs::read(&out).unwrap();
        let got: Vec<u32> = raw
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let want: Vec<u32> = init.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{devices:?}");
        let r = json(&report);
        assert_eq!(r["config"]["iters"], 0);
        assert_eq!(r["iterations"].as_array().unwrap().len(), 0);
        for key in [
            "mean_iteration_seconds",
            "median_iteration_seconds",
            "cell_updates_per_second",
            "skeleton_overhead_seconds_per_iteration",
        ] {
            let v = r["summary"][key].as_f64().unwrap();
            assert!(v == 0.0 && v.is_sign_positive(), "summary.{key} is {v}");
        }
    }
}

/// gaussian's `.pgm` is EPSILOD's file: `%03.0f` a line, the input PGM's
/// maximum grey value, nothing clamped (a `.npy` input's negative value and
/// one over 255 written as they are, under 255).
#[test]
fn gaussian_writes_epsilods_pgm() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let image = [-5.0f32, 0.0, 7.0, 300.0, 1234.0, 42.0];
    epsilod_testkit::write_npy(p("in.npy"), "<f4", &[2, 3], &image);
    std::fs::write(p("in.pgm"), "P2\n3 2\n200\n9\n0\n200\n31\n5\n100\n").unwrap();
    for (input, want) in [
        ("in.npy", "P2\n3 2\n255\n-05\n000\n007\n300\n1234\n042\n"),
        ("in.pgm", "P2\n3 2\n200\n009\n000\n200\n031\n005\n100\n"),
    ] {
        let out = p("out.pgm");
        common::ok(&[
            "run",
            "gaussian",
            "--input",
            &p(input),
            "--iters",
            "0",
            "--quiet",
            "--output",
            &out,
        ]);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), want, "{input}");
    }
}

/// A `weight=` the partition does not use is one warning line naming the
/// device and the partition; the run goes on as without it.
#[test]
fn a_weight_the_partition_ignores_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let run = |weight: &str, partition: &str, out: &str| {
        epsilod(&[
            "run",
            "2d4",
            "--size",
            "20",
            "--iters",
            "5",
            "--quiet",
            "--devices",
            "cpu:threads=1",
            "--devices",
            weight,
            "--partition",
            partition,
            "--output",
            out,
        ])
    };
    let warned = run("cpu:threads=1,weight=2", "m", &p("a.dat"));
    assert!(warned.status.success());
    assert_eq!(
        String::from_utf8_lossy(&warned.stderr),
        "warning: --partition m ignores device 1's weight=2 (cpu:threads=1,weight=2): \
         only w<d> partitions split rows by weight (e.g. --partition w0)\n"
    );
    let plain = run("cpu:threads=1", "m", &p("b.dat"));
    assert!(plain.status.success() && plain.stderr.is_empty());
    assert_eq!(
        std::fs::read(p("a.dat")).unwrap(),
        std::fs::read(p("b.dat")).unwrap()
    );
    let weighted = run("cpu:threads=1,weight=2", "w0", &p("c.dat"));
    assert!(weighted.status.success() && weighted.stderr.is_empty());
}

/// A run larger than the host's memory stops before it allocates (where
/// the host says what it has: elsewhere it would try).
#[cfg(target_os = "linux")]
#[test]
fn a_run_beyond_the_hosts_memory_is_one_clear_line() {
    fails_with(
        &["run", "2d4", "--size", "3000000x3000000"],
        "the run needs 72000.0 GB of memory on host",
    );
}

fn txt_values(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn outputs_match_the_reference_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // The run every format is written by: the values do not depend on the
    // devices.
    let run = ["run", "2d8", "--size", "32", "--iters", "100", "--quiet"];
    let (txt, report) = (p("r.txt"), p("r.json"));
    let mut args = run.to_vec();
    args.extend([
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1,weight=2",
    ]);
    args.extend(["--partition", "w0", "--output", txt.to_str().unwrap()]);
    args.extend(["--report", report.to_str().unwrap()]);
    common::ok(&args);
    let spec = Library::S2d8.spec();
    let sizes = [32usize, 32];
    let want = reference::run(
        &sizes,
        &spec.low,
        &spec.high,
        100,
        |i| basic_init(i, &sizes, &spec.low, &spec.high),
        reference::library_formula(Library::S2d8),
    );
    let lines = txt_values(&txt);
    assert_eq!(lines.len(), 32 * 32);
    for (line, v) in lines.iter().zip(want.iter()) {
        assert_eq!(line, &format!("{:042.40}", *v as f64));
        assert_eq!(line.len() + 1, 43);
    }
    let report = json(&report);
    for key in ["stencil", "size", "iters", "devices", "alb", "partition"] {
        assert!(report["config"].get(key).is_some(), "config.{key}");
    }
    for key in [
        "total_seconds",
        "loop_seconds",
        "mean_iteration_seconds",
        "median_iteration_seconds",
        "rebalances",
        "redistribution_seconds_total",
        "cell_updates_per_second",
    ] {
        assert!(report["summary"].get(key).is_some(), "summary.{key}");
    }
    let its = report["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 100);
    let devs = its[0]["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2);
    // weights 1:2 over 30 interior rows
    assert_eq!(devs[0]["rows"], 10);
    assert_eq!(devs[1]["rows"], 20);
    for key in ["compute_seconds", "comm_seconds", "rows"] {
        assert!(devs[0].get(key).is_some(), "{key}");
    }

    // .dat is the same values, raw little-endian; .npy has the header and shape.
    let run_into = |file: &str| {
        common::ok(&[&run[..], &["--output", p(file).to_str().unwrap()]].concat());
    };
    run_into("r.dat");
    let raw = std::fs::read(p("r.dat")).unwrap();
    let vals: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(vals, want.iter().copied().collect::<Vec<_>>());
    run_into("r.npy");
    let npy = std::fs::read(p("r.npy")).unwrap();
    assert_eq!(&npy[..6], b"\x93NUMPY");
    let header = String::from_utf8_lossy(&npy[10..128]);
    assert!(
        header.contains("'shape': (32, 32)") && header.contains("<f4"),
        "{header}"
    );
    assert_eq!(&npy[npy.len() - raw.len()..], &raw[..]);
}

#[test]
fn app_parameters_reach_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str, param: Option<&str>| {
        let path = dir.path().join(name);
        let mut args = vec![
            "run", "wavesim", "--size", "34x26", "--iters", "12", "--quiet",
        ];
        args.extend(["--output", path.to_str().unwrap()]);
        if let Some(p) = param {
            args.extend(["--param", p]);
        }
        let o = epsilod(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(path).unwrap()
    };
    let default = out("a.npy", None);
    assert_eq!(out("b.npy", Some("dt=0.25")), default);
    assert_ne!(out("c.npy", Some("dt=0.1")), default);
}

/// A PGM in, the blurred image out as PGM and .npy: the same pixels as the
/// app run in this process, the image's size without --size.
#[test]
fn gaussian_blurs_a_pgm_image() {
    use epsilod_apps::gaussian;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (rows, cols) = (19usize, 23usize);
    let pixels: Vec<u8> = (0..rows * cols).map(|k| ((k * 37) % 256) as u8).collect();
    let mut pgm = format!("P5\n# test\n{cols} {rows}\n255\n").into_bytes();
    pgm.extend(&pixels);
    std::fs::write(p("in.pgm"), &pgm).unwrap();
    for out in ["out.pgm", "out.npy"] {
        let o = epsilod(&[
            "run",
            "gaussian",
            "--input",
            &p("in.pgm"),
            "--iters",
            "4",
            "--param",
            "kw=4",
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1",
            "--quiet",
            "--output",
            &p(out),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let image: Vec<f32> = pixels.iter().map(|&v| f32::from(v)).collect();
    let grid = epsilod::Skeleton::new(
        &gaussian::global_size(rows, cols, 4),
        gaussian::stencil(4, 1.0),
    )
    .iterations(4)
    .init(gaussian::init(image, rows, cols, 4))
    .run()
    .unwrap()
    .grid;
    let r = gaussian::radius(4);
    let want: Vec<f32> = (0..rows * cols)
        .map(|k| grid[[k / cols + r, k % cols + r]])
        .collect();
    let npy = epsilod::npy::read_as_f32(std::path::Path::new(&p("out.npy"))).unwrap();
    assert_eq!(npy.shape(), &[rows, cols]);
    assert!(npy
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let back = epsilod::pgm::read(Path::new(&p("out.pgm"))).unwrap();
    assert_eq!((back.rows, back.cols, back.maxval), (rows, cols, 255));
    let grey: Vec<f32> = back.pixels.iter().map(|&v| f32::from(v)).collect();
    assert_eq!(grey, want, "whole numbers in 0..=255 survive PGM exactly");
    assert!(want.iter().any(|&v| v != want[0]), "not a flat image");
    // --size must agree with the image; other stencils take no --input.
    fails_with(
        &[
            "run",
            "gaussian",
            "--input",
            &p("in.pgm"),
            "--size",
            "10x10",
        ],
        "the input",
    );
    fails_with(
        &["run", "2d4", "--input", &p("in.pgm"), "--size", "10"],
        "--input is for apps that read a file; '2d4' reads none",
    );
    std::fs::write(p("bad.pgm"), b"P2\n2 2\n255\n1 2 3\n").unwrap();
    fails_with(
        &["run", "gaussian", "--input", &p("bad.pgm")],
        "not a PGM image: the file ends before the pixel 3",
    );
    fails_with(
        &["run", "gaussian", "--size", "10x10", "--param", "kw=40"],
        "the kernel width is a whole number 2 to 31",
    );
    fails_with(
        &[
            "run",
            "3d6",
            "--size",
            "6",
            "--iters",
            "1",
            "--output",
            &p("x.pgm"),
        ],
        "a PGM image holds a 2-d field",
    );
}

#[test]
fn gas_sim_writes_the_user_domain_raw() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.dat");
    let out = epsilod(&[
        "run",
        "gas-sim",
        "--size",
        "12x14x9",
        "--iters",
        "3",
        "--output",
        path.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        10 * 12 * 7 * 19 * 4
    );
}

#[test]
fn list_names_everything() {
    let out = epsilod(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "1dc2", "1dnc4", "2d4", "2d8", "2dnc8", "2df5", "3d6", "3d27", "3dnc12", "3df7", "4d8",
        "gas-sim", "cpu",
    ] {
        assert!(text.contains(name), "{name}");
    }
    for h in heuristics::NAMES {
        assert!(text.contains(&format!("\n  {h} ")), "heuristic {h}");
    }
    assert!(
        text.contains("every=30"),
        "const-iters' parameter and default"
    );
}

#[test]
fn list_measure_times_cuda_devices_or_says_why_not() {
    let args = ["list", "--measure", "--measure-size", "66x130"];
    let out = epsilod(&args);
    if out.status.success() {
        // A machine with a GPU and this build's cuda feature.
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("of the copy roofline"), "{text}");
    } else {
        // Without the feature, or without a driver: one line saying so.
        fails_with(&args, "cannot measure: ");
    }
    fails_with(&["list", "--measure-size", "2x9"], "each at least 3");
}

/// 2d4 on two one-thread devices, the second 3x slower, rows by weight:
/// what load balancing has to correct.
const ONE_SLOW_OF_TWO: [&str; 9] = [
    "2d4",
    "--size",
    "130x130",
    "--devices",
    "cpu:threads=1",
    "--devices",
    "cpu:threads=1,slowdown=3",
    "--partition",
    "w0",
];

#[test]
fn compare_prints_the_statistics_table_and_writes_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let json = dir.path().join("t.json");
    let mut args = vec!["compare"];
    args.extend(ONE_SLOW_OF_TWO);
    args.extend([
        "--iters",
        "60",
        "--alb",
        "none,next-alb,welch",
        "--reps",
        "2",
    ]);
    args.extend([
        "--init",
        "random",
        "--quiet",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    args.extend(["--json", json.to_str().unwrap()]);
    let table = common::ok(&args);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(
        lines[0].contains("95% CI of mean")
            && lines[0].contains("p99")
            && lines[0].contains("Welch")
    );
    assert!(
        lines[1].starts_with("none")
            && lines[2].starts_with("next-alb")
            && lines[3].starts_with("welch")
    );
    let csv = std::fs::read_to_string(csv).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.starts_with(
        "heuristic,runs,mean_seconds,sd_seconds,ci95_low,ci95_high,median_seconds,p99_seconds"
    ));
    let doc = common::json(json);
    let rows = doc["table"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["runs"], 2);
        let (lo, m, hi) = (
            r["ci95_low"].as_f64().unwrap(),
            r["mean_seconds"].as_f64().unwrap(),
            r["ci95_high"].as_f64().unwrap(),
        );
        assert!(lo <= m && m <= hi);
    }
    // The slow device makes every heuristic rebalance at least once.
    assert!(rows[1]["mean_rebalances"].as_f64().unwrap() >= 1.0);
    assert_eq!(doc["runs"][0]["summaries"].as_array().unwrap().len(), 2);

    fails_with(
        &[
            "compare",
            "2d4",
            "--size",
            "20",
            "--alb",
            "none,bogus",
            "--partition",
            "w0",
        ],
        "unknown ALB heuristic 'bogus'",
    );
    fails_with(
        &["compare", "2d4", "--size", "20", "--reps", "1"],
        "at least 2",
    );
    fails_with(
        &["compare", "2d4", "--size", "20", "--output", "x.npy"],
        "use --csv or --json",
    );
    for (extra, option) in [
        (&["--restart", "/tmp"][..], "--restart"),
        (
            &["--checkpoint-every", "2", "--checkpoint-dir", "/tmp"],
            "--checkpoint-every",
        ),
        (
            &["--snapshot-every", "2", "--snapshot", "x_{iter}.npy"],
            "--snapshot-every",
        ),
    ] {
        let args = [&["compare", "2d4", "--size", "20"][..], extra].concat();
        fails_with(
            &args,
            &format!("compare times whole runs: leave out {option}"),
        );
    }
}

#[test]
fn plot_draws_png_and_svg_from_reports() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    for alb in ["none", "cost-aware"] {
        let report = p(&format!("{alb}.json"));
        let mut args = vec!["run"];
        args.extend(ONE_SLOW_OF_TWO);
        args.extend([
            "--iters", "80", "--alb", alb, "--report", &report, "--quiet",
        ]);
        common::ok(&args);
    }
    // Both reports drawn into `fig.EXT`.
    let plot = |ext: &str| {
        let fig = p(&format!("fig.{ext}"));
        common::ok(&["plot", &p("none.json"), &p("cost-aware.json"), "-o", &fig]);
        fig
    };
    let png = std::fs::read(plot("png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000);
    let svg = std::fs::read_to_string(plot("svg")).unwrap();
    for text in [
        "<svg",
        "Iteration time",
        "Row share per device (cost-aware)",
        "none",
        "cpu:threads=1,slowdown=3@0",
    ] {
        assert!(svg.contains(text), "{text}");
    }
    std::fs::write(p("junk.json"), "{\"config\": 1}").unwrap();
    fails_with(
        &["plot", &p("junk.json"), "-o", &p("x.png")],
        "is not an epsilod report",
    );
    fails_with(
        &["plot", "/nonexistent/r.json", "-o", &p("x.png")],
        "cannot read report",
    );
    fails_with(
        &["plot", &p("none.json"), "-o", &p("x.jpg")],
        "unknown figure format",
    );
    fails_with(
        &["plot", &p("none.json"), "-o", "/nonexistent/x.png"],
        "cannot write plot /nonexistent/x.png: No such file",
    );
    // A report whose times overflow the axes (once an endless loop).
    let mut r = json(p("none.json"));
    r["iterations"][3]["seconds"] = serde_json::json!(1e308);
    std::fs::write(p("huge.json"), r.to_string()).unwrap();
    fails_with(
        &["plot", &p("huge.json"), "-o", &p("x.png")],
        "has a time of 1e308 s, not one a run measures",
    );
}

/// Each device's rows in the first iteration of the report at `path`.
fn first_rows(path: &std::path::Path) -> Vec<u64> {
    let r = json(path);
    r["iterations"][0]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rows"].as_u64().unwrap())
        .collect()
}

/// `json` written as machine.json in `dir`.
fn machine_file(dir: &std::path::Path, json: &str) -> std::path::PathBuf {
    let path = dir.join("machine.json");
    std::fs::write(&path, json).unwrap();
    path
}

const MACHINE: &str = r#"{"devices":[{"name":"fast","seconds_per_cell":1e-9},{"name":"slow","seconds_per_cell":3e-9}],
 "links":[{"name":"local","hockney":{"alpha":1e-6,"beta":1e-10},"loggp":{"l":1e-6,"o_s":0,"o_r":0,"g":0,"big_g":1e-10}}]}"#;

#[test]
fn predict_partitions_by_calibrated_power_and_scores_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(dir.path(), MACHINE);
    let m = model.to_str().unwrap();
    let base = [
        "predict",
        "--model",
        m,
        "--size",
        "1002x1002",
        "--iters",
        "100",
    ];
    let text = common::ok(&base);
    // The kernels compute the interior, 1000 x 1000 (as calibration counts
    // cells), not the boundary. A 3x slower device gets a third of the rows
    // of the fast one, so both compute for the same time: 750 x 1000 x 1e-9
    // = 250 x 1000 x 3e-9.
    assert!(
        text.contains("device 0: rows 750 compute 7.500000e-4"),
        "{text}"
    );
    assert!(
        text.contains("device 1: rows 250 compute 7.500000e-4"),
        "{text}"
    );
    // Another partition, by hand: equal rows leave the slow device 500 x
    // 1000 x 3e-9 s; shares 3:1 are the seeded split.
    let with = |w: &str| common::ok(&[&base[..], &["--weights", w]].concat());
    let equal = with("1,1");
    assert!(
        equal.contains("device 0: rows 500 compute 5.000000e-4"),
        "{equal}"
    );
    assert!(
        equal.contains("device 1: rows 500 compute 1.500000e-3"),
        "{equal}"
    );
    assert_eq!(with("3,1"), text);
    fails_with(
        &[&base[..], &["--weights", "1"]].concat(),
        "--weights gives 1 shares, the machine describes 2 devices",
    );
    fails_with(
        &[&base[..], &["--weights", "1,-2"]].concat(),
        "--weights: -2 is not a positive share of the rows",
    );

    let report = dir.path().join("r.json");
    let run = epsilod(&[
        "run",
        "2d4",
        "--size",
        "20",
        "--iters",
        "3",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{run:?}");
    let out = epsilod(&[
        "predict",
        "--model",
        m,
        "--method",
        "overlap,hclogp",
        "--against",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("measured loop_s"), "{text}");
    // The report's own partition is predicted: its rows, 9 each of the
    // interior's 18.
    assert!(text.contains("device 0: rows 9 "), "{text}");
    assert!(
        !text.contains(" - \n")
            && text
                .lines()
                .filter(|l| l.starts_with("overlap") || l.starts_with("hclogp"))
                .count()
                == 2,
        "{text}"
    );
}

/// A calibrated machine's noise makes an interval: `--json` carries the
/// median and the 90% interval, low <= median <= high, and the text says
/// them. Its working set moves the seconds per cell: two 1.6 M-cell tiles
/// (26.2 MB resident) against the 4 MB calibrated cost each cell the
/// calibrated 1 ns plus the difference of memory times, 8 B a cell over
/// half the curve's rate (hand-computed from its log-log line).
#[test]
fn predict_gives_a_median_and_interval_at_the_runs_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(
        dir.path(),
        r#"{"devices":[{"name":"a","seconds_per_cell":1e-9,"cv":0.1,"spell":0.05,"host_memory":true},
                       {"name":"b","seconds_per_cell":1e-9,"cv":0.1,"spell":0.05,"host_memory":true}],
 "links":[{"name":"local","hockney":{"alpha":1e-6,"beta":1e-10},"loggp":{"l":1e-6,"o_s":0,"o_r":0,"g":0,"big_g":1e-10}}],
 "memory":{"rates":[[2e6,64e9],[4e6,64e9],[32e6,8e9],[512e6,8e9]]},
 "calibrated_at":{"bytes":4e6,"streams":2,"cell_bytes":4,"row_bytes":4096,"reach_rows":3}}"#,
    );
    let m = model.to_str().unwrap();
    let args = [
        "predict",
        "--model",
        m,
        "--size",
        "3202x1026",
        "--stencil",
        "2d4",
        "--iters",
        "300",
        "--weights",
        "1,1",
    ];
    let doc: serde_json::Value =
        serde_json::from_str(&common::ok(&[&args[..], &["--json", "-"]].concat())).unwrap();
    let p = &doc["predictions"][0];
    let median = p["median_loop_seconds"].as_f64().unwrap();
    let [lo, hi] = [0, 1].map(|k| p["interval_loop_seconds"][k].as_f64().unwrap());
    assert!(lo <= median && median <= hi && lo < hi, "{p}");
    assert!(p["interval_contains_measured"].is_null(), "{p}");
    let cells = 1600.0 * 1024.0;
    let rate = (64e9f64.ln() + (26.2144e6f64 / 4e6).ln() / 8f64.ln() * (8e9f64 / 64e9).ln()).exp();
    let want = cells * (1e-9 + 16.0 / rate - 16.0 / 64e9);
    let got = p["devices"][0]["compute_seconds"].as_f64().unwrap();
    assert!((got / want - 1.0).abs() < 1e-9, "{got} {want}");
    let text = common::ok(&args);
    assert!(
        text.contains(&format!(
            "  loop median {median:.4} s, 90% interval {lo:.4} to {hi:.4} s\n"
        )),
        "{text}"
    );
}

/// `--stencil` gives the halo rows and cell bytes the options say by hand,
/// and the boundary its kernels leave alone; with no stencil named the
/// boundary is `--halo-rows` deep on every side. 2dnc8 reaches 2 rows of
/// f32 cells each way, so it is `--halo-rows 2 --cell-bytes 4`; a wider
/// halo costs more exchange.
#[test]
fn predict_takes_the_stencil_for_its_halo() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(dir.path(), MACHINE);
    let m = model.to_str().unwrap();
    let at = |size: &str, extra: &[&str]| {
        let mut v = vec!["predict", "--model", m, "--size", size, "--iters", "5"];
        v.extend_from_slice(extra);
        common::ok(&v)
    };
    let with = |extra: &[&str]| at("400x400", extra);
    let named = with(&["--stencil", "2dnc8"]);
    assert_eq!(named, with(&["--halo-rows", "2", "--cell-bytes", "4"]));
    // The same 396x396 interior with a one-row halo.
    assert_ne!(
        named,
        at("398x398", &["--halo-rows", "1", "--cell-bytes", "4"])
    );
    // An explicit option wins over the stencil's halo; 2d4's boundary
    // stays one cell each side (398x398 inside 400x400, as inside 402x402
    // with two).
    assert_eq!(
        with(&["--stencil", "2d4", "--halo-rows", "2"]),
        at("402x402", &["--halo-rows", "2", "--cell-bytes", "4"])
    );
    let spec = dir.path().join("wide.toml");
    std::fs::write(
        &spec,
        "name = \"w\"\nlow = [3, 1]\nhigh = [1, 1]\nupdate = \"u[-3,0] + u[1,0]\"\n",
    )
    .unwrap();
    // Its boundary is 3 + 1 rows by 1 + 1 columns: 396x398 inside 400x400.
    assert_eq!(
        with(&["--stencil", spec.to_str().unwrap()]),
        at("402x404", &["--halo-rows", "3", "--cell-bytes", "4"])
    );
    fails_with(
        &[
            "predict",
            "--model",
            m,
            "--size",
            "400x400",
            "--iters",
            "5",
            "--stencil",
            "nope",
        ],
        "--stencil nope: not a library stencil or a spec file",
    );
}

/// `--weights-from` and predict split the interior's cells, the cells
/// calibration timed: with a fixed cost on one device the split depends on
/// the total, and 64 x 32 cells (66x34 with its boundary) split 1074:974
/// give rows 34 and 30, where the 2244 cells of the whole array gave the
/// run 33 and 31 (and predict 34 and 32).
#[test]
fn weights_from_and_predict_split_the_interior() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(
        dir.path(),
        &MACHINE.replace(
            r#""seconds_per_cell":3e-9"#,
            r#""seconds_per_cell":1e-9,"fixed_seconds":1e-7"#,
        ),
    );
    let m = model.to_str().unwrap();
    let text = common::ok(&["predict", "--model", m, "--size", "66x34", "--iters", "1"]);
    assert!(text.contains("device 0: rows 34 "), "{text}");
    assert!(text.contains("device 1: rows 30 "), "{text}");
    let report = dir.path().join("r.json");
    common::ok(&[
        "run",
        "2d4",
        "--size",
        "66x34",
        "--iters",
        "1",
        "--partition",
        "w0",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--weights-from",
        m,
        "--quiet",
        "--report",
        report.to_str().unwrap(),
    ]);
    let rows = first_rows(&report);
    assert_eq!(rows, [34, 30]);
}

/// predict splits the rows as the run does (cumulative rounding): the 10
/// interior rows of 12x12 over three equal devices are 3, 4 and 3 in both
/// (a largest-remainder split gives 4, 3, 3).
#[test]
fn predict_splits_rows_as_the_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(
        dir.path(),
        &MACHINE.replace(
            r#"{"name":"slow","seconds_per_cell":3e-9}"#,
            r#"{"name":"b","seconds_per_cell":1e-9},{"name":"c","seconds_per_cell":1e-9}"#,
        ),
    );
    let m = model.to_str().unwrap();
    let text = common::ok(&["predict", "--model", m, "--size", "12x12", "--iters", "1"]);
    let predicted: Vec<u64> = (0..3)
        .map(|d| {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("device {d}: rows ")))
                .unwrap_or_else(|| panic!("{text}"));
            line.split_whitespace().nth(3).unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(predicted, [3, 4, 3], "{text}");
    let report = dir.path().join("r.json");
    let mut args = vec![
        "run",
        "2d4",
        "--size",
        "12",
        "--iters",
        "1",
        "--partition",
        "w0",
    ];
    args.extend(["--devices", "cpu:threads=1"].repeat(3));
    args.extend(["--quiet", "--report", report.to_str().unwrap()]);
    common::ok(&args);
    let rows = first_rows(&report);
    assert_eq!(rows, predicted);
}

#[test]
fn predict_rejects_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(dir.path(), MACHINE);
    let m = model.to_str().unwrap();
    let base = ["predict", "--model", m, "--size", "100x100", "--iters", "5"];
    let with = |extra: &[&'static str]| [&base[..], extra].concat();
    fails_with(&with(&["--method", "foo"]), "unknown method \"foo\"");
    fails_with(&with(&["--link", "infiniband"]), "infiniband");
    fails_with(&["predict", "--model", m], "give --size or --against");
    // An option without the one it serves is refused, not ignored.
    fails_with(
        &with(&["--per-rank", "2"]),
        "required arguments were not provided: --comm <COMM>",
    );
    // What run refuses, predict refuses too.
    let sized = |size: &'static str, extra: &[&'static str]| {
        [&["predict", "--model", m, "--size", size][..], extra].concat()
    };
    fails_with(
        &sized("1", &["--iters", "5"]),
        "dimension 0 needs more than 2 cells (the stencil's boundary)",
    );
    // A reach of 2 each side, as run would refuse it.
    fails_with(
        &sized("100x4", &["--iters", "5", "--stencil", "2dnc8"]),
        "dimension 1 needs more than 4 cells",
    );
    fails_with(
        &sized("100x100", &["--iters", "5", "--stencil", "3d6"]),
        "the size [100, 100] has 2 dimension(s), the stencil 3",
    );
    // The whole of clap's line to the help hint: a range's start alone
    // ("1..") is in every one of them.
    for (flag, value, why) in [
        (
            "--iters <ITERS>",
            "0",
            "expected a whole number of at least 1",
        ),
        (
            "--halo-rows <HALO_ROWS>",
            "0",
            "expected a whole number from 1 to 64",
        ),
        (
            "--cell-bytes <CELL_BYTES>",
            "0",
            "expected a whole number from 1 to 4096",
        ),
    ] {
        let name = flag.split(' ').next().unwrap();
        fails_with(
            &sized("100x100", &[name, value]),
            &format!("invalid value '0' for '{flag}': {why} (see"),
        );
    }
    // Machines predict cannot use: the error names what is wrong.
    let with_model = |m: &Path, want: &str| {
        let m = m.to_str().unwrap();
        fails_with(
            &["predict", "--model", m, "--size", "10", "--iters", "1"],
            want,
        );
    };
    with_model(Path::new("/nonexistent/m.json"), "cannot read it");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    with_model(&bad, "not a machine JSON");
    // A memory curve with a rate of zero: one line naming it.
    let mut with_memory: serde_json::Value = serde_json::from_str(MACHINE).unwrap();
    with_memory["memory"] = serde_json::json!({ "rates": [[1048576.0, 0.0]] });
    std::fs::write(&bad, with_memory.to_string()).unwrap();
    with_model(&bad, "memory: invalid value for bytes per second: 0");
}

#[test]
fn weights_from_a_machine_seed_the_partition_by_power() {
    let dir = tempfile::tempdir().unwrap();
    let model = machine_file(dir.path(), MACHINE);
    let report = dir.path().join("r.json");
    let base = [
        "run",
        "2d4",
        "--size",
        "22",
        "--iters",
        "2",
        "--partition",
        "w0",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1,slowdown=3",
        "--weights-from",
        model.to_str().unwrap(),
    ];
    // The first iteration's rows per device of a run with the model.
    let seeded_rows = || -> Vec<u64> {
        let out = epsilod(&[&base[..], &["--report", report.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{out:?}");
        first_rows(&report)
    };
    let rows = seeded_rows();
    // Relative powers 3 and 1 split the 20 interior rows 3:1 (without the
    // model, weights 1 and 1 would give 10 and 10).
    assert_eq!(rows, [15, 5]);

    // A fixed cost per iteration on the slow device: the weights equalise
    // a + b·cells over the run's 20x20 interior cells, T = (400 + a/b_slow)
    // / (1/b_fast + 1/b_slow) = 324.2 ns, slow cells (T - a)/b_slow = 75.8
    // of 400: 3.8 of the 20 rows, so 4, where the powers alone give 5.
    let fixed = MACHINE.replace(
        r#""seconds_per_cell":3e-9"#,
        r#""seconds_per_cell":3e-9,"fixed_seconds":9.68e-8"#,
    );
    assert_ne!(fixed, MACHINE);
    std::fs::write(&model, fixed).unwrap();
    let rows = seeded_rows();
    assert_eq!(rows, [16, 4]);

    // A device modelled 30x slower is under ALB's drop threshold (a
    // twentieth): it starts without rows, unless the threshold is 0.
    let slow = MACHINE.replace(r#""seconds_per_cell":3e-9"#, r#""seconds_per_cell":3e-8"#);
    assert_ne!(slow, MACHINE);
    std::fs::write(&model, slow).unwrap();
    assert_eq!(seeded_rows(), [20, 0]);
    let out = epsilod(
        &[
            &base[..],
            &[
                "--alb-drop-below",
                "0",
                "--report",
                report.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let r = json(&report);
    assert_eq!(r["iterations"][0]["devices"][1]["rows"], 1);
    std::fs::write(&model, MACHINE).unwrap();

    fails_with(
        &[
            "run",
            "2d4",
            "--size",
            "20",
            "--iters",
            "2",
            "--devices",
            "cpu:threads=1",
            "--weights-from",
            model.to_str().unwrap(),
        ],
        "it describes 2 devices, the run has 1",
    );
}

/// `EPSILOD_CELL_LAYOUT` chooses how a GPU device holds cells with
/// components where its `layout=` does not (PoCL, a CPU implementation,
/// keeps them whole by default); the option wins over it, an unknown value
/// is ignored, and the output is the same bits every way.
#[cfg(feature = "opencl")]
#[test]
fn the_cell_layout_variable_chooses_planes_unless_the_device_says() {
    let dir = tempfile::tempdir().unwrap();
    let run = |var: Option<&str>, device: &str, tag: &str| -> (u64, Vec<u8>) {
        let out = dir.path().join(format!("{tag}.dat"));
        let report = dir.path().join(format!("{tag}.json"));
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_epsilod"));
        c.args([
            "run",
            "gas-sim",
            "--size",
            "12x14x9",
            "--iters",
            "3",
            "--devices",
            device,
            "--output",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--quiet",
        ])
        .env_remove("EPSILOD_CELL_LAYOUT");
        if let Some(v) = var {
            c.env("EPSILOD_CELL_LAYOUT", v);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "{tag}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = json(&report);
        let planes = v["summary"]["devices_in_planes"].as_u64().unwrap();
        (planes, std::fs::read(&out).unwrap())
    };
    let (default, want) = run(None, "opencl", "default");
    // A CPU implementation (PoCL, as in CI) keeps whole cells by default; a
    // GPU's driver would hold them in planes.
    let listed = common::ok(&["list"]);
    let first = listed
        .lines()
        .find(|l| l.contains("opencl:platform=0,device=0"))
        .unwrap_or_default();
    if first.contains("Portable Computing Language") {
        assert_eq!(default, 0, "PoCL keeps whole cells by default");
    }
    for (var, device, planes) in [
        (Some("planes"), "opencl", 1),
        (Some("cells"), "opencl", 0),
        (Some("planes"), "opencl:layout=cells", 0),
        // Ignored: the run goes on with the default.
        (Some("sideways"), "opencl", default),
        (None, "opencl:layout=planes", 1),
    ] {
        let tag = format!(
            "{}-{}",
            var.unwrap_or("none"),
            device.replace([':', '='], "_")
        );
        let (got, bytes) = run(var, device, &tag);
        assert_eq!(got, planes, "{tag}");
        assert!(bytes == want, "{tag}: output differs");
    }
}

/// A run whose stderr is not a terminal (a batch job's log) says how far
/// it is every so often, in plain lines; none with 0 or `--quiet`.
#[test]
fn a_batch_run_logs_its_progress() {
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "2d4", "--size", "10", "--iters", "200000"];
        args.extend_from_slice(extra);
        let out = epsilod(&args);
        assert!(out.status.success(), "{args:?}");
        out
    };
    let out = run(&["--progress-every", "0.05"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().count() >= 1, "no progress line: {err:?}");
    for l in err.lines() {
        assert!(
            l.starts_with("progress: iteration ")
                && l.contains(" of 200000 (")
                && l.contains("left"),
            "{l}"
        );
    }
    assert!(run(&["--progress-every", "0"]).stderr.is_empty());
    let quiet = run(&["--progress-every", "0.05", "--quiet"]);
    assert!(quiet.stderr.is_empty() && quiet.stdout.is_empty());
}

/// `--init random` and `--kernel generic` where the run cannot follow them
/// (an app's own state and kernels, a spec's own kernel) are one warning
/// line each, and the run goes on as without them, status 0.
#[test]
fn an_init_or_kernel_an_app_or_spec_ignores_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/specs/damped-heat.toml"
    );
    let run = |target: &str, extra: &[&str], out: &str| {
        let mut args = vec!["run", target, "--size", "20", "--iters", "3", "--quiet"];
        args.extend(extra);
        args.extend(["--output", out]);
        epsilod(&args)
    };
    let init = "warning: --init random is ignored: app wavesim sets its own initial state (--init \
                is for library stencils and spec files)\n";
    let kernel = |what: &str| {
        format!(
            "warning: --kernel generic is ignored: {what} computes with its own kernel (--kernel \
             chooses among the library stencils' kernels)\n"
        )
    };
    let cases = [
        ("wavesim", vec!["--init", "random"], init.to_string()),
        (
            "wavesim",
            vec!["--kernel", "generic"],
            kernel("app wavesim"),
        ),
        (
            spec,
            vec!["--kernel", "generic"],
            kernel(&format!("spec file {spec}")),
        ),
    ];
    for (k, (target, extra, want)) in cases.iter().enumerate() {
        let warned = run(target, extra, &p(&format!("w{k}.dat")));
        assert!(warned.status.success(), "{target} {extra:?}");
        assert_eq!(
            String::from_utf8_lossy(&warned.stderr),
            *want,
            "{target} {extra:?}"
        );
        let plain = run(target, &[], &p(&format!("p{k}.dat")));
        assert!(plain.status.success() && plain.stderr.is_empty());
        assert_eq!(
            std::fs::read(p(&format!("w{k}.dat"))).unwrap(),
            std::fs::read(p(&format!("p{k}.dat"))).unwrap()
        );
    }
    // Where they apply, no warning.
    for extra in [["--init", "random"], ["--kernel", "generic"]] {
        let used = run("2d4", &extra, &p("l.dat"));
        assert!(used.status.success() && used.stderr.is_empty(), "{extra:?}");
    }
    let random_spec = run(spec, &["--init", "random"], &p("s.dat"));
    assert!(random_spec.status.success() && random_spec.stderr.is_empty());
    // A weighted spec's kernel is the generic weighted sum.
    let weighted = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/specs/weighted-anisotropic.toml"
    );
    let generic = run(weighted, &["--kernel", "generic"], &p("g.dat"));
    assert!(generic.status.success() && generic.stderr.is_empty());
}

/// A count below its least says that least, not a range up to u64::MAX.
#[test]
fn a_count_below_its_least_says_the_least() {
    let cases: [(&str, &str, &str, u64); 5] = [
        (
            "run 2d4 --size 10 --checkpoint-dir ck --checkpoint-every",
            "0",
            "--checkpoint-every <CHECKPOINT_EVERY>",
            1,
        ),
        (
            "run 2d4 --size 10 --snapshot s_{iter}.npy --snapshot-every",
            "0",
            "--snapshot-every <SNAPSHOT_EVERY>",
            1,
        ),
        (
            "calibrate 2d4 --size 10 --out m.json --calib-iters",
            "3",
            "--calib-iters <CALIB_ITERS>",
            4,
        ),
        ("replay t.json --per-rank", "0", "--per-rank <PER_RANK>", 1),
        ("commbench --csv b.csv --pm", "1,0", "--pm <PM>", 1),
    ];
    for (line, value, option, least) in cases {
        let args: Vec<&str> = line.split(' ').chain([value]).collect();
        let bad = value.rsplit(',').next().unwrap();
        fails_with(
            &args,
            &format!(
                "invalid value '{bad}' for '{option}': expected a whole number of at least {least}"
            ),
        );
    }
    // Digits past u64's largest are too large, not too small.
    for command in [
        "run 2d4 --size 10",
        "simulate 2d4 --size 34 --devices-count 2",
    ] {
        let args: Vec<&str> = command
            .split(' ')
            .chain(["--iters", "99999999999999999999"])
            .collect();
        fails_with(
            &args,
            "bad iteration count '99999999999999999999': too large",
        );
    }
    fails_with(
        &["replay", "t.json", "--per-rank", "99999999999999999999"],
        "invalid value '99999999999999999999' for '--per-rank <PER_RANK>': 99999999999999999999 is too large",
    );
    fails_with(
        &["commbench", "--per-rank", "99999999999999999999"],
        "99999999999999999999 is too large: at most 1024",
    );
}

/// An emulated slowdown or failure past the run's last iteration, and
/// `--alb-drop-below` without load balancing, change nothing: each is a
/// warning naming what it asked and the run's bound, not silence.
#[test]
fn options_a_run_never_acts_on_are_warned_of() {
    let run = |extra: &[&str]| {
        let args: Vec<&str> = "run 2d4 --size 34 --iters 10 --quiet"
            .split(' ')
            .chain(extra.iter().copied())
            .collect();
        let o = epsilod(&args);
        assert!(o.status.success(), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert_eq!(
        run(&[
            "--devices",
            "cpu:threads=1,slowdown=3@10",
            "--devices",
            "cpu:threads=1,fail@40"
        ]),
        "warning: device 0's slowdown=3@10 is at iteration 10, beyond --iters 10: the device \
         never slows down (give an iteration below 10)\n\
         warning: device 1's fail@40 is at iteration 40, beyond --iters 10: the device never \
         fails (give an iteration below 10)\n"
    );
    assert_eq!(
        run(&["--alb-drop-below", "0.2"]),
        "warning: --alb-drop-below 0.2 does nothing without load balancing (--alb none): give a \
         heuristic with --alb, or leave it out\n"
    );
    // Where they act, no warning.
    assert_eq!(run(&["--devices", "cpu:threads=1,slowdown=3@9"]), "");
    let alb = [
        "--partition",
        "w0",
        "--alb",
        "next-alb",
        "--alb-drop-below",
        "0.2",
    ];
    assert_eq!(run(&[&common::one_cpu_each(2)[..], &alb].concat()), "");
}

/// `calibrate` and `signature` run the user's devices with their own
/// iterations and drop fraction: a slowdown past their short runs, and
/// calibrate's own `--alb-drop-below 0`, are no warning of the user's
/// options (they were, naming `--iters 4` and an option never given).
#[test]
fn derived_runs_warn_of_nothing_they_set_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).display().to_string();
    let devices = "--devices cpu:threads=1 --devices cpu:threads=1,slowdown=3@50";
    let (machine, signature) = (out("m.json"), out("s.json"));
    for line in [
        format!("calibrate 2d4 --size 34 {devices} --calib-iters 4 --passes 1 --no-links --out {machine}"),
        format!("signature 2d4 --size 34 --iters 100 --sig-iters 5 {devices} --out {signature}"),
    ] {
        let o = epsilod(&line.split(' ').collect::<Vec<_>>());
        assert!(o.status.success(), "{line}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{line}");
    }
}

//! Distributed runs under real `mpirun` (OpenMPI, `--oversubscribe` on the
//! CI's 2 cores): results and reports as in one process, ALB across ranks,
//! and jobs that fail end, with a message, within a time limit.
#![cfg(feature = "mpi")]

use crate::common::{
    self, json, one_cpu_each, path, same_bytes, succeeded, CPU1, QUICK_CALIBRATION,
};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One job at a time: several oversubscribed jobs at once on 2 cores would
/// only make each slower.
static JOBS: Mutex<()> = Mutex::new(());

const LIMIT: Duration = Duration::from_secs(120);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_epsilod")
}

/// Waits for `cmd` at most LIMIT; a job still running then is a hang.
fn run_bounded(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {cmd:?} ({e}): install OpenMPI (openmpi-bin) to test the mpi feature"
            )
        });
    common::wait_bounded(child, LIMIT, &format!("{cmd:?}"))
}

fn mpirun_cmd(np: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--oversubscribe", "-np", &np.to_string()])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

fn mpirun(np: usize, args: &[&str]) -> Output {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = mpirun_cmd(np);
    c.arg(bin()).args(args);
    run_bounded(c)
}

/// `args` with `--devices CPU1` once per rank, alone for one rank, else
/// under mpirun.
fn on_ranks(np: usize, args: &[&str]) -> Output {
    let mut args = args.to_vec();
    args.extend(one_cpu_each(np));
    if np == 1 {
        alone(&args)
    } else {
        mpirun(np, &args)
    }
}

fn alone(args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    c.args(args);
    run_bounded(c)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes a device file into `dir`; returns its path.
fn device_file(dir: &Path, name: &str, tables: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, tables).unwrap();
    p.display().to_string()
}

/// Runs `args` alone and on `np` ranks; the output files must be
/// byte-identical and the reports alike in everything but timings.
fn same_as_one_process(np: usize, args: &[&str], dir: &Path, tag: &str) {
    let (ra, rb) =
        common::same_as_one_process(args, dir, tag, &format!("{np} ranks"), 1, alone, |many| {
            mpirun(np, many)
        });
    let (ia, ib) = (
        ra["iterations"].as_array().unwrap(),
        rb["iterations"].as_array().unwrap(),
    );
    assert_eq!(ia.len(), ib.len(), "{tag}");
    for (x, y) in ia.iter().zip(ib) {
        let rows = |v: &serde_json::Value| {
            v["devices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["rows"].as_u64().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(x), rows(y), "{tag}: rows per device");
    }
}

#[test]
fn every_library_stencil_matches_one_process_on_2_3_and_4_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let stencils = [
        ("1dc2", "130"),
        ("1dnc4", "130"),
        ("2d4", "34"),
        ("2d8", "34"),
        ("2dnc8", "34"),
        ("2df5", "34"),
        ("3d6", "16"),
        ("3d27", "16"),
        ("3dnc12", "16"),
        ("3df7", "16"),
        ("4d8", "9"),
    ];
    // Four devices on 2, 3 and 4 ranks (so ranks host one or two), under
    // three partitions, one with unequal weights.
    let runs: [(usize, &str, [&str; 4]); 3] = [
        (2, "m", [CPU1; 4]),
        (
            3,
            "w0",
            [
                "cpu:threads=1,weight=1",
                "cpu:threads=1,weight=2",
                "cpu:threads=1,weight=3",
                "cpu:threads=1,weight=1",
            ],
        ),
        (4, "s0", [CPU1; 4]),
    ];
    for (name, size) in stencils {
        for (np, partition, devices) in &runs {
            let mut args = vec!["run", name, "--size", size, "--iters", "7"];
            args.extend(["--partition", partition, "--init", "random", "--seed", "5"]);
            for d in devices {
                args.extend(["--devices", d]);
            }
            same_as_one_process(*np, &args, dir.path(), &format!("{name}-{np}"));
        }
    }
}

#[test]
fn gas_sim_matches_one_process_on_2_3_and_4_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for np in [2, 3, 4] {
        let mut args = vec!["run", "gas-sim", "--size", "14x12x10", "--iters", "6"];
        args.extend(one_cpu_each(np));
        same_as_one_process(np, &args, dir.path(), &format!("gas-{np}"));
    }
}

#[test]
fn laplace_poisson_wavesim_and_spec_files_match_one_process_on_2_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/specs/damped-heat.toml");
    let varcoef = spec.with_file_name("varcoef.toml");
    let gas = spec.with_file_name("gassim.toml");
    let (spec, varcoef, gas) = (
        spec.to_str().unwrap(),
        varcoef.to_str().unwrap(),
        gas.to_str().unwrap(),
    );
    // The field from a file every rank reads.
    let field = dir.path().join("k.npy");
    let k: Vec<f32> = (0..40 * 18).map(|i| i as f32 * 1e-3).collect();
    epsilod_testkit::write_npy(&field, "<f4", &[40, 18], &k);
    let k = format!("k={}", field.display());
    let varcoef_run = [
        "run",
        varcoef,
        "--size",
        "40x18",
        "--iters",
        "30",
        "--init",
        "random",
        "--halo-depth",
        "2",
    ];
    let cases: [(&str, Vec<&str>); 7] = [
        (
            "laplace",
            vec!["run", "laplace", "--size", "14x12x10", "--iters", "6"],
        ),
        (
            "poisson",
            vec!["run", "poisson", "--size", "30x26", "--iters", "20"],
        ),
        (
            "wavesim",
            vec![
                "run",
                "wavesim",
                "--size",
                "34x26",
                "--iters",
                "20",
                "--partition",
                "w0",
            ],
        ),
        (
            "heat",
            vec![
                "run", spec, "--size", "34", "--iters", "6", "--init", "random",
            ],
        ),
        // An auxiliary field, computed by each rank where it holds cells.
        ("varcoef", varcoef_run.to_vec()),
        ("varcoef-file", [&varcoef_run[..], &["--aux", &k]].concat()),
        // Cells of 19 components, from a spec file.
        (
            "gas-spec",
            vec![
                "run", gas, "--size", "14x12x10", "--iters", "4", "--init", "random",
            ],
        ),
    ];
    for np in [2, 3] {
        for (tag, args) in &cases {
            let mut args = args.clone();
            args.extend(one_cpu_each(np));
            same_as_one_process(np, &args, dir.path(), &format!("{tag}-{np}"));
        }
    }
}

/// Every rank reads the image; the blur's bits do not depend on the ranks.
#[test]
fn gaussian_matches_one_process_on_2_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let image = path(dir.path(), "in.pgm");
    let mut pgm = b"P5\n30 26\n255\n".to_vec();
    pgm.extend((0..30 * 26).map(|k| ((k * 37) % 256) as u8));
    std::fs::write(&image, pgm).unwrap();
    for np in [2, 3] {
        let mut args = vec!["run", "gaussian", "--input", &image, "--iters", "5"];
        args.extend(["--param", "kw=4", "--partition", "w0"]);
        args.extend(one_cpu_each(np));
        same_as_one_process(np, &args, dir.path(), &format!("gaussian-{np}"));
    }
}

#[test]
fn a_device_file_places_devices_per_rank() {
    let dir = tempfile::tempdir().unwrap();
    // Every rank gets a one-thread device; rank 0 a second, heavier one.
    let file = device_file(
        dir.path(),
        "devices.toml",
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\nthreads = 1\n\n\
         [[device]]\nrank = 0\nkind = \"cpu\"\nthreads = 1\nweight = 2\n",
    );
    // In the order the file deals them: rank 0's two, then ranks 1 and 2's.
    let w2 = "cpu:threads=1,weight=2";
    common::a_device_file_deals(
        dir.path(),
        &file,
        &|args| mpirun(3, args),
        &[CPU1, w2, CPU1, CPU1],
    );
}

#[test]
fn alb_moves_rows_off_a_slow_rank() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rep, one) = (
        path(dir.path(), "alb.dat"),
        path(dir.path(), "alb.json"),
        path(dir.path(), "one.dat"),
    );
    // 8x slower over tiles of half a million cells: a fast rank whose
    // kernel time the other tests' load inflates still looks the faster.
    let slow = "cpu:threads=1,slowdown=8";
    let base = [
        "run",
        "2d4",
        "--size",
        "1026",
        "--iters",
        "300",
        "--partition",
        "w0",
        "--init",
        "random",
        "--devices",
        CPU1,
        "--devices",
        slow,
        "--quiet",
    ];
    let mut args = base.to_vec();
    args.extend(["--alb", "next-alb", "--output", &out, "--report", &rep]);
    succeeded(&mpirun(2, &args), "ALB on 2 ranks");
    let r = json(&rep);
    assert!(
        r["summary"]["rebalances"].as_u64().unwrap() >= 1,
        "no rebalance"
    );
    let last = &r["iterations"].as_array().unwrap().last().unwrap()["devices"];
    let rows = |d: usize| last[d]["rows"].as_u64().unwrap();
    // Not the ideal 8:1: that depends on the machine's load; the direction
    // does not.
    assert!(rows(0) > rows(1), "rows {} / {}", rows(0), rows(1));
    for it in r["iterations"].as_array().unwrap() {
        let total: u64 = (0..2)
            .map(|d| it["devices"][d]["rows"].as_u64().unwrap())
            .sum();
        assert_eq!(total, 1024, "every interior row owned once");
    }
    // Rebalances across ranks change nothing in the result.
    let mut args = base.to_vec();
    args.extend(["--output", &one]);
    succeeded(&alone(&args), "one process, no ALB");
    assert!(same_bytes(&out, &one));
}

/// A rank whose only device ALB drops (60x slower, between two others,
/// with deep halos) idles while its neighbours exchange directly; a rank
/// whose device starts with `weight=0` runs idle from the start (not
/// refused as one the size left without rows). Results as in one process.
#[test]
fn a_rank_without_rows_idles_and_the_result_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rep, one) = (
        path(dir.path(), "drop.dat"),
        path(dir.path(), "drop.json"),
        path(dir.path(), "one.dat"),
    );
    let base = [
        "run", "2d4", "--size", "514", "--iters", "200", "--init", "random", "--quiet",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--partition",
        "w0",
        "--devices",
        CPU1,
        "--devices",
        "cpu:threads=1,slowdown=60",
        "--devices",
        CPU1,
        "--alb",
        "next-alb",
        "--halo-depth",
        "2",
        "--output",
        &out,
        "--report",
        &rep,
    ]);
    succeeded(&mpirun(3, &args), "a device dropped on 3 ranks");
    let r = json(&rep);
    let last = &r["iterations"].as_array().unwrap().last().unwrap()["devices"];
    assert_eq!(last[1]["rows"], 0, "{last}");
    let mut args = base.to_vec();
    args.extend(["--output", &one]);
    succeeded(&alone(&args), "one process");
    assert!(same_bytes(&out, &one));
    let args = [
        "run",
        "2d4",
        "--size",
        "514",
        "--iters",
        "200",
        "--partition",
        "w0",
        "--devices",
        CPU1,
        "--devices",
        "cpu:threads=1,weight=0",
    ];
    same_as_one_process(2, &args, dir.path(), "weight-0");
}

#[test]
fn a_rank_that_fails_ends_the_job_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 1's device cannot start (an OpenCL platform that is not there,
    // or no OpenCL in this build): rank 0 is already waiting for its halos.
    let file = device_file(
        dir.path(),
        "bad.toml",
        "[[device]]\nrank = 0\nkind = \"cpu\"\nthreads = 1\n\n\
         [[device]]\nrank = 1\nkind = \"opencl\"\nplatform = 99\n",
    );
    let o = mpirun(
        2,
        &[
            "run",
            "2d4",
            "--size",
            "66",
            "--iters",
            "1000",
            "--device-file",
            &file,
            "--quiet",
        ],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("error: rank 1: "), "{e}");
    assert!(e.to_lowercase().contains("opencl"), "{e}");
}

#[test]
fn a_run_given_no_devices_gets_one_cpu_device_per_rank_on_its_share_of_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", "2d4", "--size", "66x34", "--iters", "30", "--quiet"];
    let (a, ra) = (path(dir.path(), "one.dat"), path(dir.path(), "one.json"));
    let mut one = args.to_vec();
    one.extend(["--output", &a, "--report", &ra]);
    succeeded(&alone(&one), "alone, no --devices");
    // Unbound, every rank may run on the cores this test may (Open MPI
    // binds each of 2 ranks to a core of its own by default).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for np in 2..=4 {
        let (b, rb) = (
            path(dir.path(), &format!("{np}.dat")),
            path(dir.path(), &format!("{np}.json")),
        );
        let o = {
            let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
            let mut c = mpirun_cmd(np);
            c.args(["--bind-to", "none", bin()])
                .args(args)
                .args(["--output", &b, "--report", &rb]);
            run_bounded(c)
        };
        succeeded(&o, &format!("{np} ranks, no --devices"));
        assert!(
            same_bytes(&a, &b),
            "{np} ranks given no devices differ from one process"
        );
        // The ranks share the host's cores: the lower ones one more where
        // they do not divide, each at least one.
        let want: Vec<String> = (0..np)
            .map(|i| {
                format!(
                    "cpu:threads={}",
                    (cores / np + usize::from(i < cores % np)).max(1)
                )
            })
            .collect();
        let got: Vec<String> = json(&rb)["config"]["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, want, "{np} ranks on {cores} cores");
    }
    assert_eq!(
        json(&ra)["config"]["devices"][0],
        format!("cpu:threads={cores}").as_str()
    );
}

#[test]
fn a_rank_that_dies_ends_the_job() {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = mpirun_cmd(2);
    c.arg(bin()).args([
        "run",
        "2d4",
        "--size",
        "514",
        "--iters",
        "100000000",
        "--devices",
        CPU1,
        "--devices",
        CPU1,
        "--quiet",
    ]);
    let mut job = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill one rank once both are running.
    let start = Instant::now();
    let victim = loop {
        let ranks = children_named(job.id(), "epsilod");
        if ranks.len() == 2 {
            std::thread::sleep(Duration::from_millis(300));
            break ranks[1];
        }
        assert!(start.elapsed() < LIMIT, "the ranks never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let killed = Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = job.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > LIMIT {
            let _ = job.kill();
            panic!("the job hung after a rank died");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "{status}");
}

/// Processes whose parent is `parent` and whose command is `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(parent) && comm.ends_with(&format!("({name}")) {
            out.push(pid);
        }
    }
    out.sort();
    out
}

#[test]
fn clear_errors_for_jobs_that_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    // `args` on `np` ranks fails, saying `want` once.
    let said_once = |np: usize, args: &[&str], want: &str| {
        let o = mpirun(np, args);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert_eq!(e.matches(want).count(), 1, "{e}");
    };
    // More ranks than devices: said once, by rank 0.
    let mut args = vec!["run", "2d4", "--size", "34"];
    args.extend(one_cpu_each(2));
    said_once(
        3,
        &args,
        "error: 3 MPI ranks but only 2 device(s): give at least one device per rank (repeat --devices, or give none for one CPU device per rank), or run fewer ranks (mpirun -np 2)",
    );
    // More ranks than rows.
    let mut args = vec!["run", "2d4", "--size", "5x40", "--partition", "s0"];
    args.extend(one_cpu_each(4));
    said_once(4, &args, "error: rank 3 would compute no rows");
    // Ranks given different device files (one per side of mpirun's ':').
    let f1 = device_file(
        dir.path(),
        "a.toml",
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\nthreads = 1\n",
    );
    let f2 = device_file(
        dir.path(),
        "b.toml",
        "[[device]]\nhost = \"*\"\nkind = \"cpu\"\nthreads = 1\nweight = 2\n",
    );
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = mpirun_cmd(1);
    let common = [
        "run",
        "2d4",
        "--size",
        "34",
        "--iters",
        "3",
        "--device-file",
    ];
    c.arg(bin()).args(common).arg(&f1);
    c.args([":", "-np", "1", bin()]).args(common).arg(&f2);
    let o = run_bounded(c);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("error: rank 1 was given another run than rank 0")
            && e.contains("give every rank the same arguments and device file"),
        "{e}"
    );
    // A device file that leaves a rank without devices.
    let f3 = device_file(
        dir.path(),
        "c.toml",
        "[[device]]\nrank = 0\nkind = \"cpu\"\nthreads = 1\n",
    );
    drop(_one);
    let o = mpirun(2, &["run", "2d4", "--size", "34", "--device-file", &f3]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("error: rank 1 (host ") && e.contains("has no device"),
        "{e}"
    );
}

#[cfg(feature = "opencl")]
#[test]
fn opencl_devices_join_cpu_devices_across_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for (name, size) in [("2d4", "66"), ("3d27", "18")] {
        let args = [
            "run",
            name,
            "--size",
            size,
            "--iters",
            "6",
            "--init",
            "random",
            "--devices",
            CPU1,
            "--devices",
            "opencl",
            "--devices",
            CPU1,
        ];
        same_as_one_process(2, &args, dir.path(), &format!("ocl-{name}"));
    }
    let args = [
        "run",
        "gas-sim",
        "--size",
        "10",
        "--iters",
        "4",
        "--devices",
        "opencl",
        "--devices",
        CPU1,
    ];
    same_as_one_process(2, &args, dir.path(), "ocl-gas");
}

/// Two ranks of two OpenCL devices each (one context per rank): the halos
/// between the devices of a rank stay in device memory, the one between
/// the ranks goes through MPI, and the field is the one-process run's.
#[cfg(feature = "opencl")]
#[test]
fn opencl_halos_stay_on_the_device_within_a_rank() {
    let dir = tempfile::tempdir().unwrap();
    let table = |rank: usize| format!("[[device]]\nrank = {rank}\nkind = \"opencl\"\n");
    let f = device_file(dir.path(), "ocl4.toml", &[0, 0, 1, 1].map(table).concat());
    let (a, b) = (path(dir.path(), "one.dat"), path(dir.path(), "two.dat"));
    let (ra, rb) = (path(dir.path(), "one.json"), path(dir.path(), "two.json"));
    let common = [
        "run", "2d4", "--size", "66", "--iters", "7", "--init", "random",
    ];
    let mut one = common.to_vec();
    one.extend([
        "--partition",
        "s0",
        "--quiet",
        "--output",
        &a,
        "--report",
        &ra,
    ]);
    for _ in 0..4 {
        one.extend(["--devices", "opencl"]);
    }
    succeeded(&alone(&one), "one process");
    let mut two = common.to_vec();
    two.extend(["--partition", "s0", "--device-file", &f, "--quiet"]);
    two.extend(["--output", &b, "--report", &rb]);
    succeeded(&mpirun(2, &two), "two ranks");
    assert!(same_bytes(&a, &b), "two ranks differ from one process");
    let count = |r: &str, what: &str| json(r)["summary"][what].as_u64().unwrap();
    let all = count(&ra, "halo_messages");
    assert!(all > 0);
    assert_eq!(count(&ra, "halo_messages_on_device"), all, "one process");
    assert_eq!(count(&rb, "halo_messages"), all);
    assert_eq!(
        3 * count(&rb, "halo_messages_on_device"),
        2 * all,
        "two ranks"
    );
}

#[test]
fn commbench_pairs_processes_across_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let csv = path(dir.path(), "c.csv");
    let o = mpirun(
        2,
        &[
            "commbench",
            "--per-rank",
            "1,2",
            "--sizes",
            "64",
            "--pm",
            "1",
            "--reps",
            "1",
            "--iters",
            "3",
            "--csv",
            &csv,
        ],
    );
    succeeded(&o, "commbench on 2 ranks");
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 2);
    // One process per rank: the pair spans the ranks, each sends 64 bytes
    // to the other rank and nothing inside its own.
    assert_eq!(
        &rows[0][..15],
        &[2., 1., 64., 1., 64., 64., 64., 64., 1., 1., 1., 0., 0., 128., 2.]
    );
    // Two per rank: four processes, two pairs, 4 messages in all.
    assert_eq!((rows[1][0], rows[1][1], rows[1][14]), (2.0, 2.0, 4.0));
    assert!(rows.iter().all(|r| r[15] > 0.0));
}

#[test]
fn a_predicted_trace_replays_across_ranks_with_black_holes() {
    let dir = tempfile::tempdir().unwrap();
    let sigs = [2, 4].map(|n| common::signature(dir.path(), "34", n, &["--sig-iters", "3"]));
    let trace = path(dir.path(), "t6.json");
    succeeded(
        &alone(&[
            "scale", &sigs[0], &sigs[1], "--target", "6", "--out", &trace,
        ]),
        "scale",
    );
    let o = mpirun(2, &["replay", &trace, "--range-size", "3", "--iters", "2"]);
    succeeded(&o, "replay on 2 ranks");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("range 0-2:") && text.contains("range 3-5:"),
        "{text}"
    );
    assert!(text.contains("6 of 6 processes measured"), "{text}");
}

/// Every rank writes its own blocks; a restart on another rank count (and
/// alone) finishes with the bytes of the run never stopped.
#[test]
fn checkpoints_written_by_ranks_restart_on_other_rank_counts() {
    let dir = tempfile::tempdir().unwrap();
    common::restarts_end_as_the_run_never_stopped(
        dir.path(),
        "2 ranks",
        |args| on_ranks(2, args),
        &[
            ("3 ranks", &|args| on_ranks(3, args)),
            ("1 rank", &|args| on_ranks(1, args)),
        ],
    );
}

/// Snapshots gathered across ranks are the one-process snapshots.
#[test]
fn snapshots_across_ranks_match_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let run = |np: usize, tag: &str| {
        let pattern = path(dir.path(), &format!("{tag}_{{iter}}.npy"));
        let mut args = vec!["run", "2d4", "--size", "34x30", "--iters", "12", "--quiet"];
        args.extend(["--snapshot-every", "4", "--snapshot", &pattern]);
        succeeded(&on_ranks(np, &args), &format!("snapshots on {np} rank(s)"));
    };
    run(1, "one");
    run(3, "three");
    for i in [4, 8, 12] {
        let read = |tag: &str| std::fs::read(path(dir.path(), &format!("{tag}_{i}.npy"))).unwrap();
        assert!(
            read("one") == read("three"),
            "snapshot {i} differs on 3 ranks"
        );
    }
}

/// Deep halos across ranks: the bytes of one process, a third of the
/// messages of depth 1.
#[test]
fn deep_halos_across_ranks_match_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "3d27", "--size", "26x14x12", "--iters", "20"];
    args.extend(["--halo-depth", "3", "--partition", "s0"]);
    args.extend(one_cpu_each(3));
    same_as_one_process(3, &args, dir.path(), "deep");
    let r = json(path(dir.path(), "deep-n.json"));
    // 20 iterations at depth 3: periods of 3 iterations and a last one of
    // 2, each ending with an exchange: 7 exchanges of 4 messages (two inner
    // edges, both ways).
    assert_eq!(r["summary"]["halo_messages"], 7 * 4);
    assert_eq!(r["halo_depth"], 3);
}

/// `--halo-depth auto` across ranks: every rank measures, all agree on one
/// depth (a rank at another would wait forever for halos), and the bytes
/// are one process's.
#[test]
fn auto_halo_depth_across_ranks_matches_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "2d4", "--size", "40x30", "--iters", "140"];
    args.extend(["--halo-depth", "auto", "--partition", "s0"]);
    args.extend(one_cpu_each(3));
    same_as_one_process(3, &args, dir.path(), "auto");
    let r = json(path(dir.path(), "auto-n.json"));
    let tried: Vec<u64> = r["depth_trials"]
        .as_array()
        .expect("depth trials in the report")
        .iter()
        .map(|t| t["depth"].as_u64().unwrap())
        .collect();
    assert_eq!(tried, [1, 2, 4, 8]);
    let depth = r["halo_depth"].as_u64().unwrap();
    assert!((1..=8).contains(&depth), "{depth}");
}

/// Calibration under mpirun measures both link classes, `in-process` (two
/// processes of rank 0) and `mpi` (rank 0 to rank 1), and one device per
/// rank; rank 0 alone writes the machine.
#[test]
fn calibrate_measures_the_mpi_link() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.json");
    let m = m.to_str().unwrap();
    let mut args = vec!["calibrate", "2d4", "--size", "34x34"];
    args.extend(QUICK_CALIBRATION);
    args.extend(["--max-bytes", "1024", "--out", m]);
    let o = on_ranks(2, &args);
    succeeded(&o, "calibrate under mpirun");
    let v = json(m);
    let links: Vec<&str> = v["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(links, ["in-process", "mpi"]);
    assert_eq!(v["devices"].as_array().unwrap().len(), 2);
    assert!(v["links"][1]["hockney"]["alpha"].as_f64().unwrap() > 0.0);
}

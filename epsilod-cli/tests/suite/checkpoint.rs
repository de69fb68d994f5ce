//! `--checkpoint-every`, `--checkpoint-dir` and `--restart` from the command
//! line: a run killed (SIGKILL) at any moment, checkpoint writes included,
//! restarts from what it left and ends with the bytes of a run never
//! killed; bad uses are one line.

use crate::common;
use common::{epsilod, fails_with, json, ok, same_bytes};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn bad_checkpoint_options_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let run = ["run", "2d4", "--size", "20", "--iters", "10", "--quiet"];
    fn with<'a>(run: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [run, extra].concat()
    }
    fails_with(
        &with(&run, &["--checkpoint-every", "5"]),
        "--checkpoint-dir",
    );
    fails_with(&with(&run, &["--checkpoint-dir", &d]), "--checkpoint-every");
    fails_with(
        &with(&run, &["--checkpoint-every", "0", "--checkpoint-dir", &d]),
        "'0'",
    );
    fails_with(&with(&run, &["--restart", &d]), "no checkpoint in");
    // Every checkpoint damaged: the newest one's error, and nothing else.
    let ck = dir.path().join("ck");
    let ckd = ck.display().to_string();
    let o = epsilod(&with(
        &run,
        &["--checkpoint-every", "4", "--checkpoint-dir", &ckd],
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(checkpoint_count(&ck), 2);
    for c in std::fs::read_dir(&ck).unwrap() {
        let block = c.unwrap().path().join("block-0.bin");
        let mut data = std::fs::read(&block).unwrap();
        data[0] ^= 1;
        std::fs::write(&block, data).unwrap();
    }
    fails_with(
        &with(&run, &["--restart", &ckd]),
        &format!(
            "{} is corrupted: CRC-32",
            ck.join("ckpt-000000000008").join("block-0.bin").display()
        ),
    );
    let missing = dir.path().join("missing").display().to_string();
    fails_with(&with(&run, &["--restart", &missing]), &missing);
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let file = file.display().to_string();
    fails_with(
        &with(
            &run,
            &["--checkpoint-every", "2", "--checkpoint-dir", &file],
        ),
        &file,
    );
    fails_with(
        &with(&run, &["--on-failure", "retry"]),
        "not stop or recover",
    );
    fails_with(
        &with(&run, &["--devices", "cpu:fail@x"]),
        "expected the iteration",
    );
    // A failure without recovery: one line naming the device.
    fails_with(
        &with(
            &run,
            &[
                "--devices",
                "cpu:threads=1,fail@3",
                "--devices",
                "cpu:threads=1",
            ],
        ),
        "fail@3",
    );
}

#[test]
fn a_failed_device_is_recovered_from_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let base = ["run", "2d4", "--size", "66", "--iters", "40", "--quiet"];
    let (full, rec, rep) = (p("full.npy"), p("rec.npy"), p("rep.json"));
    assert!(epsilod(&[&base[..], &["--output", &full]].concat())
        .status
        .success());
    let out = epsilod(
        &[
            &base[..],
            &[
                "--devices",
                "cpu:threads=1,fail@23",
                "--devices",
                "cpu:threads=1",
            ],
            &["--checkpoint-every", "5", "--checkpoint-dir", &p("ck")],
            &[
                "--on-failure",
                "recover",
                "--output",
                &rec,
                "--report",
                &rep,
            ],
        ]
        .concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(same_bytes(&full, &rec));
    let report = json(&rep);
    // The newest checkpoint complete when the device failed: 20, or 15
    // where 20's commit still waited for a block and was cancelled with the
    // run (process 0 waits for 15's commit before it writes 20).
    let resumed = &report["failures"][0]["resumed_from"];
    assert!(resumed == 20 || resumed == 15, "resumed from {resumed}");
    assert_eq!(report["failures"][0]["devices_left"], 1);
}

/// A small deterministic generator for the kill times.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

fn checkpoint_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("ckpt-"))
        })
        .count()
    })
}

#[test]
fn a_run_killed_anywhere_restarts_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let base = [
        "run", "2d4", "--size", "258", "--iters", "400", "--quiet", "--init", "random",
    ];
    let full = p("full.npy");
    let out = epsilod(&[&base[..], &["--output", &full]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read(&full).unwrap();
    let mut seed = 11u64;
    let mut restarted = 0;
    for round in 0..6 {
        let ck = p(&format!("ck{round}"));
        // Checkpoints every iteration, so the kill lands in the middle of
        // writing one as often as between them.
        let mut child = Command::new(env!("CARGO_BIN_EXE_epsilod"))
            .args(base)
            .args(["--checkpoint-every", "1", "--checkpoint-dir", &ck])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait for the first checkpoint, then a little more, then kill.
        let start = Instant::now();
        while checkpoint_count(Path::new(&ck)) == 0 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_micros(next(&mut seed) % 150_000));
        child.kill().unwrap(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        if status.success() {
            continue; // finished before the kill: nothing to restart
        }
        let out_path = p(&format!("restarted{round}.npy"));
        let out = epsilod(
            &[
                &base[..],
                &["--restart", &ck, "--devices", "cpu:threads=1"],
                &["--devices", "cpu:threads=1", "--output", &out_path],
            ]
            .concat(),
        );
        assert!(
            out.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::read(&out_path).unwrap() == want,
            "round {round}: the restarted run differs"
        );
        restarted += 1;
    }
    assert!(
        restarted >= 3,
        "only {restarted} of 6 runs were killed mid-way"
    );
}

#[test]
fn snapshots_are_written_and_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let pattern = p("f_{iter}.npy");
    let out = epsilod(&[
        "run",
        "2d4",
        "--size",
        "40",
        "--iters",
        "30",
        "--quiet",
        "--devices",
        "cpu:threads=1",
        "--devices",
        "cpu:threads=1",
        "--snapshot-every",
        "10",
        "--snapshot",
        &pattern,
        "--output",
        &p("out.npy"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in [10, 20, 30] {
        assert!(
            Path::new(&p(&format!("f_{i}.npy"))).is_file(),
            "snapshot {i}"
        );
    }
    // The last snapshot is the output.
    assert!(same_bytes(p("f_30.npy"), p("out.npy")));
    assert!(std::fs::read(p("f_10.npy")).unwrap() != std::fs::read(p("f_20.npy")).unwrap());
    let png = p("f.png");
    let o = epsilod(&["view", &p("f_20.npy"), "-o", &png]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let gif = p("f.gif");
    let o = epsilod(&[
        "view",
        &p("f_10.npy"),
        &p("f_20.npy"),
        &p("f_30.npy"),
        "-o",
        &gif,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(&std::fs::read(&gif).unwrap()[..4], b"GIF8");
    // The picture's kind is the picture's error, not a field file's.
    fails_with(
        &["view", &p("f_10.npy"), &p("f_20.npy"), "-o", &png],
        &format!("error: cannot write picture {png}: 2 files make an animation: write a .gif"),
    );
    let jpg = p("f.jpg");
    fails_with(
        &["view", &p("f_10.npy"), "-o", &jpg],
        &format!(
            "error: cannot write picture {jpg}: write a .png (one file) or a .gif (one or more)"
        ),
    );
    fails_with(&["view", &p("missing.npy"), "-o", &png], "missing.npy");
    fails_with(
        &["view", &p("f_10.npy"), "-o", &png, "--slice", "q=1"],
        "use x, y or z",
    );
    fails_with(
        &["view", &p("f_10.npy"), "-o", &png, "--slice", "z=1"],
        "--slice z=1 needs a 3-d field; this one is 2-d",
    );
    fails_with(
        &["view", &p("f_10.npy"), "-o", &png, "--field", "speed"],
        "D3Q19",
    );
    fails_with(
        &[
            "run",
            "2d4",
            "--size",
            "20",
            "--snapshot-every",
            "2",
            "--snapshot",
            &p("f.npy"),
        ],
        "has no {iter}",
    );
    // {iter} in a directory's name: each snapshot's directory is made.
    let per_dir = p("snaps/{iter}/f.npy");
    let o = epsilod(&[
        "run",
        "2d4",
        "--size",
        "20",
        "--iters",
        "4",
        "--quiet",
        "--snapshot-every",
        "2",
        "--snapshot",
        &per_dir,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for i in [2, 4] {
        assert!(Path::new(&p(&format!("snaps/{i}/f.npy"))).is_file(), "{i}");
    }
    // A field without cells is refused, not drawn.
    let empty = p("empty.npy");
    std::fs::write(&empty, {
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 0), }";
        let h = format!("{h}{}\n", " ".repeat(63 - (10 + h.len()) % 64));
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((h.len() as u16).to_le_bytes());
        b.extend(h.as_bytes());
        b
    })
    .unwrap();
    fails_with(
        &["view", &empty, "-o", &png],
        "the field has no cells to draw",
    );
    let sig = p("sig.json");
    let signature = [
        "signature",
        "2d4",
        "--size",
        "20",
        "--iters",
        "10",
        "--out",
        &sig,
    ];
    fails_with(
        &[&signature[..], &["--sig-iters", "11"]].concat(),
        "--sig-iters 11 is more than --iters 10",
    );
    let snap = p("f_{iter}.npy");
    fails_with(
        &[
            &signature[..],
            &[
                "--sig-iters",
                "5",
                "--snapshot-every",
                "2",
                "--snapshot",
                &snap,
            ],
        ]
        .concat(),
        "a signature is a short run's phases and writes only --out: leave out --snapshot-every",
    );
    let (out, report, ck) = (p("f.npy"), p("r.json"), p("ck"));
    for (extra, option) in [
        (&["--output", &out[..]][..], "--output"),
        (&["--report", &report], "--report"),
        (
            &["--checkpoint-every", "2", "--checkpoint-dir", &ck],
            "--checkpoint-every",
        ),
    ] {
        fails_with(
            &[&signature[..], &["--sig-iters", "5"], extra].concat(),
            &format!(
                "a signature is a short run's phases and writes only --out: leave out {option}"
            ),
        );
    }
    fails_with(
        &[
            &signature[..],
            &["--sig-iters", "5", "--alb", "const-iters"],
        ]
        .concat(),
        "a signature runs without load balancing (its layout names the messages): leave out --alb",
    );
}

/// A restart whose settings differ from the run that wrote the checkpoint
/// (an app's parameter, the random init's seed, a spec that shares a
/// library stencil's name) is refused, naming the difference.
#[test]
fn a_restart_of_other_settings_is_refused_naming_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    // `run` checkpointed up to 20 iterations into `ck`, then `other`
    // restarted from it to 30: refused with `want`.
    let refused = |ck: &str, run: &[&str], other: &[&str], want: &str| {
        let ck = p(ck);
        let write = ["--iters", "20", "--quiet", "--checkpoint-every", "5"];
        ok(&[run, &write, &["--checkpoint-dir", &ck]].concat());
        fails_with(
            &[other, &["--iters", "30", "--restart", &ck]].concat(),
            want,
        );
    };
    let wavesim = ["run", "wavesim", "--size", "34"];
    refused(
        "ck1",
        &[&wavesim[..], &["--param", "dt=0.1"]].concat(),
        &wavesim,
        "is of another run: it was written with dt=0.1, this run has dt=0.25",
    );
    let random = ["run", "2d4", "--size", "20", "--init", "random"];
    refused(
        "ck2",
        &[&random[..], &["--seed", "1"]].concat(),
        &[&random[..], &["--seed", "2"]].concat(),
        "is of another run: it was written with seed=1, this run has seed=2",
    );
    let spec = p("s2d4.toml");
    std::fs::write(
        &spec,
        "name = \"2d4\"\nlow = [1, 1]\nhigh = [1, 1]\nweights = [0, 1, 0, 1, 1, 1, 0, 1, 0]\nfactor = 5\n",
    )
    .unwrap();
    refused(
        "ck3",
        &["run", "2d4", "--size", "20"],
        &["run", &spec, "--size", "20"],
        "is of another run: it was written with target=2d4, this run has target=spec file s2d4.toml",
    );
}

/// A run refuses a directory holding another run's checkpoints, saying
/// how to go on; with --checkpoint-overwrite it replaces them, and a
/// device failure then recovers from its own checkpoints: its result, not
/// the earlier run's.
#[test]
fn a_directory_of_another_run_is_refused_until_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (ck, want, got) = (p("ck"), p("want.npy"), p("got.npy"));
    let base = [
        "run", "2d4", "--size", "34", "--iters", "40", "--quiet", "--init", "random",
    ];
    let ckpt = ["--checkpoint-every", "5", "--checkpoint-dir", &ck];
    ok(&[&base[..], &["--seed", "1"], &ckpt].concat());
    ok(&[&base[..], &["--seed", "2", "--output", &want]].concat());
    let b = [
        &base[..],
        &["--seed", "2", "--output", &got],
        &ckpt,
        &[
            "--devices",
            "cpu:threads=1",
            "--devices",
            "cpu:threads=1,fail@17",
        ],
        &["--on-failure", "recover"],
    ]
    .concat();
    fails_with(
        &b,
        "it was written with seed=1, this run has seed=2; to write checkpoints into",
    );
    fails_with(&b, "add --checkpoint-overwrite to replace its checkpoints");
    ok(&[&b[..], &["--checkpoint-overwrite"]].concat());
    assert!(same_bytes(&want, &got));
    // Its own checkpoints now: a restart of the same run takes them.
    ok(&[&base[..], &["--seed", "2", "--restart", &ck]].concat());
}

/// A fresh run (no --restart) refuses a directory holding an earlier run's
/// checkpoints of the same problem, which starting over would have
/// replaced (a shorter run pruned a longer one's newest), and says how to
/// go on; --restart resumes them and --checkpoint-overwrite starts over.
#[test]
fn a_fresh_run_keeps_an_earlier_runs_progress() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck").display().to_string();
    let run = ["run", "2d4", "--size", "34", "--quiet"];
    let ckpt = ["--checkpoint-every", "5", "--checkpoint-dir", &ck];
    ok(&[&run[..], &["--iters", "40"], &ckpt].concat());
    fails_with(
        &[&run[..], &["--iters", "50"], &ckpt].concat(),
        &format!(
            "{ck} holds checkpoints of an earlier run of this problem, the newest at iteration 35; \
             resume it with --restart {ck}, or give another --checkpoint-dir, \
             or add --checkpoint-overwrite to start over and replace them"
        ),
    );
    // A shorter run's restart from them would be refused: not offered.
    let shorter = [&run[..], &["--iters", "10"], &ckpt].concat();
    fails_with(
        &shorter,
        &format!(
            "{ck} holds checkpoints of an earlier run of this problem, the newest at iteration 35, \
             past this run's end at 10 (the run there is finished up to --iters); give another \
             --checkpoint-dir, or add --checkpoint-overwrite to start over and replace them\n"
        ),
    );
    assert!(dir.path().join("ck/ckpt-000000000035").is_dir());
    ok(&[&run[..], &["--iters", "50", "--restart", &ck], &ckpt].concat());
    // The library's warning is the command line's own line.
    let o = epsilod(&[&shorter[..], &["--checkpoint-overwrite"]].concat());
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("warning: replacing the checkpoints of an earlier run in {ck} (--checkpoint-overwrite)\n")
    );
    assert!(!dir.path().join("ck/ckpt-000000000045").exists());
    assert!(dir.path().join("ck/ckpt-000000000005").is_dir());
}

/// A long 2d4 run checkpointing into `ck` every `every` iterations.
fn checkpointing<'a>(ck: &'a str, every: &'a str) -> [&'a str; 11] {
    [
        "run",
        "2d4",
        "--size",
        "66",
        "--iters",
        "3000",
        "--quiet",
        "--checkpoint-every",
        every,
        "--checkpoint-dir",
        ck,
    ]
}

/// `ck` made and locked as another run (pid 4242 on elsewhere) holds it,
/// for as long as the file returned is open.
fn held_by_another_run(ck: &Path) -> std::fs::File {
    std::fs::create_dir(ck).unwrap();
    let mut held = std::fs::File::create(ck.join(".lock")).unwrap();
    held.try_lock().unwrap();
    std::io::Write::write_all(&mut held, b"pid 4242 on elsewhere\n").unwrap();
    held
}

/// A second run writing into a directory is refused at once, naming the
/// holder of its lock (here this test, as another run would be).
#[test]
fn a_second_writer_is_refused_at_once_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let _held = held_by_another_run(&ck);
    let started = Instant::now();
    let ckd = ck.display().to_string();
    fails_with(
        &checkpointing(&ckd, "500"),
        &format!("checkpoint directory {ckd} is in use by another run (pid 4242 on elsewhere)"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(checkpoint_count(&ck), 0);
}

/// An unwritable checkpoint directory is refused before the run starts,
/// with its OS error (skipped where this test finds none: permissions do
/// not bind root, so as root `/sys`'s, which takes no new file).
#[cfg(unix)]
#[test]
fn an_unwritable_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let ro = {
        use std::os::unix::fs::PermissionsExt;
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let sys = Path::new("/sys/kernel");
        if std::fs::write(ro.join("x"), "").is_err() {
            ro
        } else if sys.is_dir() && std::fs::write(sys.join(".epsilod-probe"), "").is_err() {
            sys.to_path_buf()
        } else {
            eprintln!("skipped: no unwritable directory here");
            return;
        }
    };
    let rod = ro.display().to_string();
    fails_with(
        &checkpointing(&rod, "1000"),
        &format!("checkpoint directory {rod} is not writable: "),
    );
}

/// Under MPI the rank that commits takes the lock, and every rank learns
/// of its refusal at once: the job ends with the holder's name, no rank
/// left waiting.
#[cfg(feature = "mpi")]
#[test]
fn every_rank_learns_that_another_run_holds_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    let _held = held_by_another_run(&ck);
    let ckd = ck.display().to_string();
    let started = Instant::now();
    let out = Command::new("mpirun")
        .args(["--oversubscribe", "-np", "2", env!("CARGO_BIN_EXE_epsilod")])
        .args(checkpointing(&ckd, "500"))
        .args(["--devices", "cpu:threads=1", "--devices", "cpu:threads=1"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "checkpoint directory {ckd} is in use by another run (pid 4242 on elsewhere)"
        )),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(checkpoint_count(&ck), 0);
}

/// A `--checkpoint-dir` that names a file or a device says so: it said
/// "File exists (os error 17)", which reads as a clash with another run.
#[test]
fn a_checkpoint_dir_that_is_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    for given in [file.display().to_string(), "/dev/null".to_string()] {
        let args: Vec<&str> =
            "run 2d4 --size 20 --iters 4 --quiet --checkpoint-every 2 --checkpoint-dir"
                .split(' ')
                .chain([given.as_str()])
                .collect();
        fails_with(
            &args,
            &format!(
                "checkpoint directory {given} exists and is not a directory: give a directory's \
                 path (one that is missing is created)"
            ),
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"");
}

/// A small 2d4 run that checkpoints every 10 iterations.
const EVERY_10: [&str; 7] = [
    "run",
    "2d4",
    "--size",
    "34",
    "--quiet",
    "--checkpoint-every",
    "10",
];

/// One run's checkpoints in two directories: [`EVERY_10`] of `first`
/// iterations into `x`, then resumed from `x` into `y` up to `then`.
fn written_then_resumed(x: &str, first: &str, y: &str, then: &str) {
    ok(&[&EVERY_10[..], &["--iters", first, "--checkpoint-dir", x]].concat());
    ok(&[
        &EVERY_10[..],
        &["--iters", then, "--restart", x, "--checkpoint-dir", y],
    ]
    .concat());
}

/// A run resumed from one directory (A) into another (B) that holds
/// checkpoints in the way is told what they are and its ways on: B holds
/// this run's own older ones, which `--restart B` would go back to, losing
/// A's newer progress.
#[test]
fn a_resume_into_a_directory_of_its_own_older_checkpoints_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, other] = ["a", "b", "other"].map(|d| dir.path().join(d).display().to_string());
    let run = EVERY_10;
    // Into B up to 30, then resumed from B into A up to 70: one run's.
    written_then_resumed(&b, "40", &a, "80");
    fails_with(
        &[
            &run[..],
            &["--iters", "120", "--restart", &a, "--checkpoint-dir", &b],
        ]
        .concat(),
        &format!(
            "{b} holds this run's older checkpoints, the newest at iteration 30, behind {a}'s at \
             70 that it resumes from: add --checkpoint-overwrite to replace them, or write on \
             into {a} with --checkpoint-dir {a}, or give another --checkpoint-dir"
        ),
    );
    // The other way, A's newer checkpoints are in the way of a resume from B.
    fails_with(
        &[
            &run[..],
            &["--iters", "120", "--restart", &b, "--checkpoint-dir", &a],
        ]
        .concat(),
        &format!(
            "{a} holds this run's checkpoints up to iteration 70, past {b}'s at 30 that it \
             resumes from: resume from them with --restart {a}, or add --checkpoint-overwrite \
             to go on from {b} and replace them, or give another --checkpoint-dir"
        ),
    );
    // Another run's of the same problem.
    ok(&[&run[..], &["--iters", "20", "--checkpoint-dir", &other]].concat());
    fails_with(
        &[
            &run[..],
            &[
                "--iters",
                "120",
                "--restart",
                &a,
                "--checkpoint-dir",
                &other,
            ],
        ]
        .concat(),
        &format!(
            "{other} holds checkpoints of another run of this problem, the newest at iteration \
             10, and this run resumes from {a}: give another --checkpoint-dir, or add \
             --checkpoint-overwrite to replace them (or go on with that run instead: --restart \
             {other})"
        ),
    );
    // The way on it names works: B's older ones go, the run goes on from A,
    // and the warning says whose they were.
    let o = epsilod(
        &[
            &run[..],
            &[
                "--iters",
                "100",
                "--restart",
                &a,
                "--checkpoint-dir",
                &b,
                "--checkpoint-overwrite",
            ],
        ]
        .concat(),
    );
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("warning: replacing this run's own checkpoints in {b} (--checkpoint-overwrite)\n")
    );
    assert!(dir.path().join("b/ckpt-000000000090").is_dir());
    assert!(!dir.path().join("b/ckpt-000000000030").exists());
}

/// One run's checkpoints in X (20 and 30) and then in Y (60 and 70),
/// resumed from X's 30, in a temporary directory: it, X and Y.
fn x_then_y() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let [x, y] = ["x", "y"].map(|d| dir.path().join(d).display().to_string());
    written_then_resumed(&x, "40", &y, "80");
    (dir, x, y)
}

/// A directory in the way whose usable checkpoint is at or past the run's
/// end is said to be finished there, and `--restart` of it, which would be
/// refused, is not among the ways on (it was, for this run's own and for an
/// earlier run's); the ways it names work.
#[test]
fn a_directory_finished_up_to_the_runs_end_is_not_offered_to_resume() {
    let (dir, x, y) = x_then_y();
    let run = EVERY_10;
    let x_into_y = |iters| {
        [
            &run[..],
            &["--iters", iters, "--restart", &x, "--checkpoint-dir", &y],
        ]
        .concat()
    };
    fails_with(
        &x_into_y("60"),
        &format!(
            "{y} holds this run's checkpoints up to iteration 70, past {x}'s at 30 that it \
             resumes from, past this run's end at 60 (the run there is finished up to --iters): \
             add --checkpoint-overwrite to go on from {x} and replace them, or give another \
             --checkpoint-dir\n"
        ),
    );
    fails_with(
        &x_into_y("70"),
        &format!(
            "{y} holds this run's checkpoints up to iteration 70, past {x}'s at 30 that it \
             resumes from, as far as this run's end at 70 (the run there is finished up to \
             --iters): add --checkpoint-overwrite to go on from {x} and replace them, or give \
             another --checkpoint-dir\n"
        ),
    );
    let fresh_into_y = [&run[..], &["--iters", "70", "--checkpoint-dir", &y]].concat();
    fails_with(
        &fresh_into_y,
        &format!(
            "{y} holds checkpoints of an earlier run of this problem, the newest at iteration 70, \
             as far as this run's end at 70 (the run there is finished up to --iters); give \
             another --checkpoint-dir, or add --checkpoint-overwrite to start over and replace \
             them\n"
        ),
    );
    // Another run's of this problem, 60 and 70.
    let other = dir.path().join("other").display().to_string();
    ok(&[&run[..], &["--iters", "80", "--checkpoint-dir", &other]].concat());
    fails_with(
        &[
            &run[..],
            &["--iters", "50", "--restart", &x, "--checkpoint-dir", &other],
        ]
        .concat(),
        &format!(
            "{other} holds checkpoints of another run of this problem, the newest at iteration \
             70, past this run's end at 50 (the run there is finished up to --iters), and this \
             run resumes from {x}: give another --checkpoint-dir, or add --checkpoint-overwrite \
             to replace them\n"
        ),
    );
    // What it no longer offers is refused; what it offers goes on.
    fails_with(
        &[
            &run[..],
            &["--iters", "70", "--restart", &y, "--checkpoint-dir", &y],
        ]
        .concat(),
        &format!("checkpoint {y}/ckpt-000000000070 is at iteration 70, not before"),
    );
    ok(&[&x_into_y("60")[..], &["--checkpoint-overwrite"]].concat());
    assert_eq!(checkpoint_count(Path::new(&y)), 2);
    assert!(dir.path().join("y/ckpt-000000000050").is_dir());
}

/// Replaces block 0 of the checkpoint after `iter` iterations in `dir`
/// with a FIFO that no one writes: a reader of the block waits forever.
fn block_that_blocks(dir: &Path, iter: u64) {
    let block = dir.join(format!("ckpt-{iter:012}")).join("block-0.bin");
    std::fs::remove_file(&block).unwrap();
    let made = Command::new("mkfifo").arg(&block).status().unwrap();
    assert!(made.success());
}

/// `--checkpoint-overwrite` replaces what is in the way without reading
/// its blocks (it checksummed every one, only to name the checkpoints it
/// deleted): a block no read of which ends is no hindrance.
#[test]
fn an_overwrite_reads_no_block_of_what_it_replaces() {
    let (dir, x, y) = x_then_y();
    let run = EVERY_10;
    block_that_blocks(Path::new(&y), 70);
    // Replaces Y's checkpoints, as `whose`, for a run of `args`.
    let replaces = |args: &[&str], whose: &str| {
        let overwrite = ["--checkpoint-dir", &y, "--checkpoint-overwrite"];
        let child = Command::new(env!("CARGO_BIN_EXE_epsilod"))
            .args([&run[..], args, &overwrite].concat())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = common::wait_bounded(child, Duration::from_secs(60), "an overwrite");
        common::succeeded(&o, whose);
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!("warning: replacing {whose} in {y} (--checkpoint-overwrite)\n")
        );
    };
    replaces(
        &["--iters", "50", "--restart", &x],
        "this run's own checkpoints",
    );
    block_that_blocks(Path::new(&y), 40);
    replaces(&["--iters", "30"], "the checkpoints of an earlier run");
    assert_eq!(checkpoint_count(Path::new(&y)), 2);
    assert!(dir.path().join("y/ckpt-000000000020").is_dir());
}

/// A restart reads a block that is not a regular file as damaged (a
/// checkpoint writes none other) and takes the checkpoint before it: it
/// opened the FIFO and waited for a writer for ever.
#[test]
fn a_restart_skips_a_block_that_is_not_a_file() {
    let (dir, x, _y) = x_then_y();
    block_that_blocks(Path::new(&x), 30);
    let z = dir.path().join("z").display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_epsilod"))
        .args(
            [
                &EVERY_10[..],
                &["--iters", "40", "--restart", &x, "--checkpoint-dir", &z],
            ]
            .concat(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = common::wait_bounded(child, Duration::from_secs(60), "a restart");
    common::succeeded(&o, "a restart past a FIFO block");
    let err = String::from_utf8_lossy(&o.stderr);
    let block = format!("{x}/ckpt-000000000030/block-0.bin");
    assert!(
        err.contains(&format!(
            "checkpoint path {block}: not a regular file, as every file of a checkpoint is"
        )),
        "{err}"
    );
    // It went on from iteration 20 and checkpointed from there.
    assert!(dir.path().join("z/ckpt-000000000030").is_dir());
}

/// Flips a byte of block 0 of the checkpoint after `iter` iterations in
/// `dir`: its manifest stays whole, its blocks fail their checksum.
fn damage_block(dir: &Path, iter: u64) {
    let block = dir.join(format!("ckpt-{iter:012}")).join("block-0.bin");
    let mut data = std::fs::read(&block).unwrap();
    data[0] ^= 1;
    std::fs::write(&block, data).unwrap();
}

/// A directory in the way whose newest checkpoints have damaged blocks is
/// said as a restart from it would go: from the newest usable one (it
/// named the damaged one, and told a run to resume from a directory whose
/// usable checkpoint was behind its own progress), or as all damaged; and
/// where the run resumes is where its restart goes, past a damaged newest.
#[test]
fn a_directory_in_the_way_names_the_checkpoint_a_restart_would_take() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, x, y] = ["a", "b", "x", "y"].map(|d| dir.path().join(d).display().to_string());
    let run = ["run", "2d4", "--size", "34", "--quiet"];
    let every = |n| ["--checkpoint-every", n];
    // B: 50 and 55, then A: 52, resumed from B's 50.
    ok(&[
        &run[..],
        &every("5"),
        &["--iters", "60", "--checkpoint-dir", &b],
    ]
    .concat());
    let aside = dir.path().join("55");
    let b55 = dir.path().join("b/ckpt-000000000055");
    std::fs::rename(&b55, &aside).unwrap();
    ok(&[
        &run[..],
        &every("2"),
        &["--iters", "54", "--restart", &b, "--checkpoint-dir", &a],
    ]
    .concat());
    std::fs::rename(&aside, &b55).unwrap();
    damage_block(Path::new(&b), 55);
    let a_into_b = [
        &run[..],
        &every("5"),
        &["--iters", "100", "--restart", &a, "--checkpoint-dir", &b],
    ]
    .concat();
    fails_with(
        &a_into_b,
        &format!(
            "{b} holds this run's older checkpoints, the newest usable at iteration 50 (the \
             newest, at 55, is damaged), behind {a}'s at 52 that it resumes from: add \
             --checkpoint-overwrite to replace them, or write on into {a} with --checkpoint-dir \
             {a}, or give another --checkpoint-dir"
        ),
    );
    damage_block(Path::new(&b), 50);
    fails_with(
        &a_into_b,
        &format!(
            "{b} holds only damaged checkpoints of this run, the newest at iteration 55, and it \
             resumes from {a}'s at 52: add --checkpoint-overwrite to replace them, or write on \
             into {a} with --checkpoint-dir {a}, or give another --checkpoint-dir"
        ),
    );
    // X: 20 and 30, then Y: 60 and 70, resumed from X's 30.
    let ckpt10 = every("10");
    written_then_resumed(&x, "40", &y, "80");
    damage_block(Path::new(&y), 70);
    damage_block(Path::new(&x), 30);
    fails_with(
        &[
            &run[..],
            &ckpt10,
            &["--iters", "100", "--restart", &x, "--checkpoint-dir", &y],
        ]
        .concat(),
        &format!(
            "{y} holds this run's checkpoints up to iteration 60 (the newest, at 70, is \
             damaged), past {x}'s at 20 that it resumes from: resume from them with --restart \
             {y}, or add --checkpoint-overwrite to go on from {x} and replace them, or give \
             another --checkpoint-dir"
        ),
    );
    // A fresh run is told the same of an earlier run's.
    fails_with(
        &[
            &run[..],
            &ckpt10,
            &["--iters", "100", "--checkpoint-dir", &y],
        ]
        .concat(),
        &format!(
            "{y} holds checkpoints of an earlier run of this problem, the newest usable at \
             iteration 60 (the newest, at 70, is damaged); resume it with --restart {y}, or give \
             another --checkpoint-dir, or add --checkpoint-overwrite to start over and replace \
             them"
        ),
    );
}

/// A directory in the way holding both this run's checkpoints and another
/// run's (a run killed between its commit and the removal of the other
/// run's, or checkpoints copied in) says both, with each one's newest, and
/// the ways on (it called them all another run's).
#[test]
fn a_directory_of_this_and_another_runs_checkpoints_says_both() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c] = ["a", "b", "c"].map(|d| dir.path().join(d).display().to_string());
    let run = EVERY_10;
    // This run: A at 20 and 30, then B at 40 and 50; another: C at 60 and 70.
    written_then_resumed(&a, "40", &b, "60");
    ok(&[&run[..], &["--iters", "80", "--checkpoint-dir", &c]].concat());
    let from = dir.path().join("c/ckpt-000000000070");
    let to = dir.path().join("b/ckpt-000000000070");
    std::fs::create_dir(&to).unwrap();
    for f in std::fs::read_dir(&from).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
    }
    let a_into_b = |iters| {
        [
            &run[..],
            &["--iters", iters, "--restart", &a, "--checkpoint-dir", &b],
        ]
        .concat()
    };
    let both = format!(
        "{b} holds checkpoints of this run, the newest at iteration 50, and of another run of \
         this problem, the newest at iteration 70; this run resumes from {a}'s at 30: give \
         another --checkpoint-dir, or write on into {a} with --checkpoint-dir {a}, or add \
         --checkpoint-overwrite to replace them all"
    );
    fails_with(
        &a_into_b("100"),
        &format!("{both}, or go on from the other run's at 70 with --restart {b}\n"),
    );
    // Where a restart from B would take one at or past the run's end, it
    // is not a way on.
    fails_with(
        &a_into_b("60"),
        &format!(
            "{both}; the other run's at 70, which a restart from {b} would take, is past this \
             run's end at 60 (the run there is finished up to --iters)\n"
        ),
    );
    // Where this run's are the newer, going on from them is the way named.
    damage_block(Path::new(&b), 70);
    fails_with(
        &a_into_b("100"),
        &format!(
            "{b} holds checkpoints of this run, the newest at iteration 50, and of another run \
             of this problem, all damaged, the newest at iteration 70; this run resumes from \
             {a}'s at 30: give another --checkpoint-dir, or write on into {a} with \
             --checkpoint-dir {a}, or add --checkpoint-overwrite to replace them all, or go on \
             from this run's at 50 with --restart {b}"
        ),
    );
    let o = epsilod(&[&a_into_b("100")[..], &["--checkpoint-overwrite"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "warning: replacing this run's own checkpoints and another run's in {b} \
             (--checkpoint-overwrite)\n"
        )
    );
    assert_eq!(checkpoint_count(Path::new(&b)), 2);
    assert!(dir.path().join("b/ckpt-000000000090").is_dir());
}

/// `--checkpoint-overwrite` replaces what is in the way only for a run that
/// goes on: one whose restart is refused (a directory with nothing to
/// resume, a checkpoint at the run's end) removes nothing, whether the
/// checkpoints in the way are of another problem, another run of this one
/// or this run's own (it removed them, then refused).
#[test]
fn an_overwrite_whose_restart_is_refused_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let [x, d, missing] = ["x", "d", "missing"].map(|p| dir.path().join(p).display().to_string());
    let run = EVERY_10;
    ok(&[&run[..], &["--iters", "40", "--checkpoint-dir", &x]].concat());
    // D: another problem's (34x34 against 66x66).
    ok(&[&run[..], &["--iters", "40", "--checkpoint-dir", &d]].concat());
    let overwrite = ["--checkpoint-dir", &d, "--checkpoint-overwrite"];
    let other_size = [
        "run",
        "2d4",
        "--size",
        "66",
        "--quiet",
        "--checkpoint-every",
        "10",
    ];
    fails_with(
        &[
            &other_size[..],
            &["--iters", "40", "--restart", &missing],
            &overwrite,
        ]
        .concat(),
        &format!("checkpoint path {missing}: no such directory"),
    );
    assert_eq!(checkpoint_count(Path::new(&d)), 2);
    // D: another run's of this problem; X's newest is at 30, the run's end.
    let at_end = format!("checkpoint {x}/ckpt-000000000030 is at iteration 30, not before");
    fails_with(
        &[&run[..], &["--iters", "30", "--restart", &x], &overwrite].concat(),
        &at_end,
    );
    assert_eq!(checkpoint_count(Path::new(&d)), 2);
    // D: this run's own (20, 30), older than Y's (40, 50) resumed from D's.
    std::fs::remove_dir_all(&d).unwrap();
    let y = dir.path().join("y").display().to_string();
    written_then_resumed(&d, "40", &y, "60");
    fails_with(
        &[&run[..], &["--iters", "50", "--restart", &y], &overwrite].concat(),
        &format!("checkpoint {y}/ckpt-000000000050 is at iteration 50, not before"),
    );
    assert_eq!(checkpoint_count(Path::new(&d)), 2);
}

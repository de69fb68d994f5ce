//! Checkpoints and restarts: a restart on other devices, partitions and
//! load balancing is bit-identical to the run never interrupted; damaged or
//! foreign checkpoints are refused with one line naming the file; a failed
//! device is dropped and the run recovers from the last checkpoint.

use epsilod::{
    Alb, CheckpointError, DeviceSpec, Held, OnFailure, Partition, RunError, SetupError, Skeleton,
    Stencil, VpError,
};
use epsilod_testkit::{bits, irregular_init, library_reference};
use kernels::{KernelChoice, Library};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn cpus(n: usize) -> Vec<DeviceSpec> {
    vec![DeviceSpec::cpu(1); n]
}

fn skeleton(lib: Library, sizes: &[usize], iters: u64) -> Skeleton<f32> {
    let spec = lib.spec();
    let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 7);
    Skeleton::new(
        sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(init)
}

fn reference_of(lib: Library, sizes: &[usize], iters: u64) -> Vec<u32> {
    library_reference(lib, sizes, iters, 7)
}

/// Checkpoint directories left in `dir`, by iteration.
fn checkpoints(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix("ckpt-").map(|n| n.parse().unwrap())
        })
        .collect();
    v.sort();
    v
}

fn newest(dir: &Path) -> PathBuf {
    dir.join(format!("ckpt-{:012}", checkpoints(dir).last().unwrap()))
}

fn setup_error(r: Result<epsilod::Outcome<f32>, RunError>) -> CheckpointError {
    match r {
        Err(RunError::Setup(SetupError::Checkpoint(e))) => e,
        Err(e) => panic!("expected a checkpoint error, got {e}"),
        Ok(_) => panic!("expected a checkpoint error, the run went ahead"),
    }
}

#[test]
fn a_restart_elsewhere_is_bit_identical_and_the_last_two_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [41usize, 36]);
    // Stopped after 30 of 50 iterations, with ALB moving rows meanwhile.
    let first = skeleton(lib, &sizes, 30)
        .devices(vec![
            DeviceSpec::cpu(1),
            DeviceSpec::parse("cpu:threads=1,slowdown=3").unwrap(),
        ])
        .partition(Partition::Weighted(0))
        .alb(Alb::parse("const-iters:every=5").unwrap())
        .checkpoint(7, dir.path())
        .run()
        .unwrap();
    assert_eq!(checkpoints(dir.path()), [21, 28]);
    assert_eq!(
        first
            .report
            .checkpoints
            .iter()
            .map(|c| c.iter)
            .collect::<Vec<_>>(),
        [7, 14, 21, 28]
    );
    let want = reference_of(lib, &sizes, 50);
    for (devices, part) in [
        (cpus(3), Partition::Multi),
        (cpus(1), Partition::Multi),
        (cpus(2), Partition::Weighted(0)),
        (cpus(4), Partition::Single(1)),
    ] {
        let out = skeleton(lib, &sizes, 50)
            .devices(devices)
            .partition(part)
            .restart(dir.path())
            .run()
            .unwrap();
        assert_eq!(bits(&out.grid), want, "restart on {part}");
        assert_eq!(out.report.config.resumed_from, Some(28));
        assert_eq!(out.report.iterations.first().map(|i| i.iter), Some(28));
        assert_eq!(out.report.iterations.len(), 22);
    }
}

#[test]
fn the_heuristic_goes_on_from_its_checkpointed_state() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [40usize, 20]);
    let alb = || {
        Alb::parse("const-iters:every=6")
            .unwrap()
            .unwrap()
            .window(2)
    };
    let run = |iters: u64, how: &str| {
        let s = skeleton(lib, &sizes, iters)
            .devices(cpus(2))
            .partition(Partition::Weighted(0))
            .alb(alb());
        match how {
            "restart" => s.restart(dir.path()),
            "checkpoint" => s.checkpoint(10, dir.path()),
            _ => s,
        }
        .run()
        .unwrap()
    };
    let whole = run(40, "whole");
    let at: Vec<u64> = whole
        .report
        .redistributions
        .iter()
        .map(|r| r.iter)
        .collect();
    assert_eq!(at, [5, 11, 17, 23, 29, 35]);
    run(25, "checkpoint");
    // From the checkpoint at 20: the next rebalance is the uninterrupted
    // run's 23, not a fresh heuristic's first check.
    let resumed = run(40, "restart");
    assert_eq!(resumed.report.config.resumed_from, Some(20));
    let at: Vec<u64> = resumed
        .report
        .redistributions
        .iter()
        .map(|r| r.iter)
        .collect();
    assert_eq!(at, [23, 29, 35]);
    assert_eq!(bits(&resumed.grid), reference_of(lib, &sizes, 40));
}

/// A device ALB dropped (60x slower than the other) resumes dropped: a
/// restart on the same devices starts from the checkpoint's rows, zero
/// included, not from the devices' equal weights. The threshold is a
/// quarter, not the default twentieth: on a loaded 2-core machine, with the
/// binary's other tests beside it, the 60x device once measured only 13x
/// slower and stayed.
#[test]
fn a_dropped_device_resumes_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [514usize, 258]);
    let run = |iters: u64, restart: bool| {
        let s = skeleton(lib, &sizes, iters)
            .devices(vec![
                spec("cpu:threads=1"),
                spec("cpu:threads=1,slowdown=60"),
            ])
            .partition(Partition::Weighted(0))
            .alb(Alb::parse("next-alb").unwrap().unwrap().drop_below(0.25));
        if restart {
            s.restart(dir.path())
        } else {
            s.checkpoint(50, dir.path())
        }
        .run()
        .unwrap()
    };
    let first = run(60, false);
    assert_eq!(first.report.redistributions[0].weights_after, [1.0, 0.0]);
    let resumed = run(80, true);
    assert_eq!(resumed.report.config.resumed_from, Some(50));
    let rows: Vec<usize> = resumed.report.iterations[0]
        .devices
        .iter()
        .map(|d| d.rows)
        .collect();
    assert_eq!(rows, [512, 0]);
    assert!(resumed
        .report
        .redistributions
        .iter()
        .all(|r| r.rows_moved == 0));
    assert_eq!(bits(&resumed.grid), reference_of(lib, &sizes, 80));
}

#[test]
fn a_damaged_newest_checkpoint_falls_back_to_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S3d27, [14usize, 11, 9]);
    skeleton(lib, &sizes, 12)
        .devices(cpus(2))
        .checkpoint(4, dir.path())
        .run()
        .unwrap();
    assert_eq!(checkpoints(dir.path()), [4, 8]);
    let block = newest(dir.path()).join("block-1.bin");
    let mut data = std::fs::read(&block).unwrap();
    data[5] ^= 0x10;
    std::fs::write(&block, data).unwrap();
    let out = skeleton(lib, &sizes, 20)
        .devices(cpus(3))
        .restart(dir.path())
        .run()
        .unwrap();
    assert_eq!(out.report.config.resumed_from, Some(4));
    assert_eq!(bits(&out.grid), reference_of(lib, &sizes, 20));
}

#[test]
fn damaged_and_foreign_checkpoints_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [20usize, 20]);
    // Each write starts over (the directory holds the write before it).
    let write = |every| {
        skeleton(lib, &sizes, 6)
            .devices(cpus(2))
            .checkpoint(every, dir.path())
            .checkpoint_overwrite(true)
            .run()
            .unwrap()
    };
    write(3);
    let restart = |lib: Library, sizes: &[usize]| {
        skeleton(lib, sizes, 10)
            .devices(cpus(1))
            .restart(dir.path())
            .run()
    };
    let ckpt = newest(dir.path());
    let manifest = ckpt.join("manifest.json");
    // Another stencil, size or cell type: refused at once.
    let e = setup_error(restart(Library::S2d8, &sizes));
    assert!(
        matches!(
            &e,
            CheckpointError::Mismatch {
                what: "stencil",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains(&manifest.display().to_string()),
        "{e}"
    );
    assert!(
        e.to_string().contains("2d4") && e.to_string().contains("2d8"),
        "{e}"
    );
    let e = setup_error(restart(lib, &[20, 21]));
    assert!(
        matches!(&e, CheckpointError::Mismatch { what: "size", .. }),
        "{e}"
    );
    let f64_run = Skeleton::new(&sizes, Stencil::<f64>::library(lib, KernelChoice::Generic))
        .iterations(10)
        .devices(cpus(1))
        .restart(dir.path())
        .run();
    match f64_run {
        Err(RunError::Setup(SetupError::Checkpoint(CheckpointError::Mismatch {
            what: "cell type",
            ..
        }))) => {}
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an f32 checkpoint restarted an f64 run"),
    }
    // At or past the end.
    let e = match skeleton(lib, &sizes, 3)
        .devices(cpus(1))
        .restart(dir.path())
        .run()
    {
        Err(RunError::Setup(SetupError::Checkpoint(e))) => e,
        other => panic!("{:?}", other.err().map(|e| e.to_string())),
    };
    assert!(
        matches!(
            e,
            CheckpointError::AtEnd {
                at: 3,
                iters: 3,
                ..
            }
        ),
        "{e}"
    );
    // Every checkpoint truncated: the newest one's error, naming its block.
    for c in checkpoints(dir.path()) {
        let block = dir.path().join(format!("ckpt-{c:012}/block-0.bin"));
        let data = std::fs::read(&block).unwrap();
        std::fs::write(&block, &data[..data.len() - 4]).unwrap();
    }
    let e = setup_error(restart(lib, &sizes));
    assert!(matches!(e, CheckpointError::Length { .. }), "{e}");
    assert!(
        e.to_string()
            .contains(&ckpt.join("block-0.bin").display().to_string()),
        "{e}"
    );
    // Corrupted: the checksum names the block.
    write(3);
    let block = newest(dir.path()).join("block-1.bin");
    for c in checkpoints(dir.path()) {
        let b = dir.path().join(format!("ckpt-{c:012}/block-1.bin"));
        let mut data = std::fs::read(&b).unwrap();
        data[0] ^= 1;
        std::fs::write(&b, data).unwrap();
    }
    let e = setup_error(restart(lib, &sizes));
    assert!(matches!(e, CheckpointError::Checksum { .. }), "{e}");
    assert!(e.to_string().contains(&block.display().to_string()), "{e}");
    // A manifest that is not JSON.
    write(3);
    for c in checkpoints(dir.path()) {
        std::fs::write(dir.path().join(format!("ckpt-{c:012}/manifest.json")), "{").unwrap();
    }
    let e = setup_error(restart(lib, &sizes));
    assert!(matches!(e, CheckpointError::Manifest { .. }), "{e}");
    // No checkpoint at all, or no directory.
    let empty = tempfile::tempdir().unwrap();
    let e = setup_error(
        skeleton(lib, &sizes, 10)
            .devices(cpus(1))
            .restart(empty.path())
            .run(),
    );
    assert!(matches!(e, CheckpointError::None(_)), "{e}");
    let e = setup_error(
        skeleton(lib, &sizes, 10)
            .devices(cpus(1))
            .restart(empty.path().join("missing"))
            .run(),
    );
    assert!(matches!(e, CheckpointError::Io { .. }), "{e}");
}

#[test]
fn a_partial_checkpoint_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [20usize, 20]);
    skeleton(lib, &sizes, 9)
        .devices(cpus(2))
        .checkpoint(4, dir.path())
        .run()
        .unwrap();
    // As a run killed while writing the next one leaves it.
    let partial = dir.path().join(format!(".ckpt-{:012}.partial", 12));
    std::fs::create_dir(&partial).unwrap();
    std::fs::write(partial.join("block-0.bin"), [1u8, 2, 3]).unwrap();
    let out = skeleton(lib, &sizes, 15)
        .devices(cpus(1))
        .restart(dir.path())
        .run()
        .unwrap();
    assert_eq!(out.report.config.resumed_from, Some(8));
    assert_eq!(bits(&out.grid), reference_of(lib, &sizes, 15));
}

fn spec(s: &str) -> DeviceSpec {
    DeviceSpec::parse(s).unwrap()
}

#[test]
fn a_failed_device_is_dropped_and_the_run_recovers_bit_identically() {
    let (lib, sizes, iters) = (Library::S2d4, [42usize, 30], 60);
    let want = reference_of(lib, &sizes, iters);
    let devices = || {
        vec![
            spec("cpu:threads=1"),
            spec("cpu:threads=1,fail@37"),
            spec("cpu:threads=1"),
            spec("cpu:threads=1,fail@52"),
        ]
    };
    // From the last checkpoint before each failure, twice.
    let dir = tempfile::tempdir().unwrap();
    let out = skeleton(lib, &sizes, iters)
        .devices(devices())
        .partition(Partition::Weighted(0))
        .alb(Alb::parse("const-iters:every=7").unwrap())
        .checkpoint(10, dir.path())
        .on_failure(OnFailure::Recover)
        .run()
        .unwrap();
    assert_eq!(bits(&out.grid), want);
    let f = &out.report.failures;
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!((f[0].resumed_from, f[0].devices_left), (30, 3));
    assert_eq!((f[1].resumed_from, f[1].devices_left), (50, 2));
    assert!(f[0].device.contains("fail@37") && f[0].error.contains("iteration 37"));
    assert_eq!(out.report.config.devices.len(), 2);
    // Without checkpoints, from the start.
    let out = skeleton(lib, &sizes, iters)
        .devices(devices())
        .on_failure(OnFailure::Recover)
        .run()
        .unwrap();
    assert_eq!(bits(&out.grid), want);
    assert_eq!(out.report.failures.len(), 2);
    assert!(out.report.failures.iter().all(|f| f.resumed_from == 0));
    // By default a failure ends the run, naming the device.
    match skeleton(lib, &sizes, iters).devices(devices()).run() {
        Err(RunError::Vp {
            vp: 1,
            cause: VpError::Device(e),
            ..
        }) => assert!(e.to_string().contains("fail@37"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a failing device went unnoticed"),
    }
    // The last device standing cannot be dropped.
    let r = skeleton(lib, &sizes, iters)
        .devices(vec![spec("cpu:threads=1,fail@5")])
        .on_failure(OnFailure::Recover)
        .run();
    assert!(matches!(r, Err(RunError::Vp { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Any stop, any devices and partition before and after: the same bits.
    #[test]
    fn restarts_never_change_the_result(
        which in 0usize..4,
        size in 12usize..30,
        every in 1u64..6,
        stop in 1u64..12,
        more in 1u64..8,
        before in (1usize..4, 0usize..3),
        after in (1usize..4, 0usize..3),
    ) {
        let lib = [Library::S2d4, Library::S2dnc8, Library::S3d6, Library::S1dnc4][which];
        let nd = lib.ndims();
        let size = if nd == 3 { size / 2 + 6 } else { size };
        let sizes = vec![size; nd];
        let parts = [Partition::Multi, Partition::Single(0), Partition::Weighted(0)];
        let dir = tempfile::tempdir().unwrap();
        let stop = stop.max(every);
        let first = skeleton(lib, &sizes, stop)
            .devices(cpus(before.0))
            .partition(parts[before.1])
            .checkpoint(every, dir.path())
            .run();
        prop_assume!(first.is_ok());
        let last = (stop - 1) / every * every;
        prop_assume!(last > 0);
        let out = skeleton(lib, &sizes, stop + more)
            .devices(cpus(after.0))
            .partition(parts[after.1])
            .restart(dir.path())
            .run();
        prop_assume!(!matches!(out, Err(RunError::Setup(SetupError::Layout(_)))));
        let out = out.unwrap();
        prop_assert_eq!(out.report.config.resumed_from, Some(last));
        prop_assert_eq!(bits(&out.grid), reference_of(lib, &sizes, stop + more));
    }
}

#[test]
fn snapshots_are_the_field_at_their_iteration_on_any_layout() {
    let (lib, sizes) = (Library::S2d4, [33usize, 27]);
    for (devices, part) in [
        (cpus(1), Partition::Multi),
        (cpus(3), Partition::Multi),
        (cpus(2), Partition::Single(1)),
    ] {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        skeleton(lib, &sizes, 25)
            .devices(devices)
            .partition(part)
            .snapshot(10, move |iter, grid| {
                let bits: Vec<u32> = grid.iter().map(|v| v.to_bits()).collect();
                s2.lock().unwrap().push((iter, bits));
                Ok(())
            })
            .run()
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [10, 20]);
        for (iter, bits) in seen.iter() {
            assert_eq!(*bits, reference_of(lib, &sizes, *iter), "{part} at {iter}");
        }
    }
    // A failing snapshot function ends the run with its reason.
    let r = skeleton(lib, &sizes, 5)
        .devices(cpus(2))
        .snapshot(2, |_, _| Err("disk full".into()))
        .run();
    match r {
        Err(RunError::Vp {
            cause: VpError::Snapshot { iter: 2, why },
            ..
        }) => assert_eq!(why.to_string(), "disk full"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a failing snapshot went unnoticed"),
    }
}

/// A manifest is taken only whole and as written: one whose iteration was
/// edited, one a flipped byte changed, and one whose directory's name
/// gives another iteration are each skipped for the checkpoint before.
#[test]
fn an_edited_or_damaged_manifest_is_never_resumed_from() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [22usize, 19]);
    let write = || {
        skeleton(lib, &sizes, 10)
            .devices(cpus(2))
            .partition(Partition::Weighted(0))
            .checkpoint(4, dir.path())
            .checkpoint_overwrite(true)
            .run()
            .unwrap();
        assert_eq!(checkpoints(dir.path()), [4, 8]);
        newest(dir.path()).join("manifest.json")
    };
    let resumed_from = || {
        let out = skeleton(lib, &sizes, 14)
            .devices(cpus(1))
            .restart(dir.path())
            .run()
            .unwrap();
        assert_eq!(bits(&out.grid), reference_of(lib, &sizes, 14));
        out.report.config.resumed_from
    };
    let edit = |manifest: &Path, f: &dyn Fn(&str) -> String| {
        let text = std::fs::read_to_string(manifest).unwrap();
        let edited = f(&text);
        assert_ne!(edited, text);
        std::fs::write(manifest, edited).unwrap();
    };
    let manifest = write();
    edit(&manifest, &|t| {
        t.replacen("\"iteration\": 8,", "\"iteration\": 9,", 1)
    });
    assert_eq!(resumed_from(), Some(4));
    // One digit of the weights, which still parses.
    let manifest = write();
    edit(&manifest, &|t| {
        let at = t.find("\"weights\"").unwrap();
        let digit = at + t[at..].find(|c: char| c.is_ascii_digit()).unwrap();
        let other = if &t[digit..=digit] == "1" { "2" } else { "1" };
        format!("{}{other}{}", &t[..digit], &t[digit + 1..])
    });
    assert_eq!(resumed_from(), Some(4));
    let manifest = write();
    let renamed = dir.path().join(format!("ckpt-{:012}", 9));
    std::fs::rename(manifest.parent().unwrap(), &renamed).unwrap();
    assert_eq!(resumed_from(), Some(4));
    // Every manifest edited: the newest one's error, naming it.
    std::fs::remove_dir_all(&renamed).unwrap();
    let manifest = write();
    for c in checkpoints(dir.path()) {
        let m = dir.path().join(format!("ckpt-{c:012}/manifest.json"));
        edit(&m, &|t| {
            t.replacen("\"rebalances\": 0", "\"rebalances\": 1", 1)
        });
    }
    let e = setup_error(
        skeleton(lib, &sizes, 14)
            .devices(cpus(1))
            .restart(dir.path())
            .run(),
    );
    assert!(matches!(e, CheckpointError::Manifest { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "bad checkpoint manifest {}: its checksum is ",
            manifest.display()
        )) && text.ends_with("it was edited or damaged"),
        "{text}"
    );
}

/// A run refuses a directory holding another run's checkpoints (here
/// another kernel, which rounds differently) rather than write its own
/// beside them, unless told to replace them; a restart from them is
/// refused too.
#[test]
fn a_directory_of_another_run_is_refused_unless_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [20usize, 17]);
    let run = |choice: KernelChoice, iters: u64| {
        let spec = lib.spec();
        Skeleton::new(&sizes, Stencil::<f32>::library(lib, choice))
            .iterations(iters)
            .init(irregular_init(sizes.to_vec(), spec.low, spec.high, 7))
            .devices(cpus(2))
    };
    run(KernelChoice::Specialized, 12)
        .checkpoint(5, dir.path())
        .run()
        .unwrap();
    let manifest = newest(dir.path()).join("manifest.json");
    let e = setup_error(
        run(KernelChoice::Generic, 12)
            .checkpoint(5, dir.path())
            .run(),
    );
    assert!(matches!(e, CheckpointError::Foreign { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "checkpoint {} is of another run: its kernel is specialized, this run's is generic; to write checkpoints into {}, resume that run with --restart, or give another --checkpoint-dir, or add --checkpoint-overwrite to replace its checkpoints",
            manifest.display(),
            dir.path().display()
        )
    );
    assert_eq!(checkpoints(dir.path()), [5, 10]);
    let e = setup_error(run(KernelChoice::Generic, 20).restart(dir.path()).run());
    assert!(
        matches!(e, CheckpointError::Mismatch { what: "kernel", .. }),
        "{e}"
    );
    // Replaced: only the new run's checkpoints remain, and they resume it.
    let whole = run(KernelChoice::Generic, 20).run().unwrap();
    run(KernelChoice::Generic, 12)
        .checkpoint(5, dir.path())
        .checkpoint_overwrite(true)
        .run()
        .unwrap();
    assert_eq!(checkpoints(dir.path()), [5, 10]);
    let resumed = run(KernelChoice::Generic, 20)
        .restart(dir.path())
        .run()
        .unwrap();
    assert_eq!(resumed.report.config.resumed_from, Some(10));
    assert_eq!(bits(&resumed.grid), bits(&whole.grid));
    let e = setup_error(run(KernelChoice::Specialized, 20).restart(dir.path()).run());
    assert!(
        matches!(e, CheckpointError::Mismatch { what: "kernel", .. }),
        "{e}"
    );
}

/// The checkpoints an identical earlier run left in the directory are not
/// this run's: a fresh run refuses them (starting over would replace their
/// progress); one told to replace them recovers from its own checkpoints
/// (or the start), and its own are what the directory keeps.
#[test]
fn a_recovery_goes_on_from_its_own_checkpoints_only() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes, iters) = (Library::S2d4, [42usize, 30], 60);
    skeleton(lib, &sizes, iters)
        .devices(cpus(2))
        .checkpoint(10, dir.path())
        .run()
        .unwrap();
    assert_eq!(checkpoints(dir.path()), [40, 50]);
    let again = || {
        skeleton(lib, &sizes, iters)
            .devices(vec![
                spec("cpu:threads=1"),
                spec("cpu:threads=1,fail@27"),
                spec("cpu:threads=1"),
            ])
            .checkpoint(10, dir.path())
            .on_failure(OnFailure::Recover)
    };
    let e = setup_error(again().run());
    assert!(
        matches!(
            e,
            CheckpointError::Earlier {
                held: Held {
                    newest: 50,
                    usable: Some(50)
                },
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(checkpoints(dir.path()), [40, 50]);
    let out = again().checkpoint_overwrite(true).run().unwrap();
    assert_eq!(bits(&out.grid), reference_of(lib, &sizes, iters));
    let f = &out.report.failures;
    // 20, or 10 where 20's commit still waited for a block when the device
    // failed and was cancelled with the attempt.
    assert!(
        f.len() == 1 && [10, 20].contains(&f[0].resumed_from),
        "{f:?}"
    );
    assert_eq!(checkpoints(dir.path()), [40, 50]);
}

/// A directory whose lock another run holds is refused at once, naming
/// the holder as its lock file gives it; once let go, a run takes it and
/// removes the file when it ends.
#[test]
fn a_directory_another_run_holds_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (lib, sizes) = (Library::S2d4, [20usize, 20]);
    let lock = dir.path().join(".lock");
    let mut held = std::fs::File::create(&lock).unwrap();
    held.try_lock().unwrap();
    std::io::Write::write_all(&mut held, b"pid 4242 on elsewhere\n").unwrap();
    let started = std::time::Instant::now();
    let e = setup_error(
        skeleton(lib, &sizes, 400)
            .devices(cpus(1))
            .checkpoint(100, dir.path())
            .run(),
    );
    assert_eq!(
        e.to_string(),
        format!(
            "checkpoint directory {} is in use by another run (pid 4242 on elsewhere): wait for it to end, or give another --checkpoint-dir",
            dir.path().display()
        )
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert!(checkpoints(dir.path()).is_empty());
    drop(held);
    skeleton(lib, &sizes, 400)
        .devices(cpus(1))
        .checkpoint(100, dir.path())
        .run()
        .unwrap();
    assert_eq!(checkpoints(dir.path()), [200, 300]);
    assert!(!lock.exists());
}

/// A directory no file can be made in, where this test can find one: an
/// unwritable one, or, where permissions bind no one (root), `/sys`'s,
/// which refuses new files to anyone.
fn unwritable_dir(under: &Path) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let ro = under.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        if std::fs::write(ro.join("x"), "").is_err() {
            return Some(ro);
        }
        let sys = Path::new("/sys/kernel");
        if sys.is_dir() && std::fs::write(sys.join(".epsilod-probe"), "").is_err() {
            return Some(sys.to_path_buf());
        }
    }
    let _ = under;
    None
}

/// An unwritable checkpoint directory is refused before the first
/// iteration with its OS error, not found at the first checkpoint.
#[test]
fn an_unwritable_directory_is_refused_before_the_first_iteration() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(ro) = unwritable_dir(tmp.path()) else {
        eprintln!("skipped: no unwritable directory here");
        return;
    };
    let e = setup_error(
        skeleton(Library::S2d4, &[20, 20], 300)
            .devices(cpus(1))
            .checkpoint(100, &ro)
            .run(),
    );
    assert!(matches!(e, CheckpointError::NotWritable { .. }), "{e}");
    let text = e.to_string();
    let head = format!("checkpoint directory {} is not writable: ", ro.display());
    assert!(
        text.starts_with(&head) && text.contains("(os error "),
        "{text}"
    );
}

/// A block that cannot be written (its file is /dev/full's: no space left)
/// ends the run with the OS error and the file, every time, whichever
/// process reports first.
#[cfg(unix)]
#[test]
fn a_failed_block_write_ends_the_run_with_its_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join(format!(".ckpt-{:012}.partial", 4));
    std::fs::create_dir(&partial).unwrap();
    let tmp = partial.join("block-1.bin.tmp");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    for round in 0..4 {
        let r = skeleton(Library::S2d4, &[20, 20], 6)
            .devices(cpus(2))
            .checkpoint(4, dir.path())
            .run();
        match r {
            Err(e @ RunError::Vp { .. }) => {
                let text = epsilod::error::chain(&e);
                assert!(
                    text.contains(&tmp.display().to_string())
                        && text.contains("No space left on device (os error 28)"),
                    "round {round}: {text}"
                );
            }
            Err(e) => panic!("round {round}: {e}"),
            Ok(_) => panic!("round {round}: a failed checkpoint went unnoticed"),
        }
    }
    assert!(checkpoints(dir.path()).is_empty());
}

//! A run inside a real memory cgroup (a batch job's memory limit, as
//! Slurm's `--mem` sets it): one larger than the limit is refused in one
//! line that names the limit, before it allocates (not killed by the
//! kernel), and one that fits runs. Needs root and a writable memory
//! controller (cgroup v1's `/sys/fs/cgroup/memory`, or cgroup v2 at
//! `/sys/fs/cgroup`, where epsilod looks); elsewhere it says why and passes.
//! It leaves the machine's cgroups as it found them: its group removed, and
//! under v2 the root's memory controller handed down only if it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The group's limit: far below the machine, above the binary's own needs.
const LIMIT: u64 = 96 << 20;

/// A memory cgroup of its own, removed when dropped (a failed assertion
/// included).
struct Group {
    dir: PathBuf,
    /// The file epsilod must name: the limit it was given.
    limit_file: PathBuf,
    /// The memory controller this test handed down, taken back after the
    /// group is removed (fields drop after `Drop::drop`).
    _handed_down: Option<HandedDown>,
}

/// A controller written to a `cgroup.subtree_control`, written back out
/// when dropped: the machine's cgroups are left as they were found.
struct HandedDown {
    file: PathBuf,
    controller: &'static str,
}

impl Drop for HandedDown {
    fn drop(&mut self) {
        // Refused while a child group still uses it; nothing more to do then.
        let _ = fs::write(&self.file, format!("-{}", self.controller));
    }
}

/// Hands `controller` down to the child groups of `dir` where its
/// `cgroup.subtree_control` lacks it, and returns what to take back; `None`
/// where it was handed down already (by someone else, to be left so).
fn hand_down(dir: &Path, controller: &'static str) -> Result<Option<HandedDown>, String> {
    let file = dir.join("cgroup.subtree_control");
    let enabled =
        fs::read_to_string(&file).is_ok_and(|c| c.split_whitespace().any(|c| c == controller));
    if enabled {
        return Ok(None);
    }
    fs::write(&file, format!("+{controller}"))
        .map_err(|e| format!("cannot enable cgroup v2's {controller} controller: {e}"))?;
    Ok(Some(HandedDown { file, controller }))
}

impl Group {
    /// Makes `epsilod-test-PID-TAG` with a limit of `LIMIT`, or says why not.
    fn new(tag: &str) -> Result<Group, String> {
        let name = format!("epsilod-test-{}-{tag}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let v2 = Path::new("/sys/fs/cgroup");
        let (parent, file, handed_down) = if v1.join("memory.limit_in_bytes").exists() {
            (v1, "memory.limit_in_bytes", None)
        } else if fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
        {
            // A child group of the root gets the controller only where the
            // root hands it down.
            (v2, "memory.max", hand_down(v2, "memory")?)
        } else {
            return Err("no memory cgroup controller at /sys/fs/cgroup (v1 or v2)".into());
        };
        let dir = parent.join(name);
        fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let group = Group {
            limit_file: dir.join(file),
            dir,
            _handed_down: handed_down,
        };
        fs::write(&group.limit_file, LIMIT.to_string())
            .map_err(|e| format!("cannot set {}: {e}", group.limit_file.display()))?;
        Ok(group)
    }

    /// Runs the binary with `args` inside the group from its start.
    fn run(&self, args: &[&str]) -> Output {
        let procs = self.dir.join("cgroup.procs");
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > '{}' && exec \"$0\" \"$@\"",
                procs.display()
            ))
            .arg(env!("CARGO_BIN_EXE_epsilod"))
            .args(args)
            .output()
            .expect("sh runs")
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // Its processes have ended; an empty group is removed by rmdir.
        let _ = fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_run_over_its_cgroups_memory_limit_is_refused_naming_the_limit() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let group = match Group::new("over") {
        Ok(g) => g,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    // 4098² f32 cells, two buffers: 134 MB, over the 101 MB limit.
    let big = [
        "run",
        "2d4",
        "--size",
        "4098x4098",
        "--iters",
        "1",
        "--devices",
        "cpu:threads=1",
    ];
    let out = group.run(&big);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "not refused (137: OOM-killed): {err}"
    );
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    let want = format!(
        "and 101 MB is available to it (the memory limit of its cgroup, {}: the job's memory limit",
        group.limit_file.display()
    );
    assert!(
        err.starts_with("error: the run needs 134 MB of memory on host "),
        "{err}"
    );
    assert!(err.contains(&want), "{err:?} lacks {want:?}");
    assert!(err.contains("--mem"), "{err}");

    // A run that fits the same limit runs.
    let small = [
        "run",
        "2d4",
        "--size",
        "1026x1026",
        "--iters",
        "2",
        "--devices",
        "cpu:threads=1",
    ];
    let out = group.run(&small);
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The controller is taken back where this test handed it down, on a
/// failed assertion too, and left where it was already: on a stand-in for
/// the root's `cgroup.subtree_control` (a plain file keeps the last write).
#[test]
fn a_controller_handed_down_is_taken_back_and_one_found_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cgroup.subtree_control");
    fs::write(&file, "cpu io\n").unwrap();
    let guard = hand_down(dir.path(), "memory").unwrap();
    assert_eq!(fs::read_to_string(&file).unwrap(), "+memory");
    let failed = std::panic::catch_unwind(move || {
        let _guard = guard;
        panic!("an assertion fails");
    });
    assert!(failed.is_err());
    assert_eq!(fs::read_to_string(&file).unwrap(), "-memory");

    fs::write(&file, "cpu memory pids\n").unwrap();
    assert!(hand_down(dir.path(), "memory").unwrap().is_none());
    assert_eq!(fs::read_to_string(&file).unwrap(), "cpu memory pids\n");
    // "memoryx" is another controller: this one is handed down.
    fs::write(&file, "memoryx\n").unwrap();
    drop(hand_down(dir.path(), "memory").unwrap().unwrap());
    assert_eq!(fs::read_to_string(&file).unwrap(), "-memory");
}

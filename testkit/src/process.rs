//! Tests that need a process of their own: one that changes the process's
//! environment or a process-wide switch, or one that runs as the ranks of a
//! real `mpirun` job. Each crate's integration tests are one binary, whose
//! tests share a process under `cargo test`; these helpers start the test
//! binary again with only the calling test, so they hold under any runner.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in a process these helpers started, to the test it runs.
const CHILD: &str = "EPSILOD_TEST_CHILD";

/// A child process is killed after this long: a test never hangs CI.
const DEADLINE: Duration = Duration::from_secs(180);

/// Runs `body` in a process of its own with `env` set: the test binary is
/// started again with only `test` (its full name, such as
/// `"launch::a_program_started_by_mpirun"`) and the test passes when that
/// process does. In that process, `body` runs.
pub fn in_own_process(test: &str, env: &[(&str, &str)], body: impl FnOnce()) {
    if std::env::var(CHILD).as_deref() == Ok(test) {
        body();
        return;
    }
    let mut cmd = harness_command(test);
    cmd.envs(env.iter().copied()).env(CHILD, test);
    wait_for(cmd, test);
}

/// Whether this process is a rank of an `mpirun` (or other PMI) job.
pub fn is_mpi_rank() -> bool {
    std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() || std::env::var_os("PMI_SIZE").is_some()
}

/// Runs `body` on every rank of `mpirun --oversubscribe -np ranks`, started
/// on the test binary with only `test`; the test passes when every rank
/// does. A missing `mpirun` fails the test with how to install it.
pub fn under_mpirun(test: &str, ranks: usize, body: impl FnOnce()) {
    if is_mpi_rank() {
        body();
        return;
    }
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(std::env::current_exe().expect("the test's own path"))
        .args(harness_args(test))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    wait_for(cmd, test);
}

/// This test binary, to run `test` alone.
fn harness_command(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test's own path"));
    cmd.args(harness_args(test));
    cmd
}

fn harness_args(test: &str) -> [&str; 5] {
    [test, "--exact", "--nocapture", "--test-threads", "1"]
}

/// Runs `cmd` to its end (killing it past [`DEADLINE`]) and fails with its
/// output unless it succeeded and ran `test`.
fn wait_for(mut cmd: Command, test: &str) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?} ({e})", cmd.get_program()));
    // Read while waiting: a full pipe would stall the child.
    let pipe = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = pipe(child.stdout.take().map(|p| Box::new(p) as _));
    let err = pipe(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let what = match status {
        None => format!("{test}: killed after {} s", DEADLINE.as_secs()),
        Some(s) if !s.success() => format!("{test}: {s}"),
        // A name that matched nothing would pass without running.
        Some(_) if !out.contains("1 passed") => format!("{test}: the child ran no test"),
        Some(_) => return,
    };
    panic!("{what}\n--- stdout\n{out}\n--- stderr\n{err}");
}

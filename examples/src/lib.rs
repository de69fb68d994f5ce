//! Shared by the example binaries: join the MPI job when mpirun started
//! the program, and report an error as one line, never a backtrace.

use std::process::ExitCode;

/// Joins the job (see `epsilod::Cluster`), runs `app`, and prints its error
/// as `error: ...` with its causes. Under MPI only rank 0 prints: every rank
/// meets the same error (a rank failing alone ends the job itself).
pub fn main(app: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    // The launcher's variables, read here: the library never reads the
    // environment.
    let launch = epsilod::Launch::from_vars(|k| std::env::var(k).ok());
    let cluster = match epsilod::Cluster::join(launch) {
        Ok(c) => c,
        Err(e) => {
            if launch.prints_for_all_ranks() {
                epsilod::cluster::print_error(&epsilod::error::chain(&e));
            }
            return ExitCode::FAILURE;
        }
    };
    let result = app();
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if cluster.is_root() {
                epsilod::cluster::print_error(&format!("{e:#}"));
            }
            ExitCode::FAILURE
        }
    };
    // Waits for every rank (see Cluster): printed first, so nothing is lost.
    drop(cluster);
    code
}

/// Devices as `epsilod run --devices` writes them.
pub fn devices(specs: &[String]) -> anyhow::Result<Vec<epsilod::DeviceSpec>> {
    Ok(specs
        .iter()
        .map(|d| epsilod::DeviceSpec::parse(d))
        .collect::<Result<Vec<_>, _>>()?)
}

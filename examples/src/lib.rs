//! Shared by the example binaries: report an error as one line, never a
//! backtrace.

use std::process::ExitCode;

/// Prints `error: ...` (with its causes) and fails, or succeeds.
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

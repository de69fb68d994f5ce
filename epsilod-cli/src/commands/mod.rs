//! One module per command.

mod calibrate;
mod commbench;
mod compare;
mod distinct_files;
mod fit_comm;
mod list;
mod memory;
mod plan;
mod plot;
mod predict;
mod replay;
mod run;
mod run_exchanges;
mod scale;
mod signature;
mod simulate;

use crate::args::Command;
use crate::error::CliError;
use epsilod::Cluster;

/// Runs `command` in `cluster`.
pub fn dispatch(command: Command, cluster: &Cluster) -> Result<(), CliError> {
    match command {
        Command::Run(args) => run::run(&args, cluster),
        Command::Compare(args) => compare::compare(&args, cluster),
        Command::Plot(args) => plot::plot(&args),
        Command::View(args) => {
            let files: Vec<&std::path::Path> = args.files.iter().map(|f| f.as_path()).collect();
            crate::view::view(&files, &args.output, args.slice, args.field, args.delay)
        }
        Command::Predict(args) => predict::predict(&args),
        Command::Simulate(args) => simulate::simulate(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args, cluster),
        Command::List(args) => list::list(&args),
        Command::Signature(args) => signature::signature(&args, cluster),
        Command::Scale(args) => scale::scale(&args),
        Command::Commbench(args) => commbench::commbench(&args, cluster),
        Command::FitComm(args) => fit_comm::fit_comm(&args),
        Command::Replay(args) => replay::replay(&args, cluster),
    }
}

/// Errors unless a report or table can be written at `path`.
fn check_report_path(path: &std::path::Path) -> Result<(), CliError> {
    epsilod::output::check_creatable(path).map_err(|e| CliError::Report {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// Writes `text` to the report or table file `path`, whole or not at all.
fn write_report(path: &std::path::Path, text: String) -> Result<(), CliError> {
    epsilod::output::write_whole(path, |p| std::fs::write(p, text)).map_err(|e| CliError::Report {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

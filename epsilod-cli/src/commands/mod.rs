//! One module per command.

mod calibrate;
mod commbench;
mod compare;
mod distinct_files;
mod fit_comm;
mod heuristic_list;
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

/// Errors unless the file `path` can be written; `what` it holds (a
/// report, a CSV table, a model) names it in the message.
fn check_file_path(what: &'static str, path: &std::path::Path) -> Result<(), CliError> {
    epsilod::output::check_creatable(path).map_err(|e| CliError::Write {
        what,
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// Writes `text` to the file `path` holding `what`, whole or not at all.
fn write_file(what: &'static str, path: &std::path::Path, text: String) -> Result<(), CliError> {
    epsilod::output::write_whole(path, |p| std::fs::write(p, text)).map_err(|e| CliError::Write {
        what,
        path: path.display().to_string(),
        why: e.to_string(),
    })
}

/// The line for a comma list (`text`, split into `items`) with an empty
/// item, said by where it is (`none,`, `,none`, `none,,next-alb`); `None`
/// where every item has a name. `noun` names one item; `example` is a
/// right list.
fn empty_item<S: AsRef<str>>(
    option: &str,
    text: &str,
    items: &[S],
    noun: &str,
    example: &str,
) -> Option<CliError> {
    let empty = |i: &S| i.as_ref().trim().is_empty();
    if items.len() < 2 || !items.iter().any(empty) {
        return None;
    }
    let named = !items.iter().all(empty);
    let t = text.trim();
    let line = if named && t.ends_with(',') {
        format!(
            "{option} '{text}' ends with a comma: drop it, or name a {noun} after it ({example})"
        )
    } else if named && t.starts_with(',') {
        format!("{option} '{text}' starts with a comma: drop it ({example})")
    } else {
        format!(
            "{option} '{text}' has an empty name between commas: separate {noun}s by single commas ({example})"
        )
    };
    Some(CliError::Usage(line))
}

/// Errors where a list repeats an item (`--method overlap,overlap`): the
/// command would do the same work and print the same lines twice, and a
/// repeat is likelier a slip for another item than meant.
fn once_each<T: PartialEq + std::fmt::Display>(
    option: &str,
    items: &[T],
    noun: &str,
) -> Result<(), CliError> {
    match items
        .iter()
        .enumerate()
        .find(|&(k, a)| items[..k].contains(a))
    {
        Some((_, twice)) => Err(CliError::Usage(format!(
            "{option} names {twice} twice: give each {noun} once"
        ))),
        None => Ok(()),
    }
}

/// The warning for `--alb-drop-below` `value` where no heuristic balances.
fn drop_below_unused(value: f64) -> String {
    format!(
        "--alb-drop-below {value} does nothing without load balancing (--alb none): give a heuristic with --alb, or leave it out"
    )
}

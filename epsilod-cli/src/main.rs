//! The `epsilod` command line, one module of `commands` a subcommand
//! (docs/cli.md is the contract). Exit status 0 on success; otherwise one
//! line on stderr saying what is wrong and how to fix it. Output into a
//! reader that went away (`| head`) ends the command quietly, with status
//! 141.

#![forbid(unsafe_code)]

mod args;
mod bitmap;
mod commands;
mod error;
mod json;
mod knobs;
mod log_lines;
mod machine_file;
mod plot;
mod progress;
mod sizes;
mod stats;
mod target;
mod view;

use args::Cli;
use clap::{CommandFactory, FromArgMatches};
use epsilod::cluster::{print_error, usage_error_line};
use epsilod::error::chain;
use epsilod::Cluster;
use std::io::IsTerminal;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The status of a command whose reader went away: what a shell reports
/// for one killed by SIGPIPE (128 + 13), as `yes | head` gives.
const CLOSED_PIPE: i32 = 141;

fn main() {
    quiet_on_closed_pipe();
    std::process::exit(run());
}

/// `println!` panics when stdout's reader has gone (`epsilod list | head
/// -1`; Rust ignores SIGPIPE, so the write fails instead): this ends the
/// process there, quietly, whatever command or thread printed.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe(message) {
            std::process::exit(CLOSED_PIPE);
        }
        // Any other failed print (stdout onto a full disk): one line, not a
        // panic; written without `eprintln!`, which panics where stderr fails.
        if let Some(why) = message.strip_prefix("failed printing to ") {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: cannot write to {why}");
            std::process::exit(1);
        }
        default(info)
    }));
}

/// Whether `message` is the panic of `print!` or `eprint!` on a closed
/// pipe: std's "failed printing to stdout: Broken pipe (os error 32)" (the
/// C library's text for EPIPE: Rust never sets a locale that translates it).
fn is_closed_pipe(message: &str) -> bool {
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

/// Runs the command line; returns the process exit status.
fn run() -> i32 {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .event_format(log_lines::LogLines)
        .finish()
        .with(knobs::log_filter())
        .try_init();
    // A negative number reaches the option's own check ("-1 is not in
    // 1..=64") instead of reading as an unknown option "-1".
    let launch = knobs::launch();
    let command = Cli::command().mut_subcommands(|s| s.allow_negative_numbers(true));
    let cli = match command
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => return bad_arguments(e, launch.prints_for_all_ranks()),
    };
    // Under mpirun every rank runs this; rank 0 alone prints for them.
    let cluster = match Cluster::join(launch) {
        Ok(c) => c,
        Err(e) => {
            if launch.prints_for_all_ranks() {
                print_error(&chain(&e));
            }
            return 1;
        }
    };
    let code = match commands::dispatch(cli.command, &cluster) {
        Ok(()) => 0,
        Err(e) => {
            if cluster.is_root() {
                print_error(&chain(&e));
            }
            1
        }
    };
    // Waits for every rank (see Cluster): printed first, so nothing is lost.
    drop(cluster);
    code
}

/// Help and version go to stdout with status 0; anything else is one line,
/// printed where `prints` (by one rank of several).
fn bad_arguments(e: clap::Error, prints: bool) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        if let Err(why) = e.print() {
            return failed_print(why);
        }
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            2
        } else {
            0
        };
    }
    if prints {
        print_error(&usage_error_line(&e.render().to_string(), "epsilod"));
    }
    2
}

/// The status of help or version text that could not be printed: quiet
/// where the reader went away, else one line (stdout onto a full disk).
fn failed_print(why: std::io::Error) -> i32 {
    if why.kind() == std::io::ErrorKind::BrokenPipe {
        return CLOSED_PIPE;
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "error: cannot write to stdout: {why}");
    1
}

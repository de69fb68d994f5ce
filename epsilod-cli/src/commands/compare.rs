//! `epsilod compare`: the heuristics of `--alb a,b,c`, `--reps` runs each.

use super::heuristic_list::split_heuristics;
use super::run::run_config;
use super::{check_file_path, write_file};
use crate::args::CompareArgs;
use crate::error::CliError;
use crate::json::JsonOut;
use crate::stats;
use epsilod::{Alb, Cluster, Report};

pub fn compare(args: &CompareArgs, cluster: &Cluster) -> Result<(), CliError> {
    let names = split_heuristics(&args.run.alb)?;
    for n in &names {
        Alb::parse(n)?;
    }
    if args.reps < 2 {
        return Err(CliError::Usage(format!(
            "--reps {} is too few for statistics: use at least 2",
            args.reps
        )));
    }
    if args.run.output.is_some() || args.run.report.is_some() {
        return Err(CliError::Usage(
            "compare writes no --output or --report: use --csv or --json for its table".into(),
        ));
    }
    // A restart would time only the iterations left, and checkpoints or
    // snapshots add writes to some runs' loops: the table compares whole
    // runs alike.
    if let Some(option) = args.run.resumes_or_writes_in_loop() {
        return Err(CliError::Usage(format!(
            "compare times whole runs: leave out {option}"
        )));
    }
    let json = JsonOut::of(args.json.as_ref());
    if cluster.is_root() {
        super::distinct_files::apart_from_run(
            &[("--csv", args.csv.as_deref()), ("--json", json.file())],
            &args.run,
        )?;
        if let Some(p) = &args.csv {
            check_file_path("CSV", p)?;
        }
        json.check()?;
    }
    let mut reports: Vec<Vec<Report>> = vec![Vec::new(); names.len()];
    for rep in 0..args.reps {
        for (h, name) in names.iter().enumerate() {
            let r = run_config(&args.run, name, false, true, cluster)?;
            if !args.run.quiet && cluster.is_root() {
                eprintln!(
                    "run {}/{} {name}: loop {:.4} s, {} rebalance(s)",
                    rep + 1,
                    args.reps,
                    r.summary.loop_seconds,
                    r.summary.rebalances
                );
            }
            reports[h].push(r);
        }
    }
    if !cluster.is_root() {
        return Ok(());
    }
    let rows = stats::table(&names, &reports);
    // The files first: a reader that stops early (`| head`) ends the
    // command at its first line it cannot print.
    if let Some(p) = &args.csv {
        write_file("CSV", p, stats::csv(&rows))?;
    }
    if json != JsonOut::None {
        let runs: Vec<serde_json::Value> = names
            .iter()
            .zip(&reports)
            .map(|(n, rs)| serde_json::json!({ "heuristic": n, "summaries": rs.iter().map(|r| &r.summary).collect::<Vec<_>>() }))
            .collect();
        let doc =
            serde_json::json!({ "config": reports[0][0].config, "table": rows, "runs": runs });
        json.write(&doc)?;
    }
    if json.prints_text() {
        print!("{}", stats::render(&rows));
        // Notes for people, as a run's summary: `--quiet` leaves the table.
        let notes = if args.run.quiet {
            &[][..]
        } else {
            &reports[..]
        };
        for (n, rs) in names.iter().zip(notes) {
            for (i, r) in rs.iter().enumerate() {
                for s in &r.summary.slow_spells {
                    println!("{n} run {}: {}", i + 1, s.line());
                }
            }
        }
    }
    Ok(())
}

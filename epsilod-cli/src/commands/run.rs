//! `epsilod run`: one run, its files, and a summary on stdout.

use super::{check_file_path, write_file};
use crate::args::RunArgs;
use crate::error::CliError;
use crate::progress::Bar;
use crate::sizes::{parse_size, size_text};
use crate::target::{aux_files, Target};
use epsilod::devices::{ignored_weights, load_device_file, one_cpu_per_rank, unreached, Placed};
use epsilod::output::Snapshots;
use epsilod::{
    output, Alb, Checkpointing, Cluster, DeviceSpec, JobInfo, Report, RunOptions, Skeleton,
};
use epsilod_apps::{App, Params};
use hitmap::{Footprint, Layout, Partition};
use std::io::IsTerminal;
use std::time::Duration;

pub fn run(args: &RunArgs, cluster: &Cluster) -> Result<(), CliError> {
    let r = run_config(args, &args.alb, true, true, cluster)?;
    if !args.quiet && cluster.is_root() {
        print_summary(&r);
    }
    Ok(())
}

/// The run's size: `--size`, or an app's input's, which `--size` (if
/// given too) must equal.
fn size_of(args: &RunArgs, app: &dyn App) -> Result<Vec<usize>, CliError> {
    let given = args
        .size
        .as_deref()
        .map(|s| parse_size(s, app.ndims()))
        .transpose()?;
    let Some(input) = &args.input else {
        return given.ok_or_else(|| CliError::Usage("give --size (or an app's --input)".into()));
    };
    if app.input().is_none() {
        return Err(CliError::InputNotRead(args.stencil.clone()));
    }
    let of_input = app.size_of_input(input).map_err(|e| CliError::Input {
        path: input.display().to_string(),
        why: e.to_string(),
    })?;
    match given {
        Some(s) if s != of_input => Err(CliError::Size {
            size: size_text(&s),
            why: format!(
                "the input {} is {}: leave --size out or give that",
                input.display(),
                size_text(&of_input)
            ),
        }),
        _ => Ok(of_input),
    }
}

/// The devices and, when a device file places them on ranks, their ranks.
/// Given neither, one CPU device per rank on its share of its host's cores.
fn devices(args: &RunArgs, job: &JobInfo) -> Result<Placed, CliError> {
    let (specs, placement) = match (&args.device_file, args.devices.is_empty()) {
        (Some(_), false) => return Err(CliError::DevicesTwice),
        (Some(f), true) => load_device_file(f)?.place(&job.hosts)?,
        (None, false) => (
            args.devices
                .iter()
                .map(|d| DeviceSpec::parse(d))
                .collect::<Result<_, _>>()?,
            None,
        ),
        (None, true) => one_cpu_per_rank(job),
    };
    Ok((crate::knobs::tune(specs)?, placement))
}

/// The tiles `--weights-from` splits: the interior's rows along the
/// weighted dimension, the cells of a row, the stencil's reach in rows and
/// a cell's bytes (what a split's working set depends on).
struct Tiles {
    rows: u64,
    cells_per_row: u64,
    halo_rows: u64,
    cell_bytes: f64,
}

fn tiles_of(stencil: &str, interior: &[u64], boundary: Vec<usize>, partition: Partition) -> Tiles {
    let d = match partition {
        Partition::Weighted(d) if d < interior.len() => d,
        _ => 0,
    };
    // An app is no stencil file: its boundary gives the reach, cells of
    // one f32 component.
    let (halo_rows, cell_bytes) = match super::predict::stencil_shape(stencil) {
        Ok((shape, _)) => (shape.reach, shape.cell_bytes as f64),
        Err(_) => (boundary.get(d).map_or(1, |b| b.div_ceil(2)) as u64, 4.0),
    };
    Tiles {
        rows: interior.get(d).copied().unwrap_or(0),
        cells_per_row: interior
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != d)
            .map(|(_, &n)| n)
            .product(),
        halo_rows,
        cell_bytes,
    }
}

/// Model-seeded partition: each device's weight becomes its cells in the
/// split of the interior that equalises the calibrated kernel times at the
/// run's own tiles (`Machine::seeded_weights_for`: a device in host memory
/// costs what the memory curve gives at the split's working set;
/// proportional to the relative powers when no device has a fixed cost, a
/// tile curve or such a cost), so the first ALB window starts near balance.
fn seed_weights(
    devices: &mut [DeviceSpec],
    machine: &models::predict::Machine,
    tiles: &Tiles,
    drop_below: f64,
    path: &std::path::Path,
) -> Result<(), CliError> {
    if machine.devices.len() != devices.len() {
        return Err(CliError::MachineModel {
            path: path.display().to_string(),
            why: format!(
                "it describes {} devices, the run has {}: calibrate this device set",
                machine.devices.len(),
                devices.len()
            ),
        });
    }
    let mut weights = machine.seeded_weights_for(
        tiles.rows,
        tiles.cells_per_row,
        tiles.halo_rows,
        tiles.cell_bytes,
    );
    // The model's shares are throughputs at the balanced tiles: a device the
    // ALB rule would drop at its first rebalance starts without rows, so
    // the run does not pay its iterations (or the move) until then.
    for d in heuristics::Roster::new(weights.len(), drop_below).too_slow(&weights) {
        weights[d] = 0.0;
    }
    for (d, w) in devices.iter_mut().zip(weights) {
        d.weight = w;
    }
    Ok(())
}

/// A run whose arguments are all checked.
struct Checked {
    /// What runs, set up as the arguments say.
    target: Target,
    size: Vec<usize>,
    options: RunOptions,
    /// An app's parameters.
    params: Params,
    /// What the run will not do as asked, though it can go on: one line
    /// each for stderr.
    warnings: Vec<String>,
    /// Options that change nothing in a run of these arguments (a slowdown
    /// past `--iters`, `--alb-drop-below` without ALB): one line each, for
    /// the arguments as the user gave them only (`calibrate` and
    /// `signature` set their own iterations and drop fraction).
    moot: Vec<String>,
}

/// The options a run ignores, with why: each device's `weight=` and
/// `--weights-from` under a partition that does not split by weight.
fn ignored_options(args: &RunArgs, devices: &[DeviceSpec]) -> Vec<String> {
    let mut warnings: Vec<String> = ignored_weights(devices, args.partition)
        .iter()
        .map(ToString::to_string)
        .collect();
    if let (Some(path), false) = (
        &args.weights_from,
        matches!(args.partition, Partition::Weighted(_)),
    ) {
        warnings.push(format!(
            "--partition {} ignores --weights-from {}: only w<d> partitions split rows by weight (e.g. --partition w0)",
            args.partition,
            path.display()
        ));
    }
    warnings
}

/// `--alb-drop-below` where nothing reads it: no heuristic of `--alb` (a
/// list, under compare) balances, and no `--weights-from` seeds the rows.
/// Given is told from the default, whose value changes nothing either way.
fn unused_drop_below(args: &RunArgs) -> Option<String> {
    let none_balances = super::heuristic_list::split_heuristics(&args.alb)
        .is_ok_and(|names| names.iter().all(|n| matches!(Alb::parse(n), Ok(None))));
    (none_balances && args.weights_from.is_none() && args.alb_drop_below != heuristics::DROP_BELOW)
        .then(|| super::drop_below_unused(args.alb_drop_below))
}

/// Prints `warnings` on stderr, once a process: compare and calibrate run
/// the same arguments many times.
fn warn_once(warnings: &[String]) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    if !warnings.is_empty() {
        WARNED.call_once(|| {
            for w in warnings {
                eprintln!("warning: {w}");
            }
        });
    }
}

/// Everything that can be wrong with a run, found before any work starts.
fn check(args: &RunArgs, alb: &str, cluster: &Cluster) -> Result<Checked, CliError> {
    let target = Target::resolve(&args.stencil)?;
    let app = target.app();
    let size = size_of(args, app)?;
    let (mut devices, placement) = devices(args, cluster.info())?;
    let mut warnings = ignored_options(args, &devices);
    warnings.extend(target.ignored_options(args));
    let mut moot: Vec<String> = unreached(&devices, args.iters)
        .iter()
        .map(ToString::to_string)
        .collect();
    moot.extend(unused_drop_below(args));
    if let Some(path) = &args.weights_from {
        // The cells calibration timed: the interior (a size too small for
        // one is refused with the run's own error further on).
        let interior: Vec<u64> = size
            .iter()
            .zip(app.boundary())
            .map(|(&n, b)| n.saturating_sub(b) as u64)
            .collect();
        seed_weights(
            &mut devices,
            &crate::machine_file::load_machine(path)?,
            &tiles_of(&args.stencil, &interior, app.boundary(), args.partition),
            args.alb_drop_below,
            path,
        )?;
    }
    let alb = Alb::parse(alb)?.map(|a| a.drop_below(args.alb_drop_below));
    app.check_size(&size).map_err(|e| CliError::Size {
        size: size_text(&size),
        why: e.to_string(),
    })?;
    let params = Params::parse(app, &args.params)?;
    let params = match &args.input {
        Some(input) => params.with_input(input),
        None => params,
    };
    let aux = aux_files(&args.aux, &target, &size)?;
    let identity = target.identity(args, &params)?;
    let target = target.for_run(args, aux);
    // Only rank 0 writes, and only its file system matters.
    if cluster.is_root() {
        let mut files = vec![
            ("--output", args.output.as_deref()),
            ("--report", args.report.as_deref()),
        ];
        // Inputs may repeat (one file for two --aux fields).
        super::distinct_files::apart_from_run(&files, args)?;
        let inputs = super::distinct_files::run_inputs(args);
        files.extend(
            inputs
                .iter()
                .map(|(option, file)| (option.as_str(), Some(*file))),
        );
        if let (Some(every), Some(pattern)) = (args.snapshot_every, &args.snapshot) {
            super::distinct_files::apart_from_snapshots(pattern, every, args.iters, &files)?;
        }
        if let Some(o) = &args.output {
            output::check_writable(o)?;
        }
        if let Some(r) = &args.report {
            check_file_path("report", r)?;
        }
    }
    Ok(Checked {
        target,
        size,
        params,
        warnings,
        moot,
        options: RunOptions {
            iters: args.iters,
            devices,
            partition: args.partition,
            alb,
            placement,
            observer: None,
            pin: args.pin,
            checkpoint: args.checkpoint_every.zip(args.checkpoint_dir.clone()).map(
                |(every, dir)| Checkpointing {
                    every,
                    dir,
                    overwrite: args.checkpoint_overwrite,
                },
            ),
            restart: args.restart.clone(),
            identity,
            on_failure: args.on_failure,
            halo_depth: args.halo_depth,
            cpu_time: args.cpu_time,
            iteration_records: None,
            host_halos: crate::knobs::host_halos(),
            peer_timeout: (args.peer_timeout > 0.0)
                .then(|| std::time::Duration::from_secs_f64(args.peer_timeout)),
            snapshots: args
                .snapshot_every
                .zip(args.snapshot.clone())
                .map(|(every, pattern)| Snapshots { every, pattern }),
        },
    })
}

/// Validates everything about a run before any work starts (under MPI, on
/// every rank: one rank's error stops them all), runs it with heuristic
/// `alb`, and writes its output and report when `write`; `as_given`: the
/// arguments are the user's own (run, compare), whose options that change
/// nothing are warned of.
pub fn run_config(
    args: &RunArgs,
    alb: &str,
    write: bool,
    as_given: bool,
    cluster: &Cluster,
) -> Result<Report, CliError> {
    let checked = check(args, alb, cluster);
    if cluster.size() > 1 {
        cluster.agree(epsilod::cluster::Readiness::of(&checked))?;
    }
    let Checked {
        target,
        size,
        mut options,
        params,
        mut warnings,
        moot,
    } = checked?;
    if as_given {
        warnings.extend(moot);
    }
    if cluster.is_root() {
        warn_once(&warnings);
    }
    let terminal = std::io::stderr().is_terminal();
    let shows_progress =
        write && cluster.is_root() && !args.quiet && (terminal || args.progress_every > 0.0);
    let bar = shows_progress.then(|| match terminal {
        true => Bar::new(args.iters),
        false => Bar::lines(args.iters, Duration::from_secs_f64(args.progress_every)),
    });
    options.observer = bar.as_ref().map(Bar::observer);
    let out = target.app().run(&size, &params, &options, cluster)?;
    drop(bar);
    if let (true, Some(grid), Some(path)) = (write, &out.output, &args.output) {
        grid.write_to(path)?;
    }
    finish(out.report, args, write && cluster.is_root())
}

/// The starting layout of a library or spec run and its stencil's
/// footprint: who exchanges what with whom, for `signature`.
pub fn layout_of(args: &RunArgs, cluster: &Cluster) -> Result<(Layout, Footprint), CliError> {
    let Checked {
        target,
        size,
        options,
        ..
    } = check(args, "none", cluster)?;
    let stencil = match &target {
        Target::App(app) => return Err(CliError::SignatureOfApp(app.name().to_string())),
        t => t
            .scalar_stencil(Some(&size))?
            .expect("library stencils and specs have one"),
    };
    let footprint = stencil.kernel.footprint().clone();
    let plan = Skeleton::new(&size, stencil).options(&options).plan()?;
    Ok((plan.layout().clone(), footprint))
}

/// Writes the report where asked (when `write`) and hands it back.
fn finish(report: Report, args: &RunArgs, write: bool) -> Result<Report, CliError> {
    if let (true, Some(path)) = (write, &args.report) {
        let text = serde_json::to_string_pretty(&report).expect("reports serialise");
        write_file("report", path, text)?;
    }
    Ok(report)
}

fn print_summary(r: &Report) {
    let size = r
        .config
        .size
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("x");
    println!(
        "{} {} x {} iterations on {} device(s) [{}], partition {}, {} kernel",
        r.config.stencil,
        size,
        r.config.iters,
        r.config.devices.len(),
        r.config.devices.join(" "),
        r.config.partition,
        r.config.kernel
    );
    if let Some(at) = r.config.resumed_from {
        println!("resumed from the checkpoint at iteration {at}");
    }
    for f in &r.failures {
        println!(
            "device {} failed after {:.3} s ({}); went on over {} device(s) from iteration {}",
            f.device, f.attempt_seconds, f.error, f.devices_left, f.resumed_from
        );
    }
    if let Some(last) = r.checkpoints.last() {
        let secs: f64 = r.checkpoints.iter().map(|c| c.seconds).sum();
        println!(
            "{} checkpoint(s), the last at iteration {}, {:.3} s in all",
            r.checkpoints.len(),
            last.iter,
            secs
        );
    }
    println!(
        "loop {:.3} s, median iteration {:.3} ms, {:.3e} cell updates/s, skeleton overhead {:.3} ms/iteration",
        r.summary.loop_seconds,
        r.summary.median_iteration_seconds * 1e3,
        r.summary.cell_updates_per_second,
        r.summary.skeleton_overhead_seconds_per_iteration * 1e3
    );
    for s in &r.summary.slow_spells {
        println!("{}", s.line());
    }
}

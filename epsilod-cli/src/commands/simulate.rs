//! `epsilod simulate`: a thin front over `models::simulate`. Builds the
//! scenario from the options (or from a real report, in trace mode), runs
//! it, and writes run's report schema, so `compare`'s table and `plot` work
//! on simulated runs.

use super::heuristic_list::split_heuristics;
use super::{check_file_path, write_file};
use crate::args::SimulateArgs;
use crate::error::CliError;
use crate::machine_file::load_machine;
use crate::plot::load_report;
use crate::sizes::parse_size;
use crate::stats;
use crate::target::{ndims_of, stencil_of};
use epsilod::report::{
    median, DecisionOutcome, DecisionRecord, DeviceIteration, FailureRecord, IterationRecord,
    Redistribution, ReportConfig, Summary,
};
use epsilod::{DeviceSpec, Report};
use heuristics::HeuristicSpec;
use hitmap::Partition;
use models::link::Hockney;
use models::predict::Machine;
use models::sim_spec::{DriftSpec, SlowHost};
use models::simulate::{
    noise_ratios, simulate as run_sim, Kernels, Links, NoiseSource, Outcome, Scenario, SimDevice,
    Simulated, Slowdown,
};

/// Noise of a device without a calibrated spread.
const DEFAULT_CV: f64 = 0.02;
/// Iterations of a noise report not resampled: first touches, thread
/// start-up (as calibration drops them).
const NOISE_WARM_UP: usize = 2;

/// `--noise-from`: a real report's kernel times as ratios over the median of
/// `half_window` iterations either side, to resample in blocks of `block`
/// consecutive ones.
fn noise_from(
    path: &std::path::Path,
    block: usize,
    half_window: usize,
) -> Result<NoiseSource, CliError> {
    let bad = |why: String| {
        CliError::Simulate(format!(
            "cannot take the noise of {}: {why}",
            path.display()
        ))
    };
    let real = load_report(path).map_err(|e| match e {
        CliError::Plot(m) => bad(m),
        other => other,
    })?;
    let (compute, rows) = kernel_times_and_rows(&real);
    let ratios = noise_ratios(&compute, &rows, NOISE_WARM_UP, half_window)
        .map_err(|e| bad(e.to_string()))?;
    Ok(NoiseSource::Resampled { ratios, block })
}

pub fn simulate(args: &SimulateArgs) -> Result<(), CliError> {
    super::distinct_files::distinct_files(&[
        ("--report", args.report.as_deref()),
        ("--csv", args.csv.as_deref()),
        ("--model", args.model.as_deref()),
        ("--trace-from", args.trace_from.as_deref()),
        ("--noise-from", args.noise_from.as_deref()),
    ])?;
    if let Some(p) = &args.report {
        check_file_path("report", p)?;
    }
    if let Some(p) = &args.csv {
        check_file_path("CSV", p)?;
    }
    if let Some(path) = &args.trace_from {
        return trace(args, path);
    }
    let bad = |why: &str| CliError::Simulate(why.to_string());
    let name = args
        .stencil
        .as_deref()
        .ok_or_else(|| bad("give a stencil (or --trace-from a report)"))?;
    let size = parse_size(
        args.size.as_deref().ok_or_else(|| bad("give --size"))?,
        ndims_of(name)?,
    )?;
    let stencil = stencil_of(name, &size)?;
    let iters = args.iters.ok_or_else(|| bad("give --iters"))?;
    let machine = args.model.as_deref().map(load_machine).transpose()?;
    let devices = model_devices(args, machine.as_ref())?;
    let names = split_heuristics(&args.alb)?;
    let specs = names
        .iter()
        .map(|n| n.parse::<HeuristicSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    for w in unused_options(args, iters, &specs) {
        eprintln!("warning: {w}");
    }
    let several = names.len() > 1 || args.reps > 1;
    if several && args.report.is_some() {
        return Err(bad(
            "--report is for one run: several heuristics or --reps print the table (--csv)",
        ));
    }
    let base = Scenario {
        domain: epsilod::plan::interior(&size, &stencil)?,
        partition: args.partition,
        footprint: stencil.kernel.footprint().clone(),
        cell_bytes: 4.0,
        levels: if stencil.kernel.reads_previous() {
            2
        } else {
            1
        },
        iters,
        devices,
        links: links_of(machine.as_ref()),
        heuristic: None,
        window: heuristics::WINDOW,
        direct_times_up_to: heuristics::gather::DIRECT_UP_TO,
        drop_below: args.alb_drop_below,
        kernels: Kernels::Modelled { seed: args.seed },
        noise: match &args.noise_from {
            Some(p) => noise_from(p, args.noise_block as usize, args.noise_window as usize)?,
            None => NoiseSource::Lognormal,
        },
        iteration_overhead: machine.as_ref().map_or(0.0, |m| m.iteration_overhead),
        rebalance: machine.as_ref().and_then(|m| m.rebalance),
        record_every: args.record_every,
        halo_depth: 1,
    };
    let config = |alb: &str, s: &Scenario| ReportConfig {
        stencil: stencil.name.clone(),
        size: size.clone(),
        iters,
        devices: s.devices.iter().map(|d| d.name.clone()).collect(),
        alb: alb.to_string(),
        alb_window: s.window,
        times_direct_up_to: s.direct_times_up_to,
        alb_drop_below: if alb == "none" { 0.0 } else { s.drop_below },
        partition: args.partition.to_string(),
        kernel: "simulated".into(),
        resumed_from: None,
        hosts: Vec::new(),
    };
    let mut reports: Vec<Vec<Report>> = vec![Vec::new(); names.len()];
    for rep in 0..args.reps {
        for (h, spec) in specs.iter().enumerate() {
            let mut s = base.clone();
            s.heuristic = Some(spec.clone());
            s.kernels = Kernels::Modelled {
                seed: args.seed.wrapping_add(rep),
            };
            if several || args.report.is_none() {
                // The table and the printed line read summaries only: one
                // record a run will do.
                s.record_every = iters;
            }
            let sim = run_sim(&s)?;
            let r = to_report(&sim, config(&spec.to_string(), &s), &s);
            if several {
                eprintln!(
                    "run {}/{} {}: loop {:.4} s, {} rebalance(s)",
                    rep + 1,
                    args.reps,
                    names[h],
                    r.summary.loop_seconds,
                    r.summary.rebalances
                );
            }
            reports[h].push(r);
        }
    }
    if several {
        let rows = stats::table(&names, &reports);
        // Files before the text: a reader that goes away (`| head -1`)
        // ends the process at the first print.
        if let Some(p) = &args.csv {
            write_file("CSV", p, stats::csv(&rows))?;
        }
        print!("{}", stats::render(&rows));
        return Ok(());
    }
    let r = &reports[0][0];
    if let Some(p) = &args.report {
        write_file(
            "report",
            p,
            serde_json::to_string_pretty(r).expect("reports serialise"),
        )?;
    }
    println!(
        "simulated {} x {} iterations on {} device(s), {}: loop {:.4} s, median iteration {:.3} ms, {} rebalance(s), {} failure(s)",
        r.config.stencil,
        iters,
        r.config.devices.len(),
        r.config.alb,
        r.summary.loop_seconds,
        r.summary.median_iteration_seconds * 1e3,
        r.summary.rebalances,
        r.failures.len()
    );
    Ok(())
}

/// The devices of a model-mode run: `--devices` or `--devices-count`,
/// speeds from the machine file, hosts, then the anomalous host and drift.
fn model_devices(
    args: &SimulateArgs,
    machine: Option<&Machine>,
) -> Result<Vec<SimDevice>, CliError> {
    let specs: Vec<(String, DeviceSpec)> = match (args.devices_count, args.devices.is_empty()) {
        (Some(_), false) => {
            return Err(CliError::Simulate(
                "give --devices or --devices-count, not both".into(),
            ))
        }
        (Some(n), true) => (0..n)
            .map(|_| ("cpu".to_string(), DeviceSpec::cpu(1)))
            .collect(),
        (None, false) => args
            .devices
            .iter()
            .map(|t| Ok((t.clone(), DeviceSpec::parse(t)?)))
            .collect::<Result<_, CliError>>()?,
        (None, true) => {
            return Err(CliError::Simulate(
                "give the devices: --devices-count N or --devices ...".into(),
            ))
        }
    };
    let n = specs.len();
    if let Some(m) = machine {
        if m.devices.len() != 1 && m.devices.len() != n {
            return Err(CliError::Simulate(format!(
                "the machine describes {} devices, the run has {n}: give one for all or one each",
                m.devices.len()
            )));
        }
    }
    let per_host = args.per_host.unwrap_or(n as u64) as usize;
    let mut devices: Vec<SimDevice> = specs
        .into_iter()
        .enumerate()
        .map(|(i, (name, spec))| {
            let calibrated = machine.map(|m| &m.devices[i.min(m.devices.len() - 1)]);
            let mut d = SimDevice::new(
                name,
                calibrated.map_or(args.seconds_per_cell, |c| c.seconds_per_cell),
            );
            d.fixed_seconds = calibrated.map_or(0.0, |c| c.fixed_seconds);
            d.tile_curve = calibrated.map_or(Vec::new(), |c| c.tile_curve.clone());
            d.cv = args
                .noise
                .or(calibrated.map(|c| c.cv).filter(|&cv| cv > 0.0))
                .unwrap_or(DEFAULT_CV);
            d.weight = spec.weight;
            d.host = i / per_host;
            if let Some(s) = spec.slowdown {
                d.slowdowns.push(Slowdown {
                    factor: s.factor,
                    from: s.from_iter,
                });
            }
            d.fail_at = spec.fail;
            d
        })
        .collect();
    // A calibrated GPU's halos are staged through host memory.
    if let Some(m) = machine {
        for (i, d) in devices.iter_mut().enumerate() {
            let c = &m.devices[i.min(m.devices.len() - 1)];
            d.peer_group = c.peer_group;
            if let Some(name) = &c.host_link {
                let link = m.links.iter().find(|l| &l.name == name).ok_or_else(|| {
                    CliError::Simulate(format!(
                        "device {i}'s host link '{name}' is not among the machine's links"
                    ))
                })?;
                d.host_link = Some(link.hockney);
            }
        }
    }
    let scenario = |e: models::sim_spec::ScenarioError| CliError::Simulate(e.to_string());
    if let Some(text) = &args.slow_host {
        let s: SlowHost = text.parse().map_err(scenario)?;
        if !devices.iter().any(|d| d.host == s.host) {
            return Err(CliError::Simulate(format!(
                "--slow-host {text}: there is no host {} (hosts 0..{})",
                s.host,
                devices.last().map_or(0, |d| d.host)
            )));
        }
        s.apply(&mut devices);
    }
    if let Some(text) = &args.drift {
        let d: DriftSpec = text.parse().map_err(scenario)?;
        d.apply(&mut devices, args.seed);
    }
    Ok(devices)
}

/// The scenario's options that change nothing, one line each: a slow
/// spell or failure from an iteration at or past `iters` (devices,
/// `--slow-host`, `--drift`), and `--alb-drop-below` where no heuristic
/// of `specs` balances (told from the default, whose value changes
/// nothing either way). Run after `model_devices` has parsed them.
fn unused_options(args: &SimulateArgs, iters: u64, specs: &[HeuristicSpec]) -> Vec<String> {
    let devices: Vec<DeviceSpec> = args
        .devices
        .iter()
        .filter_map(|t| DeviceSpec::parse(t).ok())
        .collect();
    let mut out: Vec<String> = epsilod::devices::unreached(&devices, iters)
        .iter()
        .map(ToString::to_string)
        .collect();
    let beyond = |option: &str, text: &str, from: u64, never: &str| {
        format!("{option} {text} starts at iteration {from}, beyond --iters {iters}: {never} (give an iteration below {iters})")
    };
    if let Some(text) = &args.slow_host {
        if let Ok(s) = text.parse::<SlowHost>() {
            if s.slowdown.from >= iters {
                out.push(beyond(
                    "--slow-host",
                    text,
                    s.slowdown.from,
                    "the host never slows down",
                ));
            }
        }
    }
    if let Some(text) = &args.drift {
        if let Ok(d) = text.parse::<DriftSpec>() {
            if d.drift.from >= iters {
                out.push(beyond("--drift", text, d.drift.from, "no device drifts"));
            }
        }
    }
    if specs.iter().all(|s| s.name() == "none") && args.alb_drop_below != heuristics::DROP_BELOW {
        out.push(super::drop_below_unused(args.alb_drop_below));
    }
    out
}

/// The machine's links: `in-process` within a host and `mpi` between
/// hosts (each falling back to the first class), posting cost the LogGP
/// send overhead; free links without a machine.
fn links_of(machine: Option<&Machine>) -> Links {
    let Some(m) = machine else {
        return Links::default();
    };
    let find = |name: &str| m.links.iter().find(|l| l.name == name).or(m.links.first());
    let free = Hockney {
        alpha: 0.0,
        beta: 0.0,
    };
    let intra = find("in-process");
    Links {
        intra: intra.map_or(free, |l| l.hockney),
        inter: find("mpi").map_or(free, |l| l.hockney),
        post: intra.map_or(0.0, |l| l.loggp.o_s),
    }
}

/// Trace mode: replays `path`'s kernel times and rebalance costs, checks
/// the decisions and weights against it, writes the simulated report.
fn trace(args: &SimulateArgs, path: &std::path::Path) -> Result<(), CliError> {
    let bad = |why: String| CliError::Simulate(format!("{}: {why}", path.display()));
    // Options the report decides are refused beside --trace-from (args.rs).
    let real = load_report(path).map_err(|e| match e {
        CliError::Plot(m) => CliError::Simulate(m),
        other => other,
    })?;
    if real.config.resumed_from.is_some() || !real.failures.is_empty() {
        return Err(bad(
            "trace mode replays whole runs without failures or restarts".into(),
        ));
    }
    if real.config.alb_window < 2 || real.config.times_direct_up_to == 0 {
        return Err(bad(format!(
            "config.alb_window {} and config.times_direct_up_to {} cannot come from a run \
             (a window holds at least 2 iterations, the threshold at least 1 process)",
            real.config.alb_window, real.config.times_direct_up_to
        )));
    }
    let stencil = stencil_of(&real.config.stencil, &real.config.size)?;
    let partition: Partition = real
        .config
        .partition
        .parse()
        .map_err(|e: hitmap::HitmapError| bad(e.to_string()))?;
    let spec: HeuristicSpec = real.config.alb.parse()?;
    let iters = real.config.iters;
    if real.iterations.len() as u64 != iters {
        return Err(bad(format!(
            "it records {} iterations of {iters}{}",
            real.iterations.len(),
            match real.summary.iterations_recorded_every {
                1 => String::new(),
                k => format!(" (one in {k}: trace mode needs a report of every iteration)"),
            }
        )));
    }
    let (compute, rows) = kernel_times_and_rows(&real);
    let depth = real.halo_depth.max(1);
    if let Some(at) = period_cut(&compute, depth) {
        return Err(bad(format!(
            "its records do not go by periods of its halo depth {depth} (iteration {at}): trace \
             mode replays deep-halo runs without depth trials, snapshots or checkpoints"
        )));
    }
    let machine = args.model.as_deref().map(load_machine).transpose()?;
    // The first iteration's rows are the initial partition exactly.
    let devices = real
        .config
        .devices
        .iter()
        .zip(
            rows.first()
                .ok_or_else(|| bad("it has no iterations".into()))?,
        )
        .map(|(name, &r)| {
            let mut d = SimDevice::new(name.clone(), args.seconds_per_cell);
            d.weight = r as f64;
            d
        })
        .collect();
    let s = Scenario {
        domain: epsilod::plan::interior(&real.config.size, &stencil)?,
        partition,
        footprint: stencil.kernel.footprint().clone(),
        cell_bytes: 4.0,
        levels: if stencil.kernel.reads_previous() {
            2
        } else {
            1
        },
        iters,
        devices,
        links: links_of(machine.as_ref()),
        heuristic: Some(spec),
        // The real run's window and gather.
        window: real.config.alb_window,
        direct_times_up_to: real.config.times_direct_up_to,
        drop_below: real.config.alb_drop_below,
        kernels: Kernels::Trace {
            compute,
            rows,
            redistribution_seconds: real.redistributions.iter().map(|r| r.seconds).collect(),
        },
        noise: NoiseSource::Lognormal,
        iteration_overhead: machine.as_ref().map_or(0.0, |m| m.iteration_overhead),
        rebalance: machine.as_ref().and_then(|m| m.rebalance),
        record_every: args.record_every,
        halo_depth: depth,
    };
    let sim = run_sim(&s)?;
    let mut config = real.config.clone();
    config.kernel = "simulated (trace)".into();
    let mut r = to_report(&sim, config, &s);
    r.halo_depth_reason = real.halo_depth_reason;
    let dropped = (
        r.summary.heuristic_checks_dropped,
        real.summary.heuristic_checks_dropped,
    );
    if r.heuristic != real.heuristic || dropped.0 != dropped.1 {
        let at = r
            .heuristic
            .iter()
            .zip(&real.heuristic)
            .find(|(a, b)| a != b)
            .map_or_else(
                || {
                    format!(
                        "{} checks against {}",
                        r.heuristic.len() as u64 + dropped.0,
                        real.heuristic.len() as u64 + dropped.1
                    )
                },
                |(a, _)| format!("the check at iteration {}", a.iter),
            );
        return Err(bad(format!("trace mode decided otherwise: {at}")));
    }
    let weights = |rs: &[Redistribution]| -> Vec<(u64, Vec<f64>)> {
        rs.iter()
            .map(|m| (m.iter, m.weights_after.clone()))
            .collect()
    };
    if weights(&r.redistributions) != weights(&real.redistributions) {
        return Err(bad("trace mode rebalanced to other weights".into()));
    }
    if let Some(p) = &args.report {
        write_file(
            "report",
            p,
            serde_json::to_string_pretty(&r).expect("reports serialise"),
        )?;
    }
    println!(
        "trace of {}: {} checks and {} rebalance(s), decisions and weights identical to the report",
        path.display(),
        r.heuristic.len() as u64 + dropped.0,
        r.redistributions.len()
    );
    Ok(())
}

/// The simulated run in run's report schema.
fn to_report(sim: &Simulated, config: ReportConfig, s: &Scenario) -> Report {
    let iterations: Vec<IterationRecord> = sim
        .steps
        .iter()
        .map(|st| IterationRecord {
            iter: st.iter,
            seconds: st.seconds,
            elapsed_seconds: st.elapsed,
            devices: st
                .devices
                .iter()
                .map(|d| DeviceIteration {
                    compute_seconds: d.compute,
                    comm_seconds: d.comm,
                    // A simulated device has no threads to measure.
                    cpu_seconds: None,
                    instructions: None,
                    rows: d.rows,
                })
                .collect(),
        })
        .collect();
    let cells = s.domain.card() as f64 * s.iters as f64;
    let redistributions: Vec<Redistribution> = sim
        .moves
        .iter()
        .map(|m| Redistribution {
            iter: m.iter,
            seconds: m.seconds,
            rows_moved: m.rows_moved,
            bytes_moved: m.bytes_moved as usize,
            moves_on_device: 0,
            // The simulator moves each region as one transfer: no
            // messages are counted.
            messages: 0,
            weights_before: m.weights_before.clone(),
            weights_after: m.weights_after.clone(),
        })
        .collect();
    let mut report = Report {
        summary: Summary {
            total_seconds: sim.loop_seconds,
            loop_seconds: sim.loop_seconds,
            mean_iteration_seconds: sim.mean_iteration_seconds,
            median_iteration_seconds: median(&sim.iteration_seconds),
            rebalances: redistributions.len(),
            redistribution_seconds_total: redistributions
                .iter()
                .map(|r| r.seconds)
                .fold(0.0, |a, b| a + b),
            cell_updates_per_second: if sim.loop_seconds > 0.0 {
                cells / sim.loop_seconds
            } else {
                0.0
            },
            skeleton_overhead_seconds_per_iteration: sim.overhead_per_iteration,
            halo_messages: sim.halo_messages,
            halo_messages_on_device: 0,
            devices_in_planes: 0,
            iterations_recorded_every: sim.recorded_every,
            heuristic_checks_dropped: sim.checks_dropped,
            slow_spells: Vec::new(),
        },
        config,
        iterations,
        redistributions,
        heuristic: sim
            .checks
            .iter()
            .map(|c| DecisionRecord {
                iter: c.iter,
                decision: match c.outcome {
                    Outcome::Rebalance => DecisionOutcome::Rebalance,
                    Outcome::Keep => DecisionOutcome::Keep,
                    Outcome::SkippedTooThin => DecisionOutcome::SkippedTooThin,
                },
                values: c.values.iter().cloned().collect(),
            })
            .collect(),
        checkpoints: Vec::new(),
        failures: sim
            .failures
            .iter()
            .map(|f| FailureRecord {
                device: s.devices[f.device].name.clone(),
                error: "simulated failure".into(),
                attempt_seconds: f.at_seconds,
                resumed_from: f.iter,
                devices_left: f.devices_left,
            })
            .collect(),
        halo_depth: s.halo_depth.max(1),
        halo_depth_reason: Default::default(),
        depth_trials: Vec::new(),
    };
    report.find_slow_spells();
    report
}

/// The first iteration at which a device's kernel time changes within a
/// period of `depth` iterations from the first: the skeleton records each
/// iteration of a period its equal share, so a run whose periods were cut
/// (depth trials, snapshots, checkpoints) shows one.
fn period_cut(compute: &[Vec<f64>], depth: usize) -> Option<usize> {
    if depth <= 1 {
        return None;
    }
    compute.chunks(depth).enumerate().find_map(|(p, period)| {
        period
            .iter()
            .position(|row| row != &period[0])
            .map(|j| p * depth + j)
    })
}

/// Each iteration's kernel seconds and rows per device, from a report.
fn kernel_times_and_rows(real: &epsilod::report::Report) -> (Vec<Vec<f64>>, Vec<Vec<usize>>) {
    real.iterations
        .iter()
        .map(|it| {
            let compute = it.devices.iter().map(|d| d.compute_seconds).collect();
            let rows = it.devices.iter().map(|d| d.rows).collect();
            (compute, rows)
        })
        .unzip()
}

//! `epsilod signature`: a short run's one phase, per device, for `scale`.

use super::run::{layout_of, run_config};
use crate::args::SignatureArgs;
use crate::error::CliError;
use epsilod::devices::{share_cores, DeviceKind, DeviceSpec};
use epsilod::error::SetupError;
use epsilod::report::{median, DeviceIteration};
use epsilod::{Cluster, HaloDepth, Report};
use hitmap::HaloPlan;
use models::scaling::{Message, ProcessSignature, Signature};

/// Bytes of one cell of the CLI's stencils (f32).
const CELL_BYTES: u64 = 4;

pub fn signature(args: &SignatureArgs, cluster: &Cluster) -> Result<(), CliError> {
    if args.sig_iters > args.run.iters {
        // The signature is a short part of the run whose length --iters gives.
        return Err(CliError::Usage(format!(
            "--sig-iters {} is more than --iters {}: a signature runs the first iterations \
             of a run of --iters; give --sig-iters at most --iters",
            args.sig_iters, args.run.iters
        )));
    }
    // The signature is the short run's phases alone: writes inside its
    // timed iterations, or a run resumed part-way, would be in them.
    if args.run.alb != "none" {
        return Err(CliError::Usage(
            "a signature runs without load balancing (its layout names the messages): leave \
             out --alb"
                .into(),
        ));
    }
    let writes = [
        (args.run.output.is_some(), "--output"),
        (args.run.report.is_some(), "--report"),
    ]
    .into_iter()
    .find_map(|(given, name)| given.then_some(name));
    if let Some(option) = writes.or(args.run.resumes_or_writes_in_loop()) {
        return Err(CliError::Usage(format!(
            "a signature is a short run's phases and writes only --out: leave out {option}"
        )));
    }
    // `auto`'s trials would put iterations at depths 1, 2, 4 and 8 into
    // one signature's medians; a signature is one phase, at one depth.
    if args.run.halo_depth == HaloDepth::Auto {
        return Err(CliError::Usage(
            "a signature runs at one halo depth: give --halo-depth K, or leave it out (1)".into(),
        ));
    }
    let (layout, footprint) = layout_of(&args.run, cluster)?;
    let plan = HaloPlan::new(&layout, &footprint).map_err(SetupError::from)?;
    if cluster.is_root() {
        super::distinct_files::apart_from_run(&[("--out", Some(&args.out))], &args.run)?;
        super::check_file_path("signature", &args.out)?;
    }
    let mut short = args.run.clone();
    short.iters = args.sig_iters;
    // The scaling model's `--compute cpu` fits on kernels' CPU time.
    short.cpu_time = true;
    // Rebalances would change the layout the messages are named from.
    // Instructions are counted where the host lends counters (each rank
    // its own): P3S's per-process count, beside the clock's.
    controllers::cpu_time::count_instructions(true);
    let report = run_config(&short, "none", false, false, cluster);
    controllers::cpu_time::count_instructions(false);
    let report = report?;
    if !cluster.is_root() {
        return Ok(());
    }
    let mut sig = from_report(&report, args.run.iters, layout.domain().ndims(), |d| {
        let sends = plan
            .vp(d)
            .sends
            .iter()
            .map(|e| Message {
                peer: e.peer,
                bytes: e.card() as u64 * CELL_BYTES,
            })
            .collect();
        (layout.block(d).card() as u64, sends)
    });
    // The root's host: where `scale --compute cpu` finds the cores these
    // devices shared when the target's are not given.
    sig.cores = cluster.info().cores.first().copied();
    for (p, t) in sig
        .processes
        .iter_mut()
        .zip(device_threads(&report, cluster))
    {
        p.threads = t;
    }
    let text = serde_json::to_string_pretty(&sig).expect("signatures serialise");
    super::write_file("signature", &args.out, text)?;
    if !args.run.quiet {
        println!(
            "signature of {} devices: median iteration {:.3} ms over {} iterations, weight {}",
            sig.count(),
            sig.iteration_seconds * 1e3,
            args.sig_iters - 1,
            sig.weight
        );
        let counted = sig
            .processes
            .iter()
            .filter(|p| p.instructions.is_some())
            .count();
        if counted == 0 {
            println!("no hardware instruction counts (none lent to this process): cells stand in");
        } else {
            println!(
                "instructions counted on {counted} of {} devices",
                sig.count()
            );
        }
    }
    Ok(())
}

/// Each device's CPU threads: as given (`threads=`), or for a `cpu` device
/// without, its share of the cores as the run gave it (`share_cores`: in
/// one process, the devices split the host's cores; under MPI each rank
/// splits its own, which the report does not say, so none). GPUs: none.
fn device_threads(report: &Report, cluster: &Cluster) -> Vec<Option<usize>> {
    let specs: Vec<Option<DeviceSpec>> = report
        .config
        .devices
        .iter()
        .map(|d| DeviceSpec::parse(d).ok())
        .collect();
    let resolved = match (
        specs.iter().cloned().collect::<Option<Vec<_>>>(),
        cluster.size(),
    ) {
        (Some(all), 1) => share_cores(&all, cluster.info().cores.first().copied().unwrap_or(1))
            .into_iter()
            .map(Some)
            .collect(),
        _ => specs,
    };
    resolved
        .into_iter()
        .map(|s| match s?.kind {
            DeviceKind::Cpu { threads } => threads,
            _ => None,
        })
        .collect()
}

/// The medians of `report`'s iterations after the first (a warm-up),
/// with each device's cells and messages from `layout(device)`.
fn from_report(
    report: &Report,
    weight: u64,
    ndims: usize,
    layout: impl Fn(usize) -> (u64, Vec<Message>),
) -> Signature {
    let steady = &report.iterations[1.min(report.iterations.len())..];
    let per_device = |f: &dyn Fn(&DeviceIteration) -> f64, d: usize| {
        median(
            &steady
                .iter()
                .map(|it| f(&it.devices[d]))
                .collect::<Vec<_>>(),
        )
    };
    let processes = (0..report.config.devices.len())
        .map(|d| {
            let (cells, sends) = layout(d);
            // Medians of what was measured: every steady iteration, or none.
            let cpu: Option<Vec<f64>> = steady.iter().map(|it| it.devices[d].cpu_seconds).collect();
            let instructions: Option<Vec<f64>> =
                steady.iter().map(|it| it.devices[d].instructions).collect();
            ProcessSignature {
                compute_seconds: per_device(&|x| x.compute_seconds, d),
                cpu_seconds: cpu.filter(|c| !c.is_empty()).map(|c| median(&c)),
                threads: None,
                instructions: instructions.filter(|c| !c.is_empty()).map(|c| median(&c)),
                comm_seconds: per_device(&|x| x.comm_seconds, d),
                cells,
                sends,
            }
        })
        .collect();
    Signature {
        ndims,
        weight,
        iteration_seconds: median(&steady.iter().map(|it| it.seconds).collect::<Vec<_>>()),
        processes,
        cores: None,
        halo_depth: report.halo_depth,
    }
}

//! `epsilod signature`: a short run's one phase, per device, for `scale`.

use super::run::{layout_of, run_config};
use crate::args::SignatureArgs;
use crate::error::CliError;
use epsilod::devices::{DeviceKind, DeviceSpec};
use epsilod::error::SetupError;
use epsilod::report::{median, DeviceIteration};
use epsilod::{Cluster, Report};
use hitmap::HaloPlan;
use models::scaling::{Message, ProcessSignature, Signature};

/// Bytes of one cell of the CLI's stencils (f32).
const CELL_BYTES: u64 = 4;

pub fn signature(args: &SignatureArgs, cluster: &Cluster) -> Result<(), CliError> {
    let (layout, footprint) = layout_of(&args.run, cluster)?;
    let plan = HaloPlan::new(&layout, &footprint).map_err(SetupError::from)?;
    if cluster.is_root() {
        super::check_report_path(&args.out)?;
    }
    let mut short = args.run.clone();
    short.iters = args.sig_iters;
    short.output = None;
    short.report = None;
    // Rebalances would change the layout the messages are named from.
    let report = run_config(&short, "none", false, cluster)?;
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
    let text = serde_json::to_string_pretty(&sig).expect("signatures serialise");
    super::write_report(&args.out, text)?;
    if !args.run.quiet {
        println!(
            "signature of {} devices: median iteration {:.3} ms over {} iterations, weight {}",
            sig.count(),
            sig.iteration_seconds * 1e3,
            args.sig_iters - 1,
            sig.weight
        );
    }
    Ok(())
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
            let threads = DeviceSpec::parse(&report.config.devices[d])
                .ok()
                .and_then(|s| match s.kind {
                    DeviceKind::Cpu { threads } => threads,
                    _ => None,
                });
            ProcessSignature {
                compute_seconds: per_device(&|x| x.compute_seconds, d),
                cpu_seconds: cpu.filter(|c| !c.is_empty()).map(|c| median(&c)),
                threads,
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
    }
}

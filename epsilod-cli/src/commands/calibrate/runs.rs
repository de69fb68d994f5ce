//! The calibration runs: the run made plain (no files, no balancing), one
//! timed run's per-device passes, halos and overhead, and the rebalancing
//! run. The line's passes and the tile sweep are both made of these.

use super::checks::timed_layout;
use crate::args::RunArgs;
use crate::commands::run::run_config;
use crate::error::CliError;
use epsilod::Cluster;
use hitmap::HaloPlan;
use models::calibrate::Pass;
use models::link::{Hockney, Sample};

/// Iterations of each pass never kept: first touches, thread start-up.
const WARM_UP: usize = 2;

/// The first iteration of a pass of `iters` whose times are kept: its
/// second half: a large fresh tile runs slower for its first tens of
/// iterations (first touches, caches, frequency), which a pass must not fit.
fn kept_from(iters: usize) -> usize {
    (iters / 2).max(WARM_UP)
}
/// Iterations of the rebalancing run: five windows of 31.
const REBALANCE_ITERS: u64 = 160;

/// The run as calibration runs it: `iters` iterations, no load balancing,
/// and none of the run's files.
pub(super) fn plain(run: &RunArgs, iters: u64) -> RunArgs {
    let mut r = run.clone();
    r.iters = iters;
    r.quiet = true;
    r.report = None;
    r.output = None;
    r.checkpoint_every = None;
    r.checkpoint_dir = None;
    r.restart = None;
    r.snapshot_every = None;
    r.snapshot = None;
    // Every device is timed, at every pass's tile: the seeded pass must
    // not start a slow device without rows, nor the rebalancing run drop it.
    r.alb_drop_below = 0.0;
    r
}

/// One calibration run: each device's name with its cells and kernel
/// seconds per iteration, the run's halo message sizes in bytes, and the
/// skeleton's overhead per iteration.
pub(super) struct Measured {
    pub(super) devices: Vec<(String, Pass)>,
    pub(super) halos: Vec<u64>,
    pub(super) overhead: f64,
}

/// One calibration run of `run`.
pub(super) fn measure_devices(run: &RunArgs, cluster: &Cluster) -> Result<Measured, CliError> {
    let (layout, footprint) = timed_layout(run, cluster)?;
    let report = run_config(run, "none", false, false, cluster)?;
    let mut devices = Vec::with_capacity(layout.procs());
    for (d, name) in report.config.devices.iter().enumerate() {
        let cells = layout.block(d).card() as f64;
        let seconds: Vec<f64> = report
            .iterations
            .iter()
            .skip(kept_from(report.iterations.len()))
            .map(|it| it.devices[d].compute_seconds)
            .collect();
        devices.push((name.clone(), Pass { cells, seconds }));
    }
    let plan =
        HaloPlan::new(&layout, &footprint).map_err(|e| CliError::Calibrate(e.to_string()))?;
    let mut halos: Vec<u64> = (0..layout.procs())
        .flat_map(|p| plan.vp(p).sends.iter().map(|x| x.card() as u64 * 4))
        .collect();
    halos.sort_unstable();
    halos.dedup();
    // The skeleton's own time: the iteration beyond its slowest kernel.
    let overheads: Vec<f64> = report
        .iterations
        .iter()
        .skip(kept_from(report.iterations.len()))
        .map(|it| {
            let slowest = it
                .devices
                .iter()
                .map(|d| d.compute_seconds)
                .fold(0.0, f64::max);
            (it.seconds - slowest).max(0.0)
        })
        .collect();
    Ok(Measured {
        devices,
        halos,
        overhead: heuristics::median(&overheads),
    })
}

/// Rebalances every window (`const-iters`) for long enough to see several,
/// and their seconds against the bytes they moved: a line when the sizes
/// differ, else the median as a fixed cost.
pub(super) fn measure_rebalance(
    run: &RunArgs,
    cluster: &Cluster,
) -> Result<Option<Hockney>, CliError> {
    let mut r = run.clone();
    r.iters = REBALANCE_ITERS;
    let report = run_config(&r, "const-iters:every=1", false, false, cluster)?;
    let samples: Vec<Sample> = report
        .redistributions
        .iter()
        .map(|m| Sample::new(m.bytes_moved as f64, m.seconds))
        .collect();
    if samples.is_empty() {
        return Ok(None);
    }
    Ok(Some(Hockney::fit(&samples).unwrap_or_else(|_| Hockney {
        alpha: heuristics::median(&samples.iter().map(|s| s.seconds).collect::<Vec<_>>()),
        beta: 0.0,
    })))
}

//! Calibrate's refusals before anything is timed: its own arguments, and
//! the run as calibration takes it (no apps, cells on every device). Apart
//! because the runs and the tile sweep both check their layouts here.

use crate::args::CalibrateArgs;
use crate::args::RunArgs;
use crate::commands::run::layout_of;
use crate::commands::{check_file_path, distinct_files, once_each};
use crate::error::CliError;
use crate::json::JsonOut;
use epsilod::Cluster;
use hitmap::{Footprint, Layout};

/// Refuses a repeated sweep factor, and on the root outputs that clash with
/// the run's files or cannot be written: a typo costs no measurement.
pub(super) fn check_args(
    args: &CalibrateArgs,
    json: JsonOut,
    cluster: &Cluster,
) -> Result<(), CliError> {
    once_each("--tile-sweep", &args.tile_sweep, "factor")?;
    if cluster.is_root() {
        distinct_files::apart_from_run(
            &[("--out", Some(&args.out)), ("--json", json.file())],
            &args.run,
        )?;
        check_file_path("machine model", &args.out)?;
        json.check()?;
    }
    Ok(())
}

/// The run's layout and footprint, as calibration takes them: apps are
/// refused, and every device must have cells to time.
pub(super) fn timed_layout(
    run: &RunArgs,
    cluster: &Cluster,
) -> Result<(Layout, Footprint), CliError> {
    let (layout, footprint) = layout_of(run, cluster).map_err(|e| match e {
        CliError::SignatureOfApp(app) => CliError::Calibrate(format!(
            "'{app}' is an app: calibrate covers library stencils and spec files"
        )),
        other => other,
    })?;
    if let Some(d) = (0..layout.procs()).find(|&d| layout.block(d).card() == 0) {
        return Err(CliError::Calibrate(format!(
            "device {d} has no cells to time: use fewer devices or a larger --size"
        )));
    }
    Ok((layout, footprint))
}

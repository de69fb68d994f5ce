//! Real runs' halo exchanges as learned-model samples (`fit-comm --runs`):
//! the features from hitmap's halo plan of the run's own layout, the time
//! by commbench's statistic over the run's per-device `comm_seconds`.

use crate::error::CliError;
use crate::plot::load_report;
use epsilod::report::Report;
use models::halo_features::halo_features;
use models::learned::Sample;
use models::predict::Run;
use std::path::Path;

/// The sample of the report at `path`: a single-process run of a library
/// stencil cut along its first axis (`w0` or `s0`), every device one
/// process of one rank, exchanging every iteration.
pub fn run_sample(path: &Path) -> Result<Sample, CliError> {
    let bad = |why: String| CliError::Input {
        path: path.display().to_string(),
        why,
    };
    let report = load_report(path).map_err(|e| bad(e.to_string()))?;
    sample_of(&report).map_err(bad)
}

fn sample_of(report: &Report) -> Result<Sample, String> {
    let c = &report.config;
    if !matches!(c.partition.as_str(), "w0" | "s0") {
        return Err(format!(
            "partition {}: only runs cut along the first axis (w0, s0) are described",
            c.partition
        ));
    }
    if report.halo_depth != 1 {
        return Err(format!(
            "halo depth {}: only runs exchanging every iteration are described",
            report.halo_depth
        ));
    }
    let spec = kernels::Library::by_name(&c.stencil)
        .ok_or_else(|| format!("stencil {}: not a library stencil", c.stencil))?
        .spec();
    if c.size.len() != spec.low.len() {
        return Err(format!(
            "size {:?}: the stencil {} has {} dimension(s)",
            c.size,
            c.stencil,
            spec.low.len()
        ));
    }
    let first = report
        .iterations
        .first()
        .ok_or("the run recorded no iteration")?;
    let rows: Vec<u64> = first.devices.iter().map(|d| d.rows as u64).collect();
    // The iterations before any rebalance: the layout the features describe.
    let same: Vec<_> = report
        .iterations
        .iter()
        .take_while(|it| {
            it.devices
                .iter()
                .map(|d| d.rows as u64)
                .eq(rows.iter().copied())
        })
        .collect();
    let interior: Vec<u64> = c
        .size
        .iter()
        .enumerate()
        .map(|(d, &n)| n.saturating_sub(spec.low[d] + spec.high[d]) as u64)
        .collect();
    let cells_per_row: u64 = interior[1..].iter().product();
    let weights: Vec<f64> = rows.iter().map(|&r| r as f64).collect();
    let run = Run::from_weights(
        rows.iter().sum(),
        cells_per_row,
        spec.low[0].max(spec.high[0]) as u64,
        // Library stencils hold f32 cells.
        (cells_per_row * 4) as f64,
        same.len() as u64,
        &weights,
        "run",
    )
    .map_err(|e| e.to_string())?;
    let features = halo_features(&run, rows.len()).map_err(|e| e.to_string())?;
    // As commbench times a phase: each process's third quartile, the largest.
    let seconds = (0..rows.len())
        .map(|d| {
            let mut t: Vec<f64> = same.iter().map(|it| it.devices[d].comm_seconds).collect();
            t.sort_by(f64::total_cmp);
            t[(t.len() * 3) / 4]
        })
        .fold(0.0, f64::max);
    Ok(Sample { features, seconds })
}

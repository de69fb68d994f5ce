//! The tile sweep: the run at its partitioned extent scaled by each
//! factor (every size checked before any is timed), its passes, and each
//! device's tile curve from them.

use super::checks::timed_layout;
use super::runs::measure_devices;
use crate::args::RunArgs;
use crate::error::CliError;
use crate::sizes::{parse_size, size_text};
use crate::target::ndims_of;
use epsilod::Cluster;
use hitmap::Partition;
use models::calibrate::{tile_curve, Pass};
use models::predict::Device;

/// The tile sweep's runs: `run` (the user's partition) with its
/// partitioned extent (the first, under `m` and `m<n>`) scaled by each
/// factor, up the factors and back down, so that every tile is timed twice
/// and a drift between them in opposite orders. Each size is checked
/// before any is timed: a bad factor is refused at once, not after the
/// line's passes.
pub(super) fn sweep_runs(
    run: &RunArgs,
    factors: &[f64],
    cluster: &Cluster,
) -> Result<Vec<RunArgs>, CliError> {
    if factors.is_empty() {
        return Ok(Vec::new());
    }
    // The run itself first: an app or a bad size is refused as such.
    timed_layout(run, cluster)?;
    // Calibrate's own arguments require --size; a run's may leave it to
    // an app's input, which timed_layout has refused.
    let Some(size) = &run.size else {
        return Err(CliError::Calibrate(
            "--tile-sweep scales --size: give one".into(),
        ));
    };
    let size = parse_size(size, ndims_of(&run.stencil)?)?;
    let axis = match run.partition {
        Partition::Single(d) | Partition::Weighted(d) => d,
        Partition::Multi | Partition::MultiN(_) => 0,
    };
    let mut up = factors.to_vec();
    up.sort_by(f64::total_cmp);
    up.dedup();
    let mut runs = Vec::with_capacity(up.len());
    for f in up {
        let mut scaled = size.clone();
        if let Some(n) = scaled.get_mut(axis) {
            *n = ((*n as f64 * f).round() as usize).max(1);
        }
        let text = size_text(&scaled);
        let mut r = run.clone();
        r.size = Some(text.clone());
        timed_layout(&r, cluster).map_err(|e| {
            let why = match e {
                CliError::Calibrate(why) => why,
                other => other.to_string(),
            };
            // 1e300 in exponent form, not as its 301 digits.
            let f = if (1e-3..1e6).contains(&f) {
                f.to_string()
            } else {
                format!("{f:e}")
            };
            CliError::Calibrate(format!(
                "--tile-sweep {f} makes the size {text}, where {why}; leave that factor out"
            ))
        })?;
        runs.push(r);
    }
    let down: Vec<RunArgs> = runs.iter().rev().cloned().collect();
    runs.extend(down);
    Ok(runs)
}

/// The sweep's passes, per device.
pub(super) fn sweep(runs: &[RunArgs], cluster: &Cluster) -> Result<Vec<Vec<Pass>>, CliError> {
    let mut swept: Vec<Vec<Pass>> = Vec::new();
    for r in runs {
        let measured = measure_devices(r, cluster)?;
        swept.resize(measured.devices.len(), Vec::new());
        for (all, (_, p)) in swept.iter_mut().zip(measured.devices) {
            all.push(p);
        }
    }
    Ok(swept)
}

/// Each device's tile curve from its line's passes and its sweep's
/// (none without a sweep).
pub(super) fn with_tile_curves(
    devices: &mut [Device],
    line: &[Vec<Pass>],
    swept: &[Vec<Pass>],
) -> Result<(), CliError> {
    for (d, (line, more)) in devices.iter_mut().zip(line.iter().zip(swept)) {
        d.tile_curve = tile_curve(d, line, more)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(cells: f64, seconds: f64, n: usize) -> Vec<Pass> {
        vec![
            Pass {
                cells,
                seconds: vec![seconds; 3],
            };
            n
        ]
    }

    /// Each device's sweep reaches its own curve, and only its own.
    #[test]
    fn tile_curves_come_from_each_devices_own_sweep() {
        let line = Device::new("d", 1e-9);
        let mut devices = vec![line.clone(), line.clone()];
        let lines = vec![passes(4e5, 4e-4, 2), passes(4e5, 4e-4, 2)];
        // The first device's small tile ran at 0.6 of its line, twice;
        // the second's as its line.
        let swept = vec![passes(1e5, 0.6e-4, 2), passes(1e5, 1e-4, 2)];
        with_tile_curves(&mut devices, &lines, &swept).unwrap();
        let c = &devices[0].tile_curve;
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(
            (c[0].0 - 1e5).abs() < 1e-6 && (c[0].1 - 0.6).abs() < 1e-12,
            "{c:?}"
        );
        assert!(devices[1].tile_curve.is_empty());
    }
}

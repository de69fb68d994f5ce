//! `epsilod calibrate`: measures the run's devices (its own kernel at its own
//! tile sizes, all devices at once as a run has them) and its link classes
//! (ping-pong between virtual processes: in-process, and across MPI ranks
//! under mpirun; between a GPU's memory and the host's, transfers each
//! way), fits them with `models::calibrate`, and writes the machine JSON.
//!
//! This file holds the command's order of work (the line's passes, the
//! sweep, the links, the machine); each step's code is in the files below.

mod checks;
mod links;
mod runs;
mod summary;
mod sweep;

use crate::args::{CalibrateArgs, RunArgs};
use crate::commands::write_file;
use crate::error::CliError;
use crate::json::JsonOut;
use crate::sizes::parse_size;
use checks::check_args;
use epsilod::{Cluster, DeviceKind, DeviceSpec};
use hitmap::Partition;
use links::{measure_host_links, measure_link, sizes};
use models::calibrate::{device_line, Pass, MIN_CELL_SPREAD};
use models::cell_cost::WorkingSet;
use models::predict::{Device, Machine};
use runs::{measure_devices, measure_rebalance, plain, Measured};
use summary::{to_json, Summary};
use sweep::{sweep, sweep_runs, with_tile_curves};

pub fn calibrate(args: &CalibrateArgs, cluster: &Cluster) -> Result<(), CliError> {
    let json = JsonOut::of(args.json.as_ref());
    check_args(args, json, cluster)?;
    let mut run = plain(&args.run, args.calib_iters);
    let sweep_runs = sweep_runs(&run, &args.tile_sweep, cluster)?;
    let weighted = matches!(run.partition, Partition::Weighted(_));
    let passes = if weighted { args.passes } else { 1 };
    let mut devices = Vec::new();
    let mut halo_bytes = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut overhead = 0.0;
    // Every pass's tile and kernel times, per device: the line a + b·cells
    // goes through them.
    let mut passes_of: Vec<Vec<Pass>> = Vec::new();
    for pass in 0..passes {
        let Measured {
            devices: passes_now,
            halos,
            overhead: over,
        } = measure_devices(&run, cluster)?;
        overhead = over;
        // Later passes' reports show the seeded weights in each device's
        // text: the machine keeps the devices as the user wrote them.
        if pass == 0 {
            names = passes_now.iter().map(|(n, _)| n.clone()).collect();
            passes_of = vec![Vec::new(); names.len()];
        }
        for (all, (_, p)) in passes_of.iter_mut().zip(passes_now) {
            all.push(p);
        }
        devices = names
            .iter()
            .zip(&passes_of)
            .map(|(n, p)| device_line(n, p))
            .collect::<Result<Vec<_>, _>>()?;
        halo_bytes = halos;
        if pass + 1 < passes {
            // The next pass runs at the tile sizes these weights give (the
            // tiles a --weights-from run computes): the machine goes where
            // --out will be, and the run reads it back. When those tiles
            // are the ones just measured (identical devices), the pass
            // skews the weights instead, so that every device is timed at
            // a second tile size and the line has a slope.
            let mut machine = Machine::new(devices.clone(), Vec::new())?;
            let total: f64 = passes_of.iter().map(|p| p[p.len() - 1].cells).sum();
            let next = machine.seeded_weights(total);
            let last: Vec<f64> = passes_of.iter().map(|p| p[p.len() - 1].cells).collect();
            let same = next
                .iter()
                .zip(&last)
                .all(|(n, l)| (n / l - 1.0).abs() < MIN_CELL_SPREAD);
            if same && pass == 0 {
                let skewed = skew(&next);
                machine = Machine::new(
                    skewed
                        .iter()
                        .zip(&names)
                        .map(|(w, n)| Device::new(n.clone(), 1.0 / w))
                        .collect(),
                    Vec::new(),
                )?;
            }
            if cluster.is_root() {
                write_file("machine model", &args.out, to_json(&machine))?;
            }
            cluster.agree(epsilod::cluster::Readiness::ready())?;
            run.weights_from = Some(args.out.clone());
        }
    }
    if passes > 1 {
        // The first tiles once more, between the first and the second in
        // the line's points: a drift of the machine's load across the
        // passes cancels (A, B, A) and shows in the residual, which decides
        // whether the intercept is believed. The overhead and spread stay
        // the seeded pass's (the tiles a --weights-from run computes).
        let mut first = run.clone();
        first.weights_from = args.run.weights_from.clone();
        let again = measure_devices(&first, cluster)?;
        for (all, (_, p)) in passes_of.iter_mut().zip(again.devices) {
            all.insert(1, p);
        }
        devices = names
            .iter()
            .zip(&passes_of)
            .map(|(n, p)| device_line(n, p))
            .collect::<Result<Vec<_>, _>>()?;
    }
    let swept = sweep(&sweep_runs, cluster)?;
    with_tile_curves(&mut devices, &passes_of, &swept)?;
    let mut links = Vec::new();
    if !args.no_links {
        let sizes = sizes(args.max_bytes, &halo_bytes);
        links.push(measure_link("in-process", cluster, 2, &sizes, args.reps)?);
        if cluster.size() > 1 {
            links.push(measure_link("mpi", cluster, 1, &sizes, args.reps)?);
        }
    }
    let mut staged = Vec::new();
    if !args.no_links && cluster.size() == 1 {
        let sizes: Vec<u64> = sizes(args.max_bytes, &halo_bytes)
            .into_iter()
            .filter(|&b| b >= 4)
            .collect();
        staged = measure_host_links(&names, &sizes, args.reps)?;
    }
    for (d, group, class) in staged {
        devices[d].host_link = Some(class.name.clone());
        devices[d].peer_group = group;
        links.push(class);
    }
    let mut machine = Machine::new(devices, links)?.with_overhead(overhead)?;
    if cluster.size() == 1 {
        // Every device here shares this host's memory: the CPU devices'
        // kernels are held to its bandwidth where a run's tiles outgrow
        // the caches the calibration's fitted. (Under MPI the ranks may be
        // on several hosts, which the machine does not describe.)
        for d in &mut machine.devices {
            d.host_memory = matches!(
                DeviceSpec::parse(&d.name).map(|s| s.kind),
                Ok(DeviceKind::Cpu { .. })
            );
        }
        machine = machine.with_memory(crate::commands::memory::host_curve()?);
        machine.calibrated_at = calibrated_working_set(&args.run, &machine, &passes_of)?;
    }
    if weighted {
        machine.rebalance = measure_rebalance(&run, cluster)?;
    }
    if cluster.is_root() {
        write_file("machine model", &args.out, to_json(&machine))?;
        let summary = Summary::of(&machine, &halo_bytes, &passes_of, &swept);
        json.write(&summary)?;
        if json.prints_text() {
            print!("{}", summary.text());
        }
    }
    Ok(())
}

/// The working set the devices' lines were fitted at: the seeded pass's
/// tiles (the last of each device's passes, whose spread the machine
/// keeps) of the devices in host memory, rows as wide as the interior.
/// `None` without `--size` (the run's size is an input file's).
fn calibrated_working_set(
    run: &RunArgs,
    machine: &Machine,
    passes: &[Vec<Pass>],
) -> Result<Option<WorkingSet>, CliError> {
    let Some(size) = &run.size else {
        return Ok(None);
    };
    let (shape, borders) = crate::commands::predict::stencil_shape(&run.stencil)?;
    let size = parse_size(size, shape.ndims)?;
    let cells_per_row: f64 = size
        .iter()
        .zip(&borders)
        .skip(1)
        .map(|(&n, &b)| n.saturating_sub(b) as f64)
        .product();
    let cells: Vec<f64> = machine
        .devices
        .iter()
        .zip(passes)
        .filter(|(d, _)| d.host_memory)
        .filter_map(|(_, p)| p.last().map(|p| p.cells))
        .collect();
    Ok(Some(WorkingSet::of(
        &cells,
        cells_per_row,
        shape.cell_bytes as f64,
        shape.reach as f64,
    )))
}

/// Weights alternately half as large again and half as small: every
/// device's tile moves by half, away from the one it had.
fn skew(weights: &[f64]) -> Vec<f64> {
    weights
        .iter()
        .enumerate()
        .map(|(d, w)| if d % 2 == 0 { w * 1.5 } else { w * 0.5 })
        .collect()
}

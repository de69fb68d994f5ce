//! `epsilod calibrate`: measures the run's devices (its own kernel at its own
//! tile sizes, all devices at once as a run has them) and its link classes
//! (ping-pong between virtual processes: in-process, and across MPI ranks
//! under mpirun; between a GPU's memory and the host's, transfers each
//! way), fits them with `models::calibrate`, and writes the machine JSON.

use super::run::{layout_of, run_config};
use super::{check_file_path, write_file};
use crate::args::{CalibrateArgs, RunArgs};
use crate::error::CliError;
use crate::json::JsonOut;
use crate::sizes::{parse_size, size_text};
use crate::target::ndims_of;
use epsilod::spmd::run_vps;
use epsilod::{Cluster, DeviceKind, DeviceSpec};
use hitmap::{Footprint, Layout};
use hitmap::{HaloPlan, Partition, Shape, Transport, TransportError};
use models::calibrate::{device_line, link, tile_curve, Pass, PingPong, MIN_CELL_SPREAD};
use models::cell_cost::WorkingSet;
use models::link::{Hockney, LogGp, Overheads, Sample};
use models::predict::{Device, LinkClass, Machine};
use serde::Serialize;
use std::time::{Duration, Instant};

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
/// Repetitions of each overhead measurement.
const OVERHEAD_REPS: usize = 16;

pub fn calibrate(args: &CalibrateArgs, cluster: &Cluster) -> Result<(), CliError> {
    super::once_each("--tile-sweep", &args.tile_sweep, "factor")?;
    let json = JsonOut::of(args.json.as_ref());
    if cluster.is_root() {
        super::distinct_files::apart_from_run(
            &[("--out", Some(&args.out)), ("--json", json.file())],
            &args.run,
        )?;
        check_file_path("machine model", &args.out)?;
        json.check()?;
    }
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
        machine = machine.with_memory(super::memory::host_curve()?);
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
    let (shape, borders) = super::predict::stencil_shape(&run.stencil)?;
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

/// The run as calibration runs it: `iters` iterations, no load balancing,
/// and none of the run's files.
fn plain(run: &RunArgs, iters: u64) -> RunArgs {
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

/// The tile sweep's runs: `run` (the user's partition) with its
/// partitioned extent (the first, under `m` and `m<n>`) scaled by each
/// factor, up the factors and back down, so that every tile is timed twice
/// and a drift between them in opposite orders. Each size is checked
/// before any is timed: a bad factor is refused at once, not after the
/// line's passes.
fn sweep_runs(run: &RunArgs, factors: &[f64], cluster: &Cluster) -> Result<Vec<RunArgs>, CliError> {
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
fn sweep(runs: &[RunArgs], cluster: &Cluster) -> Result<Vec<Vec<Pass>>, CliError> {
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
fn with_tile_curves(
    devices: &mut [Device],
    line: &[Vec<Pass>],
    swept: &[Vec<Pass>],
) -> Result<(), CliError> {
    for (d, (line, more)) in devices.iter_mut().zip(line.iter().zip(swept)) {
        d.tile_curve = tile_curve(d, line, more)?;
    }
    Ok(())
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

/// One calibration run: each device's name with its cells and kernel
/// seconds per iteration, the run's halo message sizes in bytes, and the
/// skeleton's overhead per iteration.
struct Measured {
    devices: Vec<(String, Pass)>,
    halos: Vec<u64>,
    overhead: f64,
}

/// The run's layout and footprint, as calibration takes them: apps are
/// refused, and every device must have cells to time.
fn timed_layout(run: &RunArgs, cluster: &Cluster) -> Result<(Layout, Footprint), CliError> {
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

/// One calibration run of `run`.
fn measure_devices(run: &RunArgs, cluster: &Cluster) -> Result<Measured, CliError> {
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
fn measure_rebalance(run: &RunArgs, cluster: &Cluster) -> Result<Option<Hockney>, CliError> {
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

/// 0, then 4 B doubling up to `max`, and the halo sizes, sorted.
fn sizes(max: u64, halos: &[u64]) -> Vec<u64> {
    let mut s: Vec<u64> = std::iter::once(0)
        .chain(std::iter::successors(Some(4u64), |&b| Some(b * 2)).take_while(|&b| b <= max))
        .chain(halos.iter().copied().filter(|&b| b <= max))
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Ping-pong between virtual processes 0 and 1 with `per_rank` processes
/// per rank (2: both in rank 0's process; 1: across ranks 0 and 1), then
/// the overheads on process 0, fitted into a link class.
fn measure_link(
    name: &str,
    cluster: &Cluster,
    per_rank: usize,
    sizes: &[u64],
    reps: u64,
) -> Result<LinkClass, CliError> {
    let body = |t: &mut dyn Transport<f32>| -> Result<Vec<f64>, TransportError> {
        let me = t.rank();
        if me > 1 {
            // Idle, but in every collective the two measuring ones call.
            t.barrier()?;
            return Ok(Vec::new());
        }
        let peer = 1 - me;
        let mut out = Vec::new();
        for &bytes in sizes {
            let cells = (bytes / 4) as usize;
            // One untimed round first.
            for r in 0..=reps {
                if me == 0 {
                    let t0 = Instant::now();
                    t.send(peer, 1, vec![0.0; cells])?;
                    t.recv(peer, 1)?;
                    if r > 0 {
                        out.push(t0.elapsed().as_secs_f64() / 2.0);
                    }
                } else {
                    let m = t.recv(peer, 1)?;
                    t.send(peer, 1, m)?;
                }
            }
        }
        // Doerfler & Brightwell's overheads, the simple way: the time in a
        // small send; the time in a receive whose message has long arrived;
        // the gap as the rate of back-to-back small sends.
        let (mut o_s, mut o_r) = (Vec::new(), Vec::new());
        for _ in 0..OVERHEAD_REPS {
            if me == 0 {
                let t0 = Instant::now();
                t.send(peer, 2, vec![0.0])?;
                o_s.push(t0.elapsed().as_secs_f64());
            } else {
                t.recv(peer, 2)?;
                t.send(peer, 3, vec![0.0])?;
            }
        }
        let mut gap = 0.0;
        if me == 0 {
            for _ in 0..OVERHEAD_REPS {
                std::thread::sleep(Duration::from_millis(1));
                let t0 = Instant::now();
                t.recv(peer, 3)?;
                o_r.push(t0.elapsed().as_secs_f64());
            }
            let t0 = Instant::now();
            for _ in 0..64 {
                t.send(peer, 4, vec![0.0])?;
            }
            gap = t0.elapsed().as_secs_f64() / 64.0;
        } else {
            for _ in 0..64 {
                t.recv(peer, 4)?;
            }
        }
        t.barrier()?;
        out.push(heuristics::median(&o_s));
        out.push(heuristics::median(&o_r));
        out.push(gap);
        Ok(out)
    };
    let all = run_vps(cluster, per_rank, &body)?;
    let v = &all[0];
    let per = reps as usize;
    if v.len() != sizes.len() * per + 3 {
        return Err(CliError::Calibrate(format!(
            "the {name} ping-pong returned {} values, expected {}",
            v.len(),
            sizes.len() * per + 3
        )));
    }
    let pings: Vec<PingPong> = sizes
        .iter()
        .enumerate()
        .map(|(k, &b)| PingPong {
            bytes: b as f64,
            seconds: v[k * per..(k + 1) * per].to_vec(),
        })
        .collect();
    let tail = &v[sizes.len() * per..];
    let overheads = Overheads {
        o_s: tail[0],
        o_r: tail[1],
        g: tail[2],
    };
    Ok(link(name, &pings, overheads)?)
}

/// The link between each GPU device's memory and the host's, as its halos
/// cross it when they go through the host: for every size, a write of that
/// many bytes into a device buffer and a read back, each waited for, half
/// the pair as the one-way time; the overheads from 4-byte transfers. Each
/// with its device's index and its peer group (devices whose buffers one
/// another can copy, numbered in order of appearance), all built at once
/// so that those of one context find each other.
fn measure_host_links(
    names: &[String],
    sizes: &[u64],
    reps: u64,
) -> Result<Vec<(usize, Option<usize>, LinkClass)>, CliError> {
    let mut gpus = Vec::new();
    for (d, name) in names.iter().enumerate() {
        let spec = DeviceSpec::parse(name)?;
        if matches!(spec.kind, DeviceKind::Cpu { .. }) {
            continue;
        }
        let device = crate::knobs::tune_one(spec)?
            .build::<f32>()
            .map_err(|e| CliError::Calibrate(format!("device {d} ({name}): {e}")))?;
        gpus.push((d, name, device));
    }
    let mut domains = Vec::new();
    let mut out = Vec::with_capacity(gpus.len());
    for (d, name, mut device) in gpus {
        let group = device.peer_domain().map(|dom| {
            domains.iter().position(|x| *x == dom).unwrap_or_else(|| {
                domains.push(dom);
                domains.len() - 1
            })
        });
        let failed =
            |e: controllers::DeviceError| CliError::Calibrate(format!("device {d} ({name}): {e}"));
        let most = sizes.iter().copied().max().unwrap_or(4).div_ceil(4) as usize;
        let buf = device
            .alloc(&Shape::from_sizes(&[most]), &Shape::from_sizes(&[most]))
            .map_err(failed)?;
        let mut back = Vec::with_capacity(most);
        let mut transfer = |cells: usize| -> Result<(f64, f64), controllers::DeviceError> {
            let region = Shape::from_sizes(&[cells]);
            let data = vec![1.0f32; cells];
            let t0 = Instant::now();
            device.write(buf, &region, &data)?;
            device.wait()?;
            let written = t0.elapsed().as_secs_f64();
            back.clear();
            let t0 = Instant::now();
            device.read(buf, &region, &mut back)?;
            device.wait()?;
            Ok((written, t0.elapsed().as_secs_f64()))
        };
        let mut pings = Vec::with_capacity(sizes.len());
        for &bytes in sizes {
            let cells = (bytes / 4) as usize;
            transfer(cells).map_err(failed)?; // untimed: first touches
            let mut seconds = Vec::with_capacity(reps as usize);
            for _ in 0..reps {
                let (w, r) = transfer(cells).map_err(failed)?;
                seconds.push((w + r) / 2.0);
            }
            pings.push(PingPong {
                bytes: bytes as f64,
                seconds,
            });
        }
        let (mut o_s, mut o_r) = (Vec::new(), Vec::new());
        for _ in 0..OVERHEAD_REPS {
            let (w, r) = transfer(1).map_err(failed)?;
            o_s.push(w);
            o_r.push(r);
        }
        let one = Shape::from_sizes(&[1]);
        let t0 = Instant::now();
        for _ in 0..64 {
            device.write(buf, &one, &[0.0]).map_err(failed)?;
        }
        device.wait().map_err(failed)?;
        let g = t0.elapsed().as_secs_f64() / 64.0;
        device.free(buf).map_err(failed)?;
        let overheads = Overheads {
            o_s: heuristics::median(&o_s),
            o_r: heuristics::median(&o_r),
            g,
        };
        out.push((
            d,
            group,
            link(&format!("host-device:{d}"), &pings, overheads)?,
        ));
    }
    Ok(out)
}

fn to_json(m: &Machine) -> String {
    serde_json::to_string_pretty(m).expect("machines serialise")
}

/// What `calibrate` prints, as `--json` writes it (docs/json.md): the
/// machine's fitted figures and the measurements behind them.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    devices: Vec<DeviceSummary<'a>>,
    links: Vec<LinkSummary<'a>>,
    /// The skeleton's own seconds per iteration.
    iteration_overhead_seconds: f64,
    /// The run's halo message sizes in bytes.
    halo_bytes: &'a [u64],
    /// Seconds of a rebalance: alpha + beta per byte moved.
    rebalance: Option<Hockney>,
    /// The host's copy rate by working set.
    host_memory: Vec<MemoryRate>,
    /// The working set the lines were fitted at, when the memory curve is
    /// measured: seconds per cell follow a run's working set from it.
    calibrated_at: Option<WorkingSet>,
}

/// One device's fitted line and the points it went through.
#[derive(Debug, Serialize)]
struct DeviceSummary<'a> {
    name: &'a str,
    seconds_per_cell: f64,
    fixed_seconds: f64,
    cv: f64,
    /// Slow spells: the log spread of the device's speed between runs.
    spell: f64,
    relative_power: f64,
    samples: usize,
    /// Each pass's median kernel seconds and cells.
    passes: Vec<Point>,
    /// The tile sweep's, likewise.
    tile_sweep: Vec<Point>,
    /// Kernel time over the line at each tile's cells.
    tile_curve: Vec<CurvePoint>,
    /// The link class to the host's memory, and its peer group.
    host_link: Option<&'a str>,
    peer_group: Option<usize>,
}

/// A pass's median kernel time over its cells.
#[derive(Debug, Serialize)]
struct Point {
    cells: f64,
    median_seconds: f64,
}

/// A tile curve's factor at a tile size.
#[derive(Debug, Serialize)]
struct CurvePoint {
    cells: f64,
    factor: f64,
}

/// A link class's fitted models.
#[derive(Debug, Serialize)]
struct LinkSummary<'a> {
    name: &'a str,
    hockney: Hockney,
    loggp: LogGp,
    /// Where the piecewise model's segments start, in bytes.
    breakpoints: Vec<f64>,
}

/// The host's copy rate at one working set.
#[derive(Debug, Serialize)]
struct MemoryRate {
    bytes: f64,
    bytes_per_second: f64,
}

impl<'a> Summary<'a> {
    fn of(
        m: &'a Machine,
        halos: &'a [u64],
        passes: &[Vec<Pass>],
        swept: &[Vec<Pass>],
    ) -> Summary<'a> {
        let points = |ps: Option<&Vec<Pass>>| -> Vec<Point> {
            ps.into_iter()
                .flatten()
                .map(|p| Point {
                    cells: p.cells,
                    median_seconds: heuristics::median(&p.seconds),
                })
                .collect()
        };
        Summary {
            devices: m
                .devices
                .iter()
                .enumerate()
                .map(|(k, d)| DeviceSummary {
                    name: &d.name,
                    seconds_per_cell: d.seconds_per_cell,
                    fixed_seconds: d.fixed_seconds,
                    cv: d.cv,
                    spell: d.spell,
                    relative_power: d.relative_power,
                    samples: d.samples,
                    passes: points(passes.get(k)),
                    tile_sweep: points(swept.get(k)),
                    tile_curve: d
                        .tile_curve
                        .iter()
                        .map(|&(cells, factor)| CurvePoint { cells, factor })
                        .collect(),
                    host_link: d.host_link.as_deref(),
                    peer_group: d.peer_group,
                })
                .collect(),
            links: m
                .links
                .iter()
                .map(|l| LinkSummary {
                    name: &l.name,
                    hockney: l.hockney,
                    loggp: l.loggp,
                    breakpoints: l
                        .piecewise
                        .as_ref()
                        .map(|p| p.breakpoints())
                        .unwrap_or_default(),
                })
                .collect(),
            iteration_overhead_seconds: m.iteration_overhead,
            halo_bytes: halos,
            rebalance: m.rebalance,
            host_memory: m
                .memory
                .iter()
                .flat_map(|mem| &mem.rates)
                .map(|&(bytes, bytes_per_second)| MemoryRate {
                    bytes,
                    bytes_per_second,
                })
                .collect(),
            calibrated_at: m.calibrated_at,
        }
    }

    /// The text for people.
    fn text(&self) -> String {
        let mut s = String::from("device  seconds/cell  fixed_s/iteration  cv  R_p  samples\n");
        for d in &self.devices {
            s += &format!(
                "  {}  {:.4e}  {:.4e}  {:.3}  {:.3}  {}\n",
                d.name, d.seconds_per_cell, d.fixed_seconds, d.cv, d.relative_power, d.samples
            );
        }
        // The points the line went through, so a fixed cost that was not
        // believed (or one that was) can be checked against the tiles; then
        // the sweep's, and the curve they made.
        let medians = |ps: &[Point]| {
            ps.iter()
                .map(|p| format!("{:.4e} s over {:.4e} cells", p.median_seconds, p.cells))
                .collect::<Vec<_>>()
                .join("; ")
        };
        for d in &self.devices {
            s += &format!(
                "  {} passes (median kernel): {}\n",
                d.name,
                medians(&d.passes)
            );
        }
        for d in self.devices.iter().filter(|d| !d.tile_sweep.is_empty()) {
            s += &format!(
                "  {} tile sweep (median kernel): {}\n",
                d.name,
                medians(&d.tile_sweep)
            );
            if d.tile_curve.is_empty() {
                s += &format!("  {} tile curve: none beyond the line's noise\n", d.name);
            } else {
                let points: Vec<String> = d
                    .tile_curve
                    .iter()
                    .map(|p| format!("{:.4e} cells x{:.3}", p.cells, p.factor))
                    .collect();
                s += &format!(
                    "  {} tile curve (time over the line): {}\n",
                    d.name,
                    points.join("; ")
                );
            }
        }
        for d in &self.devices {
            if let Some(link) = d.host_link {
                let group = d.peer_group.map_or(String::from("none"), |g| g.to_string());
                s += &format!(
                    "  {} reaches host memory over link {link} (peer group {group})\n",
                    d.name
                );
            }
        }
        for l in &self.links {
            s += &format!(
                "link {}: hockney alpha {:.3e} s beta {:.3e} s/B; loggp L {:.3e} o_s {:.3e} o_r {:.3e} g {:.3e} G {:.3e}; breakpoints {:?} B\n",
                l.name, l.hockney.alpha, l.hockney.beta, l.loggp.l, l.loggp.o_s, l.loggp.o_r, l.loggp.g, l.loggp.big_g, l.breakpoints
            );
        }
        s += &format!(
            "skeleton overhead {:.3e} s/iteration; halo message sizes {:?} B\n",
            self.iteration_overhead_seconds, self.halo_bytes
        );
        if let Some(h) = self.rebalance {
            s += &format!("rebalance {:.3e} s + {:.3e} s/B moved\n", h.alpha, h.beta);
        }
        if !self.host_memory.is_empty() {
            let points: Vec<String> = self
                .host_memory
                .iter()
                .map(|r| {
                    format!(
                        "{} MiB {:.1}",
                        r.bytes / (1 << 20) as f64,
                        r.bytes_per_second / 1e9
                    )
                })
                .collect();
            s += &format!(
                "host memory (copy GB/s by working set, all cores): {}\n",
                points.join(", ")
            );
        }
        if let Some(w) = &self.calibrated_at {
            s += &format!(
                "calibrated working set {:.1} MiB over {} stream(s), rows of {} B: seconds per cell follow a run's working set from it\n",
                w.bytes / (1 << 20) as f64,
                w.streams,
                w.row_bytes
            );
        }
        let spells: Vec<String> = self
            .devices
            .iter()
            .map(|d| format!("{} {:.3}", d.name, d.spell))
            .collect();
        s += &format!(
            "slow spells (log spread between runs): {}\n",
            spells.join(", ")
        );
        s
    }
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

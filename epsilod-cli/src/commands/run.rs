//! `epsilod run`: one run, its files, and a summary on stdout.

use super::cells;
use super::{check_report_path, write_report};
use crate::args::RunArgs;
use crate::error::CliError;
use crate::init::init_spec;
use crate::progress::Bar;
use crate::sizes::{parse_size, size_text};
use epsilod::devices::{load_device_file, one_cpu_per_rank, Placed};
use epsilod::error::chain;
use epsilod::output::Snapshots;
use epsilod::{
    output, Alb, Checkpointing, Cluster, DeviceSpec, JobInfo, Report, RunOptions, Skeleton, Stencil,
};
use epsilod_apps::App;
use hitmap::{Footprint, Layout};
use kernels::{AnySpec, Library};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub fn run(args: &RunArgs, cluster: &Cluster) -> Result<(), CliError> {
    let r = run_config(args, &args.alb, true, cluster)?;
    if !args.quiet && cluster.is_root() {
        print_summary(&r);
    }
    Ok(())
}

/// What `epsilod run` was asked to run.
enum Target {
    Library(Library),
    Spec(AnySpec),
    App(&'static dyn App),
}

fn resolve(name: &str) -> Result<Target, CliError> {
    if let Some(lib) = Library::by_name(name) {
        return Ok(Target::Library(lib));
    }
    if let Some(app) = epsilod_apps::find(name) {
        return Ok(Target::App(app));
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        let spec = AnySpec::load(path)?;
        if let Some(n) = components(&spec) {
            if !cells::SUPPORTED.contains(&n) {
                return Err(CliError::ArrayCells {
                    path: name.to_string(),
                    n,
                });
            }
        }
        return Ok(Target::Spec(spec));
    }
    Err(CliError::UnknownStencil {
        name: name.to_string(),
        apps: epsilod_apps::all()
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Components per cell of a spec with array cells (`cell = N`).
fn components(spec: &AnySpec) -> Option<usize> {
    match spec {
        AnySpec::Expr(kernels::ExprSpec { components, .. }) => *components,
        AnySpec::Weighted(_) => None,
    }
}

/// A stencil of scalar cells from a library name or spec, for the commands
/// that time or model one (`signature`, `calibrate`, `simulate`): array
/// cells run with `run` only.
fn scalar_stencil(
    target: &Target,
    name: &str,
    size: Option<&[usize]>,
    kernel: kernels::KernelChoice,
) -> Result<Option<Stencil<f32>>, CliError> {
    Ok(match target {
        Target::Library(lib) => Some(Stencil::<f32>::library(*lib, kernel)),
        Target::Spec(spec) => {
            if let Some(n) = components(spec) {
                return Err(CliError::ArrayCellsRunOnly {
                    path: name.to_string(),
                    n,
                });
            }
            let spec = match size {
                Some(size) => spec.for_domain(size)?,
                None => spec.clone(),
            };
            Some(Stencil::<f32>::from_any_spec(&spec))
        }
        Target::App(_) => None,
    })
}

impl Target {
    fn ndims(&self) -> usize {
        match self {
            Target::Library(l) => l.ndims(),
            Target::Spec(s) => s.ndims(),
            Target::App(a) => a.ndims(),
        }
    }

    /// Cells of the global array's boundary per dimension, which a run
    /// never updates; none for an app, whose domain is its own.
    fn boundary(&self) -> Vec<usize> {
        match self {
            Target::Library(l) => l.spec().boundary(),
            Target::Spec(s) => s.boundary(),
            Target::App(a) => vec![0; a.ndims()],
        }
    }
}

/// The run's size: `--size`, or an app's input's, which `--size` (if
/// given too) must equal.
fn size_of(args: &RunArgs, target: &Target) -> Result<Vec<usize>, CliError> {
    let given = args
        .size
        .as_deref()
        .map(|s| parse_size(s, target.ndims()))
        .transpose()?;
    let Some(input) = &args.input else {
        return given.ok_or_else(|| CliError::Size {
            size: String::new(),
            why: "give --size".into(),
        });
    };
    let app = match target {
        Target::App(app) if app.input().is_some() => app,
        _ => {
            return Err(CliError::Param(format!(
                "--input is for apps that read a file; '{}' reads none",
                args.stencil
            )))
        }
    };
    let of_input = app.size_of_input(input).map_err(|why| CliError::Input {
        path: input.display().to_string(),
        why,
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

/// Model-seeded partition: each device's weight becomes its cells in the
/// split of `total_cells` that equalises the calibrated kernel times
/// (`Machine::seeded_weights`: proportional to the relative powers when no
/// device has a fixed cost or a tile curve),
/// so the first ALB window starts near balance.
fn seed_weights(
    devices: &mut [DeviceSpec],
    machine: &models::predict::Machine,
    total_cells: f64,
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
    let mut weights = machine.seeded_weights(total_cells);
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
    target: Target,
    size: Vec<usize>,
    options: RunOptions,
    /// An app's parameters.
    params: epsilod_apps::Params,
    /// Auxiliary fields from files: name and values over the global domain.
    aux: AuxFiles,
}

/// Auxiliary fields read from files: name and values over the global
/// domain.
type AuxFiles = Vec<(String, Arc<ndarray::ArrayD<f32>>)>;

/// The `--aux name=FILE.npy` fields, read and checked against the spec
/// (a field it declares, once each) and the run's size.
fn aux_files(given: &[String], target: &Target, size: &[usize]) -> Result<AuxFiles, CliError> {
    let mut out = AuxFiles::new();
    for arg in given {
        let bad = |why: String| CliError::Aux {
            arg: arg.clone(),
            why,
        };
        let declared = match target {
            Target::Spec(AnySpec::Expr(e)) => e.aux.iter().map(|(n, _)| n.clone()).collect(),
            _ => Vec::new(),
        };
        let Some((name, path)) = arg.split_once('=').filter(|(_, p)| !p.is_empty()) else {
            return Err(bad("expected name=FILE.npy".into()));
        };
        if !declared.iter().any(|n| n == name) {
            return Err(bad(match declared.is_empty() {
                true => "the stencil declares no aux fields (a spec file's aux = { ... })".into(),
                false => format!("the spec declares aux fields {declared:?}, not '{name}'"),
            }));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(bad(format!("'{name}' is given twice")));
        }
        let a = epsilod::npy::read_as_f32(Path::new(path)).map_err(bad)?;
        if a.shape() != size {
            return Err(bad(format!(
                "the array is {:?}, the run's --size is {size:?}",
                a.shape()
            )));
        }
        out.push((name.to_string(), Arc::new(a)));
    }
    Ok(out)
}

/// The spec's kernel with fields' values from the files.
fn with_aux_files(
    spec: &kernels::ExprSpec,
    aux: AuxFiles,
) -> Result<kernels::ExprKernel<f32>, CliError> {
    let mut k = kernels::ExprKernel::<f32>::new(spec);
    for (name, a) in aux {
        // Row-major strides of the array (the global domain's shape).
        let mut strides = vec![1usize; a.ndim()];
        for d in (0..a.ndim().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * a.shape()[d + 1];
        }
        let values: Vec<f32> = a.iter().copied().collect();
        k = k
            .with_aux(&name, move |g: &[i64]| {
                // Fields are read within the global domain, the array's shape.
                let at: usize = g.iter().zip(&strides).map(|(&i, s)| i as usize * s).sum();
                values[at]
            })
            .map_err(|e| CliError::Aux {
                arg: name.clone(),
                why: e.to_string(),
            })?;
    }
    Ok(k)
}

/// Everything that can be wrong with a run, found before any work starts.
fn check(args: &RunArgs, alb: &str, cluster: &Cluster) -> Result<Checked, CliError> {
    let target = resolve(&args.stencil)?;
    let size = size_of(args, &target)?;
    let (mut devices, placement) = devices(args, cluster.info())?;
    if let Some(path) = &args.weights_from {
        // The cells calibration timed: the interior (a size too small for
        // one is refused with the run's own error further on).
        let total = size
            .iter()
            .zip(target.boundary())
            .map(|(&n, b)| n.saturating_sub(b) as f64)
            .product();
        seed_weights(
            &mut devices,
            &crate::machine_file::load_machine(path)?,
            total,
            args.alb_drop_below,
            path,
        )?;
    }
    let alb = Alb::parse(alb)?.map(|a| a.drop_below(args.alb_drop_below));
    let params = match &target {
        Target::App(app) => {
            app.check_size(&size).map_err(|why| CliError::Size {
                size: size_text(&size),
                why,
            })?;
            let params =
                epsilod_apps::Params::parse(*app, &args.params).map_err(CliError::Param)?;
            match &args.input {
                Some(input) => params.with_input(input),
                None => params,
            }
        }
        _ if !args.params.is_empty() => {
            return Err(CliError::Param(format!(
                "--param is for apps; '{}' takes none",
                args.stencil
            )))
        }
        _ => epsilod_apps::Params::default(),
    };
    let aux = aux_files(&args.aux, &target, &size)?;
    // Only rank 0 writes, and only its file system matters.
    if cluster.is_root() {
        if let Some(o) = &args.output {
            output::check_writable(o)?;
        }
        if let Some(r) = &args.report {
            check_report_path(r)?;
        }
    }
    Ok(Checked {
        target,
        size,
        params,
        aux,
        options: RunOptions {
            iters: args.iters,
            devices,
            partition: args.partition,
            alb,
            placement,
            observer: None,
            pin: args.pin,
            checkpoint: args
                .checkpoint_every
                .zip(args.checkpoint_dir.clone())
                .map(|(every, dir)| Checkpointing { every, dir }),
            restart: args.restart.clone(),
            on_failure: args.on_failure,
            halo_depth: args.halo_depth,
            cpu_time: args.cpu_time,
            snapshots: args
                .snapshot_every
                .zip(args.snapshot.clone())
                .map(|(every, pattern)| Snapshots { every, pattern }),
        },
    })
}

/// Validates everything about a run before any work starts (under MPI, on
/// every rank: one rank's error stops them all), runs it with heuristic
/// `alb`, and writes its output and report when `write`.
pub fn run_config(
    args: &RunArgs,
    alb: &str,
    write: bool,
    cluster: &Cluster,
) -> Result<Report, CliError> {
    let checked = check(args, alb, cluster);
    if cluster.size() > 1 {
        cluster.agree(
            checked
                .as_ref()
                .map(|_| String::new())
                .map_err(|e| chain(e)),
        )?;
    }
    let Checked {
        target,
        size,
        mut options,
        params,
        aux,
    } = checked?;
    let terminal = std::io::stderr().is_terminal();
    let shows_progress =
        write && cluster.is_root() && !args.quiet && (terminal || args.progress_every > 0.0);
    let bar = shows_progress.then(|| match terminal {
        true => Bar::new(args.iters),
        false => Bar::lines(args.iters, Duration::from_secs_f64(args.progress_every)),
    });
    options.observer = bar.as_ref().map(Bar::observer);
    let stencil = match target {
        Target::Library(lib) => Stencil::<f32>::library(lib, args.kernel),
        Target::Spec(AnySpec::Expr(ref spec)) if spec.components.is_some() => {
            let spec = spec.for_domain(&size)?;
            let out = cells::run(&spec, &size, args, &options, cluster)?;
            drop(bar);
            if let (true, Some(grid), Some(path)) = (write, &out.output, &args.output) {
                grid.write_to(path)?;
            }
            return finish(out.report, args, write && out.root);
        }
        Target::Spec(ref spec) => {
            let spec = spec.for_domain(&size)?;
            let mut stencil = Stencil::<f32>::from_any_spec(&spec);
            if let (AnySpec::Expr(e), false) = (&spec, aux.is_empty()) {
                stencil.kernel = Arc::new(with_aux_files(e, aux)?);
            }
            stencil
        }
        Target::App(app) => {
            let out = app.run(&size, &params, &options, cluster)?;
            drop(bar);
            if let (true, Some(grid), Some(path)) = (write, &out.output, &args.output) {
                grid.write_to(path)?;
            }
            return finish(out.report, args, write && cluster.is_root());
        }
    };
    let init = init_spec(
        args.init,
        args.seed,
        size.clone(),
        stencil.low.clone(),
        stencil.high.clone(),
    );
    let on_device = init.device_kernel::<f32>();
    let mut skeleton = Skeleton::new(&size, stencil)
        .init(move |i| init.value(i))
        .options(&options);
    if let Some(k) = on_device {
        skeleton = skeleton.init_on_device(k);
    }
    if let Some(s) = &options.snapshots {
        skeleton = skeleton.snapshot_files(s)?;
    }
    let out = skeleton.run_in(cluster)?;
    drop(bar);
    if let (true, true, Some(path)) = (write, out.is_root(), &args.output) {
        output::write(path, out.grid.view())?;
    }
    let root = out.is_root();
    finish(out.report, args, write && root)
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
    let stencil = match target {
        Target::App(app) => return Err(CliError::SignatureOfApp(app.name().to_string())),
        ref t => scalar_stencil(t, &args.stencil, Some(&size), args.kernel)?
            .expect("library stencils and specs have one"),
    };
    let footprint = stencil.kernel.footprint().clone();
    let plan = Skeleton::new(&size, stencil).options(&options).plan()?;
    Ok((plan.layout().clone(), footprint))
}

/// The simulator's target: a library stencil or a spec (apps have cells
/// and steps of their own).
fn simulated(name: &str) -> Result<Target, CliError> {
    match resolve(name)? {
        Target::App(app) => Err(CliError::Simulate(format!(
            "'{}' is an app: simulate covers library stencils and spec files",
            app.name()
        ))),
        t => Ok(t),
    }
}

/// The dimensions of a library or spec stencil, to read its `--size` with.
pub(super) fn ndims_of(name: &str) -> Result<usize, CliError> {
    Ok(simulated(name)?.ndims())
}

/// The stencil of a library or spec run over a global array of `size`
/// (a spec's `n[d]` bound to it).
pub(super) fn stencil_of(name: &str, size: &[usize]) -> Result<Stencil<f32>, CliError> {
    let t = simulated(name)?;
    Ok(
        scalar_stencil(&t, name, Some(size), kernels::KernelChoice::Specialized)?
            .expect("library stencils and specs have one"),
    )
}

/// Writes the report where asked (when `write`) and hands it back.
fn finish(report: Report, args: &RunArgs, write: bool) -> Result<Report, CliError> {
    if let (true, Some(path)) = (write, &args.report) {
        let text = serde_json::to_string_pretty(&report).expect("reports serialise");
        write_report(path, text)?;
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
}

//! The `epsilod` command line (cli.md is the contract: names and report keys
//! must not change).

use crate::alb::Alb;
use crate::apps::gas;
use crate::cluster::{print_error, speaks, Cluster};
use crate::devices::{all_cores, load_device_file, DeviceSpec, Placed};
use crate::error::ConfigError;
use crate::output::{self, OutputCell};
use crate::report::Report;
use crate::skeleton::{Skeleton, Stencil};
use clap::{Args, Parser, Subcommand};
use hitmap::{Partition, Shape};
use kernels::{basic_init, random_value, KernelChoice, Library, StencilSpec};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "epsilod",
    version,
    about = "Iterative stencil loops on heterogeneous devices, with automatic load balancing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a stencil, an app or a stencil spec file.
    Run(Box<RunArgs>),
    /// Run each heuristic of --alb (comma-separated) --reps times and print the statistics table.
    Compare(Box<CompareArgs>),
    /// Plot per-iteration times (several reports: with and without ALB), per-device kernel time
    /// and row shares.
    Plot(PlotArgs),
    /// List the library stencils, the apps and the devices found.
    List,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Reports written by `epsilod run --report`.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    /// The figure: .png or .svg.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Runs of each heuristic (interleaved, so drift in the machine's load hits all alike).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Also write the table as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also write the table (and every run's summary) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A library stencil (1dc2 1dnc4 2d4 2d8 2dnc8 2df5 3d6 3d27 3dnc12 3df7 4d8), an app
    /// (gas-sim) or a path to a stencil spec file (.toml).
    pub stencil: String,
    /// Global size including boundary cells: 4098x4098, or 32 for the same in every dimension.
    /// For gas-sim, the user domain is this minus 2 in each dimension.
    #[arg(long, allow_hyphen_values = true)]
    pub size: String,
    /// Iterations.
    #[arg(long, default_value = "100", allow_hyphen_values = true)]
    pub iters: String,
    /// One device (virtual process) each, repeatable: cpu | cpu:threads=T | opencl |
    /// opencl:platform=P,device=D | cuda | cuda:device=D, each optionally with ,weight=W and
    /// ,slowdown=F or ,slowdown=F@ITER. Default: one cpu device on every core.
    #[arg(long = "devices")]
    pub devices: Vec<String>,
    /// A TOML device file instead of --devices.
    #[arg(long)]
    pub device_file: Option<PathBuf>,
    /// m | m<n> | s<d> | w<d> (EPSILOD's meanings).
    #[arg(long, default_value = "m")]
    pub partition: String,
    /// Load-balancing heuristic: none | const-iters | exp-iters | double-iters | next-alb |
    /// cost-aware | welch (the last two are this project's; see docs/alb.md). Needs --partition w0.
    #[arg(long, default_value = "none")]
    pub alb: String,
    /// specialized (bit-identical to EPSILOD) | generic.
    #[arg(long, default_value = "specialized")]
    pub kernel: String,
    /// Result array: .npy, .txt (EPSILOD's text format) or .dat (raw little-endian).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// JSON report.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Initial values: basic (EPSILOD's: boundary values, interior 0) | random (the same
    /// boundaries, interior uniform in [0, 1) from --seed; keeps values clear of the slow
    /// subnormal range, for timing studies).
    #[arg(long, default_value = "basic")]
    pub init: String,
    /// Seed for anything random.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// No progress bar and no summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs the command line; returns the process exit status.
pub fn main() -> i32 {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                };
            }
            let text = e.render().to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ");
            if speaks() {
                print_error(&format!("{first} (see 'epsilod --help')"));
            }
            return 2;
        }
    };
    // Under mpirun every rank runs this; rank 0 alone speaks for them.
    let cluster = match Cluster::join() {
        Ok(c) => c,
        Err(e) => {
            if speaks() {
                print_error(&e.to_string());
            }
            return 1;
        }
    };
    let result = match cli.command {
        Command::Run(args) => run(&args),
        Command::Compare(args) => compare(&args),
        Command::Plot(args) => plot(&args),
        Command::List => {
            print!("{}", list());
            Ok(())
        }
    };
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            if cluster.is_root() {
                print_error(&e.to_string());
            }
            1
        }
    };
    // Waits for every rank (see Cluster): printed first, so nothing is lost.
    drop(cluster);
    code
}

/// Whether this process prints results: always alone, rank 0 under MPI.
fn is_root() -> bool {
    crate::cluster::active().is_none_or(|j| j.rank == 0)
}

/// What `epsilod run` was asked to run.
enum Target {
    Library(Library),
    Spec(StencilSpec),
    Gas,
}

fn resolve(name: &str) -> Result<Target, ConfigError> {
    if let Some(lib) = Library::by_name(name) {
        return Ok(Target::Library(lib));
    }
    if name == "gas-sim" {
        return Ok(Target::Gas);
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        return Ok(Target::Spec(StencilSpec::load(path)?));
    }
    Err(ConfigError::UnknownStencil(name.to_string()))
}

/// `4098x4098` or `32` (the same in each of `ndims` dimensions).
pub fn parse_size(text: &str, ndims: usize) -> Result<Vec<usize>, ConfigError> {
    let bad = |why: String| ConfigError::Size {
        size: text.to_string(),
        why,
    };
    let parts: Vec<&str> = text.split('x').collect();
    let mut sizes = Vec::new();
    for p in &parts {
        match p.trim().parse::<usize>() {
            Ok(0) => return Err(bad("sizes must be at least 1".into())),
            Ok(n) => sizes.push(n),
            Err(_) => {
                return Err(bad(format!(
                    "'{p}' is not a whole number >= 1 (write sizes like 4098x4098 or 32)"
                )))
            }
        }
    }
    match sizes.len() {
        1 => Ok(vec![sizes[0]; ndims]),
        n if n == ndims => Ok(sizes),
        n => Err(bad(format!(
            "{n} dimensions given, the stencil has {ndims}"
        ))),
    }
}

pub fn parse_iters(text: &str) -> Result<u64, ConfigError> {
    match text.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ConfigError::Iters(text.to_string())),
    }
}

/// The devices and, when a device file places them on ranks, their ranks.
fn devices(args: &RunArgs, hosts: &[String]) -> Result<Placed, ConfigError> {
    match (&args.device_file, args.devices.is_empty()) {
        (Some(_), false) => Err(ConfigError::DevicesTwice),
        (Some(f), true) => load_device_file(f)?.place(hosts),
        (None, false) => Ok((
            args.devices
                .iter()
                .map(|d| DeviceSpec::parse(d))
                .collect::<Result<_, _>>()?,
            None,
        )),
        (None, true) => Ok((vec![DeviceSpec::cpu(all_cores())], None)),
    }
}

/// `epsilod compare`: the heuristics of `--alb a,b,c`, `--reps` runs each.
pub fn compare(args: &CompareArgs) -> Result<(), ConfigError> {
    let names: Vec<String> = args
        .run
        .alb
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    for n in &names {
        Alb::named(n).map_err(|_| ConfigError::UnknownAlb(n.clone()))?;
    }
    if args.reps < 2 {
        return Err(ConfigError::Compare(format!(
            "--reps {} is too few for statistics: use at least 2",
            args.reps
        )));
    }
    if args.run.output.is_some() || args.run.report.is_some() {
        return Err(ConfigError::Compare(
            "compare writes no --output or --report: use --csv or --json for its table".into(),
        ));
    }
    if is_root() {
        for p in [&args.csv, &args.json].into_iter().flatten() {
            check_report_path(p)?;
        }
    }
    let mut reports: Vec<Vec<Report>> = vec![Vec::new(); names.len()];
    for rep in 0..args.reps {
        for (h, name) in names.iter().enumerate() {
            let r = run_config(&args.run, name, false)?;
            if !args.run.quiet && is_root() {
                eprintln!(
                    "run {}/{} {name}: loop {:.4} s, {} rebalance(s)",
                    rep + 1,
                    args.reps,
                    r.summary.loop_seconds,
                    r.summary.rebalances
                );
            }
            reports[h].push(r);
        }
    }
    if !is_root() {
        return Ok(());
    }
    let rows = crate::compare::table(&names, &reports);
    print!("{}", crate::compare::render(&rows));
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| ConfigError::Report {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    };
    if let Some(p) = &args.csv {
        write(p, crate::compare::csv(&rows))?;
    }
    if let Some(p) = &args.json {
        let runs: Vec<serde_json::Value> = names
            .iter()
            .zip(&reports)
            .map(|(n, rs)| serde_json::json!({ "heuristic": n, "summaries": rs.iter().map(|r| &r.summary).collect::<Vec<_>>() }))
            .collect();
        let doc =
            serde_json::json!({ "config": reports[0][0].config, "table": rows, "runs": runs });
        write(
            p,
            serde_json::to_string_pretty(&doc).expect("tables serialise"),
        )?;
    }
    Ok(())
}

/// `epsilod plot`: each report labelled by its heuristic (or file name if two share one).
pub fn plot(args: &PlotArgs) -> Result<(), ConfigError> {
    let mut runs = Vec::new();
    for p in &args.reports {
        let r = crate::plot::load_report(p)?;
        runs.push((r.config.alb.clone(), r));
    }
    let names: Vec<String> = runs.iter().map(|(n, _)| n.clone()).collect();
    for (i, p) in args.reports.iter().enumerate() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            runs[i].0 = format!(
                "{} ({})",
                names[i],
                p.file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into())
            );
        }
    }
    crate::plot::plot(&runs, &args.output)
}

/// `epsilod run`: one run, its files, and a summary on stdout.
pub fn run(args: &RunArgs) -> Result<(), ConfigError> {
    let r = run_config(args, &args.alb, true)?;
    if !args.quiet && is_root() {
        print_summary(&r);
    }
    Ok(())
}

/// A run, checked.
struct Plan {
    target: Target,
    size: Vec<usize>,
    iters: u64,
    devices: Vec<DeviceSpec>,
    placement: Option<Vec<usize>>,
    partition: Partition,
    alb: Alb,
    choice: KernelChoice,
    progress: bool,
}

/// Everything that can be wrong with a run, found before any work starts.
fn prepare(args: &RunArgs, alb: &str, write: bool) -> Result<Plan, ConfigError> {
    let job = crate::cluster::active();
    let hosts = job
        .as_ref()
        .map_or_else(|| vec![String::from("localhost")], |j| j.hosts.clone());
    let root = job.as_ref().is_none_or(|j| j.rank == 0);
    let target = resolve(&args.stencil)?;
    let ndims = match &target {
        Target::Library(l) => l.ndims(),
        Target::Spec(s) => s.ndims(),
        Target::Gas => 3,
    };
    let size = parse_size(&args.size, ndims)?;
    let iters = parse_iters(&args.iters)?;
    let (devices, placement) = devices(args, &hosts)?;
    let partition: Partition = args.partition.parse()?;
    let alb = Alb::named(alb).map_err(|_| ConfigError::UnknownAlb(alb.to_string()))?;
    let choice: KernelChoice = args.kernel.parse().map_err(ConfigError::Kernel)?;
    init_is_random(&args.init)?;
    if matches!(target, Target::Gas) && size.iter().any(|&s| s < 3) {
        return Err(ConfigError::Size {
            size: args.size.clone(),
            why: "gas-sim needs at least 3 cells per dimension (a 1-cell border each side)".into(),
        });
    }
    // Only rank 0 writes, and only its file system matters.
    if root {
        if let Some(o) = &args.output {
            output::check_writable(o)?;
        }
        if let Some(r) = &args.report {
            check_report_path(r)?;
        }
    }
    Ok(Plan {
        target,
        size,
        iters,
        devices,
        placement,
        partition,
        alb,
        choice,
        progress: write && root && !args.quiet && std::io::stderr().is_terminal(),
    })
}

/// Validates everything about a run before any work starts (under MPI, on
/// every rank: one rank's error stops them all), runs it with heuristic
/// `alb`, and writes its output and report when `write`.
pub fn run_config(args: &RunArgs, alb: &str, write: bool) -> Result<Report, ConfigError> {
    let plan = prepare(args, alb, write);
    if let Some(job) = crate::cluster::active().filter(|j| j.size > 1) {
        crate::cluster::agree(
            &job,
            plan.as_ref()
                .map(|_| String::new())
                .map_err(|e| e.to_string()),
        )?;
    }
    let plan = plan?;
    let stencil = match plan.target {
        Target::Library(lib) => Stencil::<f32>::library(lib, plan.choice),
        Target::Spec(ref spec) => Stencil::<f32>::from_spec(spec),
        Target::Gas => {
            let user = [0, 1, 2].map(|d| plan.size[d] - 2);
            let skel = Skeleton::new(&plan.size, gas::stencil()).init(gas::init(user));
            let domain = Some(gas::user_domain(user));
            return execute(skel, &plan, domain, args, write);
        }
    };
    execute(
        stencil_skeleton(stencil, &plan, args)?,
        &plan,
        None,
        args,
        write,
    )
}

fn stencil_skeleton(
    stencil: Stencil<f32>,
    plan: &Plan,
    args: &RunArgs,
) -> Result<Skeleton<f32>, ConfigError> {
    let (low, high, sz) = (stencil.low.clone(), stencil.high.clone(), plan.size.clone());
    Ok(
        Skeleton::new(&plan.size, stencil)
            .init(stencil_init(&args.init, args.seed, sz, low, high)?),
    )
}

fn init_is_random(kind: &str) -> Result<bool, ConfigError> {
    match kind {
        "basic" => Ok(false),
        "random" => Ok(true),
        _ => Err(ConfigError::Init(kind.to_string())),
    }
}

fn stencil_init(
    kind: &str,
    seed: u64,
    sizes: Vec<usize>,
    low: Vec<usize>,
    high: Vec<usize>,
) -> Result<impl Fn(&[i64]) -> f32 + Send + Sync + 'static, ConfigError> {
    let random = init_is_random(kind)?;
    Ok(move |i: &[i64]| {
        let b = basic_init(i, &sizes, &low, &high);
        let interior =
            (0..i.len()).all(|d| i[d] >= low[d] as i64 && i[d] < (sizes[d] - high[d]) as i64);
        if random && interior {
            random_value(i, seed)
        } else {
            b
        }
    })
}

fn check_report_path(path: &Path) -> Result<(), ConfigError> {
    output::check_creatable(path).map_err(|why| ConfigError::Report {
        path: path.display().to_string(),
        why,
    })
}

fn execute<T: OutputCell>(
    skel: Skeleton<T>,
    plan: &Plan,
    output_region: Option<Shape>,
    args: &RunArgs,
    write: bool,
) -> Result<Report, ConfigError> {
    let mut skel = skel
        .alb(Some(plan.alb.clone()))
        .iterations(plan.iters)
        .devices(plan.devices.clone())
        .partition(plan.partition)
        .progress(plan.progress);
    if let Some(p) = &plan.placement {
        skel = skel.placement(p.clone());
    }
    let out = skel.run()?;
    if !write || !out.is_root() {
        return Ok(out.report);
    }
    if let Some(path) = &args.output {
        let view = match &output_region {
            None => out.grid.view(),
            Some(r) => out.grid.slice_each_axis(|ax| {
                let s = r.sig(ax.axis.index());
                ndarray::Slice::from(s.begin() as isize..s.end() as isize)
            }),
        };
        output::write(path, view)?;
    }
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&out.report).expect("reports serialise");
        std::fs::write(path, text).map_err(|e| ConfigError::Report {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
    }
    Ok(out.report)
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
    println!(
            "loop {:.3} s, median iteration {:.3} ms, {:.3e} cell updates/s, skeleton overhead {:.3} ms/iteration",
            r.summary.loop_seconds,
            r.summary.median_iteration_seconds * 1e3,
            r.summary.cell_updates_per_second,
            r.summary.skeleton_overhead_seconds_per_iteration * 1e3
        );
}

#[cfg(feature = "opencl")]
fn opencl_devices() -> String {
    let plats = controllers::opencl::platforms();
    if plats.is_empty() {
        return "  opencl  no platform found (install one, e.g. pocl-opencl-icd)\n".into();
    }
    let mut s = String::new();
    for (p, (name, devs)) in plats.iter().enumerate() {
        for (d, dev) in devs.iter().enumerate() {
            s += &format!("  opencl:platform={p},device={d}  {name}: {dev}\n");
        }
    }
    s
}

#[cfg(not(feature = "opencl"))]
fn opencl_devices() -> String {
    "  opencl  not in this build (rebuild with --features opencl)\n".into()
}

/// The text of `epsilod list`.
pub fn list() -> String {
    let mut s = String::from("library stencils (f32; global size includes the boundary):\n");
    for lib in Library::ALL {
        let spec = lib.spec();
        let shape = spec
            .low
            .iter()
            .zip(&spec.high)
            .map(|(l, h)| format!("-{l}..{h}"))
            .collect::<Vec<_>>()
            .join(",");
        s += &format!(
            "  {:<7} {}-d  offsets ({shape})  {} terms / {}\n",
            lib.name(),
            lib.ndims(),
            spec.terms().len(),
            spec.factor
        );
    }
    s += "apps:\n  gas-sim 3-d  D3Q19 lattice Boltzmann, 19 x f32 cells; --size is the user domain + 2\n";
    s += "stencil spec files: epsilod run my-stencil.toml (name, low, high, weights, factor)\n";
    s += &format!(
        "devices:\n  cpu     {} core(s): cpu, cpu:threads=T\n",
        all_cores()
    );
    s += &opencl_devices();
    s += "  cuda    not in this build (rebuild with --features cuda)\n";
    s
}

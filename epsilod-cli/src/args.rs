//! The arguments (docs/cli.md lists every one, and is the contract: names
//! and meanings must not change). Values that parse alone are parsed here, into types; the size
//! waits for the stencil, which says how many dimensions it has.

use clap::{Args, Parser, Subcommand};
use epsilod::{HaloDepth, OnFailure};
use hitmap::Partition;
use kernels::KernelChoice;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "epsilod",
    version,
    about = "Iterative stencil loops on heterogeneous devices, with automatic load balancing"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a stencil, an app or a stencil spec file.
    Run(Box<RunArgs>),
    /// Run each heuristic of --alb (comma-separated) --reps times and print the statistics table.
    Compare(Box<CompareArgs>),
    /// Plot per-iteration times (several reports: with and without ALB), per-device kernel time
    /// and row shares.
    Plot(PlotArgs),
    /// Predict a run's times over a calibrated machine (models::predict).
    Predict(PredictArgs),
    /// Measure each device's seconds per cell at the run's tile sizes and the links by ping-pong,
    /// fit the link models, and write the machine JSON that predict, simulate and --weights-from
    /// read.
    Calibrate(Box<CalibrateArgs>),
    /// Choose devices, network and layout from a device inventory (TOML): HCLogP's branch and
    /// bound, the Pareto front of (devices, time), and a sweep over weights and devices per rank.
    Plan(PlanArgs),
    /// Simulate a run on a virtual clock (real layouts, plans, ALB cycle and heuristics; modelled
    /// devices and links), or replay a real report's kernel times (--trace-from).
    Simulate(Box<SimulateArgs>),
    /// Draw a field (.npy from --output or --snapshot) as a heat map with a colour bar; several
    /// files as an animated GIF.
    View(ViewArgs),
    /// List the library stencils, the apps and the devices found.
    List(ListArgs),
    /// Record a short run's phase (per device: compute, exchange, cells, messages) as a
    /// signature for `epsilod scale`.
    Signature(Box<SignatureArgs>),
    /// Fit a strong-scaling model to signatures at small device counts and predict a larger one.
    Scale(ScaleArgs),
    /// Time random-pairs message exchanges over sizes, pair counts and processes per rank
    /// (CSV of features and seconds, the training data of fit-comm).
    Commbench(CommbenchArgs),
    /// Fit a learned model of exchange time to commbench CSV and score it on held-out data.
    FitComm(FitCommArgs),
    /// Run a trace predicted by `scale --out` one range of processes at a time (black holes for
    /// partners outside the range, compute emulated by sleeping) and time its phase.
    Replay(ReplayArgs),
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace (`epsilod scale --out`).
    pub trace: PathBuf,
    /// Processes measured at once (their black holes come on top); 0: all at once.
    #[arg(long, default_value_t = 4)]
    pub range_size: usize,
    /// Virtual processes per rank (under mpirun); by default as few as the largest range needs.
    #[arg(long, value_parser = at_least(1usize))]
    pub per_rank: Option<usize>,
    /// Timed phases per range, after one without compute.
    #[arg(long, default_value_t = 10, value_parser = at_least(1u64))]
    pub iters: u64,
    /// A signature taken at the trace's device count, to compare with.
    #[arg(long)]
    pub against: Option<PathBuf>,
    /// Add P3S's noise pair (Eq. 7.1): two more processes exchanging, each phase, the messages
    /// of the processes outside the range, so the transport carries the whole phase's traffic.
    #[arg(long)]
    pub noise: bool,
}

#[derive(Args, Debug)]
pub struct CommbenchArgs {
    /// Virtual processes per rank (one process: all of them), comma-separated; each is a thread,
    /// at most 1024.
    #[arg(long, default_value = "2,4,8", value_delimiter = ',', value_parser = within(1u64, 1024))]
    pub per_rank: Vec<u64>,
    /// Message sizes in bytes, comma-separated (at most 1 GiB, 1073741824).
    #[arg(long, default_value = "16,256,4096,65536,1048576", value_delimiter = ',', value_parser = within(1u64, 1 << 30))]
    pub sizes: Vec<u64>,
    /// Partners per process (rounds of random pairing), comma-separated.
    #[arg(long, default_value = "1,2,3,4", value_delimiter = ',', value_parser = item(at_least(1u64)))]
    pub pm: Vec<u64>,
    /// Pairings per configuration, each reseeded.
    #[arg(long, default_value_t = 3, value_parser = at_least(1u64))]
    pub reps: u64,
    /// Timed exchanges per pairing (after two untimed ones); each process keeps its third quartile.
    #[arg(long, default_value_t = 20, value_parser = at_least(1u64))]
    pub iters: u64,
    /// Sweeps over all the configurations; each configuration's time is the median of its
    /// sweeps. On a shared machine a burst of other work spoils a stretch of one sweep, and
    /// the sweeps take it at different configurations.
    #[arg(long, default_value_t = 5, value_parser = at_least(1u64))]
    pub sweeps: u64,
    /// Seed of the pairings.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the CSV.
    #[arg(long)]
    pub csv: PathBuf,
}

#[derive(Args, Debug)]
pub struct FitCommArgs {
    /// Training data from commbench.
    pub train: PathBuf,
    /// linreg-sv, linreg-mv, gbrt, random-forest, extra-trees or semi-empirical.
    #[arg(long, default_value = "gbrt")]
    pub method: String,
    /// Held-out data from commbench to score on (the model, an alpha-beta and a semi-empirical
    /// baseline).
    #[arg(long)]
    pub test: Option<PathBuf>,
    /// Reports of single-process w0/s0 runs to score on too: each run's halo exchange.
    #[arg(long, value_delimiter = ',')]
    pub runs: Vec<PathBuf>,
    /// Seed of the random forest's and extra trees' draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the model (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the scores as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

/// `--halo-depth` defaults to 1 here, not `run`'s `cache`: the scaling
/// model's phase is one step (its messages are one step's halo plan, its
/// compute a block's cells over P), which a run fusing K steps a launch
/// over a tile grown by the ring, with K-deep messages once a period, is
/// not; and `cache` picks the depth by the tile, so by the device count.
#[derive(Args, Debug)]
#[command(mut_arg("halo_depth", |a| a.default_value("1").help(
    "Ghost cells K stencil reaches deep, exchanged every K iterations: 1..64 | cache (as for \
     run). Default 1, one step a launch, the phase the scaling model describes; signatures \
     at different depths do not scale together"
)))]
pub struct SignatureArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Iterations actually run (the first is a warm-up); --iters is the full run's length, the
    /// phase's weight.
    #[arg(long, default_value_t = 20, value_parser = at_least(2u64))]
    pub sig_iters: u64,
    /// Where to write the signature (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Also measure each CUDA device: a copy kernel's bandwidth (the roofline) and the 2d4
    /// f32 one-step kernel against it, in this process.
    #[arg(long)]
    pub measure: bool,
    /// Grid of the measurement, ROWSxCOLS (boundary included).
    #[arg(long, default_value = "16386x16386", value_parser = parse_grid2)]
    pub measure_size: [usize; 2],
    /// Also write the measurements as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on
    /// stdout instead of the text.
    #[arg(long, requires = "measure", value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

/// `ROWSxCOLS`, each at least 3 (one interior cell inside the boundary).
fn parse_grid2(s: &str) -> Result<[usize; 2], String> {
    let v: Vec<usize> = s
        .split('x')
        .map(|p| p.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("'{s}' is not ROWSxCOLS"))?;
    match v[..] {
        [r, c] if r >= 3 && c >= 3 => Ok([r, c]),
        _ => Err(format!("'{s}': give ROWSxCOLS, each at least 3")),
    }
}

#[derive(Args, Debug)]
pub struct ScaleArgs {
    /// Signatures of one run at two or more device counts (three or more recommended).
    #[arg(required = true)]
    pub signatures: Vec<PathBuf>,
    /// Devices to predict for, at most 1048576 (the trace holds every one's messages).
    #[arg(long, required_unless_present = "targets", conflicts_with = "targets", value_parser = from_to(1u64, 1 << 20))]
    pub target: Option<u64>,
    /// Device counts to predict for, comma-separated (8,16,32,...): the curve, one line each.
    #[arg(long, value_delimiter = ',', value_parser = within(1u64, 1 << 20))]
    pub targets: Vec<u64>,
    /// Signatures of a smaller problem: far points for the compute fit.
    #[arg(long)]
    pub far: Vec<PathBuf>,
    /// Held-back signatures to validate the model on (pattern and weight exact, volume and
    /// compute within 10%).
    #[arg(long)]
    pub validate: Vec<PathBuf>,
    /// Also write the predicted trace (JSON) of --target.
    #[arg(long, conflicts_with = "targets")]
    pub out: Option<PathBuf>,
    /// The clock compute is fitted on: wall (kernel wall time) or cpu (kernel thread CPU time,
    /// turned into wall time at the target by its cores: right when devices outnumber cores).
    #[arg(long, value_enum, default_value_t = ComputeArg::Wall)]
    pub compute: ComputeArg,
    /// Cores of the target's node, for --compute cpu and --node-bandwidth signatures (default:
    /// the signatures'); a fraction where other work takes part of them.
    #[arg(long, value_parser = parse_positive)]
    pub cores: Option<f64>,
    /// Memory bandwidth of the target's node in GB/s (a measured copy, bytes read plus
    /// written); `measure` to time a copy on every core here; `signatures` for what the kernels
    /// moved in the signature whose devices fill the cores. Compute per device is then never
    /// below its cells' bytes over its share of it.
    #[arg(long, value_parser = parse_bandwidth)]
    pub node_bandwidth: Option<BandwidthArg>,
    /// Bytes an update of one cell moves, for --node-bandwidth (8: an f32 read and written).
    #[arg(long, requires = "node_bandwidth", default_value_t = 8.0, value_parser = parse_positive)]
    pub bytes_per_cell: f64,
    /// Devices per node: they share its --cores (--compute cpu) and its --node-bandwidth
    /// (default: all of the target's on one).
    #[arg(long, value_parser = at_least(1u64))]
    pub devices_per_node: Option<u64>,
    /// Also write the model, validations and predictions as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

/// `--compute`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeArg {
    /// Kernel wall time.
    Wall,
    /// Kernel thread CPU time.
    Cpu,
}

/// `--node-bandwidth`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BandwidthArg {
    /// Bytes per second.
    Given(f64),
    /// Time a copy here.
    Measure,
    /// What the kernels moved in the signature that fills the cores.
    Signatures,
}

fn parse_bandwidth(s: &str) -> Result<BandwidthArg, String> {
    match s {
        "measure" => return Ok(BandwidthArg::Measure),
        "signatures" => return Ok(BandwidthArg::Signatures),
        _ => {}
    }
    parse_positive(s).map(|gb| BandwidthArg::Given(gb * 1e9))
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
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
pub struct ViewArgs {
    /// Field files (.npy): one for a PNG, several (in order) for the frames of a GIF.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The picture: .png (one file) or .gif (one or more).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// The plane of a 3-d field: x=K, y=K or z=K (default: the middle z).
    #[arg(long, value_parser = crate::view::parse_slice)]
    pub slice: Option<crate::view::Slice>,
    /// For gas-sim's D3Q19 cells: density (default) or speed.
    #[arg(long, default_value = "density", value_parser = parse_quantity)]
    pub field: crate::view::Quantity,
    /// Milliseconds per GIF frame, at most 655350 (GIF counts hundredths of a second in 16 bits).
    #[arg(long, default_value_t = 200, value_parser = from_to(0u32, 655_350))]
    pub delay: u32,
}

fn parse_quantity(s: &str) -> Result<crate::view::Quantity, String> {
    match s {
        "density" | "value" => Ok(crate::view::Quantity::Value),
        "speed" => Ok(crate::view::Quantity::Speed),
        _ => Err(format!("'{s}' is not density or speed")),
    }
}

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// The machine JSON (models::Machine: devices with seconds_per_cell, link classes).
    #[arg(long)]
    pub model: PathBuf,
    /// Methods, comma-separated: hockney, loggp, hclogp, rivera, overlap.
    #[arg(long, default_value = "overlap")]
    pub method: String,
    /// Global size including boundary cells (as for run), ROWSxCOLS[x...]; the first extent
    /// is partitioned, and the kernels compute the interior. Taken from --against when omitted.
    #[arg(long)]
    pub size: Option<String>,
    /// Loop iterations. Taken from --against when omitted.
    #[arg(long, value_parser = at_least(1u64))]
    pub iters: Option<u64>,
    /// The stencil: a library name or a spec file (.toml), which gives --halo-rows (its reach
    /// along the partitioned axis) and --cell-bytes (4 per f32 component). Taken from
    /// --against's report when that ran a library stencil.
    #[arg(long)]
    pub stencil: Option<String>,
    /// Halo depth in rows (the stencil's radius along the partitioned axis, 1 to 64); from
    /// --stencil, else 1. Without --stencil it is also the boundary's depth on every side.
    #[arg(long, value_parser = from_to(1u64, 64))]
    pub halo_rows: Option<u64>,
    /// Bytes of one cell (1 to 4096); from --stencil, else 8.
    #[arg(long, value_parser = from_to(1u64, 4096))]
    pub cell_bytes: Option<u64>,
    /// Link class between neighbours; the machine's first when omitted.
    #[arg(long)]
    pub link: Option<String>,
    /// A report of `epsilod run --report` to score the predictions against.
    #[arg(long)]
    pub against: Option<PathBuf>,
    /// The partition to predict, as each device's share of the rows, comma-separated in
    /// machine order (1,1 for equal rows; the rows split as `--partition w0` splits them).
    /// Default: --against's rows, else the model-seeded split.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub weights: Option<Vec<f64>>,
    /// A learned exchange model (`epsilod fit-comm --out`): it times every method's halo
    /// exchange from the features of hitmap's halo plan for the predicted layout.
    #[arg(long)]
    pub comm: Option<PathBuf>,
    /// Devices per rank for --comm's features (device d on rank d / N); all on one rank when
    /// omitted.
    #[arg(long, requires = "comm", value_parser = at_least(1u64))]
    pub per_rank: Option<u64>,
    /// Also write the predictions as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Iterations run per pass, of which the second half is timed (a fresh tile warms up);
    /// --iters is ignored.
    #[arg(long, default_value_t = 100, value_parser = at_least(4u64))]
    pub calib_iters: u64,
    /// Passes over the devices; each after the first (weighted partitions only) runs at the tile
    /// sizes the weights calibrated so far give, the ones a --weights-from run computes (skewed
    /// when those are the first pass's), and then the first tiles once more: each device's
    /// kernel time is the line a + b·cells through its passes.
    #[arg(long, default_value_t = 2, value_parser = at_least(1u64))]
    pub passes: u64,
    /// Also time the devices at other tile sizes: for each factor, a pass with the partitioned
    /// extent of --size scaled by it (e.g. 0.25,0.5,2,4). Each device's kernel time at each
    /// tile over its line becomes its tile curve, which predict, --weights-from and simulate
    /// apply: tiles that fit a cache the line's did not (or outgrow one) run at their own speed.
    #[arg(long, value_delimiter = ',', value_parser = item(parse_positive))]
    pub tile_sweep: Vec<f64>,
    /// Ping-pong repetitions per message size (the smallest and largest are dropped).
    #[arg(long, default_value_t = 32, value_parser = at_least(3u64))]
    pub reps: u64,
    /// Largest ping-pong message in bytes (sizes 0 and 4, 8, ... doubling up to it, plus the
    /// run's halo message sizes); at most 1 GiB (1073741824).
    #[arg(long, default_value_t = 4 << 20, value_parser = from_to(4u64, 1 << 30))]
    pub max_bytes: u64,
    /// Measure the devices only.
    #[arg(long)]
    pub no_links: bool,
    /// Where to write the machine JSON.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the summary it prints as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The inventory (TOML; see docs/modelling.md).
    #[arg(long)]
    pub inventory: PathBuf,
    /// Global size including boundary cells (as for run), ROWSxCOLS[x...];
    /// the first extent is partitioned.
    #[arg(long)]
    pub size: String,
    /// Loop iterations.
    #[arg(long, value_parser = parse_iters)]
    pub iters: u64,
    /// Halo depth in rows (the stencil's radius along the partitioned axis, 1 to 64), and
    /// the boundary's depth on every side.
    #[arg(long, default_value_t = 1, value_parser = from_to(1u64, 64))]
    pub halo_rows: u64,
    /// Bytes of one cell (1 to 4096).
    #[arg(long, default_value_t = 4, value_parser = from_to(1u64, 4096))]
    pub cell_bytes: u64,
    /// additive (HCLogP: compute plus messages) | overlap (this skeleton: messages behind the
    /// inner rows).
    #[arg(long, default_value = "overlap", value_parser = parse_estimate)]
    pub estimate: models::plan::Estimate,
    /// Also write the best choice, the front and the sweep as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

fn parse_estimate(s: &str) -> Result<models::plan::Estimate, String> {
    match s {
        "additive" => Ok(models::plan::Estimate::Additive),
        "overlap" => Ok(models::plan::Estimate::Overlap),
        _ => Err(format!("unknown estimate '{s}': use additive or overlap")),
    }
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// A library stencil or a stencil spec file (.toml); taken from --trace-from when omitted.
    pub stencil: Option<String>,
    /// Global size including boundary cells (as for run).
    #[arg(long)]
    pub size: Option<String>,
    /// Iterations.
    #[arg(long, value_parser = parse_iters)]
    pub iters: Option<u64>,
    /// One modelled device each, repeatable, as for run (weight=, slowdown=F@ITER and fail@ITER
    /// are modelled; the kind only names it).
    #[arg(long = "devices")]
    pub devices: Vec<String>,
    /// N identical modelled CPU devices instead of --devices, at most 1048576 (each costs
    /// about 1.4 KB of memory and its share of every iteration's time).
    #[arg(long, value_parser = from_to(1u64, 1 << 20))]
    pub devices_count: Option<u64>,
    /// A machine JSON (epsilod calibrate): seconds per cell and spread per device (one entry for
    /// all, or one per device), links by name (in-process, mpi; else the first).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Seconds per cell of a device without a model.
    #[arg(long, default_value_t = 1e-9)]
    pub seconds_per_cell: f64,
    /// Coefficient of variation of the lognormal kernel-time noise (default: the model's spread,
    /// else 0.02).
    #[arg(long)]
    pub noise: Option<f64>,
    /// Resample the kernel-time noise from a real run's report (each device's kernel time over
    /// its local median, stalls included) instead of a lognormal; deterministic per --seed.
    #[arg(long, conflicts_with = "noise")]
    pub noise_from: Option<PathBuf>,
    /// With --noise-from: each device takes runs of this many consecutive measured ratios from a
    /// random start (stalls come in spells); 1 draws each independently.
    #[arg(long, default_value_t = 1, requires = "noise_from", value_parser = at_least(1u64))]
    pub noise_block: u64,
    /// With --noise-from: each measured kernel time's baseline is the median of this many
    /// iterations either side. The default, half the ALB window, keeps only the noise within a
    /// window; a wider one (e.g. 250, with --noise-block as long) keeps the slow spells of a shared
    /// machine too, which move the windows' means and so the heuristics' decisions.
    #[arg(long, default_value_t = models::simulate::RATIO_HALF_WINDOW as u64, requires = "noise_from", value_parser = at_least(1u64))]
    pub noise_window: u64,
    /// Devices per host (node): messages between hosts take the mpi link and share their host's
    /// interface. Default: all on one host.
    #[arg(long, value_parser = at_least(1u64))]
    pub per_host: Option<u64>,
    /// Every device of host H slower by F from iteration ITER: H:F or H:F@ITER.
    #[arg(long)]
    pub slow_host: Option<String>,
    /// Thermal drift: a fraction of the devices (chosen by --seed) ramps to F times slower from
    /// iteration A to B: FRACTION:F@A..B.
    #[arg(long)]
    pub drift: Option<String>,
    /// m | m<n> | s<d> | w<d>.
    #[arg(long, default_value = "w0", value_parser = parse_partition)]
    pub partition: Partition,
    /// Heuristics, comma-separated as for compare; several (or --reps > 1) print compare's table.
    #[arg(long, default_value = "none")]
    pub alb: String,
    /// As run's --alb-drop-below: devices slower than this fraction of the fastest get no rows.
    #[arg(long, default_value_t = heuristics::DROP_BELOW, value_parser = parse_drop_below)]
    pub alb_drop_below: f64,
    /// Runs of each heuristic, seeds --seed, --seed + 1, ...
    #[arg(long, default_value_t = 1, value_parser = at_least(1u64))]
    pub reps: u64,
    /// Seed of the noise and of the drifting devices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Trace mode: replay this report's kernel times and rebalance costs; the decisions and
    /// weights must come out as in the report. The stencil, size, iterations, devices,
    /// partition and heuristic come from the report; only --model, --record-every and --report
    /// go with it.
    #[arg(long, conflicts_with_all = [
        "stencil", "size", "iters", "devices", "devices_count", "seconds_per_cell", "noise",
        "noise_from", "per_host", "slow_host", "drift", "partition", "alb", "alb_drop_below",
        "reps", "seed", "csv", "noise_block", "noise_window",
    ])]
    pub trace_from: Option<PathBuf>,
    /// Keep one iteration in each block of K in the report (1: all); beyond run's bound (2^22
    /// device-iterations, 2^20 iterations) blocks grow as run's do (summary.iterations_recorded_every).
    #[arg(long, default_value_t = 1, value_parser = at_least(1u64))]
    pub record_every: u64,
    /// JSON report (run's schema), for one run.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// The table as CSV (several runs).
    #[arg(long)]
    pub csv: Option<PathBuf>,
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
    /// Also write the table (and every run's summary) as JSON (docs/json.md) to FILE; `-`, or no FILE: the JSON on stdout
    /// instead of the text.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = crate::json::STDOUT)]
    pub json: Option<PathBuf>,
}

/// Initial values of a stencil run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitKind {
    /// EPSILOD's: boundary values, interior 0.
    Basic,
    /// The same boundaries, interior uniform in [0, 1) from --seed.
    Random,
}

fn parse_init(s: &str) -> Result<InitKind, String> {
    match s {
        "basic" => Ok(InitKind::Basic),
        "random" => Ok(InitKind::Random),
        _ => Err(format!(
            "unknown init '{s}': use basic (EPSILOD's values) or random"
        )),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=1e9).contains(&x) => Ok(x),
        _ => Err(format!(
            "bad interval '{s}': expected seconds from 0 to 1e9"
        )),
    }
}

fn parse_iters(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        Err(_) if too_large(s) => Err(format!("bad iteration count '{s}': too large")),
        _ => Err(format!(
            "bad iteration count '{s}': expected a whole number >= 1"
        )),
    }
}

/// A run's iterations: 0 too, a run that computes nothing and writes its
/// initial state (EPSILOD's loop simply does not start).
fn parse_run_iters(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        if too_large(s) {
            format!("bad iteration count '{s}': too large")
        } else {
            format!("bad iteration count '{s}': expected a whole number >= 0")
        }
    })
}

fn parse_partition(s: &str) -> Result<Partition, String> {
    s.parse::<Partition>().map_err(|e| e.to_string())
}

/// A fraction of the fastest device's throughput, 0 to 0.5 (above a half,
/// a dropped device could never come back: it would need over the
/// fastest's throughput).
fn parse_drop_below(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=0.5).contains(&f) => Ok(f),
        _ => Err(format!("'{s}': expected a fraction from 0 to 0.5")),
    }
}

fn parse_kernel(s: &str) -> Result<KernelChoice, kernels::UnknownKernel> {
    s.parse::<KernelChoice>()
}

#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// A library stencil (see 'epsilod list'), an app (see 'epsilod list') or a path to a
    /// stencil spec file (.toml).
    pub stencil: String,
    /// Global size including boundary cells: 4098x4098, or 32 for the same in every dimension.
    /// For apps, see 'epsilod list'. An app's --input gives it when left out.
    #[arg(long, allow_hyphen_values = true, required_unless_present = "input")]
    pub size: Option<String>,
    /// An app's input file (see 'epsilod list': gaussian's image, .pgm or .npy); under MPI,
    /// every rank reads it.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Iterations; 0 writes the initial state (output and report), as EPSILOD does.
    #[arg(long, default_value = "100", allow_hyphen_values = true, value_parser = parse_run_iters)]
    pub iters: u64,
    /// One device (virtual process) each, repeatable: cpu | cpu:threads=T | opencl |
    /// opencl:platform=P,device=D | cuda | cuda:device=D, each optionally with weight=W (its
    /// share of the rows under --partition w<d>) and slowdown=F or slowdown=F@ITER (F from 1 to
    /// 1000) among its options, after a ':' (cpu:weight=2,
    /// cpu:threads=2,slowdown=3@100). A cpu without threads= takes its share of the cores the
    /// other devices leave. Default: one cpu device on every core (under MPI, one per rank on
    /// its share of its host's cores).
    #[arg(long = "devices")]
    pub devices: Vec<String>,
    /// A TOML device file instead of --devices.
    #[arg(long)]
    pub device_file: Option<PathBuf>,
    /// Start with device weights proportional to the calibrated relative powers of this machine
    /// JSON (see docs/modelling.md; one device entry per device, in order). Replaces weight=.
    #[arg(long)]
    pub weights_from: Option<PathBuf>,
    /// m | m<n> | s<d> | w<d> (EPSILOD's meanings: m cuts every dimension, m<n> the first n,
    /// s<d> dimension d in equal blocks, w<d> dimension d by the devices' weight=; ALB needs
    /// w0). Other partitions than w<d> ignore weight=, with a warning.
    #[arg(long, default_value = "m", value_parser = parse_partition)]
    pub partition: Partition,
    /// Load-balancing heuristic (see docs/alb.md and 'epsilod list'): none | const-iters |
    /// exp-iters | double-iters | next-alb | cost-aware | welch, each optionally with
    /// parameters, e.g. welch:alpha=0.01. Needs --partition w0.
    #[arg(long, default_value = "none")]
    pub alb: String,
    /// At a rebalance, a device whose throughput is below this fraction of the fastest device's
    /// gets no rows (it costs every iteration more than it adds; it comes back past twice the
    /// fraction); with --weights-from, a device whose modelled share is below it starts with none
    /// (and stays out). 0 keeps every device, as EPSILOD does.
    #[arg(long, default_value_t = heuristics::DROP_BELOW, value_parser = parse_drop_below)]
    pub alb_drop_below: f64,
    /// specialized (bit-identical to EPSILOD) | generic.
    #[arg(long, default_value = "specialized", value_parser = parse_kernel)]
    pub kernel: KernelChoice,
    /// Result array: .npy, .txt (EPSILOD's text format), .dat (raw little-endian), .vti (VTK
    /// image data, for ParaView) or .pgm (a 2-d field as a grey-level image, values rounded
    /// and held to 0..=65535; gaussian's as EPSILOD writes it, %03.0f a line).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// JSON report.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Initial values: basic (EPSILOD's: boundary values, interior 0) | random (the same
    /// boundaries, interior uniform in [0, 1) from --seed; keeps values clear of the slow
    /// subnormal range, for timing studies).
    #[arg(long, default_value = "basic", value_parser = parse_init)]
    pub init: InitKind,
    /// Seed for anything random.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// No progress bar or progress lines, and no summary.
    #[arg(long)]
    pub quiet: bool,
    /// Where stderr is not a terminal (a batch job's log), a progress line every this many
    /// seconds instead of the bar (fractions allowed); 0: no lines.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS", value_parser = parse_seconds)]
    pub progress_every: f64,
    /// Pin each device's threads to cores of its own, in device order (under MPI, among the
    /// rank's share of its host's cores).
    #[arg(long)]
    pub pin: bool,
    /// An app's parameter, name=value (repeatable; see 'epsilod list' for each app's).
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// A spec's auxiliary field from a file, name=FILE.npy (repeatable): an f32 or f64 array
    /// of the run's --size (f64 values rounded to f32), every rank reading it; replaces the
    /// field's definition in the spec.
    #[arg(long = "aux")]
    pub aux: Vec<String>,
    /// Write a checkpoint every N iterations into --checkpoint-dir (the last two are kept; see
    /// docs/checkpoints.md).
    #[arg(long, value_parser = at_least(1u64), requires = "checkpoint_dir")]
    pub checkpoint_every: Option<u64>,
    /// The directory for --checkpoint-every (created if missing; under MPI, on a file system
    /// every rank shares).
    #[arg(long, requires = "checkpoint_every")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Replace the checkpoints an earlier run left in --checkpoint-dir instead of refusing to
    /// start (they are removed at the start).
    #[arg(long, requires = "checkpoint_dir")]
    pub checkpoint_overwrite: bool,
    /// Resume from the newest valid checkpoint in this directory, on any devices, partition or
    /// rank count; runs the iterations left up to --iters, bit-identical to an uninterrupted run.
    #[arg(long)]
    pub restart: Option<PathBuf>,
    /// Write the field every N iterations to --snapshot (on rank 0).
    #[arg(long, value_parser = at_least(1u64), requires = "snapshot")]
    pub snapshot_every: Option<u64>,
    /// Snapshot file pattern with {iter}, e.g. out/field_{iter}.npy (.npy, .txt, .dat, .vti or .pgm); see
    /// 'epsilod view' to draw them.
    #[arg(long, requires = "snapshot_every")]
    pub snapshot: Option<String>,
    /// Ghost cells K stencil reaches deep, exchanged every K iterations (messages fall K-fold;
    /// each device computes the ring in between itself; CPU devices fuse the K iterations into
    /// one pass over memory): 1..64 | auto (depths 1, 2, 4, 8 take turns over the first
    /// 42 iterations, then the run goes on at the best; runs under 126 iterations stay at 1) |
    /// cache (4 for a 1-d or 2-d grid in one process of CPU devices whose tiles exceed 4x their
    /// cores' L2, else 1; the report's halo_depth_reason says why). Results are the same bits for any K.
    #[arg(long, default_value = "cache", value_parser = clap::value_parser!(HaloDepth))]
    pub halo_depth: HaloDepth,
    /// What a device failure does (a device error, or fail@ITER in a device spec): stop (end the
    /// run with the error) | recover (one process: drop the device and go on over the others
    /// from the last checkpoint, or the start).
    #[arg(long, default_value = "stop", value_parser = clap::value_parser!(OnFailure))]
    pub on_failure: OnFailure,
    /// Under MPI, end the job when a peer rank sends nothing a device waits for during this many
    /// seconds (killed, stopped or cut off the network), with an error naming that rank and its
    /// host; 0: wait for ever.
    #[arg(long, default_value_t = epsilod::options::PEER_TIMEOUT.as_secs_f64(), value_name = "SECONDS", value_parser = parse_seconds)]
    pub peer_timeout: f64,
    /// Measure each CPU device's kernel thread CPU time into the report's cpu_seconds (off by
    /// default: two system calls per launch, a noticeable share of a small grid's iteration).
    #[arg(long)]
    pub cpu_time: bool,
}

impl RunArgs {
    /// The first option that resumes the run or writes inside its timed
    /// loop (a restart, checkpoints, snapshots): commands that time whole
    /// runs (`compare`, `signature`) refuse it.
    pub fn resumes_or_writes_in_loop(&self) -> Option<&'static str> {
        [
            (self.restart.is_some(), "--restart"),
            (self.checkpoint_every.is_some(), "--checkpoint-every"),
            (self.snapshot_every.is_some(), "--snapshot-every"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// An item of a comma list: a whole number from `min` to `max`, or the
/// empty item a stray comma leaves, said so (clap's own line for it is
/// "cannot parse integer from empty string").
fn within(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    item(from_to(min, max))
}

/// A whole number from `min` to `max`, said so in words when it is not:
/// clap's `range(a..=b)` says "0 is not in 1..=64".
fn from_to<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
{
    move |s: &str| match s.trim().parse::<T>() {
        Ok(n) if min <= n && n <= max => Ok(n),
        Err(_) if too_large(s) => Err(format!("{} is too large: at most {max}", s.trim())),
        _ => Err(format!("expected a whole number from {min} to {max}")),
    }
}

/// An item of a comma list read by `parse`, or the empty item a stray
/// comma leaves, said so rather than as a bad value of `parse`'s kind.
fn item<T>(
    parse: impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        if s.trim().is_empty() {
            Err("an empty item: a comma too many?".to_string())
        } else {
            parse(s)
        }
    }
}

/// A whole number of at least `min`, said so when it is not: clap's
/// `range(min..)` names its upper bound, `u64::MAX`, which no one means.
fn at_least<T>(min: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
{
    move |s: &str| match s.trim().parse::<T>() {
        Ok(n) if n >= min => Ok(n),
        Err(_) if too_large(s) => Err(format!("{} is too large", s.trim())),
        _ => Err(format!("expected a whole number of at least {min}")),
    }
}

/// Digits alone that did not parse: beyond the type's largest value.
fn too_large(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

//! Strong-scaling prediction from small runs: this project's counterpart of
//! P3S (modelling.md §1). A stencil run has one relevant phase, the
//! iteration, repeated W = iterations times. A [`Signature`] records that
//! phase at a small device count; a [`ScalingModel`] fitted over signatures
//! at several counts infers who talks to whom as equations of P, fits
//! message volume and compute time as power laws, and predicts the phase's
//! logical trace and the loop time at a larger count.
//!
//! What P3S does that this does not need: phase detection (the skeleton
//! knows its phase) and instruction counting (the cells a process updates
//! are its instruction count, and "total cells per iteration is constant"
//! is the invariant that makes the far point valid).

use std::collections::BTreeSet;
use std::fmt;

use hitmap::Topology;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::fit::PowerLaw;
use crate::ModelError;

/// One message a process sends each iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// The receiving process.
    pub peer: usize,
    /// Its size.
    pub bytes: u64,
}

/// One virtual process of a signature, per iteration (medians).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessSignature {
    /// Kernel seconds.
    pub compute_seconds: f64,
    /// Thread CPU seconds of its kernels; absent where the device does not
    /// measure them (GPUs) or the signature predates them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// CPU threads its kernels ran on (absent: not a CPU device, or an
    /// older signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// User-space instructions its kernels retired (P3S's per-process
    /// count), where the host lends hardware counters; absent elsewhere
    /// (then `cells` stands in) and in older signatures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<f64>,
    /// Seconds packing, moving, waiting for and unpacking halos.
    pub comm_seconds: f64,
    /// Cells it updates.
    pub cells: u64,
    /// Its messages, one per peer.
    pub sends: Vec<Message>,
}

/// A short run at one device count: what `epsilod signature` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// Dimensions of the domain (a grid of processes has at most as many).
    pub ndims: usize,
    /// Iterations of the full run: the phase's weight.
    pub weight: u64,
    /// Median wall seconds of one iteration (the slowest process).
    pub iteration_seconds: f64,
    /// Every process, by rank.
    pub processes: Vec<ProcessSignature>,
    /// Cores of the machine it ran on (absent in older signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
}

impl Signature {
    /// Its device count.
    pub fn count(&self) -> usize {
        self.processes.len()
    }

    /// Cells updated per iteration, all processes together.
    pub fn total_cells(&self) -> u64 {
        self.processes.iter().map(|p| p.cells).sum()
    }

    /// The slowest process's compute: the one the iteration waits for.
    pub fn critical_compute(&self) -> f64 {
        self.processes
            .iter()
            .map(|p| p.compute_seconds)
            .fold(0.0, f64::max)
    }

    /// The slowest process's kernel CPU time, where every process has one.
    pub fn critical_cpu(&self) -> Option<f64> {
        self.processes
            .iter()
            .map(|p| p.cpu_seconds)
            .try_fold(0.0, |m, c| c.map(|c| f64::max(m, c)))
    }

    /// The mean process's compute on `clock`.
    fn mean_on(&self, clock: ComputeClock) -> Result<f64, ScalingError> {
        let n = self.count() as f64;
        match clock {
            ComputeClock::Wall => Ok(self
                .processes
                .iter()
                .map(|p| p.compute_seconds)
                .sum::<f64>()
                / n),
            ComputeClock::Cpu => {
                // Fails unless every process has one, the largest positive.
                self.critical_on(clock)?;
                Ok(self
                    .processes
                    .iter()
                    .filter_map(|p| p.cpu_seconds)
                    .sum::<f64>()
                    / n)
            }
        }
    }

    /// The critical compute on `clock`.
    fn critical_on(&self, clock: ComputeClock) -> Result<f64, ScalingError> {
        match clock {
            ComputeClock::Wall => Ok(self.critical_compute()),
            ComputeClock::Cpu => match self.critical_cpu() {
                Some(c) if c > 0.0 && c.is_finite() => Ok(c),
                _ => Err(ScalingError::NoCpuTime {
                    count: self.count(),
                }),
            },
        }
    }

    fn check(&self) -> Result<(), ScalingError> {
        let bad = |why: String| ScalingError::BadSignature {
            count: self.count(),
            why,
        };
        if self.processes.is_empty() {
            return Err(bad("it has no processes".into()));
        }
        if self.ndims == 0 {
            return Err(bad("its domain has no dimensions".into()));
        }
        let times = self
            .processes
            .iter()
            .flat_map(|p| {
                [p.compute_seconds, p.comm_seconds]
                    .into_iter()
                    .chain(p.cpu_seconds)
            })
            .chain([self.iteration_seconds]);
        if let Some(t) = times.into_iter().find(|t| !(t.is_finite() && *t >= 0.0)) {
            return Err(bad(format!("a time is {t}")));
        }
        if self.critical_compute() <= 0.0 {
            return Err(bad("no process computed for a measurable time".into()));
        }
        for (rank, p) in self.processes.iter().enumerate() {
            let mut peers = BTreeSet::new();
            for m in &p.sends {
                if m.peer >= self.count() || m.peer == rank || !peers.insert(m.peer) {
                    return Err(bad(format!(
                        "process {rank} sends to {}: not another process, or twice",
                        m.peer
                    )));
                }
            }
        }
        Ok(())
    }
}

/// How a run lays its processes out as P grows, as hitmap's layouts do:
/// `s<d>` and `w<d>` on a line, `m` and `m<n>` on a grid as square as P's
/// prime factors allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grid {
    /// P processes in a row.
    Line,
    /// `hitmap::Topology::square(P, n)`.
    Square(usize),
}

impl Grid {
    /// The grids a model tries for an `ndims`-d domain, simplest first.
    pub fn candidates(ndims: usize) -> impl Iterator<Item = Grid> {
        std::iter::once(Grid::Line).chain((2..=ndims).map(Grid::Square))
    }

    /// Its process grid at `p` processes.
    pub fn topology(self, p: usize) -> Topology {
        match self {
            Grid::Line => Topology::line(p),
            Grid::Square(n) => Topology::square(p, n),
        }
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grid::Line => f.write_str("a line of P"),
            Grid::Square(n) => write!(f, "a {n}-d grid as square as P allows"),
        }
    }
}

/// Why signatures could not be modelled.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScalingError {
    /// Fewer distinct device counts than a fit needs.
    #[error("the model needs signatures at {needed} or more device counts, got {got}")]
    TooFewCounts {
        /// Counts it needs.
        needed: usize,
        /// Distinct counts given.
        got: usize,
    },
    /// A signature that cannot be a run's.
    #[error("the signature at {count} devices is invalid: {why}")]
    BadSignature {
        /// Its device count.
        count: usize,
        /// What is wrong.
        why: String,
    },
    /// A trace (`epsilod scale --out`) that no run could give, or that a
    /// replay could not emulate.
    #[error("the trace is invalid: {0}")]
    BadTrace(String),
    /// No candidate grid explains every signature's messages.
    #[error(
        "no process grid explains the signatures' messages (tried a line and square grids \
         of up to the domain's dimensions, with neighbours at the same offsets everywhere)"
    )]
    NoPattern,
    /// Two grids explain the signatures but predict different messages.
    #[error(
        "the signatures fit both {a} and {b}, which differ at {target} devices: add a \
         signature or a far point at a count where they differ (one with two or more prime \
         factors)"
    )]
    Ambiguous {
        /// One grid.
        a: Grid,
        /// Another.
        b: Grid,
        /// The count asked for.
        target: usize,
    },
    /// The signatures do not share one problem size.
    #[error(
        "not strong scaling: the signature at {count} devices updates {cells} cells per \
         iteration, the one at {first_count} updates {first} (far points go in separately)"
    )]
    NotStrongScaling {
        /// The odd signature's count.
        count: usize,
        /// Its cells.
        cells: u64,
        /// The first signature's count.
        first_count: usize,
        /// Its cells.
        first: u64,
    },
    /// The signatures come from runs of different lengths.
    #[error("the signatures' weights (iterations) differ: {0:?}; record them for one run")]
    WeightVaries(Vec<u64>),
    /// Compute fitted on CPU time, and a signature without it.
    #[error(
        "the signature at {count} devices has no kernel CPU time for every process (GPU \
         devices, or recorded before signatures had it): fit compute on wall time"
    )]
    NoCpuTime {
        /// Its device count.
        count: usize,
    },
    /// A node description that cannot be one.
    #[error("invalid node for the compute term: {0}")]
    BadNode(String),
    /// A regression failed.
    #[error(transparent)]
    Fit(#[from] ModelError),
}

/// Grid offsets of `sig`'s messages on `grid`, or `None` when a process
/// messages one neighbour twice (impossible on that grid).
fn offsets_on(sig: &Signature, grid: Grid) -> Option<BTreeSet<Vec<i64>>> {
    let topo = grid.topology(sig.count());
    let mut all = BTreeSet::new();
    for (rank, p) in sig.processes.iter().enumerate() {
        let at = topo.coords(rank);
        let mut mine = BTreeSet::new();
        for m in &p.sends {
            let to = topo.coords(m.peer);
            let d: Vec<i64> = to
                .iter()
                .zip(&at)
                .map(|(&t, &a)| t as i64 - a as i64)
                .collect();
            if !mine.insert(d.clone()) {
                return None;
            }
            all.insert(d);
        }
    }
    Some(all)
}

/// The peers `rank` has on `topo` for grid offsets `offsets`: one per offset
/// that stays inside the grid (no wrap-around), with the offset's index.
fn neighbours(topo: &Topology, offsets: &[Vec<i64>], rank: usize) -> Vec<(usize, usize)> {
    let at = topo.coords(rank);
    offsets
        .iter()
        .enumerate()
        .filter_map(|(k, d)| {
            let to: Option<Vec<usize>> = at
                .iter()
                .zip(d)
                .zip(topo.dims())
                .map(|((&a, &o), &n)| {
                    let c = a as i64 + o;
                    (0..n as i64).contains(&c).then_some(c as usize)
                })
                .collect();
            to.map(|c| (topo.rank(&c), k))
        })
        .collect()
}

/// Whether `sig`'s messages are exactly `offsets` on `grid`, each present
/// wherever it stays inside the grid.
fn explains(sig: &Signature, grid: Grid, offsets: &[Vec<i64>]) -> bool {
    let topo = grid.topology(sig.count());
    sig.processes.iter().enumerate().all(|(rank, p)| {
        let want: BTreeSet<usize> = neighbours(&topo, offsets, rank)
            .into_iter()
            .map(|(q, _)| q)
            .collect();
        let got: BTreeSet<usize> = p.sends.iter().map(|m| m.peer).collect();
        want == got
    })
}

/// The communication pattern as equations of P: the grid rule and the
/// neighbours' grid offsets. A process at grid coordinates `c` sends to
/// `c + o` for each offset `o` that stays inside the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    /// The grid rule.
    pub grid: Grid,
    /// Neighbours' offsets in grid coordinates.
    pub offsets: Vec<Vec<i64>>,
}

impl Pattern {
    /// Each rank's peers at `p` processes, with the offset each one is at.
    pub fn peers(&self, p: usize) -> Vec<Vec<(usize, usize)>> {
        let topo = self.grid.topology(p);
        (0..p)
            .map(|rank| neighbours(&topo, &self.offsets, rank))
            .collect()
    }

    /// The rank offsets as equations of P, e.g. `±1, ±n1 where (n0, n1) =
    /// square(P, 2)`.
    pub fn equations(&self) -> String {
        let axes = self.offsets.first().map_or(0, Vec::len);
        let stride = |a: usize| -> String {
            let names: Vec<String> = (a + 1..axes).map(|b| format!("n{b}")).collect();
            if names.is_empty() {
                "1".into()
            } else {
                names.join("·")
            }
        };
        let terms: Vec<String> = self
            .offsets
            .iter()
            .map(|o| {
                let parts: Vec<String> = o
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c != 0)
                    .map(|(a, &c)| format!("{}{}", if c > 0 { "+" } else { "-" }, stride(a)))
                    .collect();
                parts.join("")
            })
            .collect();
        let grid = match self.grid {
            Grid::Line => "P in a line".to_string(),
            Grid::Square(n) => {
                let dims: Vec<String> = (0..n).map(|a| format!("n{a}")).collect();
                format!("({}) = square(P, {n})", dims.join(", "))
            }
        };
        format!(
            "rank {} where {grid}; no partner past the grid's edges",
            terms.join(", ")
        )
    }

    /// The volume feature of offset `k` at `p` processes: the number of
    /// processes sharing each of the axes the offset does not cross, whose
    /// product the message's face shrinks with (1 on a line: constant).
    fn face_divisor(&self, k: usize, p: usize) -> f64 {
        let topo = self.grid.topology(p);
        self.offsets[k]
            .iter()
            .zip(topo.dims())
            .filter(|(&o, _)| o == 0)
            .map(|(_, &n)| n as f64)
            .product()
    }
}

/// One process's part of the predicted phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedProcess {
    /// Compute seconds per iteration.
    pub compute_seconds: f64,
    /// Exchange seconds per iteration.
    pub comm_seconds: f64,
    /// Messages per iteration.
    pub sends: Vec<Message>,
}

/// The logical trace and time predicted for one device count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaledTrace {
    /// The device count.
    pub count: usize,
    /// Iterations (the phase's weight).
    pub weight: u64,
    /// Every process's phase.
    pub processes: Vec<PredictedProcess>,
    /// The slowest process's compute plus exchange.
    pub iteration_seconds: f64,
    /// `weight × iteration_seconds`.
    pub loop_seconds: f64,
}

/// The longest compute phase a replay emulates, in seconds per iteration:
/// a replay sleeps it once per iteration and process.
pub const MAX_REPLAY_COMPUTE_SECONDS: f64 = 60.0;
/// The largest message a replay sends (1 GiB): it allocates each.
pub const MAX_REPLAY_MESSAGE_BYTES: u64 = 1 << 30;

impl ScaledTrace {
    /// Errors unless this could be a run's trace that a replay can emulate:
    /// one process per device, times finite and >= 0 (compute at most
    /// [`MAX_REPLAY_COMPUTE_SECONDS`]), every message to another process of
    /// the trace, once, of at most [`MAX_REPLAY_MESSAGE_BYTES`].
    pub fn check(&self) -> Result<(), ScalingError> {
        let bad = |why: String| Err(ScalingError::BadTrace(why));
        if self.count == 0 || self.processes.len() != self.count {
            return bad(format!(
                "its count is {} but it has {} processes",
                self.count,
                self.processes.len()
            ));
        }
        for (rank, p) in self.processes.iter().enumerate() {
            if !(0.0..=MAX_REPLAY_COMPUTE_SECONDS).contains(&p.compute_seconds) {
                return bad(format!(
                    "process {rank} computes for {:e} s an iteration (0 to \
                     {MAX_REPLAY_COMPUTE_SECONDS} s can be replayed)",
                    p.compute_seconds
                ));
            }
            if !(p.comm_seconds.is_finite() && p.comm_seconds >= 0.0) {
                return bad(format!(
                    "process {rank} exchanges for {:e} s an iteration",
                    p.comm_seconds
                ));
            }
            let mut peers = BTreeSet::new();
            for m in &p.sends {
                if m.peer >= self.count || m.peer == rank || !peers.insert(m.peer) {
                    return bad(format!(
                        "process {rank} sends to {}: not another process, or twice",
                        m.peer
                    ));
                }
                if m.bytes > MAX_REPLAY_MESSAGE_BYTES {
                    return bad(format!(
                        "process {rank} sends {} bytes to {} (at most {MAX_REPLAY_MESSAGE_BYTES} \
                         can be replayed)",
                        m.bytes, m.peer
                    ));
                }
            }
        }
        Ok(())
    }
}

/// How a held-back signature compares with the model's prediction for its
/// count (P3S's acceptance rule: pattern and weight exact, volume and
/// compute within 10%).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Device count of the held-back signature.
    pub count: usize,
    /// Every process has exactly the predicted peers.
    pub pattern_exact: bool,
    /// The weight is the predicted one.
    pub weight_exact: bool,
    /// Largest relative error of a message's size (1 when the pattern is
    /// not exact).
    pub volume_error: f64,
    /// Relative error of the compute the prediction uses, on the fitted
    /// clock (`ScalingModel::compute_on_clock`): the critical process's, or
    /// where devices take turns the larger of the mean one's and the
    /// critical one's over the stretch.
    pub compute_error: f64,
    /// Relative error of the iteration time.
    pub time_error: f64,
}

impl Validation {
    /// The error bound on volume and compute for acceptance.
    pub const TOLERANCE: f64 = 0.10;

    /// Whether the model passes P3S's acceptance rule on this signature.
    pub fn accepted(&self) -> bool {
        self.pattern_exact
            && self.weight_exact
            && self.volume_error <= Self::TOLERANCE
            && self.compute_error <= Self::TOLERANCE
    }
}

/// Exchange time of a process: `alpha` per message plus `beta` per byte,
/// fitted to the part of each signature's iteration time beyond its
/// slowest kernel, against its busiest process's messages and bytes (on
/// CPU time: one sender's own halo seconds, messages and bytes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExchangeCost {
    /// Seconds per message.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl ExchangeCost {
    /// Least squares through the origin over `(messages, bytes, seconds)`;
    /// per message alone when the two features cannot be told apart or a
    /// coefficient comes out negative.
    pub fn fit(rows: &[(f64, f64, f64)]) -> ExchangeCost {
        let s = |f: &dyn Fn(&(f64, f64, f64)) -> f64| rows.iter().map(f).sum::<f64>();
        let (nn, nb, bb) = (s(&|r| r.0 * r.0), s(&|r| r.0 * r.1), s(&|r| r.1 * r.1));
        let (nt, bt) = (s(&|r| r.0 * r.2), s(&|r| r.1 * r.2));
        let det = nn * bb - nb * nb;
        if det > 1e-12 * nn * bb {
            let alpha = (nt * bb - bt * nb) / det;
            let beta = (bt * nn - nt * nb) / det;
            if alpha >= 0.0 && beta >= 0.0 {
                return ExchangeCost { alpha, beta };
            }
        }
        ExchangeCost {
            alpha: if nn > 0.0 { (nt / nn).max(0.0) } else { 0.0 },
            beta: 0.0,
        }
    }

    /// The seconds of `sends`.
    pub fn time(&self, sends: &[Message]) -> f64 {
        let bytes: u64 = sends.iter().map(|m| m.bytes).sum();
        self.alpha * sends.len() as f64 + self.beta * bytes as f64
    }
}

/// A message size law: `bytes = law(face divisor)` for one offset.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Volume {
    /// The same size at every count seen.
    Constant(f64),
    /// A power law of the face divisor.
    Law(PowerLaw),
}

impl Volume {
    fn at(&self, x: f64) -> f64 {
        match self {
            Volume::Constant(b) => *b,
            Volume::Law(l) => l.at(x),
        }
    }
}

/// The clock the compute law is fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ComputeClock {
    /// Kernel wall time: right where every device keeps a core to itself.
    #[default]
    Wall,
    /// Kernel thread CPU time: what a device's work costs whatever else the
    /// cores run, turned into wall time by the target node's cores.
    Cpu,
}

/// What the target's node does to compute time beyond the fitted law.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Node {
    /// Cores of a node. With compute fitted on CPU time, the n devices of
    /// t threads on a node share them: wall = CPU × max(1, n·t / cores).
    /// Default: the cores the signatures were recorded on. May be a
    /// fraction: a node that other work shares gives a run only part of
    /// its cores.
    pub cores: Option<f64>,
    /// Devices on one node, sharing its cores and its memory bandwidth
    /// (absent: every device of the target on one node).
    pub devices_per_node: Option<usize>,
    /// A floor from the node's memory bandwidth, shared by its devices.
    pub bandwidth: Option<Bandwidth>,
}

/// The memory-bandwidth floor of compute: a device of `c` cells cannot
/// update them faster than its share of the node's bandwidth moves their
/// bytes, `c × bytes_per_cell / (bytes_per_second / devices on the node)`.
/// A power law fitted where each device still has bandwidth to spare keeps
/// halving the time with every doubling of P; the floor is where that
/// stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Bytes per second the node's memory moves (a measured copy: bytes
    /// read plus bytes written).
    pub bytes_per_second: f64,
    /// Bytes an update of one cell moves to or from memory (a streaming
    /// stencil: its cell read once, its result written once).
    pub bytes_per_cell: f64,
}

impl Bandwidth {
    /// The bandwidth a node's devices reached together: from the signature
    /// with the most devices whose threads still fit the node's `cores`
    /// (every core busy, none taking turns), its cells' bytes over its
    /// slowest kernel on `clock`. What the stencil itself moves with the
    /// whole node's cores at work, not what a copy moves: measured in the
    /// signatures, it needs no other run.
    pub fn from_signatures(
        signatures: &[Signature],
        bytes_per_cell: f64,
        clock: ComputeClock,
        cores: usize,
    ) -> Result<f64, ScalingError> {
        let threads = |s: &Signature| {
            s.processes
                .iter()
                .map(|p| p.threads.unwrap_or(1))
                .sum::<usize>()
        };
        let Some(full) = signatures
            .iter()
            .filter(|s| threads(s) <= cores)
            .max_by_key(|s| threads(s))
        else {
            return Err(ScalingError::BadNode(format!(
                "no signature fits {cores} cores to measure the node's bandwidth on"
            )));
        };
        Ok(full.total_cells() as f64 * bytes_per_cell / full.critical_on(clock)?)
    }

    /// Seconds per iteration below which a device of `cells` cannot go
    /// with `sharing` devices on its node.
    pub fn floor(&self, cells: f64, sharing: usize) -> f64 {
        cells * self.bytes_per_cell * sharing.max(1) as f64 / self.bytes_per_second
    }
}

/// A strong-scaling model of one run, fitted from its signatures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalingModel {
    /// The grids that explain every signature (the first is reported).
    patterns: Vec<Pattern>,
    /// One size law per offset of the first pattern.
    volumes: Vec<Volume>,
    /// The phase's weight.
    pub weight: u64,
    /// Critical compute against P from the signatures alone (P3S's CRM_i).
    pub compute_initial: PowerLaw,
    /// The same refitted with the far points (CRM_c); equal to
    /// `compute_initial` without far points.
    pub compute: PowerLaw,
    /// The mean process's compute against P, far points included. Where
    /// devices take turns on the cores, the cores work through every
    /// device's kernels each iteration: the mean times the stretch, not the
    /// slowest one's. On a shared machine one device of a signature often
    /// takes 20-50% more CPU than its twin (other work's memory traffic), and
    /// stretching that device's time by P / cores predicted turns no device
    /// took.
    pub compute_mean: PowerLaw,
    /// Exchange time per process.
    pub exchange: ExchangeCost,
    /// Device counts fitted.
    pub counts: Vec<usize>,
    /// The clock of `compute`.
    pub clock: ComputeClock,
    /// The target's node: cores (resolved) and bandwidth floor.
    pub node: Node,
    /// CPU threads per device in the signatures (1 where not recorded).
    pub threads_per_device: f64,
    /// Cells updated per iteration, all devices together.
    pub total_cells: u64,
}

impl ScalingModel {
    /// Fits a model to signatures of one run at two or more device counts
    /// (three or more recommended, a fourth held back for
    /// [`ScalingModel::validate`]). `far` are signatures of a smaller
    /// problem: each stands, for compute, at the count where the big
    /// problem gives a process as many cells (P3S's far point).
    pub fn fit(signatures: &[Signature], far: &[Signature]) -> Result<ScalingModel, ScalingError> {
        ScalingModel::fit_on(signatures, far, ComputeClock::Wall, Node::default())
    }

    /// [`ScalingModel::fit`] with compute fitted on `clock`, predicting
    /// for `node`.
    pub fn fit_on(
        signatures: &[Signature],
        far: &[Signature],
        clock: ComputeClock,
        mut node: Node,
    ) -> Result<ScalingModel, ScalingError> {
        if let Some(c) = node.cores.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(ScalingError::BadNode(format!(
                "{c} cores: a node has a positive number"
            )));
        }
        if node.devices_per_node == Some(0) {
            return Err(ScalingError::BadNode(
                "0 devices per node: a node has at least one".into(),
            ));
        }
        if let Some(b) = node.bandwidth {
            let positive = |v: f64| v.is_finite() && v > 0.0;
            if !positive(b.bytes_per_second) || !positive(b.bytes_per_cell) {
                return Err(ScalingError::BadNode(format!(
                    "bandwidth {} B/s, {} bytes per cell: both must be positive",
                    b.bytes_per_second, b.bytes_per_cell
                )));
            }
        }
        for s in signatures.iter().chain(far) {
            s.check()?;
        }
        let counts: BTreeSet<usize> = signatures.iter().map(Signature::count).collect();
        if counts.len() < 2 {
            return Err(ScalingError::TooFewCounts {
                needed: 2,
                got: counts.len(),
            });
        }
        let first = &signatures[0];
        for s in signatures {
            let (a, b) = (first.total_cells() as f64, s.total_cells() as f64);
            if (a - b).abs() > 0.01 * a {
                return Err(ScalingError::NotStrongScaling {
                    count: s.count(),
                    cells: s.total_cells(),
                    first_count: first.count(),
                    first: first.total_cells(),
                });
            }
        }
        if let Some(s) = signatures
            .iter()
            .chain(far)
            .find(|s| s.ndims != first.ndims)
        {
            return Err(ScalingError::BadSignature {
                count: s.count(),
                why: format!(
                    "its domain is {}-d, the first signature's {}-d",
                    s.ndims, first.ndims
                ),
            });
        }
        let weights: BTreeSet<u64> = signatures.iter().map(|s| s.weight).collect();
        if weights.len() > 1 {
            return Err(ScalingError::WeightVaries(weights.into_iter().collect()));
        }

        // A far point is the same run's layout rule at another size: its
        // peers tell the pattern as well as the big problem's would (its
        // message sizes do not, so volumes are fitted without it). A far
        // point at a composite count settles a line against a grid when
        // the signatures are at 1 and 2 devices only.
        let all_sigs: Vec<Signature> = signatures.iter().chain(far).cloned().collect();
        let patterns = infer_patterns(&all_sigs, first.ndims)?;
        let volumes = fit_volumes(&patterns[0], signatures)?;

        // (P, compute) points: each signature at its count, each far point
        // at the count where the big problem gives a process as many cells.
        let cells = first.total_cells() as f64;
        let points_of =
            |far: &[Signature], compute: &dyn Fn(&Signature) -> Result<f64, ScalingError>| {
                let at_count = signatures
                    .iter()
                    .map(|s| Ok((s.count() as f64, compute(s)?)));
                let at_cells = far.iter().map(|s| {
                    let per_process = s.total_cells() as f64 / s.count() as f64;
                    Ok((cells / per_process, compute(s)?))
                });
                at_count
                    .chain(at_cells)
                    .collect::<Result<Vec<(f64, f64)>, ScalingError>>()
            };
        let critical = |s: &Signature| s.critical_on(clock);
        let compute_initial = PowerLaw::fit(&points_of(&[], &critical)?)?;
        if clock == ComputeClock::Cpu && node.cores.is_none() {
            node.cores = signatures.iter().find_map(|s| s.cores).map(|c| c as f64);
            if node.cores.is_none() {
                return Err(ScalingError::BadNode(
                    "compute fitted on CPU time needs the target's cores, and no signature \
                     recorded its own"
                        .into(),
                ));
            }
        }
        let threads: Vec<f64> = signatures
            .iter()
            .flat_map(|s| &s.processes)
            .map(|p| p.threads.unwrap_or(1) as f64)
            .collect();
        let threads_per_device = threads.iter().sum::<f64>() / threads.len() as f64;
        let compute = PowerLaw::fit(&points_of(far, &critical)?)?;
        let compute_mean = PowerLaw::fit(&points_of(far, &|s| s.mean_on(clock))?)?;

        // On wall time, what the iteration spends beyond its slowest kernel
        // (packing, messages, waiting: the processes' own comm times
        // overlap and include waits), against the busiest process's
        // messages.
        let volume =
            |p: &ProcessSignature| (p.sends.len(), p.sends.iter().map(|m| m.bytes).sum::<u64>());
        let rows: Vec<(f64, f64, f64)> = signatures
            .iter()
            .filter_map(|s| match clock {
                ComputeClock::Wall => {
                    let (n, bytes) = s.processes.iter().map(volume).max()?;
                    let rest = (s.iteration_seconds - s.critical_compute()).max(0.0);
                    Some((n as f64, bytes as f64, rest))
                }
                // On CPU time, the processes' own exchange seconds instead:
                // the iteration's wall time beyond the slowest kernel also
                // holds whatever took the cores from the run (other work,
                // or its own devices taking turns), which CPU time is there
                // to leave out. The sender that spent least per message,
                // with its own messages: the others' seconds also hold
                // their wait for a slower neighbour (0.3 ms against 5 µs of
                // exchange, measured on a shared machine).
                ComputeClock::Cpu => s
                    .processes
                    .iter()
                    .filter(|p| !p.sends.is_empty())
                    .min_by(|a, b| {
                        let per = |p: &ProcessSignature| p.comm_seconds / p.sends.len() as f64;
                        per(a).total_cmp(&per(b))
                    })
                    .map(|p| {
                        let (n, bytes) = volume(p);
                        (n as f64, bytes as f64, p.comm_seconds)
                    }),
            })
            .filter(|r| r.0 > 0.0)
            .collect();
        Ok(ScalingModel {
            patterns,
            volumes,
            weight: first.weight,
            compute_initial,
            compute,
            compute_mean,
            exchange: ExchangeCost::fit(&rows),
            counts: counts.into_iter().collect(),
            clock,
            node,
            threads_per_device,
            total_cells: first.total_cells(),
        })
    }

    /// The devices of `count` that share one node: all of them, or at most
    /// the node's `devices_per_node`.
    pub fn devices_on_a_node(&self, count: usize) -> usize {
        self.node.devices_per_node.map_or(count, |n| n.min(count))
    }

    /// How much longer than its CPU time a device's compute takes in wall
    /// time at `count` devices: on CPU time, the n·t threads of a node's n
    /// devices taking turns on its cores, `max(1, n·t / cores)`; 1 on wall
    /// time. Other nodes' devices run on their own cores.
    fn stretch(&self, count: usize) -> f64 {
        match (self.clock, self.node.cores) {
            (ComputeClock::Cpu, Some(cores)) => {
                let on_node = self.devices_on_a_node(count) as f64;
                (on_node * self.threads_per_device / cores).max(1.0)
            }
            _ => 1.0,
        }
    }

    /// The bandwidth floor at `count` devices (wall seconds; 0 without).
    fn floor(&self, count: usize) -> f64 {
        self.node.bandwidth.map_or(0.0, |b| {
            b.floor(
                self.total_cells as f64 / count as f64,
                self.devices_on_a_node(count),
            )
        })
    }

    /// Whether `count` devices take turns on the node's cores.
    fn takes_turns(&self, count: usize) -> bool {
        self.stretch(count) > 1.0
    }

    /// The compute at `count` devices on the fitted clock: what
    /// [`ScalingModel::compute_wall`] uses, before the stretch. On CPU time
    /// the floor is divided by the stretch: devices taking turns on the
    /// cores share the bandwidth among fewer at a time, and a stall on
    /// memory is CPU time.
    pub fn compute_on_clock(&self, count: usize) -> f64 {
        self.compute_wall(count) / self.stretch(count)
    }

    /// The iteration's compute at `count` devices in wall seconds. Where
    /// each device has its cores, the slowest one's law; where they take
    /// turns, the mean one's stretched by the cores' oversubscription (on
    /// CPU time), but never below the slowest device alone, which no
    /// sharing of cores makes faster. Never below the bandwidth floor
    /// either: the node's memory moves every device's cells however the
    /// cores take turns.
    pub fn compute_wall(&self, count: usize) -> f64 {
        let p = count as f64;
        self.on_the_cores(count, self.compute.at(p), self.compute_mean.at(p))
            .max(self.floor(count))
    }

    /// Wall compute at `count` devices from the slowest and the mean
    /// device's compute on the fitted clock: the slowest one's where each
    /// device has its cores; where they take turns, the mean one's times
    /// the stretch, but never below the slowest one alone. The prediction
    /// applies it to the laws, validation to the held-back measurements.
    fn on_the_cores(&self, count: usize, critical: f64, mean: f64) -> f64 {
        if self.takes_turns(count) {
            critical.max(mean * self.stretch(count))
        } else {
            critical
        }
    }

    /// The inferred communication pattern.
    pub fn pattern(&self) -> &Pattern {
        &self.patterns[0]
    }

    /// The phase at `count` devices: each process's messages, compute and
    /// exchange time, the iteration and the loop time.
    pub fn predict(&self, count: usize) -> Result<ScaledTrace, ScalingError> {
        if count == 0 {
            return Err(ScalingError::TooFewCounts { needed: 1, got: 0 });
        }
        let pattern = self.pattern();
        let peers = pattern.peers(count);
        for other in &self.patterns[1..] {
            let theirs = other.peers(count);
            let same = peers.iter().zip(&theirs).all(|(a, b)| {
                let a: BTreeSet<usize> = a.iter().map(|x| x.0).collect();
                let b: BTreeSet<usize> = b.iter().map(|x| x.0).collect();
                a == b
            });
            if !same {
                return Err(ScalingError::Ambiguous {
                    a: pattern.grid,
                    b: other.grid,
                    target: count,
                });
            }
        }
        let compute = self.compute_wall(count);
        let processes: Vec<PredictedProcess> = peers
            .into_iter()
            .map(|mine| {
                let sends: Vec<Message> = mine
                    .into_iter()
                    .map(|(peer, k)| Message {
                        peer,
                        bytes: self.volumes[k]
                            .at(pattern.face_divisor(k, count))
                            .round()
                            .max(0.0) as u64,
                    })
                    .collect();
                PredictedProcess {
                    compute_seconds: compute,
                    comm_seconds: self.exchange.time(&sends),
                    sends,
                }
            })
            .collect();
        let iteration_seconds = processes
            .iter()
            .map(|p| p.compute_seconds + p.comm_seconds)
            .fold(0.0, f64::max);
        Ok(ScaledTrace {
            count,
            weight: self.weight,
            processes,
            iteration_seconds,
            loop_seconds: iteration_seconds * self.weight as f64,
        })
    }

    /// Compares the prediction for `held`'s count with `held` itself.
    pub fn validate(&self, held: &Signature) -> Result<Validation, ScalingError> {
        held.check()?;
        let trace = self.predict(held.count())?;
        let mut pattern_exact = true;
        let mut volume_error: f64 = 0.0;
        for (want, got) in trace.processes.iter().zip(&held.processes) {
            let mut got = got.sends.clone();
            got.sort_by_key(|m| m.peer);
            let mut want = want.sends.clone();
            want.sort_by_key(|m| m.peer);
            if want.iter().map(|m| m.peer).ne(got.iter().map(|m| m.peer)) {
                pattern_exact = false;
                continue;
            }
            for (w, g) in want.iter().zip(&got) {
                let real = g.bytes.max(1) as f64;
                volume_error = volume_error.max((w.bytes as f64 - g.bytes as f64).abs() / real);
            }
        }
        let rel = |est: f64, real: f64| {
            if real > 0.0 {
                (est - real).abs() / real
            } else {
                f64::INFINITY
            }
        };
        Ok(Validation {
            count: held.count(),
            pattern_exact,
            weight_exact: held.weight == self.weight,
            volume_error: if pattern_exact { volume_error } else { 1.0 },
            compute_error: rel(self.compute_on_clock(held.count()), {
                let n = held.count();
                let (critical, mean) = (held.critical_on(self.clock)?, held.mean_on(self.clock)?);
                self.on_the_cores(n, critical, mean) / self.stretch(n)
            }),
            time_error: rel(trace.iteration_seconds, held.iteration_seconds),
        })
    }
}

/// The candidate grids that explain all signatures with one set of offsets
/// and, among those, the fewest offsets (a line with diagonal-free
/// neighbours also fits a grid with diagonal ones: the simpler one wins),
/// simplest grid first.
fn infer_patterns(signatures: &[Signature], ndims: usize) -> Result<Vec<Pattern>, ScalingError> {
    let mut found: Vec<Pattern> = Vec::new();
    'grids: for grid in Grid::candidates(ndims) {
        let mut offsets = BTreeSet::new();
        for s in signatures {
            match offsets_on(s, grid) {
                Some(o) => offsets.extend(o),
                None => continue 'grids,
            }
        }
        let offsets: Vec<Vec<i64>> = offsets.into_iter().collect();
        if signatures.iter().all(|s| explains(s, grid, &offsets)) {
            found.push(Pattern { grid, offsets });
        }
    }
    let Some(fewest) = found.iter().map(|p| p.offsets.len()).min() else {
        return Err(ScalingError::NoPattern);
    };
    found.retain(|p| p.offsets.len() == fewest);
    Ok(found)
}

/// Per offset: the mean size of its messages at each count, as a power law
/// of the face divisor (constant when the divisor never changes).
fn fit_volumes(pattern: &Pattern, signatures: &[Signature]) -> Result<Vec<Volume>, ScalingError> {
    let mut per_offset: Vec<Vec<(f64, f64)>> = vec![Vec::new(); pattern.offsets.len()];
    for s in signatures {
        let mut sums = vec![(0.0, 0usize); pattern.offsets.len()];
        for (rank, mine) in pattern.peers(s.count()).into_iter().enumerate() {
            for (peer, k) in mine {
                let m = s.processes[rank]
                    .sends
                    .iter()
                    .find(|m| m.peer == peer)
                    .expect("the pattern explains every signature");
                sums[k].0 += m.bytes as f64;
                sums[k].1 += 1;
            }
        }
        for (k, (sum, n)) in sums.into_iter().enumerate() {
            if n > 0 {
                per_offset[k].push((pattern.face_divisor(k, s.count()), sum / n as f64));
            }
        }
    }
    per_offset
        .into_iter()
        .map(|pts| {
            let distinct: BTreeSet<u64> = pts.iter().map(|p| p.0.to_bits()).collect();
            if distinct.len() >= 2 {
                Ok(Volume::Law(PowerLaw::fit(&pts)?))
            } else {
                Ok(Volume::Constant(
                    pts.iter().map(|p| p.1).sum::<f64>() / pts.len().max(1) as f64,
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hitmap::{Footprint, HaloPlan, Layout, Partition, Shape};

    /// A signature of a `rows × cols` interior cut by `partition` over
    /// `p` processes, messages from hitmap's own halo plan, compute
    /// `per_cell · cells + overhead`, exchange 5 µs per message and 1 ns
    /// per byte.
    fn synthetic(
        rows: i64,
        cols: i64,
        partition: Partition,
        footprint: &Footprint,
        p: usize,
        per_cell: f64,
        overhead: f64,
    ) -> Signature {
        let domain = Shape::from_ranges(&[(1, rows + 1), (1, cols + 1)]);
        let layout = Layout::new(&domain, partition, p, None).unwrap();
        let plan = HaloPlan::new(&layout, footprint).unwrap();
        let processes: Vec<ProcessSignature> = (0..p)
            .map(|rank| {
                let sends: Vec<Message> = plan
                    .vp(rank)
                    .sends
                    .iter()
                    .map(|e| Message {
                        peer: e.peer,
                        bytes: 4 * e.card() as u64,
                    })
                    .collect();
                let cells = layout.block(rank).card() as u64;
                let bytes: u64 = sends.iter().map(|m| m.bytes).sum();
                ProcessSignature {
                    compute_seconds: per_cell * cells as f64 + overhead,
                    cpu_seconds: None,
                    threads: None,
                    instructions: None,
                    comm_seconds: 5e-6 * sends.len() as f64 + 1e-9 * bytes as f64,
                    cells,
                    sends,
                }
            })
            .collect();
        let iteration_seconds = processes
            .iter()
            .map(|p| p.compute_seconds + p.comm_seconds)
            .fold(0.0, f64::max);
        Signature {
            ndims: 2,
            weight: 1000,
            iteration_seconds,
            processes,
            cores: None,
        }
    }

    fn cross() -> Footprint {
        Footprint::new(2, vec![vec![-1, 0], vec![1, 0], vec![0, -1], vec![0, 1]])
    }

    fn box9() -> Footprint {
        let mut o = Vec::new();
        for i in -1..=1 {
            for j in -1..=1 {
                o.push(vec![i, j]);
            }
        }
        Footprint::new(2, o)
    }

    fn sigs(partition: Partition, fp: &Footprint, counts: &[usize]) -> Vec<Signature> {
        counts
            .iter()
            .map(|&p| synthetic(720, 720, partition, fp, p, 1e-9, 0.0))
            .collect()
    }

    #[test]
    fn slabs_predict_the_exact_trace_at_a_larger_count() {
        let s = sigs(Partition::Weighted(0), &cross(), &[2, 3, 4]);
        let model = ScalingModel::fit(&s, &[]).unwrap();
        assert_eq!(model.pattern().grid, Grid::Line);
        assert_eq!(model.pattern().offsets, vec![vec![-1], vec![1]]);
        let real = synthetic(720, 720, Partition::Weighted(0), &cross(), 16, 1e-9, 0.0);
        let v = model.validate(&real).unwrap();
        assert!(v.accepted(), "{v:?}");
        assert_eq!(v.volume_error, 0.0);
        assert!(v.compute_error < 1e-9, "{v:?}");
        assert!(v.time_error < 1e-6, "{v:?}");
        let trace = model.predict(16).unwrap();
        assert_eq!(
            trace.processes[0].sends,
            vec![Message {
                peer: 1,
                bytes: 2880
            }]
        );
        assert_eq!(trace.processes[15].sends.len(), 1);
        assert!((trace.loop_seconds - 1000.0 * trace.iteration_seconds).abs() < 1e-12);
        // A predicted trace passes the replay's check; edited ones that no
        // replay could emulate (a sleep of 1e308 s panicked once) do not.
        trace.check().unwrap();
        let broken = |edit: &dyn Fn(&mut ScaledTrace), why: &str| {
            let mut t = trace.clone();
            edit(&mut t);
            let e = t.check().unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        };
        broken(
            &|t| t.processes[3].compute_seconds = 1e308,
            "computes for 1e308 s",
        );
        broken(
            &|t| t.processes[3].compute_seconds = -1.0,
            "computes for -1e0 s",
        );
        broken(
            &|t| t.processes[3].comm_seconds = f64::NAN,
            "exchanges for NaN s",
        );
        broken(
            &|t| t.processes[0].sends[0].peer = 0,
            "sends to 0: not another",
        );
        broken(&|t| t.processes[0].sends[0].peer = 99, "sends to 99");
        broken(
            &|t| t.processes[0].sends[0].bytes = 1 << 40,
            "at most 1073741824",
        );
        broken(&|t| t.count = 3, "its count is 3 but it has 16 processes");
    }

    #[test]
    fn blocks_with_corners_are_inferred_from_non_square_counts() {
        // 2, 4 and 8 processes make 2×1, 2×2 and 4×2 grids: the volume of
        // each offset follows its face, not P.
        let s = sigs(Partition::Multi, &box9(), &[2, 4, 8]);
        let model = ScalingModel::fit(&s, &[]).unwrap();
        assert_eq!(model.pattern().grid, Grid::Square(2));
        assert_eq!(model.pattern().offsets.len(), 8);
        assert!(model.pattern().equations().contains("+n1"));
        for p in [16, 36, 48] {
            let real = synthetic(720, 720, Partition::Multi, &box9(), p, 1e-9, 0.0);
            let v = model.validate(&real).unwrap();
            assert!(v.pattern_exact && v.volume_error == 0.0, "at {p}: {v:?}");
            assert!(
                v.compute_error < 1e-9 && v.time_error < 1e-6,
                "at {p}: {v:?}"
            );
        }
    }

    #[test]
    fn prime_counts_cannot_tell_a_line_from_a_grid() {
        let s = sigs(Partition::Multi, &cross(), &[2, 3]);
        let model = ScalingModel::fit(&s, &[]).unwrap();
        assert!(model.predict(5).is_ok(), "prime again: both agree");
        assert_eq!(
            model.predict(4).unwrap_err(),
            ScalingError::Ambiguous {
                a: Grid::Line,
                b: Grid::Square(2),
                target: 4
            }
        );
        // One signature at a composite count settles it.
        let s = sigs(Partition::Multi, &cross(), &[2, 3, 4]);
        let model = ScalingModel::fit(&s, &[]).unwrap();
        assert_eq!(model.pattern().grid, Grid::Square(2));
        assert!(model.predict(6).is_ok());
    }

    #[test]
    fn a_far_point_corrects_compute_that_is_not_a_power_law() {
        // A fixed cost per iteration bends the curve: extrapolating the
        // small counts overshoots the drop, the far point pins the tail.
        let (per_cell, fixed) = (1e-9, 2e-5);
        let s: Vec<Signature> = [2, 3, 4]
            .iter()
            .map(|&p| {
                synthetic(
                    720,
                    720,
                    Partition::Weighted(0),
                    &cross(),
                    p,
                    per_cell,
                    fixed,
                )
            })
            .collect();
        // 90 rows on 2 processes: as many cells each as 720 rows on 16.
        let far = synthetic(
            90,
            720,
            Partition::Weighted(0),
            &cross(),
            2,
            per_cell,
            fixed,
        );
        let real = synthetic(
            720,
            720,
            Partition::Weighted(0),
            &cross(),
            16,
            per_cell,
            fixed,
        );
        let plain = ScalingModel::fit(&s, &[]).unwrap().validate(&real).unwrap();
        let with_far = ScalingModel::fit(&s, &[far])
            .unwrap()
            .validate(&real)
            .unwrap();
        assert!(
            with_far.compute_error < plain.compute_error / 2.0,
            "{plain:?} {with_far:?}"
        );
    }

    /// `sig` as recorded with its devices taking turns on `cores` cores:
    /// its compute is CPU time, the wall time stretched by P / cores.
    fn oversubscribed(mut sig: Signature, cores: usize) -> Signature {
        let stretch = (sig.count() as f64 / cores as f64).max(1.0);
        for p in &mut sig.processes {
            p.cpu_seconds = Some(p.compute_seconds);
            p.threads = Some(1);
            p.compute_seconds *= stretch;
        }
        sig.iteration_seconds = sig
            .processes
            .iter()
            .map(|p| p.compute_seconds + p.comm_seconds)
            .fold(0.0, f64::max);
        sig.cores = Some(cores);
        sig
    }

    /// Slabs of 720² at `counts` one-thread devices, recorded on 2 cores.
    fn on_two_cores(counts: &[usize]) -> Vec<Signature> {
        sigs(Partition::Weighted(0), &cross(), counts)
            .into_iter()
            .map(|s| oversubscribed(s, 2))
            .collect()
    }

    /// Their far point: 4 devices on a quarter of the rows (as many cells
    /// a device as the big problem at 16), on 2 cores.
    fn far_on_two_cores() -> Signature {
        oversubscribed(
            synthetic(180, 720, Partition::Weighted(0), &cross(), 4, 1e-9, 0.0),
            2,
        )
    }

    #[test]
    fn compute_on_cpu_time_predicts_oversubscribed_counts() {
        let s = on_two_cores(&[1, 2]);
        // 1 and 2 devices cannot tell slabs from a 2-d grid; a far point
        // at 4 devices (a quarter of the rows: as many cells a device as
        // the big problem at 16) can.
        assert!(matches!(
            ScalingModel::fit(&s, &[]).unwrap().predict(8).unwrap_err(),
            ScalingError::Ambiguous { .. }
        ));
        let far = [far_on_two_cores()];
        let real = oversubscribed(
            synthetic(720, 720, Partition::Weighted(0), &cross(), 8, 1e-9, 0.0),
            2,
        );
        let cpu = ScalingModel::fit_on(&s, &far, ComputeClock::Cpu, Node::default()).unwrap();
        // The cores come from the signatures; CPU time falls as 1/P, and
        // 8 devices on 2 cores take 4 times their CPU time in wall time.
        assert_eq!(cpu.node.cores, Some(2.0));
        let v = cpu.validate(&real).unwrap();
        assert!(v.accepted() && v.compute_error < 1e-9, "{v:?}");
        let want = real.critical_compute();
        assert!((cpu.compute_wall(8) - want).abs() < 1e-9 * want);
        assert!(v.time_error < 1e-6, "{v:?}");
        // Wall time, stretched at the far point only, falls too fast.
        let wall = ScalingModel::fit(&s, &far).unwrap();
        assert!(wall.compute_wall(8) < 0.5 * want, "{wall:?}");
        // The target's cores override the signatures': on 8 cores, no
        // stretch.
        let node = Node {
            cores: Some(8.0),
            ..Node::default()
        };
        let wide = ScalingModel::fit_on(&s, &far, ComputeClock::Cpu, node).unwrap();
        assert!((wide.compute_wall(8) - want / 4.0).abs() < 1e-9 * want);
        // Other work took the cores for a millisecond of each iteration at
        // 2 devices: wall time beyond the kernels, not exchange. The CPU
        // fit's exchange comes from the processes' own exchange times and
        // does not move; the wall fit's does.
        let mut loaded = s.clone();
        loaded[1].iteration_seconds += 1e-3;
        let again =
            ScalingModel::fit_on(&loaded, &far, ComputeClock::Cpu, Node::default()).unwrap();
        assert_eq!(again.exchange, cpu.exchange);
        let wall_loaded = ScalingModel::fit(&loaded, &far).unwrap();
        assert!(wall_loaded.exchange.alpha > wall.exchange.alpha + 4e-4);
    }

    /// Devices spread over nodes take turns on their own node's cores only:
    /// 1024 devices, 16 to a node of 16 cores, compute as each device with a
    /// core of its own (as on one node of 1024 cores), not 1024/16 times it.
    #[test]
    fn devices_take_turns_on_their_own_nodes_cores_only() {
        let s = on_two_cores(&[1, 2]);
        let far = [far_on_two_cores()];
        let fit = |cores: f64, devices_per_node: Option<usize>| {
            let node = Node {
                cores: Some(cores),
                devices_per_node,
                bandwidth: None,
            };
            ScalingModel::fit_on(&s, &far, ComputeClock::Cpu, node).unwrap()
        };
        let nodes = fit(16.0, Some(16));
        let wide = fit(1024.0, None);
        let alone = nodes.compute.at(1024.0);
        // Equal to a few ulps: `powf` inlined with its base known may be
        // computed otherwise (one ulp apart once other code here changed).
        let same = |a: f64, b: f64| assert!((a / b - 1.0).abs() < 1e-12, "{a} against {b}");
        same(nodes.compute_wall(1024), alone);
        same(wide.compute_wall(1024), alone);
        same(nodes.compute_on_clock(1024), alone);
        // 32 devices to a node of 16 cores take turns two at a time.
        let crowded = fit(16.0, Some(32));
        same(
            crowded.compute_wall(1024),
            alone.max(2.0 * crowded.compute_mean.at(1024.0)),
        );
        assert!(crowded.compute_wall(1024) > 1.5 * alone);
        // All 1024 on one node of 16 cores: 64 at a time.
        let one_node = fit(16.0, None);
        same(
            one_node.compute_wall(1024),
            alone.max(64.0 * one_node.compute_mean.at(1024.0)),
        );
        // A node of fewer devices than it may hold is the count's.
        assert_eq!(nodes.devices_on_a_node(8), 8);
        assert_eq!(nodes.devices_on_a_node(1024), 16);
    }

    /// On a shared machine one of two devices took half as much CPU again
    /// (other work's memory traffic) and its twin waited for it. Where 8
    /// devices take turns on 2 cores, the cores work through all their
    /// kernels: the prediction follows the mean device, and the exchange
    /// stays what a sender spent exchanging, not its wait.
    #[test]
    fn devices_taking_turns_follow_the_mean_device_not_the_slowest() {
        let clean = on_two_cores(&[1, 2]);
        let far = [far_on_two_cores()];
        let fit = |s: &[Signature]| {
            ScalingModel::fit_on(s, &far, ComputeClock::Cpu, Node::default()).unwrap()
        };
        let base = fit(&clean);
        let mut noisy = clean.clone();
        let (slow, fast) = {
            let p = &mut noisy[1].processes;
            let extra = 0.5 * p[0].cpu_seconds.unwrap();
            p[0].cpu_seconds = Some(1.5 * p[0].cpu_seconds.unwrap());
            p[1].cpu_seconds = Some(p[1].cpu_seconds.unwrap() - extra);
            p[1].comm_seconds += 1.5 * extra; // its wait for the slow one
            (p[0].cpu_seconds.unwrap(), p[1].cpu_seconds.unwrap())
        };
        assert!(slow > 2.0 * fast);
        let got = fit(&noisy);
        assert_eq!(got.exchange, base.exchange);
        // The mean device is the clean one: the prediction at 8 is too.
        let (want, have) = (base.compute_wall(8), got.compute_wall(8));
        assert!((have - want).abs() < 1e-9 * want, "{have} {want}");
        let trace = got.predict(8).unwrap();
        let clean_trace = base.predict(8).unwrap();
        assert!(
            (trace.iteration_seconds - clean_trace.iteration_seconds).abs()
                < 1e-9 * clean_trace.iteration_seconds
        );
        // The slowest device's law, stretched by 4, would predict turns no
        // device took; where each device has its core, the slowest one
        // still sets the iteration.
        // (Measured here: 1.10x the clean prediction at 8, 1.17x at 2.)
        assert!(got.compute.at(8.0) * 4.0 > 1.05 * want);
        assert!(got.compute_wall(2) > 1.1 * base.compute_wall(2));
        // Just past the cores (3 devices on 2) a slow device's own time can
        // exceed the mean one's stretched by 1.5: then it sets the compute.
        let mut lopsided = clean.clone();
        {
            let p = &mut lopsided[1].processes;
            let c = p[0].cpu_seconds.unwrap();
            p[0].cpu_seconds = Some(1.9 * c);
            p[1].cpu_seconds = Some(0.1 * c);
        }
        let odd = ScalingModel::fit_on(&lopsided, &[], ComputeClock::Cpu, Node::default()).unwrap();
        assert!(odd.compute_mean.at(3.0) * 1.5 < odd.compute.at(3.0));
        assert_eq!(odd.compute_wall(3), odd.compute.at(3.0));
        // Validation checks that compute, not the mean law's: a balanced
        // held-back run at 3 devices takes far less, and is refused.
        let held = oversubscribed(sigs(Partition::Weighted(0), &cross(), &[3]).remove(0), 2);
        let v = odd.validate(&held).unwrap();
        assert!(v.compute_error > 0.5 && !v.accepted(), "{v:?}");
        assert!(base.validate(&held).unwrap().compute_error < 1e-9);
    }

    /// On a line the end processes send one message and the others two.
    /// On CPU time the exchange is fitted on one sender with its own
    /// messages, so the interior's two cost what they cost.
    #[test]
    fn the_cpu_exchange_pairs_a_sender_with_its_own_messages() {
        let mut s = on_two_cores(&[2, 3, 4]);
        // An end process that also waited for its neighbour: the most
        // seconds any process spent would be that wait.
        s[1].processes[0].comm_seconds *= 3.0;
        let m = ScalingModel::fit_on(&s, &[], ComputeClock::Cpu, Node::default()).unwrap();
        let interior = &s[2].processes[1];
        assert_eq!(interior.sends.len(), 2);
        let (want, got) = (interior.comm_seconds, m.exchange.time(&interior.sends));
        assert!((got - want).abs() < 1e-9 * want, "{got} {want}");
    }

    #[test]
    fn cpu_time_must_be_in_every_signature() {
        let mut s = on_two_cores(&[1, 2]);
        s[1].processes[1].cpu_seconds = None;
        assert_eq!(
            ScalingModel::fit_on(&s, &[], ComputeClock::Cpu, Node::default()).unwrap_err(),
            ScalingError::NoCpuTime { count: 2 }
        );
        // Wall time needs none.
        assert!(ScalingModel::fit(&s, &[]).is_ok());
        let mut plain = sigs(Partition::Weighted(0), &cross(), &[1, 2]);
        for s in &mut plain {
            for p in &mut s.processes {
                p.cpu_seconds = Some(p.compute_seconds);
            }
        }
        assert!(matches!(
            ScalingModel::fit_on(&plain, &[], ComputeClock::Cpu, Node::default()).unwrap_err(),
            ScalingError::BadNode(_)
        ));
    }

    #[test]
    fn signatures_without_cpu_time_still_load() {
        let text = r#"{"ndims": 2, "weight": 10, "iteration_seconds": 0.001,
            "processes": [{"compute_seconds": 0.0005, "comm_seconds": 0.0001,
                           "cells": 100, "sends": []}]}"#;
        let sig: Signature = serde_json::from_str(text).unwrap();
        assert_eq!(sig.processes[0].cpu_seconds, None);
        assert_eq!(sig.cores, None);
        assert_eq!(sig.critical_cpu(), None);
        let back = serde_json::to_string(&sig).unwrap();
        assert!(!back.contains("cpu_seconds") && !back.contains("cores"));
    }

    #[test]
    fn the_bandwidth_floor_stops_the_power_law_where_devices_share_memory() {
        // Devices on one node of 40 GB/s, 8 bytes a cell: the floor per
        // device is cells/P × 8 × P / bw = 720² × 8 / bw, the same at any P
        // (the whole grid's bytes through one memory); 1 ns a cell alone.
        let bw = Bandwidth {
            bytes_per_second: 40e9,
            bytes_per_cell: 8.0,
        };
        let floor = 720.0 * 720.0 * 8.0 / 40e9;
        let real = |p: usize| {
            let mut s = synthetic(720, 720, Partition::Weighted(0), &cross(), p, 1e-9, 0.0);
            for q in &mut s.processes {
                q.compute_seconds = q.compute_seconds.max(floor);
            }
            s
        };
        // Fitted at 2 and 4, where the law (259 and 130 us) is above the
        // floor (104 us); at 8 the law says 65 us.
        let s = vec![real(2), real(4)];
        let node = Node {
            bandwidth: Some(bw),
            ..Node::default()
        };
        let plain = ScalingModel::fit(&s, &[]).unwrap();
        let floored = ScalingModel::fit_on(&s, &[], ComputeClock::Wall, node).unwrap();
        let want = real(8).critical_compute();
        assert!((floored.compute_wall(8) - want).abs() < 1e-9 * want);
        assert!(floored.validate(&real(8)).unwrap().compute_error < 1e-9);
        assert!(plain.validate(&real(8)).unwrap().compute_error > 0.3);
        // Where the law is above the floor, it is the law.
        assert_eq!(floored.compute_wall(2), plain.compute_wall(2));
        // Spread over nodes of 2 devices, a device's share is half a
        // node's bandwidth: the floor falls with P again.
        let spread = Node {
            devices_per_node: Some(2),
            ..node
        };
        let spread = ScalingModel::fit_on(&s, &[], ComputeClock::Wall, spread).unwrap();
        let per_device = 720.0 * 720.0 / 8.0 * 8.0 * 2.0 / 40e9;
        assert_eq!(
            spread.compute_wall(8),
            plain.compute_wall(8).max(per_device)
        );
        assert!(spread.compute_wall(8) < floored.compute_wall(8));
        assert!(ScalingModel::fit_on(
            &s,
            &[],
            ComputeClock::Wall,
            Node {
                bandwidth: Some(Bandwidth {
                    bytes_per_second: 0.0,
                    ..bw
                }),
                ..Node::default()
            }
        )
        .is_err());
    }

    #[test]
    fn the_bandwidth_comes_from_the_signature_that_fills_the_cores() {
        let s = on_two_cores(&[1, 2, 4]);
        // 720² cells, 8 bytes each, in the 2-device signature's slowest
        // kernel (360 rows: 259.2 us of CPU).
        let want = 720.0 * 720.0 * 8.0 / (360.0 * 720.0 * 1e-9);
        let got = Bandwidth::from_signatures(&s, 8.0, ComputeClock::Cpu, 2).unwrap();
        assert!((got - want).abs() < 1e-6 * want, "{got} {want}");
        // On 4 cores the 4-device signature fills them (its CPU time: its
        // wall time was stretched by 2 cores).
        let got = Bandwidth::from_signatures(&s, 8.0, ComputeClock::Cpu, 4).unwrap();
        assert!((got - 2.0 * want).abs() < 1e-6 * want, "{got}");
        assert!(matches!(
            Bandwidth::from_signatures(&s[1..], 8.0, ComputeClock::Cpu, 1),
            Err(ScalingError::BadNode(_))
        ));
    }

    #[test]
    fn a_held_back_signature_that_disagrees_is_rejected() {
        let s = sigs(Partition::Weighted(0), &cross(), &[2, 3, 4]);
        let model = ScalingModel::fit(&s, &[]).unwrap();
        let mut real = synthetic(720, 720, Partition::Weighted(0), &cross(), 8, 1e-9, 0.0);
        for p in &mut real.processes {
            for m in &mut p.sends {
                m.bytes *= 2;
            }
        }
        let v = model.validate(&real).unwrap();
        assert!(v.pattern_exact && !v.accepted());
        assert!((v.volume_error - 0.5).abs() < 1e-12);
        real.processes[0].sends.clear();
        assert!(!model.validate(&real).unwrap().pattern_exact);
    }

    #[test]
    fn bad_inputs_are_named() {
        let s = sigs(Partition::Weighted(0), &cross(), &[2, 2]);
        assert_eq!(
            ScalingModel::fit(&s, &[]).unwrap_err(),
            ScalingError::TooFewCounts { needed: 2, got: 1 }
        );
        let mut s = sigs(Partition::Weighted(0), &cross(), &[2, 4]);
        s.push(synthetic(
            360,
            720,
            Partition::Weighted(0),
            &cross(),
            3,
            1e-9,
            0.0,
        ));
        assert!(matches!(
            ScalingModel::fit(&s, &[]).unwrap_err(),
            ScalingError::NotStrongScaling { count: 3, .. }
        ));
        let mut s = sigs(Partition::Weighted(0), &cross(), &[2, 4]);
        s[1].weight = 7;
        assert_eq!(
            ScalingModel::fit(&s, &[]).unwrap_err(),
            ScalingError::WeightVaries(vec![7, 1000])
        );
        let mut s = sigs(Partition::Weighted(0), &cross(), &[3, 4]);
        s[1].processes[1].sends.push(Message { peer: 3, bytes: 8 });
        assert_eq!(
            ScalingModel::fit(&s, &[]).unwrap_err(),
            ScalingError::NoPattern
        );
        s[1].processes[0].sends.push(Message { peer: 0, bytes: 8 });
        assert!(matches!(
            ScalingModel::fit(&s, &[]).unwrap_err(),
            ScalingError::BadSignature { count: 4, .. }
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Whatever the sizes, partition and stencil reach, the inferred
        /// pattern gives every process at the target count exactly the
        /// peers hitmap's own halo plan gives it.
        #[test]
        fn predicted_peers_are_hitmaps(
            rows in 200i64..400, cols in 200i64..400,
            part in 0usize..3, corners in proptest::bool::ANY,
            counts in proptest::sample::select(vec![vec![2usize, 4, 8], vec![2, 3, 4, 6], vec![3, 4, 6]]),
            target in proptest::sample::select(vec![5usize, 9, 12, 16, 24]),
        ) {
            let partition = [Partition::Weighted(0), Partition::Single(1), Partition::Multi][part];
            let fp = if corners { box9() } else { cross() };
            let s: Vec<Signature> = counts
                .iter()
                .map(|&p| synthetic(rows, cols, partition, &fp, p, 1e-9, 0.0))
                .collect();
            let model = ScalingModel::fit(&s, &[]).unwrap();
            // Every count set holds a composite count: never ambiguous.
            let trace = model.predict(target).unwrap();
            let real = synthetic(rows, cols, partition, &fp, target, 1e-9, 0.0);
            for (want, got) in real.processes.iter().zip(&trace.processes) {
                let w: Vec<usize> = want.sends.iter().map(|m| m.peer).collect();
                let mut g: Vec<usize> = got.sends.iter().map(|m| m.peer).collect();
                g.sort_unstable();
                proptest::prop_assert_eq!(w, g);
            }
        }
    }

    #[test]
    fn the_exchange_cost_recovers_latency_and_bandwidth() {
        let rows: Vec<(f64, f64, f64)> = [(1.0, 4e3), (2.0, 8e3), (2.0, 3e4), (4.0, 1e3)]
            .iter()
            .map(|&(n, b)| (n, b, 5e-6 * n + 1e-9 * b))
            .collect();
        let c = ExchangeCost::fit(&rows);
        assert!(
            (c.alpha - 5e-6).abs() < 1e-15 && (c.beta - 1e-9).abs() < 1e-18,
            "{c:?}"
        );
        // Sizes proportional to counts: only a per-message cost is defined.
        let c = ExchangeCost::fit(&[(1.0, 10.0, 2.0), (2.0, 20.0, 4.0)]);
        assert_eq!(
            c,
            ExchangeCost {
                alpha: 2.0,
                beta: 0.0
            }
        );
    }
}

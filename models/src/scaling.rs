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
            .flat_map(|p| [p.compute_seconds, p.comm_seconds])
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
    /// No candidate grid explains every signature's messages.
    #[error(
        "no process grid explains the signatures' messages (tried a line and square grids \
         of up to the domain's dimensions, with neighbours at the same offsets everywhere)"
    )]
    NoPattern,
    /// Two grids explain the signatures but predict different messages.
    #[error(
        "the signatures fit both {a} and {b}, which differ at {target} devices: add a \
         signature at a count where they differ (one with two or more prime factors)"
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
    /// Relative error of the critical compute time.
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
/// slowest kernel, against its busiest process's messages and bytes.
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
    /// Exchange time per process.
    pub exchange: ExchangeCost,
    /// Device counts fitted.
    pub counts: Vec<usize>,
}

impl ScalingModel {
    /// Fits a model to signatures of one run at two or more device counts
    /// (three or more recommended, a fourth held back for
    /// [`ScalingModel::validate`]). `far` are signatures of a smaller
    /// problem: each stands, for compute, at the count where the big
    /// problem gives a process as many cells (P3S's far point).
    pub fn fit(signatures: &[Signature], far: &[Signature]) -> Result<ScalingModel, ScalingError> {
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

        let patterns = infer_patterns(signatures, first.ndims)?;
        let volumes = fit_volumes(&patterns[0], signatures)?;

        let points: Vec<(f64, f64)> = signatures
            .iter()
            .map(|s| (s.count() as f64, s.critical_compute()))
            .collect();
        let compute_initial = PowerLaw::fit(&points)?;
        let cells = first.total_cells() as f64;
        let far_points = far.iter().map(|s| {
            let per_process = s.total_cells() as f64 / s.count() as f64;
            (cells / per_process, s.critical_compute())
        });
        let all: Vec<(f64, f64)> = points.iter().copied().chain(far_points).collect();
        let compute = PowerLaw::fit(&all)?;

        // What the iteration spends beyond its slowest kernel (packing,
        // messages, waiting: the processes' own comm times overlap and
        // include waits), against the busiest process's messages.
        let rows: Vec<(f64, f64, f64)> = signatures
            .iter()
            .map(|s| {
                let (n, bytes) = s
                    .processes
                    .iter()
                    .map(|p| (p.sends.len(), p.sends.iter().map(|m| m.bytes).sum::<u64>()))
                    .max()
                    .unwrap_or((0, 0));
                let rest = (s.iteration_seconds - s.critical_compute()).max(0.0);
                (n as f64, bytes as f64, rest)
            })
            .filter(|r| r.0 > 0.0)
            .collect();
        Ok(ScalingModel {
            patterns,
            volumes,
            weight: first.weight,
            compute_initial,
            compute,
            exchange: ExchangeCost::fit(&rows),
            counts: counts.into_iter().collect(),
        })
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
        let compute = self.compute.at(count as f64);
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
            compute_error: rel(
                self.compute.at(held.count() as f64),
                held.critical_compute(),
            ),
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

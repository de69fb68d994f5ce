//! The strong-scaling model: fitted over signatures at several counts (the
//! pattern, the volume and compute laws, the exchange cost), it predicts the
//! phase at another count and validates against a held-back signature.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::ScalingError;
use super::exchange::{fit_volumes, ExchangeCost, Volume};
use super::node::Node;
use super::pattern::{infer_patterns, Pattern};
use super::signature::{one_halo_depth, ComputeClock, Message, ProcessSignature, Signature};
use super::trace::{PredictedProcess, ScaledTrace, Validation};
use crate::fit::PowerLaw;

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
    /// The halo depth every signature ran at: its iterations are a K-th
    /// of a period of K fused steps and one K-deep exchange.
    #[serde(default = "super::signature::one_step")]
    pub halo_depth: usize,
}

/// Where `s` stands among the inputs, for an error naming it.
fn named<'a>(
    what: &'static str,
    sigs: &'a [Signature],
) -> impl Iterator<Item = (String, &'a Signature)> {
    sigs.iter()
        .map(move |s| (format!("the {what} at {} devices", s.count()), s))
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
        let halo_depth =
            one_halo_depth(named("signature", signatures).chain(named("far point", far)))?
                .unwrap_or(1);

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
            halo_depth,
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
        if held.halo_depth != self.halo_depth {
            return Err(ScalingError::DepthVaries(vec![
                ("the model's signatures".into(), self.halo_depth),
                (
                    format!("the held-back one at {} devices", held.count()),
                    held.halo_depth,
                ),
            ]));
        }
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

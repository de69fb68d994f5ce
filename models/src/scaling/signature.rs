//! What a short run records (`epsilod signature`): its processes' compute,
//! exchange and messages at one device count, and the clock compute is
//! read on. The data every other part of the model is fitted to.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::ScalingError;

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
    /// Iterations between its run's halo exchanges, the depth it ran at: at
    /// depth K each device computes K steps a launch and exchanges K-deep
    /// halos once a period, so its per-iteration figures are a K-th of a
    /// period's, another phase than depth 1's. Absent in signatures
    /// recorded before it: 1, what `epsilod signature` ran by default
    /// then, except while it followed `run`'s `cache` (docs/scaling.md).
    #[serde(default = "one_step")]
    pub halo_depth: usize,
}

/// Depth 1, one step a launch.
pub(super) fn one_step() -> usize {
    1
}

/// The one halo depth of `named` signatures (each with a name for the
/// error: its file, or where it stands), or the error naming each with
/// its depth when they differ: signatures at different depths describe
/// different phases, and no one law fits them. `None` for no signatures.
pub fn one_halo_depth<'a>(
    named: impl IntoIterator<Item = (String, &'a Signature)>,
) -> Result<Option<usize>, ScalingError> {
    let named: Vec<(String, usize)> = named
        .into_iter()
        .map(|(name, s)| (name, s.halo_depth))
        .collect();
    match named.first() {
        Some(&(_, first)) if named.iter().any(|(_, d)| *d != first) => {
            Err(ScalingError::DepthVaries(named))
        }
        first => Ok(first.map(|(_, d)| *d)),
    }
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
    pub(super) fn mean_on(&self, clock: ComputeClock) -> Result<f64, ScalingError> {
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
    pub(super) fn critical_on(&self, clock: ComputeClock) -> Result<f64, ScalingError> {
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

    pub(super) fn check(&self) -> Result<(), ScalingError> {
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
        if self.halo_depth == 0 {
            return Err(bad("its halo depth is 0 (1 is one step a launch)".into()));
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

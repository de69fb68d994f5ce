//! What can go wrong. Every message says what is wrong and, where there is
//! one, how to fix it. Causes stay typed (`#[source]`): print a whole chain
//! with [`chain`].

use controllers::registry::OptionError;
use controllers::DeviceError;
use hitmap::{HitmapError, Partition, TransportError};
use thiserror::Error;

/// What is wrong with a device string or a device file's table.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DeviceSpecError {
    /// An option its backend does not take, or no such backend.
    #[error(transparent)]
    Backend(#[from] OptionError),
    /// An option without `=`.
    #[error("option '{0}' is not key=value")]
    NotKeyValue(String),
    /// An option given twice.
    #[error("option '{0}' is given twice: give it once")]
    Twice(String),
    /// A count that is not a whole number.
    #[error("{key}={value}: expected a whole number >= 0")]
    NotWhole {
        /// The option.
        key: String,
        /// Its value, as given.
        value: String,
    },
    /// A weight below 0 or not a number.
    #[error("weight={0}: expected a number >= 0 (0 starts the device with no rows)")]
    Weight(String),
    /// A slowdown factor out of range (the text given, shortened where
    /// long).
    #[error(
        "slowdown={0}: the factor must be a number from 1 to {max} (e.g. slowdown=3 or slowdown=3@300)",
        max = controllers::slowdown::MAX_FACTOR
    )]
    SlowdownFactor(String),
    /// A slowdown's iteration that is not a whole number.
    #[error("slowdown={0}: the iteration after '@' must be a whole number >= 0")]
    SlowdownFrom(String),
    /// A failure's iteration that is not a whole number.
    #[error("fail@{0}: expected the iteration to fail at, a whole number >= 0")]
    FailAt(String),
    /// No such option.
    #[error(
        "unknown option '{0}' (options: threads, platform, device, weight, slowdown, fail@ITER, layout)"
    )]
    UnknownOption(String),
}

/// A run that cannot start: found before any device is touched.
#[derive(Debug, Error)]
pub enum SetupError {
    /// A `--devices` entry that does not parse.
    #[error("bad device '{spec}': {why}")]
    Device {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: DeviceSpecError,
    },
    /// A device file's table that does not make a device.
    #[error("bad device file {path}: {why}")]
    DeviceTable {
        /// The file.
        path: String,
        /// What is wrong with the table.
        why: DeviceSpecError,
    },
    /// A device file that cannot be read or placed.
    #[error("bad device file {path}: {why}")]
    DeviceFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        #[source]
        why: DeviceFileError,
    },
    /// A run needs at least one device.
    #[error("no devices given: give at least one device")]
    NoDevices,
    /// A global size that does not fit the stencil.
    #[error("bad size '{size}': {why}")]
    Size {
        /// The size, as `AxB`.
        size: String,
        /// What is wrong with it.
        why: String,
    },
    /// A layout that cannot be made (too thin blocks, a bad partition).
    #[error(transparent)]
    Layout(#[from] HitmapError),
    /// A weighted partition where no device has a positive weight.
    #[error("every device has weight 0 under --partition {partition}: give at least one a positive weight (weight=W)")]
    AllWeightsZero {
        /// The partition.
        partition: Partition,
    },
    /// ALB moves rows, so it needs weighted blocks.
    #[error("ALB heuristic '{0}' needs a weighted partition: add --partition w0")]
    AlbNeedsWeights(String),
    /// Started by a launcher as one of several ranks, in a build without MPI.
    #[error("this binary was started by mpirun as one of {size} ranks but was built without MPI: rebuild it with `cargo build --release --features mpi` (or run it without mpirun)")]
    NoMpi {
        /// Ranks in the job.
        size: usize,
    },
    /// Started by a launcher, but the program never joined the job.
    #[error("this program was started by mpirun as one of {size} ranks but never joined the job: call epsilod::Cluster::join() at the start of main")]
    NotJoined {
        /// Ranks in the job.
        size: usize,
    },
    /// More ranks than devices.
    #[error("{ranks} MPI ranks but only {devices} device(s): give at least one device per rank (repeat --devices, or give none for one CPU device per rank), or run fewer ranks (mpirun -np {devices})")]
    TooManyRanks {
        /// Ranks in the job.
        ranks: usize,
        /// Devices given.
        devices: usize,
    },
    /// A rank whose blocks would all be empty.
    #[error("rank {rank} would compute no rows: {cells} interior cells are too few for {ranks} ranks; run fewer ranks or a larger size")]
    IdleRank {
        /// The idle rank.
        rank: usize,
        /// Interior cells of the run.
        cells: usize,
        /// Ranks in the job.
        ranks: usize,
    },
    /// A rank the placement gives no device.
    #[error("rank {rank} (host {host}) has no device: {why}")]
    RankWithoutDevice {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
        /// Why.
        why: String,
    },
    /// More memory than a host has for the run's tiles and results.
    #[error("the run needs {:.1} GB of memory on host {host} ({ranks} rank(s): CPU devices' tiles, results) and {:.1} GB is available to it (the host's free memory, or its cgroup's limit where lower): run a smaller size, spread the run over more hosts (mpirun), or ask the batch system for more memory", *need as f64 / 1e9, *available as f64 / 1e9)]
    Memory {
        /// The host.
        host: String,
        /// Ranks on it.
        ranks: usize,
        /// Bytes they need at least.
        need: u64,
        /// Bytes the host has available.
        available: u64,
    },
    /// No checkpoint to restart from, or one that may not be used.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// A halo depth the run cannot use.
    #[error("{0}")]
    HaloDepth(String),
    /// Snapshots that could not be written.
    #[error(transparent)]
    Snapshot(#[from] crate::output::SnapshotError),
    /// An app's input file that could not be read.
    #[error("cannot read {path}: {why}")]
    Input {
        /// The file.
        path: String,
        /// What is wrong: the app's own error.
        #[source]
        why: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Checkpoints every 0 iterations.
    #[error("checkpoints every 0 iterations: give --checkpoint-every 1 or more")]
    CheckpointEvery,
    /// A placement that does not fit the job.
    #[error("bad placement: {0}")]
    Placement(String),
    /// Several devices on one rank need MPI_THREAD_MULTIPLE.
    #[error("rank {rank} hosts {devices} devices, which needs MPI_THREAD_MULTIPLE, and this MPI library does not provide it: give each rank one device")]
    NoThreadMultiple {
        /// The rank.
        rank: usize,
        /// Devices placed on it.
        devices: usize,
    },
}

/// Why a device file cannot be read or placed.
#[derive(Debug, Error)]
pub enum DeviceFileError {
    /// The file could not be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// Not TOML, or not `[[device]]` tables.
    #[error(transparent)]
    Toml(#[from] kernels::TomlError),
    /// No devices in it.
    #[error("no [[device]] tables")]
    NoTables,
    /// `host = ""`.
    #[error("host = \"\": name a host, or \"*\" for any")]
    EmptyHost,
    /// Some tables placed, some not.
    #[error("some [[device]] tables name a host or rank and some do not: give every table a host (\"*\" for any) or a rank")]
    MixedPlacement,
    /// A table for a rank past the job's last.
    #[error("a [[device]] is for rank {rank}, but the job has {ranks} rank(s)")]
    RankOutsideJob {
        /// The table's rank.
        rank: usize,
        /// Ranks in the job.
        ranks: usize,
    },
}

/// What stopped a virtual process.
#[derive(Debug, Error)]
pub enum VpError {
    /// Its device failed (or could not be opened).
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A message could not be sent or received.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A new layout could not be made during a rebalance.
    #[error(transparent)]
    Layout(#[from] HitmapError),
    /// A peer broke the protocol (a bug, or a damaged message).
    #[error("{0}")]
    Protocol(String),
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// A snapshot could not be written.
    #[error("snapshot after iteration {iter}: {why}")]
    Snapshot {
        /// The iteration.
        iter: u64,
        /// What went wrong: the snapshot function's own error.
        #[source]
        why: crate::stencil::SnapshotFailure,
    },
    /// Its thread could not be started (the system's reason; no
    /// `#[source]`, as the message shows it before its hint).
    #[error("its thread could not start: {0} (fewer devices, or a higher limit on threads)")]
    Thread(std::io::Error),
    /// Its thread panicked.
    #[error("it panicked (a bug: please report it)")]
    Panicked,
}

/// Why a run failed.
#[derive(Debug, Error)]
pub enum RunError {
    /// The run could not start.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A virtual process failed.
    #[error("virtual process {vp} ({device}) failed")]
    Vp {
        /// Its number.
        vp: usize,
        /// Its device, as given.
        device: String,
        /// What stopped it.
        #[source]
        cause: VpError,
    },
    /// Rank 0 could not start the run (its message, agreed by every rank).
    #[error("{0}")]
    Agreed(String),
    /// Another rank could not start the run.
    #[error("rank {rank}: {why}")]
    OnRank {
        /// The rank.
        rank: usize,
        /// Its message.
        why: String,
    },
    /// Ranks were given different runs.
    #[error("rank {rank} was given another run than rank 0 (rank {rank}: {mine}; rank 0: {root}): give every rank the same arguments and device file")]
    Mismatch {
        /// The first rank that differs.
        rank: usize,
        /// Its run.
        mine: String,
        /// Rank 0's run.
        root: String,
    },
    /// The MPI control plane failed (gathering results, the report).
    #[error("MPI: {0}")]
    Mpi(String),
}

impl RunError {
    /// Whether this is a virtual process that stopped only because a peer
    /// had gone (the echo of another failure, not its cause).
    pub fn is_peer_gone(&self) -> bool {
        matches!(
            self,
            RunError::Vp {
                cause: VpError::Transport(TransportError::PeerGone(_)),
                ..
            }
        )
    }
}

/// Joining the job failed.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// See [`SetupError::NoMpi`].
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// `Cluster::join` was called while a cluster was held.
    #[error("the cluster was joined twice: call Cluster::join once")]
    JoinedTwice,
    /// MPI could not start.
    #[error("MPI: {0}")]
    Mpi(String),
}

/// `error` and its causes, outermost first, joined by `: ` (one line: a
/// cause's own line breaks, as a compiler's log has them, become `; `).
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut s = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        // Transparent wrappers repeat their cause's text.
        if !s.ends_with(&text) {
            s += ": ";
            s += &text;
        }
        cause = c.source();
    }
    if s.contains('\n') {
        s = s
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_name_the_process_and_the_cause_once() {
        let e = RunError::Vp {
            vp: 1,
            device: "cpu:threads=1".into(),
            cause: VpError::Protocol("halo from 0 has 3 cells, expected 4".into()),
        };
        assert_eq!(
            chain(&e),
            "virtual process 1 (cpu:threads=1) failed: halo from 0 has 3 cells, expected 4"
        );
        let gone = RunError::Vp {
            vp: 0,
            device: "cpu".into(),
            cause: VpError::Transport(TransportError::PeerGone(2)),
        };
        assert!(gone.is_peer_gone());
        assert!(!e.is_peer_gone());
        // A cause of several lines (a compiler's log) stays one line.
        let log = RunError::Vp {
            vp: 0,
            device: "opencl".into(),
            cause: VpError::Protocol("1 error generated.\n\n  bracket nesting\n".into()),
        };
        assert_eq!(
            chain(&log),
            "virtual process 0 (opencl) failed: 1 error generated.; bracket nesting"
        );
    }
}

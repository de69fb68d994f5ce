//! What can go wrong. Every message says what is wrong and, where there is
//! one, how to fix it. Causes stay typed (`#[source]`): print a whole chain
//! with [`chain`].

use crate::size::size_text;
use controllers::registry::OptionError;
use controllers::DeviceError;
use hitmap::{Awaited, HitmapError, Partition, TransportError};
use std::time::Duration;
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
    /// A count or index that is not a whole number in its range.
    #[error("{key}={value}: expected {}", whole_range(key))]
    NotWhole {
        /// The option.
        key: String,
        /// Its value, as given.
        value: String,
    },
    /// A weight below 0 or not a number.
    #[error("weight={0}: expected a number >= 0 and finite (0 starts the device with no rows)")]
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

/// What a whole-number device option takes, as its check has it: threads
/// from 1 to the most a device may have (see `controllers::registry`), an
/// index (platform, device) from 0.
/// Bytes in GB, or MB below one GB (0.1 GB would hide a 2x difference).
fn size(bytes: u64) -> String {
    match bytes as f64 {
        b if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        b => format!("{:.0} MB", b / 1e6),
    }
}

/// What bounds the memory a run has.
fn bound(cgroup: Option<&str>) -> String {
    match cgroup {
        Some(file) => format!("the memory limit of its cgroup, {file}: the job's memory limit"),
        None => "the host's free memory".to_string(),
    }
}

/// What to change for more of it.
fn more(cgroup: bool) -> &'static str {
    if cgroup {
        "ask the batch system for more memory (Slurm: --mem or --mem-per-cpu), run a smaller size, or spread the run over more hosts"
    } else {
        "run a smaller size or spread the run over more hosts (mpirun)"
    }
}

fn whole_range(key: &str) -> String {
    match key {
        "threads" => format!(
            "a whole number from 1 to {}",
            controllers::registry::MAX_THREADS
        ),
        _ => "a whole number >= 0".to_string(),
    }
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
    #[error("bad size '{}': {why}", size_text(size))]
    Size {
        /// The size, one width per dimension.
        size: Vec<usize>,
        /// What is wrong with it.
        why: SizeError,
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
    #[error("this program was started by mpirun as one of {size} ranks but never joined the job: call epsilod::Cluster::join() at the start of main, with the launch that Launch::from_vars reads")]
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
    #[error("rank {rank} (host {host}) has no device: the placement gives it none")]
    RankWithoutDevice {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
    },
    /// A rank no table of the device file reaches.
    #[error("rank {rank} (host {host}) has no device: {path} has no [[device]] with host = \"{host}\", host = \"*\" or rank = {rank}; add one, or run fewer ranks")]
    RankWithoutTable {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
        /// The device file.
        path: String,
    },
    /// More memory than a host has for the run's tiles and results.
    #[error("the run needs {} of memory on host {host} ({ranks} rank(s): CPU devices' tiles, results) and {} is available to it ({}): {}", size(*need), size(*available), bound(cgroup.as_deref()), more(cgroup.is_some()))]
    Memory {
        /// The host.
        host: String,
        /// Ranks on it.
        ranks: usize,
        /// Bytes they need at least.
        need: u64,
        /// Bytes the host has available.
        available: u64,
        /// The cgroup limit file where its limit (a batch job's memory),
        /// not the host's free memory, is what is available.
        cgroup: Option<String>,
    },
    /// No checkpoint to restart from, or one that may not be used.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// Halos deeper than one iteration for a stencil that reads the
    /// previous time level, which deep halos do not carry.
    #[error("halo depth {depth}: '{stencil}' reads the previous time level, which deep halos do not carry yet; use --halo-depth 1")]
    HaloDepth {
        /// The depth asked for.
        depth: usize,
        /// The stencil's name.
        stencil: String,
    },
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
    Placement(PlacementError),
    /// Several devices on one rank need MPI_THREAD_MULTIPLE.
    #[error("rank {rank} hosts {devices} devices, which needs MPI_THREAD_MULTIPLE, and this MPI library does not provide it: give each rank one device")]
    NoThreadMultiple {
        /// The rank.
        rank: usize,
        /// Devices placed on it.
        devices: usize,
    },
}

/// What makes a global size unusable for a stencil.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SizeError {
    /// Not one width per dimension of the stencil.
    #[error("stencil '{stencil}' is {stencil_dims}-d but the size has {size_dims} dimension(s)")]
    Dims {
        /// The stencil's name.
        stencil: String,
        /// Its dimensions.
        stencil_dims: usize,
        /// The size's.
        size_dims: usize,
    },
    /// A width the stencil's boundary takes whole.
    #[error("dimension {dim} needs more than {border} cells (the boundary of '{stencil}') to leave an interior")]
    NoInterior {
        /// The dimension.
        dim: usize,
        /// The stencil's boundary cells there, both sides.
        border: usize,
        /// The stencil's name.
        stencil: String,
    },
    /// More bytes than an address space holds.
    #[error("a grid of {cell_bytes}-byte cells this large has more bytes than memory can address")]
    TooLarge {
        /// Bytes a cell.
        cell_bytes: usize,
    },
}

/// What makes a placement (the rank of each device) unusable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlacementError {
    /// Not one rank per device.
    #[error("it names {ranks} ranks for {devices} devices")]
    Count {
        /// Ranks named.
        ranks: usize,
        /// Devices given.
        devices: usize,
    },
    /// A rank the job does not have.
    #[error("a device is placed on rank {rank}, but there are {ranks} ranks")]
    PastLastRank {
        /// The rank named.
        rank: usize,
        /// Ranks in the job.
        ranks: usize,
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
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The heuristic proposed weights no layout can take.
    #[error(transparent)]
    Weights(#[from] heuristics::WeightsError),
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

/// How a peer broke the protocol: a message that is not what the run's
/// schedule makes due, or a step out of order (a bug, or damage).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ProtocolError {
    /// A halo of another length than its region.
    #[error("halo from {peer} has {got} cells, expected {expected}")]
    HaloCells {
        /// The sending process.
        peer: usize,
        /// Cells received.
        got: usize,
        /// Cells of the region.
        expected: usize,
    },
    /// A halo announced in device memory that is not there.
    #[error("halo from {peer} said to be in device memory, but is not")]
    HaloNotOnDevice {
        /// The sending process.
        peer: usize,
    },
    /// Moved rows of another length than their slab.
    #[error("moved rows {rows} from {peer} have {got} cells, expected {expected}")]
    MovedCells {
        /// The slab of rows.
        rows: hitmap::Shape,
        /// The sending process.
        peer: usize,
        /// Cells received.
        got: usize,
        /// Cells of the slab, every time level.
        expected: usize,
    },
    /// Moved rows announced in device memory that are not there.
    #[error("moved rows from {peer} said to be in device memory, but are not")]
    MovedNotOnDevice {
        /// The sending process.
        peer: usize,
    },
    /// A rebalance over blocks that are not weighted.
    #[error("load balancing needs a weighted partition (w<d>)")]
    NotWeighted,
    /// Another count of kernel times than the gather's round holds.
    #[error(
        "times of iterations {period:?} from {peer}: {got} values {delivery}, expected {expected}"
    )]
    Times {
        /// The period's iterations.
        period: std::ops::Range<u64>,
        /// The sending process.
        peer: usize,
        /// Values received.
        got: usize,
        /// How they came.
        delivery: Delivery,
        /// Values due.
        expected: usize,
    },
    /// A block for a snapshot of another length than the block.
    #[error("snapshot block from {peer} has {got} cells, expected {expected}")]
    SnapshotBlock {
        /// The sending process.
        peer: usize,
        /// Cells received.
        got: usize,
        /// Cells of its block.
        expected: usize,
    },
    /// A checkpoint asked of a run that has none.
    #[error("no checkpoint configured")]
    NoCheckpoint,
    /// A checkpoint report of other than one value.
    #[error("checkpoint report from {peer} has {got} values")]
    CheckpointReport {
        /// The sending process.
        peer: usize,
        /// Values received.
        got: usize,
    },
    /// An endpoint asked for before the ranks were placed.
    #[error("endpoints before placement")]
    BeforePlacement,
    /// An endpoint asked for twice, or of no process.
    #[error("no endpoint for virtual process {0}")]
    NoEndpoint(usize),
}

/// How a message of a gather came: from its sender directly, or in a
/// round of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Sent directly.
    Direct,
    /// In this round.
    Round(usize),
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Direct => write!(f, "sent directly"),
            Delivery::Round(r) => write!(f, "in round {r}"),
        }
    }
}

/// What went wrong in the MPI control plane: the agreement, placing the
/// processes, gathering results, sharing the report.
#[derive(Debug, Error)]
pub enum ControlError {
    /// The transport refused the placement.
    #[error(transparent)]
    Placement(TransportError),
    /// A rank's readiness that does not decode.
    #[error("a rank's view arrived damaged: {0}")]
    View(#[source] serde_json::Error),
    /// A virtual process's result description that does not decode.
    #[error("virtual process {vp}'s description arrived damaged: {source}")]
    Description {
        /// The process.
        vp: usize,
        /// The decoder's reason.
        #[source]
        source: serde_json::Error,
    },
    /// A result of another process than the one due.
    #[error("rank {rank} sent virtual process {sent} where {due} was due")]
    WrongProcess {
        /// The sending rank.
        rank: usize,
        /// The process it sent.
        sent: usize,
        /// The process due.
        due: usize,
    },
    /// A result of another length than its block.
    #[error("virtual process {vp} sent {bytes} bytes for a block of {cells} cells")]
    BlockBytes {
        /// The process.
        vp: usize,
        /// Bytes received.
        bytes: usize,
        /// Cells of its block.
        cells: usize,
    },
    /// Rank 0's report that does not decode.
    #[error("the report from rank 0 is unreadable: {0}")]
    Report(#[source] serde_json::Error),
    /// A rank that hosts no virtual process.
    #[error("no virtual process on this rank")]
    NoProcess,
    /// A report waited for in a process alone.
    #[error("a single process has no report to wait for")]
    NoReport,
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
    Mpi(ControlError),
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

    /// The rank a virtual process of rank `by` waited for in vain, where
    /// that stopped it; `hosts` names every rank's host.
    pub fn silent_peer(&self, hosts: &[String], by: usize) -> Option<SilentPeer> {
        let RunError::Vp {
            cause:
                VpError::Transport(TransportError::Silent {
                    rank,
                    awaited,
                    waited,
                    ..
                }),
            ..
        } = self
        else {
            return None;
        };
        Some(SilentPeer {
            rank: *rank,
            host: hosts.get(*rank).cloned().unwrap_or_else(|| "?".into()),
            by,
            awaited: *awaited,
            waited: *waited,
        })
    }
}

/// A rank that stopped answering (killed, stopped, or cut off the network),
/// as the rank that waited for it tells it.
#[derive(Debug, Clone, PartialEq, Error)]
#[error(
    "rank {rank} on {host} stopped answering during {} (rank {by} had no message from it for {} s)",
    during(*.awaited),
    (.waited.as_secs_f64() * 10.0).round() / 10.0
)]
pub struct SilentPeer {
    /// The rank that stopped answering.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// The rank that waited for it.
    pub by: usize,
    /// The message waited for.
    pub awaited: Awaited,
    /// How long it was waited for.
    pub waited: Duration,
}

/// What the message waited for belongs to, in a run's terms.
fn during(awaited: Awaited) -> String {
    match awaited {
        Awaited::Cells(tag) | Awaited::Values(tag) => crate::tag::Tag::decode(tag).to_string(),
        Awaited::Collective(_) => "a step every virtual process takes together".into(),
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
    /// MPI was started before [`Cluster::join`](crate::Cluster::join).
    #[error("MPI: MPI was already initialised: join the cluster once")]
    MpiStarted,
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
            cause: VpError::Protocol(ProtocolError::HaloCells {
                peer: 0,
                got: 3,
                expected: 4,
            }),
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
        assert!(gone.silent_peer(&[], 0).is_none());
        // A cause of several lines (a compiler's log) stays one line.
        let log = RunError::Vp {
            vp: 0,
            device: "opencl".into(),
            cause: VpError::Device(DeviceError::Backend(controllers::BackendError::Build {
                kernel: "2d4".into(),
                api: "OpenCL",
                cause: Box::new(DeviceError::Backend(controllers::BackendError::ThreadPool(
                    controllers::ForeignError::new(std::io::Error::other(
                        "1 error generated.\n\n  bracket nesting\n",
                    )),
                ))),
            })),
        };
        assert_eq!(
            chain(&log),
            "virtual process 0 (opencl) failed: device backend failure: kernel '2d4' failed to build for OpenCL: 1 error generated.; bracket nesting"
        );
    }

    /// A silent peer is named by rank and host, with what was waited for
    /// in the run's terms, iterations counted from 1.
    #[test]
    fn a_silent_peer_is_named_with_its_host_and_the_iteration() {
        let silent = |awaited| RunError::Vp {
            vp: 0,
            device: "cpu".into(),
            cause: VpError::Transport(TransportError::Silent {
                peer: 3,
                rank: 1,
                awaited,
                waited: Duration::from_millis(30_004),
            }),
        };
        let hosts = ["n1".to_string(), "n2".to_string()];
        let halo = crate::tag::Tag::Halo(811).encode();
        assert_eq!(
            silent(Awaited::Cells(halo))
                .silent_peer(&hosts, 0)
                .unwrap()
                .to_string(),
            "rank 1 on n2 stopped answering during the halo exchange of iteration 812 (rank 0 had no message from it for 30 s)"
        );
        let times = crate::tag::Tag::Times(9).encode();
        assert_eq!(
            silent(Awaited::Values(times))
                .silent_peer(&hosts, 2)
                .unwrap()
                .to_string(),
            "rank 1 on n2 stopped answering during the exchange of kernel times of iteration 10 (rank 2 had no message from it for 30 s)"
        );
    }
}

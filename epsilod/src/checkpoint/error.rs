//! What is wrong with a checkpoint or its directory: one line that names
//! the file.

use super::held::{Held, HeldByBoth};
use std::path::{Path, PathBuf};

/// What is wrong with a checkpoint: one line that names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file could not be read or written.
    #[error("checkpoint path {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The checkpoint directory's path names a file (or a device): creating
    /// it said only "File exists".
    #[error("checkpoint directory {0} exists and is not a directory: give a directory's path (one that is missing is created)")]
    NotADirectory(PathBuf),
    /// The checkpoint directory cannot take files.
    #[error("checkpoint directory {dir} is not writable: {source}")]
    NotWritable {
        /// The directory.
        dir: PathBuf,
        /// The OS error of a test write into it.
        source: std::io::Error,
    },
    /// Another run holds the directory's lock.
    #[error("checkpoint directory {dir} is in use by another run ({holder}): wait for it to end, or give another --checkpoint-dir")]
    Locked {
        /// The directory.
        dir: PathBuf,
        /// Who holds it, as its lock file says.
        holder: String,
    },
    /// The lock file went while the run held it: another run may write here.
    #[error("the lock file {path} was removed or replaced during the run: another run may be writing into its directory; this checkpoint was abandoned")]
    LockLost {
        /// The lock file.
        path: PathBuf,
    },
    /// The directory holds checkpoints of another run, and this one would
    /// write its own beside them.
    #[error("{difference}; to write checkpoints into {dir}, resume that run with --restart, or give another --checkpoint-dir, or add --checkpoint-overwrite to replace its checkpoints")]
    Foreign {
        /// The checkpoint directory.
        dir: PathBuf,
        /// How its newest checkpoint differs from this run (in the
        /// message already, so not its source).
        difference: Box<CheckpointError>,
    },
    /// A fresh run found an earlier run's checkpoints of the same problem:
    /// starting over would replace the progress they hold.
    #[error("{dir} holds checkpoints of an earlier run of this problem, {}{}", .held.text(), earlier_ways(.dir, .held, *.iters))]
    Earlier {
        /// The checkpoint directory.
        dir: PathBuf,
        /// What it holds.
        held: Held,
        /// The run's iterations: a restart from a checkpoint at or past
        /// them is refused.
        iters: u64,
    },
    /// A run resumed from `restart` (at iteration `at`) would write its
    /// checkpoints into `dir`, which holds checkpoints of this same run:
    /// older ones, left where it wrote before, or newer ones.
    #[error("{}", own_line(.dir, .held, .restart, *.at, *.iters))]
    Own {
        /// The checkpoint directory.
        dir: PathBuf,
        /// What it holds (boxed: no larger an error than the others).
        held: Box<Held>,
        /// The directory the run resumes from.
        restart: PathBuf,
        /// The iteration it resumes at.
        at: u64,
        /// The run's iterations: a restart from a checkpoint at or past
        /// them is refused.
        iters: u64,
    },
    /// A run resumed from `restart` would write its checkpoints into
    /// `dir`, which holds another run's of the same problem.
    #[error("{}", beside_line(.dir, .held, .restart, *.iters))]
    Beside {
        /// The checkpoint directory.
        dir: PathBuf,
        /// What it holds.
        held: Held,
        /// The directory the run resumes from.
        restart: PathBuf,
        /// The run's iterations: a restart from a checkpoint at or past
        /// them is refused.
        iters: u64,
    },
    /// A run resumed from `restart` (at iteration `at`) would write its
    /// checkpoints into `dir`, which holds both checkpoints of this run and
    /// another run's of the same problem.
    #[error("{}", mixed_line(.dir, .held, .restart, *.at, *.iters))]
    Mixed {
        /// The checkpoint directory.
        dir: PathBuf,
        /// What it holds of each (boxed: no larger an error than the others).
        held: Box<HeldByBoth>,
        /// The directory the run resumes from.
        restart: PathBuf,
        /// The iteration it resumes at.
        at: u64,
        /// The run's iterations: a restart from a checkpoint at or past
        /// them is refused.
        iters: u64,
    },
    /// The directory holds no complete checkpoint.
    #[error("no checkpoint in {0}: it has no ckpt-* directory with a manifest (run with --checkpoint-every N --checkpoint-dir D first)")]
    None(PathBuf),
    /// The manifest does not parse or contradicts itself.
    #[error("bad checkpoint manifest {path}: {why}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The checkpoint belongs to another run.
    #[error(
        "checkpoint {path} is of another run: its {what} is {found}, this run's is {expected}"
    )]
    Mismatch {
        /// The manifest.
        path: PathBuf,
        /// Which property differs.
        what: &'static str,
        /// The checkpoint's value.
        found: String,
        /// This run's value.
        expected: String,
    },
    /// The checkpoint was written by a run of other settings (see
    /// [`RunIdentity`](super::RunIdentity)).
    #[error(
        "checkpoint {path} is of another run: it was written with {found}, this run has {expected}"
    )]
    Identity {
        /// The manifest.
        path: PathBuf,
        /// The checkpoint's setting, `name=value`.
        found: String,
        /// This run's, `name=value`.
        expected: String,
    },
    /// A block file is shorter or longer than its manifest says.
    #[error("checkpoint block {path} is truncated or overwritten: {found} bytes, the manifest says {expected}")]
    Length {
        /// The block file.
        path: PathBuf,
        /// Its length.
        found: u64,
        /// The manifest's.
        expected: u64,
    },
    /// A block file's checksum differs from the manifest's.
    #[error("checkpoint block {path} is corrupted: CRC-32 {found:08x}, the manifest says {expected:08x}")]
    Checksum {
        /// The block file.
        path: PathBuf,
        /// Its checksum.
        found: u32,
        /// The manifest's.
        expected: u32,
    },
    /// A commit given up because the run failed.
    #[error("the checkpoint was abandoned: the run failed while writing it")]
    Cancelled,
    /// A thread writing a checkpoint panicked.
    #[error("a checkpoint writer thread panicked (a bug: please report it)")]
    Panicked,
    /// A restart at or after the run's last iteration.
    #[error("checkpoint {path} is at iteration {at}, not before this run's end at {iters}: give more --iters")]
    AtEnd {
        /// The checkpoint directory.
        path: PathBuf,
        /// Its iteration.
        at: u64,
        /// The run's iterations.
        iters: u64,
    },
}

impl CheckpointError {
    /// Whether the checkpoint is of another run (rather than damaged).
    pub fn is_of_another_run(&self) -> bool {
        matches!(
            self,
            CheckpointError::Mismatch { .. } | CheckpointError::Identity { .. }
        )
    }
}

/// [`CheckpointError::Earlier`]'s ways on: resuming it only where a
/// restart has a checkpoint to take, before the run's end at `iters`.
fn earlier_ways(dir: &Path, held: &Held, iters: u64) -> String {
    let resume = match held.usable {
        Some(u) if u < iters => format!("; resume it with --restart {}, or ", dir.display()),
        Some(u) => format!(", {}; ", finished(u, iters)),
        None => "; ".into(),
    };
    format!("{resume}give another --checkpoint-dir, or add --checkpoint-overwrite to start over and replace them")
}

/// Says that a restart from a checkpoint at `usable`, at or past the run's
/// end at `iters`, would be refused: there is nothing left to compute.
fn finished(usable: u64, iters: u64) -> String {
    let how = if usable > iters { "past" } else { "as far as" };
    format!("{how} this run's end at {iters} (the run there is finished up to --iters)")
}

/// [`CheckpointError::Beside`]'s line: going on with the other run is a
/// way on only where `dir` has a checkpoint to go on from before the run's
/// end at `iters`.
fn beside_line(dir: &Path, held: &Held, restart: &Path, iters: u64) -> String {
    let d = dir.display();
    let (end, instead) = match held.usable {
        Some(u) if u < iters => (
            String::new(),
            format!(" (or go on with that run instead: --restart {d})"),
        ),
        Some(u) => (format!(", {}", finished(u, iters)), String::new()),
        None => (String::new(), String::new()),
    };
    format!(
        "{d} holds checkpoints of another run of this problem, {}{end}, and this run resumes from {}: give another --checkpoint-dir, or add --checkpoint-overwrite to replace them{instead}",
        held.text(),
        restart.display()
    )
}

/// [`CheckpointError::Own`]'s line: the ways on depend on whether what a
/// restart from `dir` would take is behind the run's progress or not, and
/// before its end at `iters` (where a restart from it is taken).
fn own_line(dir: &Path, held: &Held, restart: &Path, at: u64, iters: u64) -> String {
    let (d, r) = (dir.display(), restart.display());
    match held.usable {
        None => format!(
            "{d} holds only damaged checkpoints of this run, the newest at iteration {}, and it resumes from {r}'s at {at}: add --checkpoint-overwrite to replace them, or write on into {r} with --checkpoint-dir {r}, or give another --checkpoint-dir",
            held.newest
        ),
        Some(usable) if usable < at => format!(
            "{d} holds this run's older checkpoints, {}, behind {r}'s at {at} that it resumes from: add --checkpoint-overwrite to replace them, or write on into {r} with --checkpoint-dir {r}, or give another --checkpoint-dir",
            held.text()
        ),
        Some(usable) => {
            let how = if usable > at { "past" } else { "as far as" };
            let damaged = if usable < held.newest {
                format!(" (the newest, at {}, is damaged)", held.newest)
            } else {
                String::new()
            };
            // `at` is before the end, so a restart from `usable` is
            // refused only where it is past `at`.
            let (end, resume) = if usable < iters {
                (String::new(), format!("resume from them with --restart {d}, or "))
            } else {
                (format!(", {}", finished(usable, iters)), String::new())
            };
            format!(
                "{d} holds this run's checkpoints up to iteration {usable}{damaged}, {how} {r}'s at {at} that it resumes from{end}: {resume}add --checkpoint-overwrite to go on from {r} and replace them, or give another --checkpoint-dir"
            )
        }
    }
}

/// [`CheckpointError::Mixed`]'s line: both runs' checkpoints, and a restart
/// from `dir` among the ways on where it would take one that does not go
/// back behind the run's progress (the other run's, or this run's as far
/// as `restart`'s or past), and before the run's end at `iters`.
fn mixed_line(dir: &Path, held: &HeldByBoth, restart: &Path, at: u64, iters: u64) -> String {
    let (d, r) = (dir.display(), restart.display());
    let HeldByBoth { own, other } = held;
    let taken = match (own.usable, other.usable) {
        (Some(o), Some(t)) if t > o => Some(("the other run's", t)),
        (Some(o), _) => Some(("this run's", o)).filter(|_| o >= at),
        (None, Some(t)) => Some(("the other run's", t)),
        (None, None) => None,
    };
    let restart_here = match taken {
        Some((whose, i)) if i < iters => {
            format!(", or go on from {whose} at {i} with --restart {d}")
        }
        Some((whose, i)) => format!(
            "; {whose} at {i}, which a restart from {d} would take, is {}",
            finished(i, iters)
        ),
        None => String::new(),
    };
    format!(
        "{d} holds checkpoints of this run, {}, and of another run of this problem, {}; this run resumes from {r}'s at {at}: give another --checkpoint-dir, or write on into {r} with --checkpoint-dir {r}, or add --checkpoint-overwrite to replace them all{restart_here}",
        own.text(),
        other.text()
    )
}

/// Maps an OS error on `path` to [`CheckpointError::Io`].
pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The same OS error again, for a second reader: the same code (and so
/// message) where it has one.
pub(super) fn copy(e: &std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

//! Checkpoints and restarts.
//!
//! Every `every` iterations each virtual process copies its block (both
//! time levels for kernels that read the previous one) to the host and
//! hands it to a thread of its own that checksums, writes and syncs it into
//! a directory `.ckpt-<iter>.partial` while the run goes on (see
//! [`block_file`] for how it stays off the compute threads' cores and
//! memory bandwidth). Process 0 hears of every block, and a thread of its
//! own waits for every block file and its checksum, writes the manifest
//! (itself checksummed) and renames the directory to `ckpt-<iter>`. The
//! rename is the commit: a run killed at any point leaves either a complete
//! checkpoint or a partial directory a restart ignores. The last two
//! checkpoints of the run are kept.
//!
//! A directory belongs to one run at a time: the process that commits
//! holds its lock ([`lock`]) for the whole run, and a run refuses a
//! directory holding checkpoints of another run ([`RunIdentity`] and the
//! skeleton's own properties) unless it resumes them or is told to replace
//! them. A restart takes the newest checkpoint whose manifest and blocks
//! are whole, refuses one of another run, and fills each process's extent
//! from the blocks that intersect it: the devices, partition and rank
//! count may differ from the run that wrote it. Under MPI every rank
//! writes its own blocks, so the directory must be on a file system all
//! ranks share.

use hitmap::Shape;
use kernels::input_file::read_text_within;
use kernels::Cell;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod block_file;
mod error;
mod held;
mod identity;
mod lock;
mod names;
mod owner;
mod restart;

pub(crate) use block_file::{align_start, prefaulted};
pub use error::CheckpointError;
use error::{copy, io};
pub use held::{Held, HeldByBoth};
pub use identity::{Digest, RunIdentity};
pub(crate) use lock::DirLock;
pub(crate) use names::block_name;
use names::{
    crc_name, failed_name, final_name, listed, partial_name, tmp_name, MANIFEST, NOTE_LIMIT,
};
use owner::{in_the_way, run_of};
pub(crate) use restart::FORMAT;
pub use restart::{BlockEntry, Expect, Manifest, Origin, Restart};

const KEEP: usize = 2;
/// How long a commit waits for the blocks of other ranks, whose writers
/// give no other sign of life.
const COMMIT_WAIT: Duration = Duration::from_secs(600);
/// Polls of a missing block between checks of the directory and the lock.
const POLLS_PER_CHECK: u32 = 50;

/// Where and how often a run writes checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpointing {
    /// Iterations between checkpoints (at least 1).
    pub every: u64,
    /// The directory holding them (created if missing).
    pub dir: PathBuf,
    /// Replace the checkpoints of another run found in `dir`, instead of
    /// refusing to start.
    pub overwrite: bool,
}

/// Block writes that failed in this process, with their OS errors, for the
/// commit to report: the `.failed` marker that tells other ranks may itself
/// not be writable (a full disk).
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<Vec<(u64, String, PathBuf, std::io::Error)>>);

impl Failures {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<(u64, String, PathBuf, std::io::Error)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, iter: u64, block: &str, path: &Path, e: &std::io::Error) {
        self.list()
            .push((iter, block.to_string(), path.to_path_buf(), copy(e)));
    }

    /// The failure of `block` at `iter`, taken off the list.
    fn take(&self, iter: u64, block: &str) -> Option<(PathBuf, std::io::Error)> {
        let mut list = self.list();
        let at = list.iter().position(|f| f.0 == iter && f.1 == block)?;
        let (_, _, path, e) = list.swap_remove(at);
        Some((path, e))
    }
}

/// A run's hold on its checkpoints: its id (written in every manifest),
/// the directory lock where this process commits, and its writers'
/// failures.
#[derive(Clone, Debug, Default)]
pub(crate) struct Claim {
    /// The run's id: a fresh run's own, or that of the checkpoint it resumed.
    pub(crate) run: String,
    /// The directory's lock, on the process that commits.
    pub(crate) lock: Option<Arc<DirLock>>,
    pub(crate) failures: Arc<Failures>,
}

/// A new run's id: unique among runs on a host (its process and the time).
pub(crate) fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// Creates `dir` if missing and checks it takes a file, so that a run
/// fails at once rather than at its first checkpoint.
pub(crate) fn prepare(dir: &Path) -> Result<(), CheckpointError> {
    if dir.exists() && !dir.is_dir() {
        return Err(CheckpointError::NotADirectory(dir.to_path_buf()));
    }
    fs::create_dir_all(dir).map_err(io(dir))?;
    let probe = dir.join(format!(".probe-{}", new_run_id()));
    let not_writable = |source| CheckpointError::NotWritable {
        dir: dir.to_path_buf(),
        source,
    };
    // Some bytes, not just a name: a full disk refuses those.
    fs::write(&probe, [0u8; 4096]).map_err(not_writable)?;
    fs::remove_file(&probe).map_err(not_writable)
}

/// Takes `c.dir` for a run (`holder` says who, for the message another run
/// gets): created and writable, locked, and holding no earlier run's
/// checkpoints (of this problem or another: `expect`, `origin`), unless the
/// run resumes from it (`resuming_here`) or may replace them (`c.overwrite`:
/// they go now, their blocks unread). A run of `iters` iterations resumed
/// from another directory (`elsewhere`) is told whether the checkpoints in
/// the way are its own, another run's or both; one whose restart would be
/// refused is refused here, before anything goes.
pub(crate) fn claim(
    c: &Checkpointing,
    holder: &str,
    expect: &Expect<'_>,
    origin: &Origin<'_>,
    resuming_here: bool,
    iters: u64,
    elsewhere: Option<&Path>,
) -> Result<DirLock, CheckpointError> {
    prepare(&c.dir)?;
    let lock = DirLock::take(&c.dir, holder)?;
    if resuming_here {
        return Ok(lock);
    }
    let Some(way) = in_the_way(&c.dir, expect, origin, iters, elsewhere)? else {
        return Ok(lock);
    };
    if !c.overwrite {
        return Err(way.refusal(expect));
    }
    tracing::warn!(
        "replacing {} in {} (--checkpoint-overwrite)",
        way.whose(),
        c.dir.display()
    );
    for (_, path, _) in listed(&c.dir)? {
        fs::remove_dir_all(&path).map_err(io(&path))?;
    }
    Ok(lock)
}

/// `[begin, end)` per dimension of a contiguous shape.
pub(crate) fn ranges(s: &Shape) -> Vec<(i64, i64)> {
    s.sigs().iter().map(|g| (g.begin(), g.end())).collect()
}

/// The length of a block file holding `levels` of `cells` cells each.
pub(crate) fn length<T: Cell>(levels: usize, cells: usize) -> u64 {
    (levels * cells * std::mem::size_of::<T>()) as u64
}

/// A block being written by a thread of its own while the run goes on.
pub(crate) struct PendingBlock<T> {
    handle: JoinHandle<Result<Vec<Vec<T>>, CheckpointError>>,
}

impl<T> PendingBlock<T> {
    /// Waits for the write; hands back the buffers for the next one.
    pub(crate) fn finish(self) -> Result<Vec<Vec<T>>, CheckpointError> {
        self.handle.join().unwrap_or(Err(CheckpointError::Panicked))
    }
}

/// Starts writing `levels` (each a block's `cells` cells, row-major, after
/// the padding [`align_start`] put first) as virtual process `vp`'s block
/// of the checkpoint after `iter` iterations: into a
/// temporary file, checksummed as it goes, synced, then renamed to its
/// name, which is what the committer waits for; the checksum goes beside
/// it for the committer. A failed write is recorded in `claim`'s failures
/// and leaves a `.failed` marker holding its error, so the committer gives
/// up at once with the cause.
pub(crate) fn write_block<T: Cell>(
    c: &Checkpointing,
    claim: &Claim,
    iter: u64,
    vp: usize,
    cells: usize,
    levels: Vec<Vec<T>>,
) -> Result<PendingBlock<T>, CheckpointError> {
    let dir = c.dir.join(partial_name(iter));
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let name = block_name(vp);
    // A run that failed may have left this block here: gone before process
    // 0 hears of the new one, so the commit cannot take it for the new.
    claim.failures.take(iter, &name);
    for stale in [name.clone(), crc_name(&name), failed_name(&name)] {
        match fs::remove_file(dir.join(&stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(&dir.join(stale))(e))
            }
            _ => {}
        }
    }
    let failures = claim.failures.clone();
    let handle = std::thread::Builder::new()
        .name(format!("epsilod-ckpt{vp}"))
        .spawn(move || {
            let done = dir.join(&name);
            let tmp = dir.join(tmp_name(&name));
            let sums = dir.join(crc_name(&name));
            let write = || -> Result<(), CheckpointError> {
                let bytes: Vec<&[u8]> = levels
                    .iter()
                    .map(|l| bytemuck::cast_slice(&l[l.len().saturating_sub(cells)..]))
                    .collect();
                let crc = block_file::write(&tmp, &bytes).map_err(io(&tmp))?;
                let len: usize = bytes.iter().map(|b| b.len()).sum();
                // Not synced: the manifest, which is, carries the value.
                fs::write(&sums, format!("{crc:08x} {len}\n")).map_err(io(&sums))?;
                fs::rename(&tmp, &done).map_err(io(&done))
            };
            match write() {
                Ok(()) => Ok(levels),
                Err(e) => {
                    if let CheckpointError::Io { path, source } = &e {
                        failures.record(iter, &name, path, source);
                        let said = format!("{}\n{source}", path.display());
                        let _ = fs::write(dir.join(failed_name(&name)), said);
                    }
                    Err(e)
                }
            }
        })
        .map_err(io(&c.dir))?;
    Ok(PendingBlock { handle })
}

/// The error a failed writer of `block` left in `dir` (another rank's, or
/// one whose own record this process lacks).
fn failed_writer(dir: &Path, block: &str) -> Option<CheckpointError> {
    let marker = dir.join(failed_name(block));
    let said = read_text_within(&marker, NOTE_LIMIT).ok()?;
    let (path, why) = said.split_once('\n').unwrap_or(("", ""));
    Some(CheckpointError::Io {
        path: match path {
            "" => dir.join(block),
            p => PathBuf::from(p),
        },
        source: std::io::Error::other(match why.trim() {
            "" => "its writer failed (see the error of the process that wrote it)",
            w => w,
        }),
    })
}

/// The checksum the writer of block `b` left beside it (and removes it:
/// the manifest holds it from now on).
fn handed_over(dir: &Path, b: &BlockEntry) -> Result<u32, CheckpointError> {
    let path = dir.join(crc_name(&b.file));
    let text = read_text_within(&path, NOTE_LIMIT).map_err(io(&path))?;
    let parsed = text.split_once(' ').and_then(|(crc, bytes)| {
        let crc = u32::from_str_radix(crc, 16).ok()?;
        (bytes.trim().parse::<u64>().ok()? == b.bytes).then_some(crc)
    });
    let crc = parsed.ok_or_else(|| CheckpointError::Manifest {
        path: path.clone(),
        why: format!(
            "'{}' is not the checksum of a {}-byte block",
            text.trim(),
            b.bytes
        ),
    })?;
    fs::remove_file(&path).map_err(io(&path))?;
    Ok(crc)
}

/// Waits until block `b` of the checkpoint being written in `dir` is in
/// place. Gives up at once when the run fails (`cancelled`), when its
/// writer failed (with the writer's error), when the directory goes or
/// the lock is lost (another run at work there), and after
/// [`COMMIT_WAIT`] without a sign from its writer.
fn wait_for_block(
    dir: &Path,
    b: &BlockEntry,
    iter: u64,
    claim: &Claim,
    cancelled: &AtomicBool,
) -> Result<(), CheckpointError> {
    let path = dir.join(&b.file);
    let started = Instant::now();
    let mut polls = 0u32;
    while !path.exists() {
        if cancelled.load(Ordering::Relaxed) {
            return Err(CheckpointError::Cancelled);
        }
        if let Some((path, source)) = claim.failures.take(iter, &b.file) {
            return Err(CheckpointError::Io { path, source });
        }
        if let Some(e) = failed_writer(dir, &b.file) {
            return Err(e);
        }
        polls += 1;
        if polls.is_multiple_of(POLLS_PER_CHECK) {
            if !dir.is_dir() {
                return Err(CheckpointError::Io {
                    path: dir.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "removed while this run wrote the checkpoint into it",
                    ),
                });
            }
            if let Some(lock) = claim.lock.as_ref().filter(|l| !l.held()) {
                return Err(CheckpointError::LockLost {
                    path: lock.path().to_path_buf(),
                });
            }
            if started.elapsed() > COMMIT_WAIT {
                return Err(CheckpointError::Io {
                    path,
                    source: std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("its writer gave no sign in {} s", COMMIT_WAIT.as_secs()),
                    ),
                });
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

/// Starts the commit of the checkpoint `m` describes: waits for each of its
/// blocks to be complete (renamed into place, whichever rank wrote it),
/// takes the checksum its writer left beside it, then [`commit`]s it.
pub(crate) fn spawn_commit(
    c: &Checkpointing,
    claim: &Claim,
    mut m: Manifest,
) -> Result<Committing, CheckpointError> {
    let (c2, claim) = (c.clone(), claim.clone());
    let cancel = Arc::new(AtomicBool::new(false));
    let cancelled = cancel.clone();
    std::thread::Builder::new()
        .name("epsilod-commit".into())
        .spawn(move || {
            let dir = c2.dir.join(partial_name(m.iteration));
            for b in &mut m.blocks {
                wait_for_block(&dir, b, m.iteration, &claim, &cancelled)?;
                b.crc32 = handed_over(&dir, b)?;
            }
            commit(&c2, &m)
        })
        .map(|handle| Committing { handle, cancel })
        .map_err(io(&c.dir))
}

/// A commit waiting for its blocks.
pub(crate) struct Committing {
    handle: JoinHandle<Result<(), CheckpointError>>,
    cancel: Arc<AtomicBool>,
}

impl Committing {
    /// Waits for the commit.
    pub(crate) fn finish(self) -> Result<(), CheckpointError> {
        self.handle.join().unwrap_or(Err(CheckpointError::Panicked))
    }

    /// Gives up waiting for blocks that will not come (the run failed), so
    /// that nothing is committed behind a recovery's back.
    pub(crate) fn cancel(self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// Completes the checkpoint after `m.iteration` iterations, whose blocks are
/// written: the manifest, then the rename that makes it visible, then all
/// but the newest [`KEEP`] checkpoints of its run (and older partial ones,
/// and any other run's) go.
pub(crate) fn commit(c: &Checkpointing, m: &Manifest) -> Result<(), CheckpointError> {
    let partial = c.dir.join(partial_name(m.iteration));
    fs::create_dir_all(&partial).map_err(io(&partial))?;
    let path = partial.join(MANIFEST);
    let mut f = fs::File::create(&path).map_err(io(&path))?;
    f.write_all(&m.sealed()).map_err(io(&path))?;
    f.sync_all().map_err(io(&path))?;
    let done = c.dir.join(final_name(m.iteration));
    if done.exists() {
        // A rerun writing the same iteration again: replace it.
        fs::remove_dir_all(&done).map_err(io(&done))?;
    }
    fs::rename(&partial, &done).map_err(io(&done))?;
    // The rename itself must survive a crash.
    if let Ok(d) = fs::File::open(&c.dir) {
        let _ = d.sync_all();
    }
    prune(&c.dir, m.iteration, &m.run)
}

/// Whether `dir` holds a complete checkpoint of run `run` (one a recovery
/// may go on from).
pub(crate) fn any_of_run(dir: &Path, run: &str) -> bool {
    listed(dir).is_ok_and(|l| {
        l.iter()
            .any(|(_, path, partial)| !partial && run_of(path).as_deref() == Some(run))
    })
}

/// Removes what a commit of `run`'s checkpoint after `newest` iterations
/// leaves behind: its run's checkpoints but the newest [`KEEP`], partial
/// ones before it, and complete ones of other runs (an earlier run's in
/// this directory, or damaged), which would otherwise rank above this
/// run's own.
fn prune(dir: &Path, newest: u64, run: &str) -> Result<(), CheckpointError> {
    let mut kept = 0;
    for (iter, path, partial) in listed(dir)? {
        let gone = if partial {
            // Left by a run killed while writing; a newer one is complete.
            iter < newest
        } else if run_of(&path).as_deref() != Some(run) {
            true
        } else {
            kept += 1;
            kept > KEEP
        };
        if gone {
            fs::remove_dir_all(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

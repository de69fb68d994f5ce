//! Checkpoints and restarts.
//!
//! Every `every` iterations each virtual process copies its block (both
//! time levels for kernels that read the previous one) to the host and
//! hands it to a thread of its own that checksums, writes and syncs it into
//! a directory `.ckpt-<iter>.partial` while the run goes on (see
//! [`block_file`] for how it stays off the compute threads' cores and
//! memory bandwidth). Process 0 hears of every block, and a thread of its
//! own waits for every block file and its checksum, writes the manifest and
//! renames the directory to `ckpt-<iter>`. The rename is the commit: a run killed at any point leaves
//! either a complete checkpoint or a partial directory a restart ignores.
//! The last two checkpoints are kept.
//!
//! A restart takes the newest checkpoint whose manifest parses and whose
//! blocks all have the right length and checksum (an older one when the
//! newest is damaged), refuses one written by another stencil, size, cell
//! type or time-level count, and fills each process's extent from the
//! blocks that intersect it: the devices, partition and rank count may
//! differ from the run that wrote it. Under MPI every rank writes its own
//! blocks, so the directory must be on a file system all ranks share.

use hitmap::{Shape, Sig, Tile};
use kernels::Cell;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod block_file;
pub(crate) use block_file::{align_start, prefaulted};

/// The manifest's format; a restart refuses others.
pub(crate) const FORMAT: u32 = 1;
const MANIFEST: &str = "manifest.json";
const KEEP: usize = 2;
/// How long a commit waits for the blocks of other ranks.
const COMMIT_WAIT: Duration = Duration::from_secs(600);

/// Where and how often a run writes checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpointing {
    /// Iterations between checkpoints (at least 1).
    pub every: u64,
    /// The directory holding them (created if missing).
    pub dir: PathBuf,
}

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

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One block of a checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockEntry {
    /// The virtual process that wrote it.
    pub vp: usize,
    /// Its file, in the checkpoint directory.
    pub file: String,
    /// Its cells, `[begin, end)` per dimension.
    pub region: Vec<(i64, i64)>,
    /// The file's length.
    pub bytes: u64,
    /// The file's CRC-32.
    pub crc32: u32,
}

/// A checkpoint's description, `manifest.json` in its directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest format.
    pub format: u32,
    /// The stencil's name.
    pub stencil: String,
    /// The cell type (`f32`, `f64`, `[f32; 19]`).
    pub cell: String,
    /// The global size, boundary included.
    pub size: Vec<usize>,
    /// Iterations done when it was written.
    pub iteration: u64,
    /// Time levels per block (2 for kernels that read the previous one).
    pub levels: usize,
    /// The devices of the run that wrote it.
    pub devices: Vec<String>,
    /// Its partition.
    pub partition: String,
    /// Its blocks' widths along the cut dimension at the time: the ALB
    /// weights a restart on the same devices starts from.
    pub weights: Vec<f64>,
    /// The load-balancing heuristic, if any.
    pub heuristic: Option<String>,
    /// Rebalances done so far.
    pub rebalances: usize,
    /// The heuristic's state (`Heuristic::state`), restored by a restart
    /// with the same heuristic.
    #[serde(default)]
    pub heuristic_state: Vec<f64>,
    /// Each device's last measured throughput (`heuristics::Roster::state`),
    /// which decides when a dropped device comes back; absent in older
    /// checkpoints (nothing measured).
    #[serde(default)]
    pub roster_state: Vec<f64>,
    /// Every block.
    pub blocks: Vec<BlockEntry>,
}

/// What a checkpoint must agree with to restart a run.
pub struct Expect<'a> {
    /// The stencil's name.
    pub stencil: &'a str,
    /// The cell type's name (`std::any::type_name`).
    pub cell: &'a str,
    /// Bytes per cell.
    pub cell_size: usize,
    /// The global size.
    pub size: &'a [usize],
    /// Time levels per block.
    pub levels: usize,
    /// The cells the blocks must tile, each once.
    pub interior: &'a Shape,
}

/// The name of the checkpoint directory after `iter` iterations (sortable).
fn final_name(iter: u64) -> String {
    format!("ckpt-{iter:012}")
}

fn partial_name(iter: u64) -> String {
    format!(".ckpt-{iter:012}.partial")
}

pub(crate) fn block_name(vp: usize) -> String {
    format!("block-{vp}.bin")
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

/// The file beside a written block that hands its checksum to the commit.
fn crc_name(block: &str) -> String {
    format!("{block}.crc")
}

fn failed_name(block: &str) -> String {
    format!("{block}.failed")
}

/// Starts writing `levels` (each a block's `cells` cells, row-major, after
/// the padding [`align_start`] put first) as virtual process `vp`'s block
/// of the checkpoint after `iter` iterations: into a
/// temporary file, checksummed as it goes, synced, then renamed to its
/// name, which is what the committer waits for; the checksum goes beside
/// it for the committer. A failed write leaves a `.failed` marker so the
/// committer gives up at once.
pub(crate) fn write_block<T: Cell>(
    c: &Checkpointing,
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
    for stale in [name.clone(), crc_name(&name), failed_name(&name)] {
        match fs::remove_file(dir.join(&stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(&dir.join(stale))(e))
            }
            _ => {}
        }
    }
    let handle = std::thread::Builder::new()
        .name(format!("epsilod-ckpt{vp}"))
        .spawn(move || {
            let done = dir.join(&name);
            let tmp = dir.join(format!("{name}.tmp"));
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
                    let _ = fs::write(dir.join(failed_name(&name)), []);
                    Err(e)
                }
            }
        })
        .map_err(io(&c.dir))?;
    Ok(PendingBlock { handle })
}

/// The checksum the writer of block `b` left beside it (and removes it:
/// the manifest holds it from now on).
fn handed_over(dir: &Path, b: &BlockEntry) -> Result<u32, CheckpointError> {
    let path = dir.join(crc_name(&b.file));
    let text = fs::read_to_string(&path).map_err(io(&path))?;
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

/// Starts the commit of the checkpoint `m` describes: waits for each of its
/// blocks to be complete (renamed into place, whichever rank wrote it),
/// takes the checksum its writer left beside it, then [`commit`]s it.
pub(crate) fn spawn_commit(
    c: &Checkpointing,
    mut m: Manifest,
) -> Result<Committing, CheckpointError> {
    let c2 = c.clone();
    let cancel = Arc::new(AtomicBool::new(false));
    let cancelled = cancel.clone();
    std::thread::Builder::new()
        .name("epsilod-commit".into())
        .spawn(move || {
            let dir = c2.dir.join(partial_name(m.iteration));
            let started = Instant::now();
            for b in &mut m.blocks {
                let path = dir.join(&b.file);
                let failed = dir.join(failed_name(&b.file));
                while !path.exists() {
                    if cancelled.load(Ordering::Relaxed) {
                        return Err(CheckpointError::Cancelled);
                    }
                    if failed.exists() || started.elapsed() > COMMIT_WAIT {
                        return Err(CheckpointError::Io {
                            path,
                            source: std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                "its writer failed or never finished",
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
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
/// but the newest [`KEEP`] checkpoints (and older partial ones) go.
pub(crate) fn commit(c: &Checkpointing, m: &Manifest) -> Result<(), CheckpointError> {
    let partial = c.dir.join(partial_name(m.iteration));
    fs::create_dir_all(&partial).map_err(io(&partial))?;
    let path = partial.join(MANIFEST);
    let text = serde_json::to_vec_pretty(m).map_err(|e| CheckpointError::Manifest {
        path: path.clone(),
        why: e.to_string(),
    })?;
    let mut f = fs::File::create(&path).map_err(io(&path))?;
    f.write_all(&text).map_err(io(&path))?;
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
    prune(&c.dir, m.iteration)
}

/// Whether `dir` holds a complete checkpoint (one a restart may try).
pub(crate) fn any_complete(dir: &Path) -> bool {
    listed(dir).is_ok_and(|l| l.iter().any(|(_, _, partial)| !partial))
}

/// Checkpoint directories in `dir`, newest first, with their iteration.
fn listed(dir: &Path) -> Result<Vec<(u64, PathBuf, bool)>, CheckpointError> {
    let mut found = Vec::new();
    for e in fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let parsed = if let Some(n) = name.strip_prefix("ckpt-") {
            n.parse::<u64>().ok().map(|i| (i, false))
        } else {
            name.strip_prefix(".ckpt-")
                .and_then(|n| n.strip_suffix(".partial"))
                .and_then(|n| n.parse::<u64>().ok())
                .map(|i| (i, true))
        };
        if let Some((iter, partial)) = parsed {
            found.push((iter, e.path(), partial));
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    Ok(found)
}

fn prune(dir: &Path, newest: u64) -> Result<(), CheckpointError> {
    let mut kept = 0;
    for (iter, path, partial) in listed(dir)? {
        let gone = if partial {
            // Left by a run killed while writing; a newer one is complete.
            iter < newest
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

/// A checkpoint chosen for a restart, its blocks checked.
#[derive(Clone, Debug)]
pub struct Restart {
    /// Its directory.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Restart {
    /// The newest valid checkpoint in `dir` that `expect` may restart from.
    /// A damaged newest one is skipped (with a warning) for an older one; a
    /// checkpoint of another run is an error at once.
    pub(crate) fn find(dir: &Path, expect: &Expect<'_>) -> Result<Restart, CheckpointError> {
        if !dir.is_dir() {
            return Err(CheckpointError::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
            });
        }
        // Warned about only once an older one is taken: where none is, the
        // newest one's error is the one line a user sees.
        let mut skipped = Vec::new();
        for (_, path, partial) in listed(dir)? {
            if partial {
                continue;
            }
            match Restart::open(&path, expect) {
                Ok(r) => {
                    for e in &skipped {
                        tracing::warn!("skipped a damaged checkpoint: {e}");
                    }
                    return Ok(r);
                }
                Err(e @ CheckpointError::Mismatch { .. }) => return Err(e),
                Err(e) => skipped.push(e),
            }
        }
        Err(skipped
            .into_iter()
            .next()
            .unwrap_or_else(|| CheckpointError::None(dir.to_path_buf())))
    }

    /// The checkpoint in directory `path`, checked against `expect`: its
    /// manifest, then every block's length and checksum.
    pub fn open(path: &Path, expect: &Expect<'_>) -> Result<Restart, CheckpointError> {
        let mpath = path.join(MANIFEST);
        let text = fs::read(&mpath).map_err(io(&mpath))?;
        let bad = |why: String| CheckpointError::Manifest {
            path: mpath.clone(),
            why,
        };
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        if m.format != FORMAT {
            return Err(bad(format!(
                "format {} (this build reads {FORMAT})",
                m.format
            )));
        }
        let mismatch = |what, found: String, expected: String| CheckpointError::Mismatch {
            path: mpath.clone(),
            what,
            found,
            expected,
        };
        if m.stencil != expect.stencil {
            return Err(mismatch("stencil", m.stencil, expect.stencil.into()));
        }
        if m.cell != expect.cell {
            return Err(mismatch("cell type", m.cell, expect.cell.into()));
        }
        if m.size != expect.size {
            let text = |s: &[usize]| crate::size::size_text(s);
            return Err(mismatch("size", text(&m.size), text(expect.size)));
        }
        if m.levels != expect.levels {
            return Err(mismatch(
                "number of time levels",
                m.levels.to_string(),
                expect.levels.to_string(),
            ));
        }
        let cell = expect.cell_size;
        let mut regions: Vec<Shape> = Vec::with_capacity(m.blocks.len());
        for b in &m.blocks {
            let inside = b.region.len() == m.size.len()
                && b.region
                    .iter()
                    .zip(&m.size)
                    .all(|(&(lo, hi), &n)| 0 <= lo && lo <= hi && hi <= n as i64);
            let region = inside.then(|| {
                Shape::new(
                    b.region
                        .iter()
                        .map(|&(lo, hi)| Sig::new(lo, hi, 1))
                        .collect(),
                )
            });
            let Some(region) = region.filter(|r| expect.interior.contains_shape(r)) else {
                return Err(bad(format!(
                    "block {} has region {:?}, not inside the interior",
                    b.file, b.region
                )));
            };
            if regions.iter().any(|r| !r.intersect(&region).is_empty()) {
                return Err(bad(format!("block {} overlaps another", b.file)));
            }
            regions.push(region);
            // Inside the size, so no product overflows what memory holds.
            let cells: u64 = b.region.iter().map(|(lo, hi)| (hi - lo) as u64).product();
            if Some(b.bytes) != cells.checked_mul((cell * m.levels) as u64) {
                return Err(bad(format!(
                    "block {} says {} bytes for {cells} cells",
                    b.file, b.bytes
                )));
            }
            if b.file.contains(['/', '\\']) || b.file.starts_with('.') {
                return Err(bad(format!("block file name '{}'", b.file)));
            }
            let bpath = path.join(&b.file);
            let data = fs::read(&bpath).map_err(io(&bpath))?;
            if data.len() as u64 != b.bytes {
                return Err(CheckpointError::Length {
                    path: bpath,
                    found: data.len() as u64,
                    expected: b.bytes,
                });
            }
            let crc = crc32fast::hash(&data);
            if crc != b.crc32 {
                return Err(CheckpointError::Checksum {
                    path: bpath,
                    found: crc,
                    expected: b.crc32,
                });
            }
        }
        let covered: usize = regions.iter().map(Shape::card).sum();
        if covered != expect.interior.card() {
            return Err(bad(format!(
                "its blocks hold {covered} cells of the {} in the interior",
                expect.interior.card()
            )));
        }
        Ok(Restart {
            path: path.to_path_buf(),
            manifest: m,
        })
    }

    /// For time level `level`, the parts of `extent` the checkpoint's blocks
    /// hold, each with its cells row-major.
    pub fn parts<T: Cell>(
        &self,
        level: usize,
        extent: &Shape,
    ) -> Result<Vec<(Shape, Vec<T>)>, CheckpointError> {
        let mut out = Vec::new();
        for b in &self.manifest.blocks {
            let region = Shape::new(
                b.region
                    .iter()
                    .map(|&(lo, hi)| Sig::new(lo, hi, 1))
                    .collect(),
            );
            let part = region.intersect(extent);
            if part.is_empty() {
                continue;
            }
            let bpath = self.path.join(&b.file);
            let data = fs::read(&bpath).map_err(io(&bpath))?;
            let per_level = region.card() * std::mem::size_of::<T>();
            let bytes = data
                .get(level * per_level..(level + 1) * per_level)
                .ok_or_else(|| CheckpointError::Length {
                    path: bpath.clone(),
                    found: data.len() as u64,
                    expected: b.bytes,
                })?;
            // Copied, not cast: the file's bytes need not be aligned for T.
            let cells: Vec<T> = bytes
                .chunks_exact(std::mem::size_of::<T>())
                .map(bytemuck::pod_read_unaligned)
                .collect();
            let mut tile = Tile::new(region, T::zeroed()).map_err(|e| manifest_error(&bpath, e))?;
            tile.as_slice_mut().copy_from_slice(&cells);
            let packed = tile.pack(&part).map_err(|e| manifest_error(&bpath, e))?;
            out.push((part, packed));
        }
        Ok(out)
    }
}

fn manifest_error(path: &Path, e: hitmap::HitmapError) -> CheckpointError {
    CheckpointError::Manifest {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

//! A checkpoint's manifest, and choosing and reading a checkpoint for a
//! restart: nothing is taken that is damaged, edited or of another run.

use super::error::{io, CheckpointError};
use super::identity::RunIdentity;
use super::names::{iteration_of, listed, MANIFEST};
use hitmap::{Shape, Sig, Tile};
use kernels::input_file::read_bytes_within;
use kernels::Cell;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// The manifest's format; a restart refuses others.
pub(crate) const FORMAT: u32 = 2;

/// The most a manifest may hold: 64 MiB. A block takes a few hundred
/// bytes of it, so this is past a hundred thousand devices; a manifest
/// replaced by an endless or huge file is refused, not read into memory.
pub(crate) const MANIFEST_LIMIT: u64 = 64 << 20;

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
    /// The kernel's kind (`specialized`, `generic`, `custom`,
    /// `expression`): kinds round differently.
    pub kernel: String,
    /// What else decides the result, as the driver gave it.
    pub identity: RunIdentity,
    /// The run that wrote it: a restart goes on as that run, and a
    /// recovery takes only its own run's checkpoints.
    pub run: String,
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
    pub heuristic_state: Vec<f64>,
    /// Each device's last measured throughput (`heuristics::Roster::state`),
    /// which decides when a dropped device comes back.
    pub roster_state: Vec<f64>,
    /// Every block.
    pub blocks: Vec<BlockEntry>,
    /// The CRC-32 of the manifest's compact JSON with this field 0: an
    /// edited or damaged manifest is not taken.
    pub checksum: u32,
}

impl Manifest {
    /// The checksum of everything else in it.
    fn content_checksum(&self) -> u32 {
        let bare = Manifest {
            checksum: 0,
            ..self.clone()
        };
        crc32fast::hash(&serde_json::to_vec(&bare).expect("a manifest serialises"))
    }

    /// Its text, checksum included.
    pub(crate) fn sealed(&self) -> Vec<u8> {
        let m = Manifest {
            checksum: self.content_checksum(),
            ..self.clone()
        };
        serde_json::to_vec_pretty(&m).expect("a manifest serialises")
    }
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

/// What else a checkpoint must agree with to be this run's: its kernel
/// kind and the driver's [`RunIdentity`].
pub struct Origin<'a> {
    /// The kernel's kind.
    pub kernel: &'a str,
    /// What the driver says decides the result.
    pub identity: &'a RunIdentity,
}

impl Expect<'_> {
    /// Errors where `m` (at `mpath`) is of another stencil, cell type,
    /// size or number of time levels.
    pub(super) fn check(&self, m: &Manifest, mpath: &Path) -> Result<(), CheckpointError> {
        let mismatch = |what, found: String, expected: String| {
            Err(CheckpointError::Mismatch {
                path: mpath.to_path_buf(),
                what,
                found,
                expected,
            })
        };
        if m.stencil != self.stencil {
            return mismatch("stencil", m.stencil.clone(), self.stencil.into());
        }
        if m.cell != self.cell {
            return mismatch("cell type", m.cell.clone(), self.cell.into());
        }
        if m.size != self.size {
            let text = |s: &[usize]| crate::size::size_text(s);
            return mismatch("size", text(&m.size), text(self.size));
        }
        if m.levels != self.levels {
            return mismatch(
                "number of time levels",
                m.levels.to_string(),
                self.levels.to_string(),
            );
        }
        Ok(())
    }
}

impl Origin<'_> {
    /// Errors where `m` (at `mpath`) was written by another identity or
    /// kernel kind (in that order: a spec's name says less than its file).
    pub(crate) fn check(&self, m: &Manifest, mpath: &Path) -> Result<(), CheckpointError> {
        if let Some((found, expected)) = m.identity.difference(self.identity) {
            return Err(CheckpointError::Identity {
                path: mpath.to_path_buf(),
                found,
                expected,
            });
        }
        if m.kernel != self.kernel {
            return Err(CheckpointError::Mismatch {
                path: mpath.to_path_buf(),
                what: "kernel",
                found: m.kernel.clone(),
                expected: self.kernel.into(),
            });
        }
        Ok(())
    }
}

/// The manifest of the checkpoint in directory `path`, whole and unedited:
/// it parses, is of this format, its checksum holds, and its iteration is
/// the one its directory's name gives (where that is a `ckpt-N` name).
pub(crate) fn manifest(path: &Path) -> Result<Manifest, CheckpointError> {
    let mpath = path.join(MANIFEST);
    regular(&mpath)?;
    let text = read_bytes_within(&mpath, MANIFEST_LIMIT).map_err(io(&mpath))?;
    let bad = |why: String| CheckpointError::Manifest {
        path: mpath.clone(),
        why,
    };
    #[derive(Deserialize)]
    struct Format {
        format: u32,
    }
    // The format first: an older one would fail on a field it lacks.
    let f: Format = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    if f.format != FORMAT {
        return Err(bad(format!(
            "format {} (this build reads {FORMAT})",
            f.format
        )));
    }
    let m: Manifest = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    let sum = m.content_checksum();
    if sum != m.checksum {
        return Err(bad(format!(
            "its checksum is {:08x}, its content's {sum:08x}: it was edited or damaged",
            m.checksum
        )));
    }
    if let Some(named) = iteration_of(path) {
        if named != m.iteration {
            return Err(bad(format!(
                "it says iteration {}, its directory's name {named}",
                m.iteration
            )));
        }
    }
    Ok(m)
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
    /// The newest valid checkpoint in `dir` that `expect` and `origin` may
    /// restart from, and only one of run `run` where given (a recovery
    /// goes on from its own run's checkpoints only). A damaged newest one
    /// is skipped (with a warning) for an older one; a checkpoint of
    /// another run is an error at once.
    pub(crate) fn find(
        dir: &Path,
        expect: &Expect<'_>,
        origin: &Origin<'_>,
        run: Option<&str>,
    ) -> Result<Restart, CheckpointError> {
        let (r, skipped) = Restart::newest(dir, expect, origin, run)?;
        for e in &skipped {
            tracing::warn!("skipped a damaged checkpoint: {e}");
        }
        Ok(r)
    }

    /// What [`Restart::find`] takes, with the damaged newer checkpoints it
    /// skipped, unsaid.
    pub(super) fn newest(
        dir: &Path,
        expect: &Expect<'_>,
        origin: &Origin<'_>,
        run: Option<&str>,
    ) -> Result<(Restart, Vec<CheckpointError>), CheckpointError> {
        if !dir.is_dir() {
            return Err(CheckpointError::Io {
                path: dir.to_path_buf(),
                source: if dir.exists() {
                    std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        "not a directory: give the --checkpoint-dir of the run to resume",
                    )
                } else {
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory")
                },
            });
        }
        // Skipped ones are warned about only once an older one is taken:
        // where none is, the newest one's error is the one line a user sees.
        let mut skipped = Vec::new();
        for (_, path, partial) in listed(dir)? {
            if partial {
                continue;
            }
            let m = match manifest(&path) {
                Ok(m) if run.is_some_and(|r| r != m.run) => continue,
                Ok(m) => m,
                Err(e) => {
                    skipped.push(e);
                    continue;
                }
            };
            let mpath = path.join(MANIFEST);
            expect.check(&m, &mpath)?;
            origin.check(&m, &mpath)?;
            match Restart::checked(&path, m, expect) {
                Ok(r) => return Ok((r, skipped)),
                Err(e) => skipped.push(e),
            }
        }
        Err(skipped
            .into_iter()
            .next()
            .unwrap_or_else(|| CheckpointError::None(dir.to_path_buf())))
    }

    /// This checkpoint, refused where a run of `iters` iterations would
    /// have nothing left to compute from it.
    pub(crate) fn before_end(self, iters: u64) -> Result<Restart, CheckpointError> {
        if self.manifest.iteration >= iters {
            return Err(CheckpointError::AtEnd {
                path: self.path,
                at: self.manifest.iteration,
                iters,
            });
        }
        Ok(self)
    }

    /// The checkpoint in directory `path`, checked against `expect`: its
    /// manifest, then every block's length and checksum.
    pub fn open(path: &Path, expect: &Expect<'_>) -> Result<Restart, CheckpointError> {
        let m = manifest(path)?;
        expect.check(&m, &path.join(MANIFEST))?;
        Restart::checked(path, m, expect)
    }

    /// The checkpoint in `path` of manifest `m`, once its blocks tile the
    /// interior and each has its length and checksum.
    pub(super) fn checked(
        path: &Path,
        m: Manifest,
        expect: &Expect<'_>,
    ) -> Result<Restart, CheckpointError> {
        let mpath = path.join(MANIFEST);
        let bad = |why: String| CheckpointError::Manifest {
            path: mpath.clone(),
            why,
        };
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
            let data = read_block(&bpath, b.bytes)?;
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
            let data = read_block(&bpath, b.bytes)?;
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

/// Refuses, before opening it, a checkpoint file that is not a regular
/// file (a checkpoint writes no other kind): opening a FIFO that no one
/// writes would wait for ever, and a device is no checkpoint's. A missing
/// file is left to the open, which names it.
fn regular(path: &Path) -> Result<(), CheckpointError> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(io(path)(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a regular file, as every file of a checkpoint is",
        ))),
        _ => Ok(()),
    }
}

/// Block file `path`, which its manifest says holds `bytes` bytes, read no
/// further than that: one replaced by a huge file is refused by its
/// length, not read into memory, and one that is not a file at all (a
/// device, a pipe) before it is opened.
fn read_block(path: &Path, bytes: u64) -> Result<Vec<u8>, CheckpointError> {
    let length = |found| CheckpointError::Length {
        path: path.to_path_buf(),
        found,
        expected: bytes,
    };
    regular(path)?;
    let data = read_bytes_within(path, bytes).map_err(|e| match fs::metadata(path) {
        // A regular file says its length (it may have grown since).
        Ok(m) if e.kind() == std::io::ErrorKind::InvalidData && m.is_file() => length(m.len()),
        _ => io(path)(e),
    })?;
    if data.len() as u64 != bytes {
        return Err(length(data.len() as u64));
    }
    Ok(data)
}

fn manifest_error(path: &Path, e: hitmap::HitmapError) -> CheckpointError {
    CheckpointError::Manifest {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

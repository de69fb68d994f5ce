//! The names of what a checkpoint directory holds, and its listing.

use super::error::{io, CheckpointError};
use std::fs;
use std::path::{Path, PathBuf};

/// A checkpoint's description, in its directory.
pub(super) const MANIFEST: &str = "manifest.json";

/// The lock file of a directory written by a run.
pub(super) const LOCK: &str = ".lock";

/// The most a note in the directory (a block's checksum, a failed
/// writer's error, the lock holder's name) is read of: a line or two,
/// whatever the file was replaced by.
pub(super) const NOTE_LIMIT: u64 = 64 << 10;

/// The name of the checkpoint directory after `iter` iterations (sortable).
pub(super) fn final_name(iter: u64) -> String {
    format!("ckpt-{iter:012}")
}

pub(super) fn partial_name(iter: u64) -> String {
    format!(".ckpt-{iter:012}.partial")
}

pub(crate) fn block_name(vp: usize) -> String {
    format!("block-{vp}.bin")
}

/// The file beside a written block that hands its checksum to the commit.
pub(super) fn crc_name(block: &str) -> String {
    format!("{block}.crc")
}

/// The file a writer leaves when it fails, holding its error.
pub(super) fn failed_name(block: &str) -> String {
    format!("{block}.failed")
}

pub(super) fn tmp_name(block: &str) -> String {
    format!("{block}.tmp")
}

/// The iteration a complete checkpoint's directory name gives.
pub(super) fn iteration_of(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_prefix("ckpt-")?
        .parse()
        .ok()
}

/// Checkpoint directories in `dir`, newest first, with their iteration
/// and whether they are partial.
pub(super) fn listed(dir: &Path) -> Result<Vec<(u64, PathBuf, bool)>, CheckpointError> {
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

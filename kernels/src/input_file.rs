//! Reading a user's text file with a bound: `/dev/zero` or a huge sparse
//! file given as a stencil spec, a device file or a machine model grew
//! until the allocator refused. Every layer above reads its text inputs
//! here, so they share one limit.

use std::io::Read;
use std::path::Path;

/// The most a text input (a stencil spec, a device file, a machine model,
/// an inventory) may hold: 256 MiB, far past any real one.
pub const TEXT_LIMIT: u64 = 256 << 20;

/// The most a run report may hold: 4 GiB. Reports are the one text input
/// that grows with a run (the default record budget gives about 550 MB).
pub const REPORT_LIMIT: u64 = 4 << 30;

/// The text of `path`, at most [`TEXT_LIMIT`] bytes ([`read_text_within`]).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    read_text_within(path, TEXT_LIMIT)
}

/// The text of `path`, refused as an I/O error of kind `InvalidData` when
/// it holds more than `limit` bytes: a regular file by its length, before
/// reading; anything else (a device, a pipe) once that much is read.
pub fn read_text_within(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() > limit {
        return Err(too_large(limit));
    }
    let mut text = String::new();
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(text)
}

fn too_large(limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "it holds more than {} MiB, the most this input may (is it the right file?)",
            limit >> 20
        ),
    )
}

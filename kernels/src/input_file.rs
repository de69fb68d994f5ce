//! Reading a user's text file with a bound: `/dev/zero` or a huge sparse
//! file given as a stencil spec, a device file or a machine model grew
//! until the allocator refused. Every layer above reads its text inputs
//! here, so they share one limit.

use std::io::Read;
use std::path::Path;

/// The most a text input (a stencil spec, a device file, a machine model,
/// a report, an inventory) may hold: 256 MiB, far past any real one.
pub const TEXT_LIMIT: u64 = 256 << 20;

/// The text of `path`, refused as an I/O error of kind `InvalidData` when
/// it holds more than [`TEXT_LIMIT`] bytes: a regular file by its length,
/// before reading; anything else (a device, a pipe) once that much is read.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() > TEXT_LIMIT {
        return Err(too_large());
    }
    let mut text = String::new();
    file.take(TEXT_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > TEXT_LIMIT {
        return Err(too_large());
    }
    Ok(text)
}

fn too_large() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "it holds more than {} MiB, the most a text input may (is it the right file?)",
            TEXT_LIMIT >> 20
        ),
    )
}

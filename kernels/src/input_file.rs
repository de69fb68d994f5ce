//! Reading a user's file with a bound: `/dev/zero` or a huge sparse file
//! given as a stencil spec, a device file, a machine model or a
//! checkpoint's block grew until the allocator refused. Every layer above
//! reads its inputs here, so they share one limit.

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
    String::from_utf8(read_bytes_within(path, limit)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// The bytes of `path`, refused as [`read_text_within`] refuses text: a
/// regular file longer than `limit` by its length, before reading;
/// anything else once more than `limit` bytes are read.
pub fn read_bytes_within(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > limit {
        return Err(too_large(limit));
    }
    // A regular file's length sizes the buffer; a device's (0) does not.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> std::io::Error {
    let most = match limit {
        l if l >= 1 << 20 && l % (1 << 20) == 0 => format!("{} MiB", l >> 20),
        l => format!("{l} bytes"),
    };
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("it holds more than {most}, the most this input may (is it the right file?)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A file of this test process's own, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str, bytes: &[u8]) -> Scratch {
            let path = std::env::temp_dir().join(format!("{}-{name}", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            Scratch(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// A file of exactly the bound is read; one byte more, a sparse file
    /// of a terabyte and an endless device are refused in one line that
    /// says the bound, in bytes below a MiB.
    #[test]
    fn bytes_are_read_up_to_the_bound_and_no_further() {
        let file = Scratch::new("block.bin", &[7u8; 100]);
        let path = &file.0;
        assert_eq!(read_bytes_within(path, 100).unwrap(), vec![7u8; 100]);
        let refused = |path: &Path, limit| {
            let e = read_bytes_within(path, limit).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
            e.to_string()
        };
        assert_eq!(
            refused(path, 99),
            "it holds more than 99 bytes, the most this input may (is it the right file?)"
        );
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(1 << 40)
            .unwrap();
        assert!(refused(path, 2 << 20).starts_with("it holds more than 2 MiB,"));
        #[cfg(target_os = "linux")]
        assert!(refused(Path::new("/dev/zero"), 4096).starts_with("it holds more than 4096 bytes,"));
    }

    #[test]
    fn text_that_is_not_utf8_is_refused() {
        let file = Scratch::new("spec.toml", &[0xff, 0xfe]);
        let e = read_text(&file.0).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "stream did not contain valid UTF-8");
    }
}

//! The advisory lock a run holds on the directory it writes checkpoints
//! into: one writer at a time. The kernel releases it when the process
//! ends, however it ends, so a killed run leaves nothing to clean up.

use super::error::{io, CheckpointError};
use super::names::{LOCK, NOTE_LIMIT};
use kernels::input_file::read_text_within;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Opens of a lock file replaced meanwhile before giving up.
const TRIES: usize = 20;

/// A directory's lock, held until dropped. Its file says who holds it, and
/// goes with the lock.
#[derive(Debug)]
pub(crate) struct DirLock {
    /// The locked file; `None` where the file system refuses locks.
    file: Option<File>,
    path: PathBuf,
}

/// Whether `path` is still the file `file` has open.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

impl DirLock {
    /// Takes the lock of `dir` for `holder` (who it is, for the message
    /// another run gets), or says who holds it.
    pub(crate) fn take(dir: &Path, holder: &str) -> Result<DirLock, CheckpointError> {
        let path = dir.join(LOCK);
        for _ in 0..TRIES {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let said = read_text_within(&path, NOTE_LIMIT).unwrap_or_default();
                    let said = said.trim();
                    return Err(CheckpointError::Locked {
                        dir: dir.to_path_buf(),
                        holder: match said.is_empty() {
                            true => "it has not written who it is yet".into(),
                            false => said.to_string(),
                        },
                    });
                }
                Err(TryLockError::Error(e)) => {
                    tracing::warn!(
                        "{}: the file system takes no lock ({e}); going on without one, so make sure no other run writes there",
                        path.display()
                    );
                    return Ok(DirLock { file: None, path });
                }
            }
            // A holder that ended removes the file: the lock taken may be
            // on its old one, which no other run would see.
            if same_file(&file, &path) {
                file.set_len(0).map_err(io(&path))?;
                file.write_all(format!("{holder}\n").as_bytes())
                    .map_err(io(&path))?;
                return Ok(DirLock {
                    file: Some(file),
                    path,
                });
            }
        }
        Err(CheckpointError::Locked {
            dir: dir.to_path_buf(),
            holder: "its lock file kept being replaced".into(),
        })
    }

    /// Whether the lock file is still the one locked (not removed or
    /// replaced by someone).
    pub(crate) fn held(&self) -> bool {
        self.file.as_ref().is_none_or(|f| same_file(f, &self.path))
    }

    /// The lock file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    /// The file goes before the lock does (the file closes after this), so
    /// the next run never finds it and this run's name in it.
    fn drop(&mut self) {
        if self.file.is_some() && self.held() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_name_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::take(dir.path(), "pid 1 on a").unwrap();
        assert!(first.held());
        let e = DirLock::take(dir.path(), "pid 2 on b").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "checkpoint directory {} is in use by another run (pid 1 on a): wait for it to end, or give another --checkpoint-dir",
                dir.path().display()
            )
        );
        drop(first);
        assert!(!dir.path().join(LOCK).exists());
        let second = DirLock::take(dir.path(), "pid 2 on b").unwrap();
        // Removed behind its back: no longer held.
        fs::remove_file(dir.path().join(LOCK)).unwrap();
        assert!(!second.held());
    }
}

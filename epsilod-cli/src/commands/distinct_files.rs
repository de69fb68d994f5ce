//! Refusing one file named for two of a command's inputs and outputs.

use crate::error::CliError;
use std::path::{Path, PathBuf};

/// Errors where two of a command's files are one (`--output r.npy
/// --report r.npy`, `--json` onto its own `--model`): the one written last
/// would silently replace the other, or the input read. `files` pairs each
/// option with its file, where given; devices (`/dev/null`) may repeat.
pub(super) fn distinct_files(files: &[(&str, Option<&Path>)]) -> Result<(), CliError> {
    let given: Vec<(&str, &Path, PathBuf)> = files
        .iter()
        .filter_map(|&(option, path)| Some((option, path?, file_identity(path?)?)))
        .collect();
    for (i, (a, path, id)) in given.iter().enumerate() {
        if let Some((b, ..)) = given[i + 1..].iter().find(|(.., other)| other == id) {
            return Err(CliError::Usage(format!(
                "{a} and {b} both name {}: give each its own file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Which file `path` names: its canonical path where it exists, else its
/// directory's with its name; `None` for what is not a plain file.
fn file_identity(path: &Path) -> Option<PathBuf> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::canonicalize(path).ok(),
        Ok(_) => None,
        Err(_) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = std::fs::canonicalize(dir.unwrap_or(Path::new("."))).ok()?;
            Some(dir.join(path.file_name()?))
        }
    }
}

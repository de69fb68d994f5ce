//! Whose checkpoints a directory holds, for a run about to write its own
//! there: it refuses to write beside checkpoints it does not resume, and
//! says what they are (as far as a restart from them would go) and its
//! ways on.

use super::error::CheckpointError;
use super::held::{Held, HeldByBoth};
use super::names::{listed, MANIFEST};
use super::restart::{manifest, Expect, Manifest, Origin, Restart};
use std::path::{Path, PathBuf};

/// Errors where `dir` holds a complete checkpoint, which a run starting
/// afresh would replace: of another run than the one `expect` and `origin`
/// describe (`Foreign`, naming the difference), or of an earlier run of
/// the same problem (`Earlier`). A run resumed from another directory
/// (`elsewhere`) is told whether they are its own (`Own`: older or newer
/// than where it resumes), another run's (`Beside`) or both (`Mixed`), or
/// that directory's own error where it has no checkpoint to resume.
/// Checkpoints whose manifest is damaged, whose run no one can tell, do not
/// count; those with damaged blocks are said to be damaged (their blocks
/// are read only here, where the run is refused or replaces them).
pub(crate) fn check_owner(
    dir: &Path,
    expect: &Expect<'_>,
    origin: &Origin<'_>,
    elsewhere: Option<&Path>,
) -> Result<(), CheckpointError> {
    let mut found = Vec::new();
    for (_, path, partial) in listed(dir)? {
        if partial {
            continue;
        }
        let Ok(m) = manifest(&path) else { continue };
        let mpath = path.join(MANIFEST);
        expect
            .check(&m, &mpath)
            .and_then(|()| origin.check(&m, &mpath))
            .map_err(|e| CheckpointError::Foreign {
                dir: dir.to_path_buf(),
                difference: Box::new(e),
            })?;
        found.push((path, m));
    }
    if found.is_empty() {
        return Ok(());
    }
    let held = |whose: &dyn Fn(&Manifest) -> bool| held(&found, expect, whose);
    let dir = dir.to_path_buf();
    let Some(from) = elsewhere else {
        let held = held(&|_| true).expect("found holds one");
        return Err(CheckpointError::Earlier { dir, held });
    };
    // Where the run resumes, as its restart will find it.
    let (r, _) = Restart::newest(from, expect, origin, None)?;
    let (run, at) = (&r.manifest.run, r.manifest.iteration);
    let restart = from.to_path_buf();
    Err(match (held(&|m| &m.run == run), held(&|m| &m.run != run)) {
        (Some(held), None) => CheckpointError::Own {
            dir,
            held,
            restart,
            at,
        },
        (None, Some(held)) => CheckpointError::Beside { dir, held, restart },
        (Some(own), Some(other)) => CheckpointError::Mixed {
            dir,
            held: Box::new(HeldByBoth { own, other }),
            restart,
            at,
        },
        (None, None) => unreachable!("found holds one"),
    })
}

/// What `found` (newest first) holds of the runs `whose` picks, if any.
fn held(
    found: &[(PathBuf, Manifest)],
    expect: &Expect<'_>,
    whose: &dyn Fn(&Manifest) -> bool,
) -> Option<Held> {
    let mut theirs = found.iter().filter(|(_, m)| whose(m)).peekable();
    let newest = theirs.peek()?.1.iteration;
    let usable = theirs
        .find(|(path, m)| Restart::checked(path, m.clone(), expect).is_ok())
        .map(|(_, m)| m.iteration);
    Some(Held { newest, usable })
}

/// The run that wrote the complete checkpoint in `path`, if its manifest is
/// whole.
pub(crate) fn run_of(path: &Path) -> Option<String> {
    manifest(path).ok().map(|m| m.run)
}

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
/// (`elsewhere`, with the run's iterations) is told whether they are its
/// own (`Own`: older or newer than where it resumes), another run's
/// (`Beside`) or both (`Mixed`); where its restart would be refused (no
/// checkpoint to resume, one at the run's end), it gets that error first,
/// which `--checkpoint-overwrite` does not act on. Checkpoints whose
/// manifest is damaged, whose run no one can tell, do not count; those with
/// damaged blocks are said to be damaged (their blocks are read only here,
/// where the run is refused or replaces them).
pub(crate) fn check_owner(
    dir: &Path,
    expect: &Expect<'_>,
    origin: &Origin<'_>,
    elsewhere: Option<(&Path, u64)>,
) -> Result<(), CheckpointError> {
    let mut found = Vec::new();
    let mut foreign = None;
    for (_, path, partial) in listed(dir)? {
        if partial {
            continue;
        }
        let Ok(m) = manifest(&path) else { continue };
        let mpath = path.join(MANIFEST);
        if let Err(e) = expect
            .check(&m, &mpath)
            .and_then(|()| origin.check(&m, &mpath))
        {
            foreign = Some(e);
            break;
        }
        found.push((path, m));
    }
    if found.is_empty() && foreign.is_none() {
        return Ok(());
    }
    // Where the run resumes, as its restart will find it.
    let resumed = match elsewhere {
        Some((from, iters)) => Some((
            from,
            Restart::newest(from, expect, origin, None)?
                .0
                .before_end(iters)?,
        )),
        None => None,
    };
    let dir = dir.to_path_buf();
    if let Some(e) = foreign {
        return Err(CheckpointError::Foreign {
            dir,
            difference: Box::new(e),
        });
    }
    let held = |whose: &dyn Fn(&Manifest) -> bool| held(&found, expect, whose);
    let Some((from, r)) = resumed else {
        let held = held(&|_| true).expect("found holds one");
        return Err(CheckpointError::Earlier { dir, held });
    };
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

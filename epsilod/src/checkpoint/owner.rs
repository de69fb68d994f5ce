//! Whose checkpoints a directory holds, for a run about to write its own
//! there: it refuses to write beside checkpoints it does not resume, and
//! says what they are (as far as a restart from them would go) and its
//! ways on.

use super::error::CheckpointError;
use super::held::{Held, HeldByBoth};
use super::names::{listed, MANIFEST};
use super::restart::{manifest, Expect, Manifest, Origin, Restart};
use std::path::{Path, PathBuf};

/// The complete checkpoints in a directory that a run about to write
/// there would replace, by their manifests alone: whose they are is known
/// without reading a block, which only the refusal's words need.
pub(crate) struct InTheWay<'a> {
    dir: &'a Path,
    /// This problem's, newest first.
    found: Vec<(PathBuf, Manifest)>,
    /// How the newest of another problem or run identity differs.
    foreign: Option<CheckpointError>,
    /// Where a run resumed from another directory resumes.
    resumed: Option<(&'a Path, Restart)>,
    /// The run's iterations.
    iters: u64,
}

/// What in `dir` is in the way of a run that `expect` and `origin`
/// describe, of `iters` iterations, resumed from another directory where
/// `elsewhere` is given; none where nothing is. Where that run's restart
/// would be refused (no checkpoint to resume, one at the run's end), that
/// error comes first, which `--checkpoint-overwrite` does not act on.
/// Checkpoints whose manifest is damaged, whose run no one can tell, do
/// not count.
pub(crate) fn in_the_way<'a>(
    dir: &'a Path,
    expect: &Expect<'_>,
    origin: &Origin<'_>,
    iters: u64,
    elsewhere: Option<&'a Path>,
) -> Result<Option<InTheWay<'a>>, CheckpointError> {
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
        return Ok(None);
    }
    // Where the run resumes, as its restart will find it.
    let resumed = match elsewhere {
        Some(from) => Some((
            from,
            Restart::newest(from, expect, origin, None)?
                .0
                .before_end(iters)?,
        )),
        None => None,
    };
    Ok(Some(InTheWay {
        dir,
        found,
        foreign,
        resumed,
        iters,
    }))
}

impl InTheWay<'_> {
    /// Whose checkpoints they are, for the warning of a run that replaces
    /// them, as the refusal would say it.
    pub(crate) fn whose(&self) -> &'static str {
        let run = match &self.resumed {
            Some((_, r)) if self.foreign.is_none() => &r.manifest.run,
            _ => return "the checkpoints of an earlier run",
        };
        let own = self.found.iter().any(|(_, m)| &m.run == run);
        let other = self.found.iter().any(|(_, m)| &m.run != run);
        match (own, other) {
            (true, false) => "this run's own checkpoints",
            (false, _) => "the checkpoints of another run",
            (true, true) => "this run's own checkpoints and another run's",
        }
    }

    /// The refusal to write beside them: of another run than the one
    /// `expect` describes (`Foreign`, naming the difference), or of an
    /// earlier run of the same problem (`Earlier`); a run resumed from
    /// another directory is told whether they are its own (`Own`: older
    /// or newer than where it resumes), another run's (`Beside`) or both
    /// (`Mixed`). Those with damaged blocks are said to be damaged: their
    /// blocks are read only here, where the run is refused.
    pub(crate) fn refusal(self, expect: &Expect<'_>) -> CheckpointError {
        let InTheWay {
            dir,
            found,
            foreign,
            resumed,
            iters,
        } = self;
        let dir = dir.to_path_buf();
        if let Some(e) = foreign {
            return CheckpointError::Foreign {
                dir,
                difference: Box::new(e),
            };
        }
        let held = |whose: &dyn Fn(&Manifest) -> bool| held(&found, expect, whose);
        let Some((from, r)) = resumed else {
            let held = held(&|_| true).expect("found holds one");
            return CheckpointError::Earlier { dir, held, iters };
        };
        let (run, at) = (&r.manifest.run, r.manifest.iteration);
        let restart = from.to_path_buf();
        match (held(&|m| &m.run == run), held(&|m| &m.run != run)) {
            (Some(held), None) => CheckpointError::Own {
                dir,
                held: Box::new(held),
                restart,
                at,
                iters,
            },
            (None, Some(held)) => CheckpointError::Beside {
                dir,
                held,
                restart,
                iters,
            },
            (Some(own), Some(other)) => CheckpointError::Mixed {
                dir,
                held: Box::new(HeldByBoth { own, other }),
                restart,
                at,
                iters,
            },
            (None, None) => unreachable!("found holds one"),
        }
    }
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

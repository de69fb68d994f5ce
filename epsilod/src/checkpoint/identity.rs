//! What decides a run's result beyond what the skeleton knows itself
//! (stencil name, kernel kind, cell type, size, time levels): set by the
//! driver that knows what its stencil, init and parameters are, recorded in
//! every checkpoint and compared field by field before a restart.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A digest of some bytes (a spec file, an input image): their CRC-32 and
/// length. It tells versions of a file apart; it is no defence against
/// someone forging one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    /// The bytes' CRC-32.
    pub crc32: u32,
    /// Their number.
    pub bytes: u64,
}

impl Digest {
    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Digest {
        Digest {
            crc32: crc32fast::hash(data),
            bytes: data.len() as u64,
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "crc32 {:08x} of {} bytes", self.crc32, self.bytes)
    }
}

/// What a run computes beyond its stencil's name, kernel kind, cell type,
/// size and time levels: two runs of equal identities (and those) give the
/// same bits. A checkpoint records it; a restart whose identity differs is
/// refused, naming the first difference. The default (all empty) is a run
/// whose driver says nothing more.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunIdentity {
    /// What runs: a library stencil's or an app's name, or a spec file's.
    pub target: String,
    /// A digest of what defines it where its name does not (a spec file's
    /// content).
    pub definition: Option<Digest>,
    /// Its parameters, name and value (an app's, defaults included).
    pub params: Vec<(String, f64)>,
    /// The files it reads, by role (`input`, `aux k`), with their digests.
    pub files: Vec<(String, Digest)>,
    /// The seed of a random init; `None` for an init that draws nothing.
    pub seed: Option<u64>,
}

/// `name=value`, or `name=none` where it has no value.
fn setting(name: &str, value: Option<impl fmt::Display>) -> String {
    match value {
        Some(v) => format!("{name}={v}"),
        None => format!("{name}=none"),
    }
}

/// The first name of `ours` or `theirs` whose values differ (compared by
/// `same`), with each side's `name=value`.
fn first_of<V: fmt::Display>(
    ours: &[(String, V)],
    theirs: &[(String, V)],
    same: impl Fn(&V, &V) -> bool,
) -> Option<(String, String)> {
    let find = |list: &[(String, V)], name: &str| -> Option<usize> {
        list.iter().position(|(n, _)| n == name)
    };
    let names = ours.iter().chain(theirs).map(|(n, _)| n.as_str());
    for name in names {
        let (a, b) = (find(ours, name), find(theirs, name));
        let differs = match (a, b) {
            (Some(a), Some(b)) => !same(&ours[a].1, &theirs[b].1),
            _ => true,
        };
        if differs {
            return Some((
                setting(name, a.map(|a| &ours[a].1)),
                setting(name, b.map(|b| &theirs[b].1)),
            ));
        }
    }
    None
}

impl RunIdentity {
    /// The first way `self` (a checkpoint's) differs from `run` (this
    /// run's): each side's `name=value`, `None` where they agree.
    pub fn difference(&self, run: &RunIdentity) -> Option<(String, String)> {
        if self.target != run.target {
            return Some((
                format!("target={}", self.target),
                format!("target={}", run.target),
            ));
        }
        if self.definition != run.definition {
            return Some((
                setting("definition", self.definition),
                setting("definition", run.definition),
            ));
        }
        // Bits, not values: -0 and 0 are different inputs.
        first_of(&self.params, &run.params, |a, b| a.to_bits() == b.to_bits())
            .or_else(|| first_of(&self.files, &run.files, |a, b| a == b))
            .or_else(|| {
                (self.seed != run.seed)
                    .then(|| (setting("seed", self.seed), setting("seed", run.seed)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wavesim(dt: f64) -> RunIdentity {
        RunIdentity {
            target: "wavesim".into(),
            params: vec![("dt".into(), dt)],
            ..RunIdentity::default()
        }
    }

    #[test]
    fn the_first_difference_is_named_with_both_values() {
        assert_eq!(wavesim(0.25).difference(&wavesim(0.25)), None);
        assert_eq!(
            wavesim(0.1).difference(&wavesim(0.25)),
            Some(("dt=0.1".into(), "dt=0.25".into()))
        );
        let mut spec = RunIdentity {
            target: "spec file a.toml".into(),
            definition: Some(Digest::of(b"weights = [1]")),
            ..RunIdentity::default()
        };
        let other = RunIdentity {
            definition: Some(Digest::of(b"weights = [2]")),
            ..spec.clone()
        };
        let (found, expected) = spec.difference(&other).unwrap();
        assert!(found.starts_with("definition=crc32 "), "{found}");
        assert!(expected.ends_with("of 13 bytes"), "{expected}");
        spec.seed = Some(1);
        let seeded = RunIdentity {
            seed: Some(2),
            ..spec.clone()
        };
        assert_eq!(
            spec.difference(&seeded),
            Some(("seed=1".into(), "seed=2".into()))
        );
        let mut none = seeded.clone();
        none.seed = None;
        assert_eq!(
            none.difference(&seeded),
            Some(("seed=none".into(), "seed=2".into()))
        );
        // A file only one side reads.
        let mut input = wavesim(0.25);
        input.files.push(("input".into(), Digest::of(b"P2")));
        let (found, expected) = wavesim(0.25).difference(&input).unwrap();
        assert_eq!(found, "input=none");
        assert!(expected.starts_with("input=crc32 "), "{expected}");
        assert_eq!(
            wavesim(0.0).difference(&wavesim(-0.0)),
            Some(("dt=0".into(), "dt=-0".into()))
        );
    }
}

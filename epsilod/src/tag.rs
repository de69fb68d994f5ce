//! Message tags: one encoding for every kind of message a virtual process
//! sends, so no two kinds can collide.

/// A message's purpose, as the transport's 64-bit tag encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    /// Halo cells of iteration `it`.
    Halo(u64),
    /// A process's kernel seconds of iteration `it` (ALB).
    Times(u64),
    /// Rows moving in rebalance `n`.
    Move(usize),
    /// Halos refreshed after rebalance `n`.
    Refresh(usize),
    /// A block's checkpoint written after iteration `it`, to process 0.
    Checkpoint(u64),
    /// A block of the snapshot after iteration `it`, to process 0.
    Snapshot(u64),
    /// Ghost cells refreshed for a new halo depth after iteration `it`.
    Deepen(u64),
}

/// Tags above every iteration number: redistribution traffic.
const REDISTRIBUTE: u64 = 1 << 62;
/// Tags of the per-iteration kernel times.
const TIMES: u64 = 1 << 61;
/// Tags of checkpoint reports.
const CHECKPOINT: u64 = 1 << 60;
/// Tags of snapshot blocks.
const SNAPSHOT: u64 = 1 << 59;
/// Tags of ghost cells for a new halo depth.
const DEEPEN: u64 = 1 << 58;

impl Tag {
    /// The transport tag.
    pub(crate) fn encode(self) -> u64 {
        match self {
            Tag::Halo(it) => it,
            Tag::Times(it) => TIMES + it,
            Tag::Checkpoint(it) => CHECKPOINT + it,
            Tag::Snapshot(it) => SNAPSHOT + it,
            Tag::Deepen(it) => DEEPEN + it,
            Tag::Move(n) => REDISTRIBUTE + 2 * n as u64,
            Tag::Refresh(n) => REDISTRIBUTE + 2 * n as u64 + 1,
        }
    }

    /// The purpose a transport tag encodes.
    pub(crate) fn decode(tag: u64) -> Tag {
        match tag {
            t if t >= REDISTRIBUTE => {
                let (n, refresh) = ((t - REDISTRIBUTE) / 2, (t - REDISTRIBUTE) % 2 == 1);
                if refresh {
                    Tag::Refresh(n as usize)
                } else {
                    Tag::Move(n as usize)
                }
            }
            t if t >= TIMES => Tag::Times(t - TIMES),
            t if t >= CHECKPOINT => Tag::Checkpoint(t - CHECKPOINT),
            t if t >= SNAPSHOT => Tag::Snapshot(t - SNAPSHOT),
            t if t >= DEEPEN => Tag::Deepen(t - DEEPEN),
            t => Tag::Halo(t),
        }
    }
}

/// What the messages of a tag are for, iterations counted from 1 (a halo
/// of iteration index `it` belongs to the `it + 1`-th iteration).
impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Tag::Halo(it) => write!(f, "the halo exchange of iteration {}", it + 1),
            Tag::Times(it) => write!(f, "the exchange of kernel times of iteration {}", it + 1),
            Tag::Move(n) => write!(f, "the row moves of rebalance {}", n + 1),
            Tag::Refresh(n) => write!(f, "the halo refresh after rebalance {}", n + 1),
            Tag::Checkpoint(it) => write!(f, "the checkpoint after iteration {it}"),
            Tag::Snapshot(it) => write!(f, "the snapshot after iteration {it}"),
            Tag::Deepen(it) => write!(f, "the deeper halo exchange before iteration {}", it + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tag;
    use std::collections::HashSet;

    #[test]
    fn kinds_never_share_a_tag() {
        let mut seen = HashSet::new();
        for i in 0..1000u64 {
            for t in [
                Tag::Halo(i),
                Tag::Times(i),
                Tag::Move(i as usize),
                Tag::Refresh(i as usize),
                Tag::Checkpoint(i),
                Tag::Snapshot(i),
                Tag::Deepen(i),
            ] {
                assert!(seen.insert(t.encode()), "{t:?} collides");
                assert_eq!(Tag::decode(t.encode()), t, "{t:?} read back");
            }
        }
        // Far apart: a run of 2^61 iterations would be needed to collide.
        assert!(Tag::Halo(u32::MAX as u64).encode() < Tag::Deepen(0).encode());
        assert!(Tag::Deepen(u32::MAX as u64).encode() < Tag::Snapshot(0).encode());
        assert!(Tag::Snapshot(u32::MAX as u64).encode() < Tag::Checkpoint(0).encode());
        assert!(Tag::Checkpoint(u32::MAX as u64).encode() < Tag::Times(0).encode());
        assert!(Tag::Times(u32::MAX as u64).encode() < Tag::Move(0).encode());
    }
}

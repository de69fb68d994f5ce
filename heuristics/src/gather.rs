//! How each process's kernel time of a period reaches every other, shared
//! by the skeleton (which sends the messages) and the simulator (which
//! costs them and must decide at the same iterations).
//!
//! No process waits on the gather: what a process receives at a period's
//! end was sent at an earlier one. Up to [`DIRECT_UP_TO`] processes every
//! process posts its time to every other and reads them all one period
//! later. Beyond, `P − 1` posts per period stop being small (1023 at 1024
//! processes, 0.1 ms an iteration at 0.1 µs a post, more than load
//! balancing gained in the simulated 1024-device scenario), so the times
//! travel Bruck's all-gather instead: `⌈log2 P⌉` rounds, one round per
//! period, one message per round, every process holding every time of a
//! period `⌈log2 P⌉` periods after it ended.

/// Processes up to which every process posts its time to every other.
pub const DIRECT_UP_TO: usize = 32;

/// How a run's processes gather their times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gather {
    /// Every process posts to every other; read one period later.
    Direct,
    /// Bruck's all-gather, one round per period.
    Tree,
}

impl Gather {
    /// The gather of `procs` processes: direct up to `direct_up_to` of
    /// them ([`DIRECT_UP_TO`] by default), a tree beyond.
    pub fn of(procs: usize, direct_up_to: usize) -> Gather {
        if procs <= direct_up_to.max(1) {
            Gather::Direct
        } else {
            Gather::Tree
        }
    }

    /// Periods from a period's end to the period end at which every
    /// process holds every process's time of it.
    pub fn lag(self, procs: usize) -> usize {
        match self {
            Gather::Direct => 1,
            Gather::Tree => rounds(procs).max(1),
        }
    }

    /// Messages each process posts at a period's end, with `in_flight`
    /// earlier periods' gathers not yet complete before it (capped at the
    /// lag): every other process directly; along the tree, round 0 of the
    /// new gather and the next round of each in flight but the one that
    /// completes, so the count grows to `⌈log2 P⌉` over the first periods.
    pub fn posts(self, procs: usize, in_flight: usize) -> usize {
        match self {
            Gather::Direct => procs.saturating_sub(1),
            Gather::Tree => (in_flight + 1).min(rounds(procs)),
        }
    }
}

/// Rounds of Bruck's all-gather over `procs` processes: `⌈log2 procs⌉`.
pub fn rounds(procs: usize) -> usize {
    procs.max(1).next_power_of_two().trailing_zeros() as usize
}

/// Round `r` of Bruck's all-gather for process `me` of `procs`: the
/// process it sends to, the one it receives from, and how many values
/// each message carries. Before round `r` a process holds the values of
/// processes `me, me + 1, ..., me + 2^r − 1` (mod `procs`), in that order;
/// it sends the first `count` to `me − 2^r` and appends the `count` it
/// receives from `me + 2^r`, which are those of `me + 2^r, ...`.
pub fn round(me: usize, procs: usize, r: usize) -> (usize, usize, usize) {
    let step = (1usize << r) % procs;
    let count = (1usize << r).min(procs - (1usize << r).min(procs));
    ((me + procs - step) % procs, (me + step) % procs, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every process of every size up to 100 ends Bruck's rounds with every
    /// value once, in order from its own: the schedule is an all-gather.
    #[test]
    fn bruck_rounds_gather_every_value_in_order() {
        for procs in 1..=100usize {
            let mut held: Vec<Vec<usize>> = (0..procs).map(|p| vec![p]).collect();
            for r in 0..rounds(procs) {
                let sent: Vec<Vec<usize>> = (0..procs)
                    .map(|p| {
                        let (_, _, count) = round(p, procs, r);
                        held[p][..count].to_vec()
                    })
                    .collect();
                for (p, h) in held.iter_mut().enumerate() {
                    let (to, from, count) = round(p, procs, r);
                    // The sender's partner is the receiver's source.
                    assert_eq!(round(from, procs, r).0, p);
                    assert_eq!(round(to, procs, r).1, p);
                    assert_eq!(sent[from].len(), count);
                    h.extend_from_slice(&sent[from]);
                }
            }
            for (p, h) in held.iter().enumerate() {
                let want: Vec<usize> = (0..procs).map(|k| (p + k) % procs).collect();
                assert_eq!(h, &want, "process {p} of {procs}");
            }
        }
    }

    #[test]
    fn direct_up_to_the_threshold_then_a_tree() {
        assert_eq!(rounds(1), 0);
        assert_eq!(rounds(2), 1);
        assert_eq!(rounds(33), 6);
        assert_eq!(rounds(1024), 10);
        assert_eq!(Gather::of(32, DIRECT_UP_TO), Gather::Direct);
        assert_eq!(Gather::of(33, DIRECT_UP_TO), Gather::Tree);
        assert_eq!(Gather::of(1, 0), Gather::Direct);
        assert_eq!(Gather::Direct.lag(32), 1);
        assert_eq!(Gather::Direct.posts(32, 0), 31);
        assert_eq!(Gather::Tree.lag(1024), 10);
        assert_eq!(Gather::Tree.posts(1024, 0), 1);
        assert_eq!(Gather::Tree.posts(1024, 4), 5);
        assert_eq!(Gather::Tree.posts(1024, 10), 10);
    }
}

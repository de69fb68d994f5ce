//! A bounded record of heuristic checks, shared by the skeleton and the
//! simulator: a check runs every period, so a long run would otherwise keep
//! one record per iteration. Every check that rebalanced is kept; of the
//! others only the latest [`CHECKS_KEPT`], and a count of those let go.

use std::collections::VecDeque;

/// Checks that did not rebalance kept at most, the latest ones.
pub const CHECKS_KEPT: usize = 1024;

/// Checks in the order made: all that `moved`, the latest `keep` others.
#[derive(Clone, Debug)]
pub struct CheckLog<C> {
    moved: Vec<C>,
    others: VecDeque<C>,
    keep: usize,
    dropped: u64,
}

impl<C: Ordered> CheckLog<C> {
    /// A log keeping at most `keep` checks that did not rebalance.
    pub fn new(keep: usize) -> CheckLog<C> {
        CheckLog {
            moved: Vec::new(),
            others: VecDeque::new(),
            keep,
            dropped: 0,
        }
    }

    /// Records a check; `moved` when it rebalanced.
    pub fn push(&mut self, check: C, moved: bool) {
        if moved {
            self.moved.push(check);
            return;
        }
        if self.keep == 0 {
            self.dropped += 1;
            return;
        }
        if self.others.len() == self.keep {
            self.others.pop_front();
            self.dropped += 1;
        }
        self.others.push_back(check);
    }

    /// Checks let go.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The checks kept, in the order they were made, and the count let go.
    pub fn finish(self) -> (Vec<C>, u64) {
        let mut all = self.moved;
        all.extend(self.others);
        // Both parts are in order already: a stable sort merges them.
        all.sort_by_key(Ordered::order);
        (all, self.dropped)
    }
}

/// A check's place in the run (its iteration: one check an iteration at most).
pub trait Ordered {
    /// The iteration checked.
    fn order(&self) -> u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Ordered for (u64, bool) {
        fn order(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn every_move_and_the_latest_others_are_kept_in_order() {
        let mut log = CheckLog::new(3);
        for it in 0..20u64 {
            let moved = it % 7 == 0;
            log.push((it, moved), moved);
        }
        let (kept, dropped) = log.finish();
        let iters: Vec<u64> = kept.iter().map(|c| c.0).collect();
        assert_eq!(iters, [0, 7, 14, 17, 18, 19]);
        assert_eq!(dropped, 20 - 6);
    }

    #[test]
    fn a_log_keeping_no_others_counts_them_all() {
        let mut log = CheckLog::new(0);
        log.push((1, false), false);
        log.push((2, true), true);
        assert_eq!(log.finish(), (vec![(2, true)], 1));
    }
}

//! Redistribution plans: which cells change owner between two layouts.

use crate::error::HitmapError;
use crate::layout::Layout;
use crate::shape::Shape;

/// Cells `region` go from process `from` (old layout) to `to` (new layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// Owner in the old layout.
    pub from: usize,
    /// Owner in the new layout.
    pub to: usize,
    /// The cells (global indices).
    pub region: Shape,
}

/// The moves between two layouts of one domain: each cell whose owner changes
/// appears in exactly one move; cells that keep their owner in none. For
/// weighted slabs that shift a little, moves are between neighbours and only
/// the rows crossing a boundary travel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedistributionPlan {
    moves: Vec<Move>,
}

impl RedistributionPlan {
    /// The moves from `old` to `new`; both must cover the same domain with
    /// the same number of processes.
    pub fn new(old: &Layout, new: &Layout) -> Result<RedistributionPlan, HitmapError> {
        if old.domain() != new.domain() {
            return Err(HitmapError::DomainMismatch);
        }
        if old.procs() != new.procs() {
            return Err(HitmapError::WeightCount {
                expected: old.procs(),
                got: new.procs(),
            });
        }
        let mut moves = Vec::new();
        for (from, a) in old.blocks().iter().enumerate() {
            // Only the new blocks that meet the old one: every process
            // builds the plan, so asking every pair would be cubic.
            for to in new.blocks_meeting(a) {
                let region = a.intersect(new.block(to));
                if from != to && !region.is_empty() {
                    moves.push(Move { from, to, region });
                }
            }
        }
        Ok(RedistributionPlan { moves })
    }

    /// Every move, by source then destination.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Moves leaving `p`, by increasing destination.
    pub fn sends_of(&self, p: usize) -> impl Iterator<Item = &Move> {
        self.moves.iter().filter(move |m| m.from == p)
    }

    /// Moves arriving at `p`, by increasing source.
    pub fn recvs_of(&self, p: usize) -> impl Iterator<Item = &Move> {
        self.moves.iter().filter(move |m| m.to == p)
    }

    /// Cells that change owner.
    pub fn cells_moved(&self) -> usize {
        self.moves.iter().map(|m| m.region.card()).sum()
    }

    /// Whether no cell changes owner.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Partition;
    use proptest::prelude::*;

    #[test]
    fn small_shift_moves_boundary_rows_between_neighbours() {
        let dom = Shape::from_ranges(&[(1, 101), (1, 51)]);
        let a = Layout::new(&dom, Partition::Weighted(0), 3, Some(&[1.0, 1.0, 1.0])).unwrap();
        let b = Layout::new(&dom, Partition::Weighted(0), 3, Some(&[1.2, 1.0, 0.8])).unwrap();
        let plan = RedistributionPlan::new(&a, &b).unwrap();
        assert!(plan.moves().iter().all(|m| m.from.abs_diff(m.to) == 1));
        // Boundaries 33|67 become 40|73: 7 rows 1->0 and 6 rows 2->1.
        let rows: Vec<_> = plan
            .moves()
            .iter()
            .map(|m| (m.from, m.to, m.region.sig(0).card()))
            .collect();
        assert_eq!(rows, vec![(1, 0, 7), (2, 1, 6)]);
        assert_eq!(plan.cells_moved(), 13 * 50);
    }

    proptest! {
        /// Found from the new blocks each old one meets, the moves are
        /// those of asking every pair, in the same order, with many
        /// processes and empty blocks on either side.
        #[test]
        fn moves_are_those_of_every_pair(n in 1i64..80, m in 1i64..4, procs in 1usize..60,
                                         w1 in prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..5.0], 60),
                                         w2 in prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..5.0], 60)) {
            let dom = Shape::from_ranges(&[(3, 3 + n), (0, m)]);
            let layout = |w: &[f64]| {
                let mut w = w[..procs].to_vec();
                w[procs - 1] = 1.0;
                Layout::new(&dom, Partition::Weighted(0), procs, Some(&w)).unwrap()
            };
            let (a, b) = (layout(&w1), layout(&w2));
            let mut want = Vec::new();
            for (from, x) in a.blocks().iter().enumerate() {
                for (to, y) in b.blocks().iter().enumerate() {
                    let region = x.intersect(y);
                    if from != to && !region.is_empty() {
                        want.push(Move { from, to, region });
                    }
                }
            }
            let plan = RedistributionPlan::new(&a, &b).unwrap();
            prop_assert_eq!(plan.moves(), &want[..]);
        }
    }

    proptest! {
        #[test]
        fn every_cell_moves_once_to_its_new_owner(n in 1usize..120, m in 1usize..4,
                                                  w1 in prop::collection::vec(0.0f64..5.0, 1..7),
                                                  w2 in prop::collection::vec(0.0f64..5.0, 7)) {
            let procs = w1.len();
            let w1: Vec<f64> = w1.iter().map(|x| x + 0.001).collect();
            let w2: Vec<f64> = w2[..procs].to_vec();
            prop_assume!(w2.iter().any(|&x| x > 0.0));
            let dom = Shape::from_ranges(&[(0, n as i64), (0, m as i64)]);
            let a = Layout::new(&dom, Partition::Weighted(0), procs, Some(&w1)).unwrap();
            let b = Layout::new(&dom, Partition::Weighted(0), procs, Some(&w2)).unwrap();
            let plan = RedistributionPlan::new(&a, &b).unwrap();
            for c in dom.iter() {
                let owner = |l: &Layout| (0..procs).find(|&p| l.block(p).contains(&c)).unwrap();
                let (o, n) = (owner(&a), owner(&b));
                let hits: Vec<_> = plan.moves().iter().filter(|mv| mv.region.contains(&c)).collect();
                if o == n {
                    prop_assert!(hits.is_empty());
                } else {
                    prop_assert_eq!(hits.len(), 1);
                    prop_assert_eq!((hits[0].from, hits[0].to), (o, n));
                }
            }
        }
    }
}

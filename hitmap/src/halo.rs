//! Halo-exchange plans: built once from a layout and a stencil footprint,
//! reused every iteration.

use crate::error::HitmapError;
use crate::layout::Layout;
use crate::shape::Shape;
use crate::sig::Sig;

/// The offsets a stencil reads (its non-zero weights), independent of any
/// device or cell type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    ndims: usize,
    offsets: Vec<Vec<i64>>,
    /// Largest reach below and above, per dimension: asked at every launch,
    /// so computed once.
    low: Vec<usize>,
    high: Vec<usize>,
}

impl Footprint {
    /// Every offset must have `ndims` components.
    pub fn new(ndims: usize, offsets: Vec<Vec<i64>>) -> Footprint {
        assert!(
            offsets.iter().all(|o| o.len() == ndims),
            "offset rank mismatch"
        );
        let reach = |side: i64| -> Vec<usize> {
            (0..ndims)
                .map(|d| {
                    offsets
                        .iter()
                        .map(|o| (side * o[d]).max(0) as usize)
                        .max()
                        .unwrap_or(0)
                })
                .collect()
        };
        let (low, high) = (reach(-1), reach(1));
        Footprint {
            ndims,
            offsets,
            low,
            high,
        }
    }

    /// Dimensions of every offset.
    pub fn ndims(&self) -> usize {
        self.ndims
    }

    /// The footprint reaching `depth` times as far in every direction,
    /// corners included (what `depth` steps of this one can read): the halo
    /// of `depth` iterations between exchanges. Itself at depth 1 or less.
    pub fn deepened(&self, depth: usize) -> Footprint {
        if depth <= 1 {
            return self.clone();
        }
        let corners = (0..1usize << self.ndims)
            .map(|mask| {
                (0..self.ndims)
                    .map(|d| {
                        if mask & (1 << d) != 0 {
                            (self.high[d] * depth) as i64
                        } else {
                            -((self.low[d] * depth) as i64)
                        }
                    })
                    .collect()
            })
            .collect();
        Footprint::new(self.ndims, corners)
    }
    /// The offsets read, relative to the cell computed.
    pub fn offsets(&self) -> &[Vec<i64>] {
        &self.offsets
    }

    /// Largest reach below, per dimension.
    pub fn low(&self) -> &[usize] {
        &self.low
    }

    /// Largest reach above, per dimension.
    pub fn high(&self) -> &[usize] {
        &self.high
    }

    /// Whether `extent` holds every cell a launch over `region` reads: the
    /// region widened by the reach, without building the wider shape (the
    /// launch checks ask at every launch). True for an empty region.
    pub fn reads_within(&self, region: &Shape, extent: &Shape) -> bool {
        region.is_empty()
            || (region.ndims() == self.ndims
                && extent.ndims() == self.ndims
                && region
                    .sigs()
                    .iter()
                    .zip(extent.sigs())
                    .enumerate()
                    .all(|(d, (r, e))| {
                        e.contains_sig(&r.expand(self.low[d] as i64, self.high[d] as i64))
                    }))
    }

    /// The active directions (sign vectors among the 3^d, centre excluded) with,
    /// for each, the reach per dimension of the offsets that land there.
    ///
    /// An offset `o` read from a cell near a block's edge can leave the block
    /// in any subset of the dimensions where `o` is non-zero, so it activates
    /// every direction whose signs agree with `o` on such a subset. A star
    /// stencil therefore activates no corner; a box stencil activates all.
    pub fn directions(&self) -> Vec<(Vec<i64>, Vec<i64>)> {
        let mut dirs: Vec<(Vec<i64>, Vec<i64>)> = Vec::new();
        for o in &self.offsets {
            let nz: Vec<usize> = (0..self.ndims).filter(|&d| o[d] != 0).collect();
            for mask in 1u32..(1 << nz.len()) {
                let mut sign = vec![0; self.ndims];
                let mut reach = vec![0; self.ndims];
                for (bit, &d) in nz.iter().enumerate() {
                    if mask & (1 << bit) != 0 {
                        sign[d] = o[d].signum();
                        reach[d] = o[d].abs();
                    }
                }
                match dirs.iter_mut().find(|(s, _)| *s == sign) {
                    Some((_, r)) => r
                        .iter_mut()
                        .zip(&reach)
                        .for_each(|(a, b)| *a = (*a).max(*b)),
                    None => dirs.push((sign, reach)),
                }
            }
        }
        dirs.sort();
        dirs
    }
}

/// Regions exchanged with one peer each iteration, packed in this order into
/// one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The other process.
    pub peer: usize,
    /// The regions, in message order (global indices).
    pub regions: Vec<Shape>,
}

impl Exchange {
    /// Elements in the message.
    pub fn card(&self) -> usize {
        self.regions.iter().map(Shape::card).sum()
    }
}

/// What one virtual process sends and receives, peers in increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VpHalo {
    /// What it sends, one message per peer.
    pub sends: Vec<Exchange>,
    /// What it receives, one message per peer.
    pub recvs: Vec<Exchange>,
}

impl VpHalo {
    /// The widths of `block`'s border bands ([`split_border`]'s) that hold
    /// cells it sends: `width_low[d]` / `width_high[d]` where a send region
    /// reaches into that band, 0 where none does. A side facing the
    /// domain's edge, or a neighbour left without rows, then costs no
    /// strip: no launch and no wait before the halos leave.
    pub fn send_widths(
        &self,
        block: &Shape,
        width_low: &[i64],
        width_high: &[i64],
    ) -> (Vec<i64>, Vec<i64>) {
        let nd = block.ndims();
        let (mut low, mut high) = (vec![0; nd], vec![0; nd]);
        if block.is_empty() {
            return (low, high);
        }
        let sent = |band: Shape| {
            self.sends
                .iter()
                .flat_map(|e| &e.regions)
                .any(|r| r.overlaps(&band))
        };
        for d in 0..nd {
            let s = block.sig(d);
            let lo = Sig::range(s.begin(), (s.begin() + width_low[d]).min(s.end()));
            let hi = Sig::range((s.end() - width_high[d]).max(s.begin()), s.end());
            if !lo.is_empty() && sent(block.with_sig(d, lo)) {
                low[d] = width_low[d];
            }
            if !hi.is_empty() && sent(block.with_sig(d, hi)) {
                high[d] = width_high[d];
            }
        }
        (low, high)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// Every process's halo exchanges for one layout and footprint.
pub struct HaloPlan {
    per_vp: Vec<VpHalo>,
}

/// The halo of `block` in direction `dir`, `reach` deep.
fn halo_region(block: &Shape, dir: &[i64], reach: &[i64]) -> Shape {
    Shape::new(
        block
            .sigs()
            .iter()
            .enumerate()
            .map(|(d, s)| match dir[d] {
                0 => *s,
                -1 => Sig::range(s.begin() - reach[d], s.begin()),
                _ => Sig::range(s.end(), s.end() + reach[d]),
            })
            .collect(),
    )
}

impl VpHalo {
    /// Process `p`'s part of [`HaloPlan::new`], built from its neighbours
    /// alone: what each process of a run needs, without planning the
    /// others' exchanges.
    pub fn new(layout: &Layout, footprint: &Footprint, p: usize) -> Result<VpHalo, HitmapError> {
        check_rank(layout, footprint)?;
        Ok(Reach::new(footprint).vp(layout, p))
    }
}

fn check_rank(layout: &Layout, footprint: &Footprint) -> Result<(), HitmapError> {
    if layout.domain().ndims() != footprint.ndims() {
        return Err(HitmapError::RankMismatch {
            domain: layout.domain().ndims(),
            footprint: footprint.ndims(),
        });
    }
    Ok(())
}

/// A footprint's active directions and reach, as the plans use them.
struct Reach {
    dirs: Vec<(Vec<i64>, Vec<i64>)>,
    low: Vec<i64>,
    high: Vec<i64>,
}

impl Reach {
    fn new(footprint: &Footprint) -> Reach {
        let signed = |r: &[usize]| r.iter().map(|&r| r as i64).collect();
        Reach {
            dirs: footprint.directions(),
            low: signed(footprint.low()),
            high: signed(footprint.high()),
        }
    }

    /// The halo regions of `to`'s block that `from`'s block owns, in
    /// direction order; none when `to`'s reach misses `from`.
    fn regions(&self, layout: &Layout, to: usize, from: usize) -> Vec<Shape> {
        let (bt, bf) = (layout.block(to), layout.block(from));
        if !bt.expand(&self.low, &self.high).overlaps(bf) {
            return Vec::new();
        }
        self.dirs
            .iter()
            .map(|(dir, reach)| halo_region(bt, dir, reach).intersect(bf))
            .filter(|r| !r.is_empty())
            .collect()
    }

    /// Process `p`'s sends and receives, peers in increasing order.
    fn vp(&self, layout: &Layout, p: usize) -> VpHalo {
        let block = layout.block(p);
        let mut halo = VpHalo::default();
        if block.is_empty() {
            return halo;
        }
        // Every halo cell lies within a block grown by the reach, and every
        // cell sent within one grown the other way; the boxes are taken
        // contiguous, so that they hold strided blocks' halos too.
        let grown = |low: &[i64], high: &[i64]| {
            Shape::new(
                block
                    .sigs()
                    .iter()
                    .enumerate()
                    .map(|(d, s)| Sig::range(s.begin() - low[d], s.end() + high[d]))
                    .collect(),
            )
        };
        let exchanges = |candidates: Vec<usize>, regions: &dyn Fn(usize) -> Vec<Shape>| {
            candidates
                .into_iter()
                .filter(|&q| q != p)
                .filter_map(|q| {
                    let regions = regions(q);
                    (!regions.is_empty()).then_some(Exchange { peer: q, regions })
                })
                .collect()
        };
        halo.recvs = exchanges(layout.blocks_meeting(&grown(&self.low, &self.high)), &|q| {
            self.regions(layout, p, q)
        });
        halo.sends = exchanges(layout.blocks_meeting(&grown(&self.high, &self.low)), &|q| {
            self.regions(layout, q, p)
        });
        halo
    }
}

impl HaloPlan {
    /// For each process and active direction, the halo cells that other blocks
    /// own. Corner regions appear only where the footprint reads corners.
    pub fn new(layout: &Layout, footprint: &Footprint) -> Result<HaloPlan, HitmapError> {
        check_rank(layout, footprint)?;
        let reach = Reach::new(footprint);
        Ok(HaloPlan {
            per_vp: (0..layout.procs()).map(|p| reach.vp(layout, p)).collect(),
        })
    }

    /// Process `p`'s exchanges.
    pub fn vp(&self, p: usize) -> &VpHalo {
        &self.per_vp[p]
    }

    /// Number of processes.
    pub fn procs(&self) -> usize {
        self.per_vp.len()
    }
}

/// Splits `block` into border strips (cells within `width_low[d]` of its low
/// edge or `width_high[d]` of its high edge in dimension `d`, for the
/// dimensions where `cut[d]`) and the inner rest. The strips and the inner
/// region are disjoint and together are the block. Used to compute first what
/// neighbours need, and exchange it while the inner region computes.
pub fn split_border(
    block: &Shape,
    width_low: &[i64],
    width_high: &[i64],
    cut: &[bool],
) -> (Vec<Shape>, Shape) {
    let mut rest = block.clone();
    let mut strips = Vec::new();
    if block.is_empty() {
        return (strips, rest);
    }
    for d in 0..block.ndims() {
        if !cut[d] || rest.is_empty() {
            continue;
        }
        let s = rest.sig(d);
        let lo_end = (s.begin() + width_low[d]).min(s.end());
        let hi_begin = (s.end() - width_high[d]).max(lo_end);
        for part in [Sig::range(s.begin(), lo_end), Sig::range(hi_begin, s.end())] {
            if !part.is_empty() {
                strips.push(rest.with_sig(d, part));
            }
        }
        rest = rest.with_sig(d, Sig::range(lo_end, hi_begin));
    }
    (strips, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Partition;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn cross(ndims: usize, r: i64) -> Footprint {
        let mut offs = vec![vec![0; ndims]];
        for d in 0..ndims {
            for k in 1..=r {
                for s in [-k, k] {
                    let mut o = vec![0; ndims];
                    o[d] = s;
                    offs.push(o);
                }
            }
        }
        Footprint::new(ndims, offs)
    }

    /// Three steps of a radius-1 cross read a 7x7 box: reach 3 each way,
    /// corners included; one step is the footprint itself.
    #[test]
    fn deepened_footprints_reach_depth_times_as_far() {
        let fp = cross(2, 1);
        assert_eq!(fp.deepened(1), fp);
        let deep = fp.deepened(3);
        assert_eq!((deep.low(), deep.high()), (&[3, 3][..], &[3, 3][..]));
        assert!(deep.offsets().contains(&vec![-3, 3]));
    }

    fn boxed(ndims: usize) -> Footprint {
        let all = Shape::from_ranges(&vec![(-1, 2); ndims]);
        Footprint::new(ndims, all.iter().collect())
    }

    /// Ranges of a few cells near 0..10, strided now and then: widened by
    /// a reach of up to 2 they land on either side of an extent's edge.
    fn sig_strategy() -> impl Strategy<Value = Sig> {
        (
            -1i64..10,
            0i64..6,
            prop_oneof![4 => Just(1i64), 1 => 2i64..4],
        )
            .prop_map(|(b, n, s)| Sig::new(b, b + n * s, s))
    }

    proptest! {
        /// The allocation-free check says what building the wider region
        /// and asking the extent for it says, strides and empty regions
        /// included.
        #[test]
        fn reads_within_is_the_widened_region_inside_the_extent(
            region in prop::collection::vec(sig_strategy(), 2),
            extent in prop::collection::vec((-1i64..3, 7i64..12), 2),
            offsets in prop::collection::vec(prop::collection::vec(-2i64..3, 2), 1..4),
        ) {
            let fp = Footprint::new(2, offsets);
            let extent = extent.into_iter().map(|(b, e)| Sig::new(b, e, 1)).collect();
            let (region, extent) = (Shape::new(region), Shape::new(extent));
            let low: Vec<i64> = fp.low().iter().map(|&x| x as i64).collect();
            let high: Vec<i64> = fp.high().iter().map(|&x| x as i64).collect();
            prop_assert_eq!(
                fp.reads_within(&region, &extent),
                extent.contains_shape(&region.expand(&low, &high))
            );
        }
    }

    #[test]
    fn corners_only_when_read() {
        let dom = Shape::from_ranges(&[(1, 9), (1, 9)]);
        let l = Layout::new(&dom, Partition::Multi, 4, None).unwrap();
        let star = HaloPlan::new(&l, &cross(2, 1)).unwrap();
        // Block 0 talks to its two edge neighbours only.
        let peers: Vec<_> = star.vp(0).recvs.iter().map(|e| e.peer).collect();
        assert_eq!(peers, vec![1, 2]);
        let full = HaloPlan::new(&l, &boxed(2)).unwrap();
        let peers: Vec<_> = full.vp(0).recvs.iter().map(|e| e.peer).collect();
        assert_eq!(peers, vec![1, 2, 3]);
        assert_eq!(
            full.vp(0).recvs[2].regions,
            vec![Shape::from_ranges(&[(5, 6), (5, 6)])]
        );
    }

    #[test]
    fn border_split() {
        let b = Shape::from_ranges(&[(0, 10), (0, 8)]);
        let (strips, inner) = split_border(&b, &[1, 2], &[2, 1], &[true, false]);
        assert_eq!(inner, Shape::from_ranges(&[(1, 8), (0, 8)]));
        assert_eq!(strips.len(), 2);
        let total: usize = strips.iter().map(Shape::card).sum::<usize>() + inner.card();
        assert_eq!(total, b.card());
    }

    fn footprint_strategy() -> impl Strategy<Value = Footprint> {
        (1usize..4).prop_flat_map(|nd| {
            prop::collection::vec(prop::collection::vec(-2i64..3, nd), 1..6)
                .prop_map(move |offs| Footprint::new(nd, offs))
        })
    }

    /// The plan as first written: every block's halo intersected with every
    /// other block. What the neighbour search must reproduce exactly.
    fn all_pairs_plan(layout: &Layout, footprint: &Footprint) -> Vec<VpHalo> {
        let blocks = layout.blocks();
        let mut per_vp = vec![VpHalo::default(); blocks.len()];
        for (p, bp) in blocks.iter().enumerate() {
            if bp.is_empty() {
                continue;
            }
            for (q, bq) in blocks.iter().enumerate() {
                if q == p || bq.is_empty() {
                    continue;
                }
                let regions = pair_regions(bp, bq, &footprint.directions());
                if !regions.is_empty() {
                    per_vp[q].sends.push(Exchange {
                        peer: p,
                        regions: regions.clone(),
                    });
                    per_vp[p].recvs.push(Exchange { peer: q, regions });
                }
            }
        }
        for v in &mut per_vp {
            v.sends.sort_by_key(|e| e.peer);
        }
        per_vp
    }

    /// The halo regions of `to` that `from` owns, in direction order.
    fn pair_regions(to: &Shape, from: &Shape, dirs: &[(Vec<i64>, Vec<i64>)]) -> Vec<Shape> {
        dirs.iter()
            .map(|(dir, reach)| halo_region(to, dir, reach).intersect(from))
            .filter(|r| !r.is_empty())
            .collect()
    }

    /// Any layout `Layout::new` makes: 1 to 3 dimensions, every partition,
    /// up to 60 processes on a few cells (so many blocks are thin or
    /// empty), weights with zeros among them.
    fn layout_strategy() -> impl Strategy<Value = Layout> {
        (
            prop::collection::vec((-3i64..3, 1i64..15), 1..4),
            1usize..61,
            0usize..4,
            prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.1f64..5.0], 60),
        )
            .prop_map(|(ranges, procs, which, mut weights)| {
                let nd = ranges.len();
                let dom = Shape::from_ranges(
                    &ranges.iter().map(|&(b, n)| (b, b + n)).collect::<Vec<_>>(),
                );
                let part = match which {
                    0 => Partition::Multi,
                    1 => Partition::MultiN(1 + procs % nd),
                    2 => Partition::Single(procs % nd),
                    _ => Partition::Weighted(procs % nd),
                };
                weights.truncate(procs);
                weights[procs / 2] = 1.0;
                Layout::new(&dom, part, procs, Some(&weights)).unwrap()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Planned from each block's neighbours, the plan is the all-pairs
        /// plan: the same peers, regions and order, for the whole plan
        /// and for one process's part alone; deep halos and corners
        /// included.
        #[test]
        fn neighbour_planning_is_the_all_pairs_plan(layout in layout_strategy(),
                                                    offsets in prop::collection::vec(prop::collection::vec(-2i64..3, 3), 1..6),
                                                    depth in 1usize..4) {
            let nd = layout.domain().ndims();
            let fp = Footprint::new(nd, offsets.iter().map(|o| o[..nd].to_vec()).collect());
            for fp in [fp.clone(), fp.deepened(depth)] {
                let want = all_pairs_plan(&layout, &fp);
                let plan = HaloPlan::new(&layout, &fp).unwrap();
                prop_assert_eq!(&plan.per_vp, &want);
                for (p, w) in want.iter().enumerate() {
                    prop_assert_eq!(&VpHalo::new(&layout, &fp, p).unwrap(), w);
                }
            }
        }
    }

    /// One process of a layout of 200,000 is planned from its neighbours:
    /// its exchanges are the all-pairs ones restricted to it (asking every
    /// block about this one process only). Planning the whole layout pair
    /// by pair, as each process once did, would take hours.
    #[test]
    fn one_process_of_a_huge_layout_is_planned_from_its_neighbours() {
        let dom = Shape::from_sizes(&[2000, 2000]);
        let layout = Layout::new(&dom, Partition::Multi, 200_000, None).unwrap();
        let fp = boxed(2).deepened(2);
        let dirs = fp.directions();
        for p in [0, 1, 451, 99_999, 199_999] {
            let got = VpHalo::new(&layout, &fp, p).unwrap();
            let from = |q: usize| pair_regions(layout.block(p), layout.block(q), &dirs);
            let to = |q: usize| pair_regions(layout.block(q), layout.block(p), &dirs);
            let scan = |f: &dyn Fn(usize) -> Vec<Shape>| -> Vec<Exchange> {
                (0..layout.procs())
                    .filter(|&q| q != p && !layout.block(q).is_empty())
                    .map(|q| Exchange {
                        peer: q,
                        regions: f(q),
                    })
                    .filter(|e| !e.regions.is_empty())
                    .collect()
            };
            assert_eq!(got.recvs, scan(&from));
            assert_eq!(got.sends, scan(&to));
            // A box stencil: every neighbour around, corners included.
            assert!(got.recvs.len() >= 3 && got.recvs.len() <= 8);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn halos_bring_exactly_what_is_read(fp in footprint_strategy(),
                                            sizes in prop::collection::vec(1usize..9, 3),
                                            procs in 1usize..7, which in 0usize..3,
                                            weights in prop::collection::vec(0.0f64..4.0, 6)) {
            let nd = fp.ndims();
            let dom = Shape::from_ranges(&sizes[..nd].iter().map(|&n| (2, 2 + n as i64)).collect::<Vec<_>>());
            let w: Vec<f64> = weights[..procs].iter().map(|x| x + 0.01).collect();
            let part = match which { 0 => Partition::Multi, 1 => Partition::Single(procs % nd), _ => Partition::Weighted(0) };
            let l = Layout::new(&dom, part, procs, Some(&w)).unwrap();
            let plan = HaloPlan::new(&l, &fp).unwrap();
            for p in 0..procs {
                let bp = l.block(p);
                // Cells p reads that another block owns: the brute-force truth.
                let mut needed: HashSet<(usize, Vec<i64>)> = HashSet::new();
                for c in bp.iter() {
                    for o in fp.offsets() {
                        let n: Vec<i64> = c.iter().zip(o).map(|(a, b)| a + b).collect();
                        if let Some(q) = (0..procs).find(|&q| q != p && l.block(q).contains(&n)) {
                            needed.insert((q, n));
                        }
                    }
                }
                let mut got: HashSet<(usize, Vec<i64>)> = HashSet::new();
                for e in &plan.vp(p).recvs {
                    for r in &e.regions {
                        prop_assert!(l.block(e.peer).contains_shape(r));
                        for c in r.iter() {
                            prop_assert!(got.insert((e.peer, c)), "a halo cell arrives twice");
                        }
                    }
                    // The sender's side lists the same regions in the same order.
                    let back = plan.vp(e.peer).sends.iter().find(|s| s.peer == p);
                    prop_assert_eq!(back.map(|s| &s.regions), Some(&e.regions));
                }
                prop_assert!(needed.is_subset(&got), "a read cell is never received");
                // Every received cell lies within the footprint's reach of the block.
                let reach = bp.expand(&fp.low().iter().map(|&x| x as i64).collect::<Vec<_>>(),
                                      &fp.high().iter().map(|&x| x as i64).collect::<Vec<_>>());
                prop_assert!(got.iter().all(|(_, c)| reach.contains(c)));
                let sends: usize = plan.vp(p).sends.iter().map(|e| e.card()).sum();
                let want: usize = (0..procs).flat_map(|q| plan.vp(q).recvs.iter().filter(move |e| e.peer == p)).map(|e| e.card()).sum();
                prop_assert_eq!(sends, want);
            }
        }

        /// Strips cut only where cells are sent still hold every cell
        /// sent (the inner region, launched after the sends leave, holds
        /// none), also beside devices without rows.
        #[test]
        fn sent_cells_lie_in_the_strips(fp in footprint_strategy(),
                                        depth in 1i64..4,
                                        sizes in prop::collection::vec(1usize..9, 3),
                                        procs in 1usize..7, which in 0usize..3,
                                        weights in prop::collection::vec(0.0f64..4.0, 6)) {
            // Deep halos: every offset `depth` times as far.
            let nd = fp.ndims();
            let fp = Footprint::new(nd, fp.offsets().iter().map(|o| o.iter().map(|x| x * depth).collect()).collect());
            let dom = Shape::from_ranges(&sizes[..nd].iter().map(|&n| (2, 2 + n as i64)).collect::<Vec<_>>());
            // Weights under 1 become 0: devices dropped from the layout.
            let mut w: Vec<f64> = weights[..procs].iter().map(|&x| if x < 1.0 { 0.0 } else { x }).collect();
            w[0] = w[0].max(0.5);
            let part = match which { 0 => Partition::Multi, 1 => Partition::Single(procs % nd), _ => Partition::Weighted(0) };
            let l = Layout::new(&dom, part, procs, Some(&w)).unwrap();
            let plan = HaloPlan::new(&l, &fp).unwrap();
            let (wl, wh): (Vec<i64>, Vec<i64>) = (
                fp.high().iter().map(|&x| x as i64).collect(),
                fp.low().iter().map(|&x| x as i64).collect(),
            );
            for p in 0..procs {
                let bp = l.block(p);
                let (lo, hi) = plan.vp(p).send_widths(bp, &wl, &wh);
                // Cut where the topology has more than one block, as the
                // skeleton cuts.
                let cut = l.split_along();
                let (strips, inner) = split_border(bp, &lo, &hi, &cut);
                for r in plan.vp(p).sends.iter().flat_map(|e| &e.regions) {
                    prop_assert!(!r.overlaps(&inner), "{r:?} sent from the inner region {inner:?}");
                    prop_assert!(r.iter().all(|c| strips.iter().any(|s| s.contains(&c))));
                }
                if plan.vp(p).sends.is_empty() {
                    prop_assert!(strips.is_empty());
                }
            }
        }

        #[test]
        fn border_split_partitions_the_block(sizes in prop::collection::vec(0usize..9, 1..4),
                                             wl in prop::collection::vec(0i64..4, 3),
                                             wh in prop::collection::vec(0i64..4, 3),
                                             cut in prop::collection::vec(any::<bool>(), 3)) {
            let b = Shape::from_sizes(&sizes);
            let (strips, inner) = split_border(&b, &wl, &wh, &cut);
            for c in b.iter() {
                let n = strips.iter().filter(|s| s.contains(&c)).count() + usize::from(inner.contains(&c));
                prop_assert_eq!(n, 1);
                if inner.contains(&c) {
                    for d in 0..b.ndims() {
                        if cut[d] {
                            prop_assert!(c[d] >= b.sig(d).begin() + wl[d] && c[d] < b.sig(d).end() - wh[d]);
                        }
                    }
                }
            }
        }
    }
}

//! Mapping a domain onto virtual processes, with EPSILOD's partition names.

use crate::error::HitmapError;
use crate::shape::Shape;
use crate::sig::Sig;
use crate::topology::Topology;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;

/// How a domain is cut into blocks (EPSILOD's `-p` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// `m`: blocks in every dimension, on a grid as square as possible.
    Multi,
    /// `m<n>`: blocks in the first `n` dimensions.
    MultiN(usize),
    /// `s<d>`: regular blocks along dimension `d` only.
    Single(usize),
    /// `w<d>`: weighted blocks along dimension `d` only (what ALB moves).
    Weighted(usize),
}

impl FromStr for Partition {
    type Err = HitmapError;

    fn from_str(s: &str) -> Result<Partition, HitmapError> {
        let bad = || HitmapError::UnknownPartition(s.to_string());
        let num = |t: &str| t.parse::<usize>().map_err(|_| bad());
        match s.split_at_checked(1) {
            Some(("m", "")) => Ok(Partition::Multi),
            Some(("m", n)) => match num(n)? {
                0 => Err(bad()),
                n => Ok(Partition::MultiN(n)),
            },
            Some(("s", d)) => Ok(Partition::Single(num(d)?)),
            Some(("w", d)) => Ok(Partition::Weighted(num(d)?)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Multi => write!(f, "m"),
            Partition::MultiN(n) => write!(f, "m{n}"),
            Partition::Single(d) => write!(f, "s{d}"),
            Partition::Weighted(d) => write!(f, "w{d}"),
        }
    }
}

/// One block of the domain per virtual process (possibly empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    domain: Shape,
    partition: Partition,
    topology: Topology,
    /// Dimensions of the domain the topology's axes cut, in order.
    cut_dims: Vec<usize>,
    /// Shared: every process keeps a copy of the layout, and thousands of
    /// copies of thousands of blocks would outweigh small tiles.
    blocks: Arc<[Shape]>,
    /// Per cut axis, the bounds of its coordinates' ranges (`dims + 1`
    /// of them, never decreasing; an empty range repeats its bound): the
    /// blocks a region meets are found by binary search, not by asking
    /// every block.
    bounds: Arc<[Vec<i64>]>,
}

/// `begin(p) = p*(N/D) + min(p, N%D)` with `D = min(N, P)`; processes `p >= D`
/// get nothing.
pub fn regular_block(sig: Sig, p: usize, procs: usize) -> Sig {
    let n = sig.card();
    let d = n.min(procs);
    if p >= d {
        return Sig::EMPTY;
    }
    let start = |q: usize| q * (n / d) + q.min(n % d);
    Sig::range(
        sig.begin() + start(p) as i64,
        sig.begin() + start(p + 1) as i64,
    )
}

/// Splits `sig` by cumulative rounding of the weights: boundary `k` is
/// `round(N * W_k / W)` with `W_k` the sum of the first `k` weights, so every
/// index goes to exactly one process and a zero weight gets none.
pub fn weighted_blocks(sig: Sig, weights: &[f64]) -> Result<Vec<Sig>, HitmapError> {
    check_weights(weights)?;
    let total: f64 = weights.iter().sum();
    if total.is_infinite() {
        // Weights near f64::MAX sum past it; divided by the largest they
        // keep their ratios (finite sums are cut as ever, to the bit).
        let largest = weights.iter().copied().fold(0.0, f64::max);
        let scaled: Vec<f64> = weights.iter().map(|w| w / largest).collect();
        return weighted_blocks(sig, &scaled);
    }
    let n = sig.card();
    let mut acc = 0.0;
    let mut bounds = Vec::with_capacity(weights.len() + 1);
    bounds.push(0usize);
    for (k, w) in weights.iter().enumerate() {
        acc += w;
        let b = if k + 1 == weights.len() {
            n
        } else {
            (((n as f64) * acc / total).round() as usize).min(n)
        };
        // Monotone even if rounding wobbles: a zero weight adds 0.0 exactly.
        bounds.push(b.max(*bounds.last().expect("non-empty")));
    }
    Ok(bounds
        .windows(2)
        .map(|w| Sig::range(sig.begin() + w[0] as i64, sig.begin() + w[1] as i64))
        .collect())
}

fn check_weights(weights: &[f64]) -> Result<(), HitmapError> {
    for (index, &value) in weights.iter().enumerate() {
        if !value.is_finite() || value < 0.0 {
            return Err(HitmapError::BadWeight { index, value });
        }
    }
    if weights.iter().all(|&w| w == 0.0) {
        return Err(HitmapError::AllWeightsZero {
            count: weights.len(),
        });
    }
    Ok(())
}

impl Layout {
    /// Cuts `domain` for `procs` processes. `weights` (one per process) are used
    /// by `w<d>` only; `None` there means equal weights.
    pub fn new(
        domain: &Shape,
        partition: Partition,
        procs: usize,
        weights: Option<&[f64]>,
    ) -> Result<Layout, HitmapError> {
        if procs == 0 {
            return Err(HitmapError::NoProcesses);
        }
        let nd = domain.ndims();
        let dim_ok = |d: usize| {
            if d < nd {
                Ok(d)
            } else {
                Err(HitmapError::PartitionDim { dim: d, ndims: nd })
            }
        };
        let (topology, cut_dims) = match partition {
            Partition::Multi => (Topology::square(procs, nd), (0..nd).collect()),
            Partition::MultiN(n) => {
                if n > nd {
                    return Err(HitmapError::PartitionDims { cut: n, ndims: nd });
                }
                (Topology::square(procs, n), (0..n).collect())
            }
            Partition::Single(d) | Partition::Weighted(d) => {
                (Topology::line(procs), vec![dim_ok(d)?])
            }
        };
        // Per cut axis, the range of each coordinate along it.
        let axis_sigs: Vec<Vec<Sig>> = if let Partition::Weighted(d) = partition {
            let equal = vec![1.0; procs];
            let w = weights.unwrap_or(&equal);
            if w.len() != procs {
                return Err(HitmapError::WeightCount {
                    expected: procs,
                    got: w.len(),
                });
            }
            vec![weighted_blocks(domain.sig(d), w)?]
        } else {
            cut_dims
                .iter()
                .zip(topology.dims())
                .map(|(&d, &n)| (0..n).map(|c| regular_block(domain.sig(d), c, n)).collect())
                .collect()
        };
        let blocks = (0..procs)
            .map(|p| {
                let c = topology.coords(p);
                let mut b = domain.clone();
                for (axis, &d) in cut_dims.iter().enumerate() {
                    b = b.with_sig(d, axis_sigs[axis][c[axis]]);
                }
                b
            })
            .collect();
        let bounds = cut_dims
            .iter()
            .zip(&axis_sigs)
            .map(|(&d, sigs)| {
                let mut b = vec![domain.sig(d).begin()];
                for s in sigs {
                    let last = *b.last().expect("non-empty");
                    b.push(if s.is_empty() {
                        last
                    } else {
                        s.end().max(last)
                    });
                }
                b
            })
            .collect();
        Ok(Layout {
            domain: domain.clone(),
            partition,
            topology,
            cut_dims,
            blocks,
            bounds,
        })
    }

    /// The whole index domain.
    pub fn domain(&self) -> &Shape {
        &self.domain
    }
    /// How the domain was cut.
    pub fn partition(&self) -> Partition {
        self.partition
    }
    /// The grid of processes.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }
    /// Number of processes (blocks).
    pub fn procs(&self) -> usize {
        self.blocks.len()
    }
    /// Every process's block, by rank (possibly empty).
    pub fn blocks(&self) -> &[Shape] {
        &self.blocks
    }
    /// Process `p`'s block.
    pub fn block(&self, p: usize) -> &Shape {
        &self.blocks[p]
    }
    /// Dimensions that the layout cuts.
    pub fn cut_dims(&self) -> &[usize] {
        &self.cut_dims
    }

    /// The processes whose blocks share a cell with `region`, by
    /// increasing rank. Binary search along each cut axis finds the
    /// coordinates that can, so a halo or a move is planned from a
    /// process's few neighbours, not from every block.
    pub fn blocks_meeting(&self, region: &Shape) -> Vec<usize> {
        let axes = self.topology.dims();
        if region.is_empty() || region.ndims() != self.domain.ndims() {
            return Vec::new();
        }
        let ranges: Vec<Range<usize>> = (0..axes.len())
            .map(
                |axis| match (self.cut_dims.get(axis), self.bounds.get(axis)) {
                    (Some(&d), Some(b)) => {
                        let s = region.sig(d);
                        // Coordinate c spans b[c]..b[c + 1]: those ending past
                        // the region's first cell and starting before its end.
                        let first = b[1..].partition_point(|&e| e <= s.begin());
                        let end = b[..axes[axis]].partition_point(|&e| e < s.end());
                        first..end.max(first)
                    }
                    _ => 0..axes[axis],
                },
            )
            .collect();
        let mut found = Vec::new();
        let mut coords: Vec<usize> = ranges.iter().map(|r| r.start).collect();
        if ranges.iter().any(|r| r.is_empty()) {
            return found;
        }
        // Row-major over the coordinate box: ranks come out increasing.
        loop {
            let q = self.topology.rank(&coords);
            let b = &self.blocks[q];
            if !b.is_empty() && b.overlaps(region) {
                found.push(q);
            }
            let mut axis = coords.len();
            loop {
                if axis == 0 {
                    return found;
                }
                axis -= 1;
                coords[axis] += 1;
                if coords[axis] < ranges[axis].end {
                    break;
                }
                coords[axis] = ranges[axis].start;
            }
        }
    }

    /// Per dimension of the domain, whether blocks have neighbours along
    /// it: a cut dimension with more than one block across it.
    pub fn split_along(&self) -> Vec<bool> {
        let topo = self.topology.dims();
        (0..self.domain.ndims())
            .map(|d| {
                self.cut_dims
                    .iter()
                    .position(|&c| c == d)
                    .is_some_and(|axis| topo[axis] > 1)
            })
            .collect()
    }

    /// Errors when a non-empty block is thinner, in a dimension cut among
    /// several processes, than the stencil border there (`max(low, high)`),
    /// since its neighbours' halos would then need more than one block.
    pub fn check_width(&self, low: &[usize], high: &[usize]) -> Result<(), HitmapError> {
        for (axis, &d) in self.cut_dims.iter().enumerate() {
            if self.topology.dims()[axis] < 2 {
                continue;
            }
            let border = low[d].max(high[d]);
            for (vp, b) in self.blocks.iter().enumerate() {
                let width = b.sig(d).card();
                if !b.is_empty() && width < border {
                    return Err(HitmapError::TooThin {
                        vp,
                        dim: d,
                        width,
                        border,
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_partitions() {
        assert_eq!("m".parse(), Ok(Partition::Multi));
        assert_eq!("m2".parse(), Ok(Partition::MultiN(2)));
        assert_eq!("s1".parse(), Ok(Partition::Single(1)));
        assert_eq!("w0".parse(), Ok(Partition::Weighted(0)));
        for bad in ["", "x", "m0", "s", "w-1", "sx", "mm"] {
            assert_eq!(
                bad.parse::<Partition>(),
                Err(HitmapError::UnknownPartition(bad.into()))
            );
        }
    }

    /// Weights whose sum overflows f64 cut as their ratios do: equal ones
    /// equally, not everything to the last.
    #[test]
    fn huge_weights_keep_their_ratios() {
        let rows = |w: &[f64]| -> Vec<usize> {
            weighted_blocks(Sig::range(0, 32), w)
                .unwrap()
                .iter()
                .map(|b| b.card())
                .collect()
        };
        assert_eq!(rows(&[1e308, 1e308]), vec![16, 16]);
        assert_eq!(
            rows(&[f64::MAX, 0.0, f64::MAX / 3.0]),
            rows(&[3.0, 0.0, 1.0])
        );
    }

    #[test]
    fn epsilod_regular_blocks() {
        let s = Sig::range(1, 11); // N = 10
        let got: Vec<_> = (0..4).map(|p| regular_block(s, p, 4)).collect();
        assert_eq!(
            got,
            vec![
                Sig::range(1, 4),
                Sig::range(4, 7),
                Sig::range(7, 9),
                Sig::range(9, 11)
            ]
        );
        // More processes than rows: D = N, the rest get nothing.
        let s = Sig::range(0, 2);
        assert_eq!(regular_block(s, 1, 3), Sig::range(1, 2));
        assert_eq!(regular_block(s, 2, 3), Sig::EMPTY);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let dom = Shape::from_sizes(&[8, 8]);
        assert_eq!(
            Layout::new(&dom, Partition::Single(2), 2, None),
            Err(HitmapError::PartitionDim { dim: 2, ndims: 2 })
        );
        let e = Layout::new(&dom, Partition::MultiN(99), 2, None).unwrap_err();
        assert_eq!(e, HitmapError::PartitionDims { cut: 99, ndims: 2 });
        assert_eq!(
            e.to_string(),
            "m99 cuts the first 99 dimensions, but the domain has 2 (use m1..m2, or m for all)"
        );
        assert_eq!(
            Layout::new(&dom, Partition::Weighted(0), 2, Some(&[1.0])),
            Err(HitmapError::WeightCount {
                expected: 2,
                got: 1
            })
        );
        assert!(matches!(
            Layout::new(&dom, Partition::Weighted(0), 2, Some(&[1.0, -1.0])),
            Err(HitmapError::BadWeight { index: 1, .. })
        ));
        assert_eq!(
            Layout::new(&dom, Partition::Weighted(0), 2, Some(&[0.0, 0.0])),
            Err(HitmapError::AllWeightsZero { count: 2 })
        );
        assert_eq!(
            Layout::new(&dom, Partition::Multi, 0, None),
            Err(HitmapError::NoProcesses)
        );
        let thin = Layout::new(&dom, Partition::Weighted(0), 2, Some(&[1.0, 7.0])).unwrap();
        assert_eq!(
            thin.check_width(&[2, 2], &[2, 2]),
            Err(HitmapError::TooThin {
                vp: 0,
                dim: 0,
                width: 1,
                border: 2
            })
        );
        assert!(thin.check_width(&[1, 1], &[1, 1]).is_ok());
    }

    fn covers_exactly_once(l: &Layout) -> bool {
        l.domain()
            .iter()
            .all(|i| l.blocks().iter().filter(|b| b.contains(&i)).count() == 1)
            && l.blocks().iter().map(Shape::card).sum::<usize>() == l.domain().card()
    }

    proptest! {
        /// The binary search finds exactly the blocks a region meets, in
        /// rank order, whatever the partition: empty blocks never, and
        /// regions that are strided, empty or outside the domain too.
        #[test]
        fn blocks_meeting_is_every_block_asked(dims in prop::collection::vec(1i64..12, 1..4),
                                               procs in 1usize..50, which in 0usize..4,
                                               weights in prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..4.0], 50),
                                               region in prop::collection::vec((-4i64..14, 0i64..8, 1i64..4), 3)) {
            let nd = dims.len();
            let dom = Shape::from_ranges(&dims.iter().map(|&n| (1, 1 + n)).collect::<Vec<_>>());
            let part = match which {
                0 => Partition::Multi,
                1 => Partition::MultiN(1 + procs % nd),
                2 => Partition::Single(procs % nd),
                _ => Partition::Weighted(procs % nd),
            };
            let mut w = weights[..procs].to_vec();
            w[0] = 1.0;
            let l = Layout::new(&dom, part, procs, Some(&w)).unwrap();
            let region = Shape::new(region[..nd].iter().map(|&(b, n, s)| Sig::new(b, b + n, s)).collect());
            let want: Vec<usize> = (0..procs)
                .filter(|&q| !l.block(q).intersect(&region).is_empty())
                .collect();
            prop_assert_eq!(l.blocks_meeting(&region), want);
        }
    }

    proptest! {
        #[test]
        fn regular_layouts_cover_once(dims in prop::collection::vec(1usize..9, 1..5),
                                      offset in -3i64..3, procs in 1usize..10, which in 0usize..3) {
            let dom = Shape::from_ranges(&dims.iter().map(|&n| (offset, offset + n as i64)).collect::<Vec<_>>());
            let part = match which {
                0 => Partition::Multi,
                1 => Partition::MultiN(1 + procs % dims.len()),
                _ => Partition::Single(procs % dims.len()),
            };
            let l = Layout::new(&dom, part, procs, None).unwrap();
            prop_assert_eq!(l.procs(), procs);
            prop_assert!(covers_exactly_once(&l));
        }

        #[test]
        fn weighted_layouts_cover_once(n in 1usize..200, weights in prop::collection::vec(0.0f64..10.0, 1..8),
                                       zero in prop::collection::vec(any::<bool>(), 8)) {
            let w: Vec<f64> = weights.iter().zip(&zero).map(|(&w, &z)| if z { 0.0 } else { w }).collect();
            prop_assume!(w.iter().any(|&x| x > 0.0));
            let dom = Shape::from_ranges(&[(2, 2 + n as i64), (0, 3)]);
            let l = Layout::new(&dom, Partition::Weighted(0), w.len(), Some(&w)).unwrap();
            prop_assert!(covers_exactly_once(&l));
            let total: f64 = w.iter().sum();
            for (p, b) in l.blocks().iter().enumerate() {
                if w[p] == 0.0 { prop_assert!(b.is_empty()); }
                // Cumulative rounding: each share is within one row of its ideal.
                let ideal = n as f64 * w[p] / total;
                prop_assert!((b.sig(0).card() as f64 - ideal).abs() <= 1.0 + 1e-9);
            }
        }
    }
}

//! n-dimensional index domains: one `Sig` per dimension.

use crate::sig::Sig;
use std::fmt;

/// The cartesian product of one `Sig` per dimension, iterated row-major
/// (the last dimension varies fastest).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    sigs: Vec<Sig>,
}

impl Shape {
    /// The product of `sigs`; empty if any is.
    pub fn new(sigs: Vec<Sig>) -> Shape {
        // Keep one canonical empty form per dimension count so `==` is set equality.
        if sigs.iter().any(Sig::is_empty) {
            return Shape {
                sigs: vec![Sig::EMPTY; sigs.len()],
            };
        }
        Shape { sigs }
    }

    /// `0..n` in every dimension.
    pub fn from_sizes(sizes: &[usize]) -> Shape {
        Shape::new(sizes.iter().map(|&n| Sig::range(0, n as i64)).collect())
    }

    /// Contiguous ranges `begin..end` per dimension.
    pub fn from_ranges(ranges: &[(i64, i64)]) -> Shape {
        Shape::new(ranges.iter().map(|&(b, e)| Sig::range(b, e)).collect())
    }

    /// The empty shape of `ndims` dimensions.
    pub fn empty(ndims: usize) -> Shape {
        Shape {
            sigs: vec![Sig::EMPTY; ndims],
        }
    }

    /// Number of dimensions.
    pub fn ndims(&self) -> usize {
        self.sigs.len()
    }
    /// The index set of every dimension.
    pub fn sigs(&self) -> &[Sig] {
        &self.sigs
    }
    /// The index set of dimension `d`.
    pub fn sig(&self, d: usize) -> Sig {
        self.sigs[d]
    }

    /// Number of elements per dimension.
    pub fn extents(&self) -> Vec<usize> {
        self.sigs.iter().map(Sig::card).collect()
    }

    /// Number of elements.
    pub fn card(&self) -> usize {
        if self.sigs.is_empty() {
            return 0;
        }
        self.sigs.iter().map(Sig::card).product()
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.card() == 0
    }

    /// Whether every dimension has stride 1.
    pub fn is_contiguous(&self) -> bool {
        self.sigs.iter().all(|s| s.stride() == 1)
    }

    /// Whether `idx` (one index per dimension) is an element.
    pub fn contains(&self, idx: &[i64]) -> bool {
        idx.len() == self.ndims() && self.sigs.iter().zip(idx).all(|(s, &i)| s.contains(i))
    }

    /// Whether every element of `other` is an element.
    pub fn contains_shape(&self, other: &Shape) -> bool {
        other.is_empty()
            || (other.ndims() == self.ndims()
                && self
                    .sigs
                    .iter()
                    .zip(&other.sigs)
                    .all(|(a, b)| a.contains_sig(b)))
    }

    /// Whether the shapes share an element: `!self.intersect(other).is_empty()`
    /// without building the intersection (plans test every pair of blocks).
    pub fn overlaps(&self, other: &Shape) -> bool {
        self.ndims() == other.ndims()
            && self
                .sigs
                .iter()
                .zip(&other.sigs)
                .all(|(a, b)| !a.intersect(b).is_empty())
    }

    /// Elements in both shapes. Panics when the dimension counts differ: that is a
    /// programming error, never a user input.
    pub fn intersect(&self, other: &Shape) -> Shape {
        assert_eq!(
            self.ndims(),
            other.ndims(),
            "intersecting shapes of different rank"
        );
        Shape::new(
            self.sigs
                .iter()
                .zip(&other.sigs)
                .map(|(a, b)| a.intersect(b))
                .collect(),
        )
    }

    /// Grows dimension d by `low[d]` elements below and `high[d]` above.
    pub fn expand(&self, low: &[i64], high: &[i64]) -> Shape {
        if self.is_empty() {
            return self.clone();
        }
        Shape::new(
            self.sigs
                .iter()
                .enumerate()
                .map(|(d, s)| s.expand(low[d], high[d]))
                .collect(),
        )
    }

    /// Shrinks dimension d by `low[d]` elements below and `high[d]` above.
    pub fn shrink(&self, low: &[i64], high: &[i64]) -> Shape {
        let neg = |v: &[i64]| v.iter().map(|x| -x).collect::<Vec<_>>();
        self.expand(&neg(low), &neg(high))
    }

    /// This shape with dimension `d` replaced.
    pub fn with_sig(&self, d: usize, sig: Sig) -> Shape {
        let mut sigs = self.sigs.clone();
        sigs[d] = sig;
        Shape::new(sigs)
    }

    /// `self` cut along dimension 0 into consecutive slabs of at most
    /// `max_cells` elements each (but never less than one index of
    /// dimension 0), in row-major order: concatenated, their elements are
    /// `self`'s in order. None when `self` is empty. A large message sent
    /// as slabs is packed, sent and unpacked a slab at a time, so its
    /// buffers are reused and both ends work at once.
    pub fn slabs(&self, max_cells: usize) -> Vec<Shape> {
        if self.is_empty() {
            return Vec::new();
        }
        if self.ndims() == 0 {
            return vec![self.clone()];
        }
        let s0 = self.sig(0);
        let per = self.card() / s0.card();
        let step = (max_cells / per).max(1);
        (0..s0.card())
            .step_by(step)
            .map(|k| {
                let begin = s0.begin() + k as i64 * s0.stride();
                let end = s0.begin() + (k + step).min(s0.card()) as i64 * s0.stride();
                self.with_sig(0, Sig::new(begin, end, s0.stride()))
            })
            .collect()
    }

    /// The elements of `self` not in `other`, as disjoint shapes. Both must be
    /// contiguous (stride 1).
    pub fn difference(&self, other: &Shape) -> Vec<Shape> {
        let mut rest = self.clone();
        let mut parts = Vec::new();
        if self.is_empty() {
            return parts;
        }
        if self.intersect(other).is_empty() {
            return vec![self.clone()];
        }
        for d in 0..self.ndims() {
            let (r, o) = (rest.sig(d), other.sig(d));
            let below = Sig::range(r.begin(), o.begin().min(r.end()));
            let above = Sig::range(o.end().max(r.begin()), r.end());
            for part in [below, above] {
                if !part.is_empty() {
                    parts.push(rest.with_sig(d, part));
                }
            }
            rest = rest.with_sig(d, r.intersect(&o));
        }
        parts
    }

    /// Calls `f` with each index in row-major order, the same buffer
    /// updated in place: no allocation per index, which [`Shape::iter`]
    /// pays (filling a 67 M-cell tile by `iter` spent more time in malloc
    /// and free than in the init function).
    pub fn for_each_index(&self, mut f: impl FnMut(&[i64])) {
        if self.is_empty() {
            return;
        }
        let n = self.sigs.len();
        let mut idx: Vec<i64> = self.sigs.iter().map(Sig::begin).collect();
        if n == 0 {
            return f(&idx);
        }
        let last = &self.sigs[n - 1];
        loop {
            idx[n - 1] = last.begin();
            while idx[n - 1] < last.end() {
                f(&idx);
                idx[n - 1] += last.stride();
            }
            let mut d = n - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += self.sigs[d].stride();
                if idx[d] < self.sigs[d].end() {
                    break;
                }
                idx[d] = self.sigs[d].begin();
            }
        }
    }

    /// Element indices in row-major order.
    pub fn iter(&self) -> ShapeIter {
        ShapeIter {
            sigs: self.sigs.clone(),
            next: (!self.is_empty()).then(|| self.sigs.iter().map(Sig::begin).collect()),
        }
    }
}

/// Row-major iterator over a `Shape`'s indices.
pub struct ShapeIter {
    sigs: Vec<Sig>,
    next: Option<Vec<i64>>,
}

impl Iterator for ShapeIter {
    type Item = Vec<i64>;

    fn next(&mut self) -> Option<Vec<i64>> {
        let cur = self.next.take()?;
        let mut nxt = cur.clone();
        for d in (0..self.sigs.len()).rev() {
            nxt[d] += self.sigs[d].stride();
            if nxt[d] < self.sigs[d].end() {
                self.next = Some(nxt);
                return Some(cur);
            }
            nxt[d] = self.sigs[d].begin();
        }
        Some(cur)
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (d, s) in self.sigs.iter().enumerate() {
            if d > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{s}")?;
        }
        write!(f, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn row_major_iteration() {
        let s = Shape::new(vec![Sig::range(1, 3), Sig::new(0, 5, 2)]);
        let v: Vec<_> = s.iter().collect();
        assert_eq!(
            v,
            vec![
                vec![1, 0],
                vec![1, 2],
                vec![1, 4],
                vec![2, 0],
                vec![2, 2],
                vec![2, 4]
            ]
        );
        assert_eq!(s.card(), 6);
        assert_eq!(Shape::from_sizes(&[3, 0, 2]).iter().count(), 0);
    }

    #[test]
    fn expand_shrink() {
        let s = Shape::from_ranges(&[(2, 5), (0, 4)]);
        let e = s.expand(&[1, 2], &[0, 1]);
        assert_eq!(e, Shape::from_ranges(&[(1, 5), (-2, 5)]));
        assert_eq!(e.shrink(&[1, 2], &[0, 1]), s);
        assert!(s.shrink(&[2, 0], &[2, 0]).is_empty());
    }

    fn shape_strategy() -> impl Strategy<Value = Shape> {
        prop::collection::vec((-5i64..5, 0i64..7, 1i64..3), 1..4).prop_map(|v| {
            Shape::new(
                v.into_iter()
                    .map(|(b, l, s)| Sig::new(b, b + l, s))
                    .collect(),
            )
        })
    }

    proptest! {
        #[test]
        fn intersection_matches_membership(a in shape_strategy(), bsig in shape_strategy()) {
            prop_assume!(a.ndims() == bsig.ndims());
            let i = a.intersect(&bsig);
            let want: Vec<_> = a.iter().filter(|x| bsig.contains(x)).collect();
            let got: Vec<_> = i.iter().collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(i.card(), a.iter().filter(|x| bsig.contains(x)).count());
        }

        #[test]
        fn slabs_are_the_shape_in_order(a in shape_strategy(), max in 0usize..40) {
            let slabs = a.slabs(max);
            let joined: Vec<Vec<i64>> = slabs.iter().flat_map(Shape::iter).collect();
            prop_assert_eq!(joined, a.iter().collect::<Vec<_>>());
            let row = if a.is_empty() { 0 } else { a.card() / a.sig(0).card() };
            for s in &slabs {
                prop_assert!(!s.is_empty());
                prop_assert!(s.card() <= max.max(row));
            }
            // As few as the limit allows: all but the last are full, as
            // many whole rows as fit (at least one).
            if let Some((_, full)) = slabs.split_last() {
                let most = (max / row.max(1)).max(1) * row;
                for s in full {
                    prop_assert_eq!(s.card(), most);
                }
            }
        }

        #[test]
        fn difference_is_set_difference(
            (a, b) in (1usize..4).prop_flat_map(|n| {
                let one = prop::collection::vec((-5i64..5, 0i64..7), n)
                    .prop_map(|v| Shape::from_ranges(&v.iter().map(|&(b, l)| (b, b + l)).collect::<Vec<_>>()));
                (one.clone(), one)
            })
        ) {
            let parts = a.difference(&b);
            for x in a.iter() {
                let n = parts.iter().filter(|p| p.contains(&x)).count();
                prop_assert_eq!(n, usize::from(!b.contains(&x)));
            }
            prop_assert!(parts.iter().all(|p| a.contains_shape(p)));
        }

        #[test]
        fn the_index_walk_is_the_iteration(a in shape_strategy()) {
            let mut walked = Vec::new();
            a.for_each_index(|i| walked.push(i.to_vec()));
            prop_assert_eq!(walked, a.iter().collect::<Vec<_>>());
        }

        #[test]
        fn iteration_count_and_membership(a in shape_strategy()) {
            let v: Vec<_> = a.iter().collect();
            prop_assert_eq!(v.len(), a.card());
            prop_assert!(v.iter().all(|x| a.contains(x)));
            prop_assert!(v.windows(2).all(|w| w[0] < w[1]));
        }
    }
}

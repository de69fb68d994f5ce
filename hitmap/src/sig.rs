//! One-dimensional index sets: `begin:end:stride`, half-open.

use std::fmt;

/// The indices `begin, begin + stride, ...` strictly below `end`.
///
/// A `Sig` is kept in canonical form (empty sets are `0:0:1`, `end` is one past
/// the last element, a single element has stride 1) so that `==` is set equality.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sig {
    begin: i64,
    end: i64,
    stride: i64,
}

impl Sig {
    /// The empty set.
    pub const EMPTY: Sig = Sig {
        begin: 0,
        end: 0,
        stride: 1,
    };

    /// `begin:end:stride`. A stride below 1 is taken as 1.
    pub fn new(begin: i64, end: i64, stride: i64) -> Sig {
        let stride = stride.max(1);
        if end <= begin {
            return Sig::EMPTY;
        }
        let card = (end - begin + stride - 1) / stride;
        let last = begin + (card - 1) * stride;
        Sig {
            begin,
            end: last + 1,
            stride: if card == 1 { 1 } else { stride },
        }
    }

    /// The contiguous range `begin..end`.
    pub fn range(begin: i64, end: i64) -> Sig {
        Sig::new(begin, end, 1)
    }

    /// The first element (0 when empty).
    pub fn begin(&self) -> i64 {
        self.begin
    }
    /// One past the last element.
    pub fn end(&self) -> i64 {
        self.end
    }
    /// Distance between consecutive elements.
    pub fn stride(&self) -> i64 {
        self.stride
    }
    /// The last element, `None` when empty.
    pub fn last(&self) -> Option<i64> {
        (!self.is_empty()).then_some(self.end - 1)
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.end <= self.begin
    }

    /// Number of elements.
    pub fn card(&self) -> usize {
        if self.is_empty() {
            0
        } else {
            ((self.end - self.begin + self.stride - 1) / self.stride) as usize
        }
    }

    /// Whether `i` is an element.
    pub fn contains(&self, i: i64) -> bool {
        i >= self.begin && i < self.end && (i - self.begin) % self.stride == 0
    }

    /// Whether every element of `other` is in `self`.
    pub fn contains_sig(&self, other: &Sig) -> bool {
        if other.is_empty() {
            return true;
        }
        self.contains(other.begin)
            && self.contains(other.end - 1)
            && (other.card() == 1 || other.stride % self.stride == 0)
    }

    /// The elements in both sets (a `Sig` again: strides combine by their lcm).
    pub fn intersect(&self, other: &Sig) -> Sig {
        if self.is_empty() || other.is_empty() {
            return Sig::EMPTY;
        }
        let lo = self.begin.max(other.begin);
        let hi = self.end.min(other.end);
        if lo >= hi {
            return Sig::EMPTY;
        }
        if self.stride == 1 && other.stride == 1 {
            return Sig::range(lo, hi);
        }
        // Chinese remainder: x = b1 (mod s1), x = b2 (mod s2).
        let (s1, s2) = (self.stride as i128, other.stride as i128);
        let (b1, b2) = (self.begin as i128, other.begin as i128);
        let (g, p, _) = ext_gcd(s1, s2);
        if (b2 - b1) % g != 0 {
            return Sig::EMPTY;
        }
        let m = s2 / g;
        let k = ((b2 - b1) / g % m * (p % m)).rem_euclid(m);
        let x0 = b1 + s1 * k;
        let l = s1 / g * s2;
        let first = x0 + (lo as i128 - x0).div_euclid(l) * l;
        let first = if first < lo as i128 { first + l } else { first };
        if first >= hi as i128 {
            return Sig::EMPTY;
        }
        Sig::new(first as i64, hi, l as i64)
    }

    /// Grows the set by `low` elements below and `high` above (negative shrinks).
    pub fn expand(&self, low: i64, high: i64) -> Sig {
        if self.is_empty() {
            return Sig::EMPTY;
        }
        Sig::new(
            self.begin - low * self.stride,
            self.end + high * self.stride,
            self.stride,
        )
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + Clone {
        (self.begin..self.end).step_by(self.stride as usize)
    }

    /// Position of `i` within the set (`i` must be an element).
    pub fn position(&self, i: i64) -> Option<usize> {
        self.contains(i)
            .then(|| ((i - self.begin) / self.stride) as usize)
    }
}

fn ext_gcd(a: i128, b: i128) -> (i128, i128, i128) {
    if b == 0 {
        (a, 1, 0)
    } else {
        let (g, x, y) = ext_gcd(b, a % b);
        (g, y, x - (a / b) * y)
    }
}

impl fmt::Debug for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stride == 1 {
            write!(f, "{}:{}", self.begin, self.end)
        } else {
            write!(f, "{}:{}:{}", self.begin, self.end, self.stride)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(s: &Sig) -> Vec<i64> {
        s.iter().collect()
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(Sig::new(5, 3, 2), Sig::EMPTY);
        assert_eq!(Sig::new(0, 10, 3), Sig::new(0, 10, 3));
        assert_eq!(set(&Sig::new(0, 10, 3)), vec![0, 3, 6, 9]);
        assert_eq!(Sig::new(0, 10, 3).end(), 10);
        assert_eq!(Sig::new(0, 9, 3).end(), 7);
        assert_eq!(Sig::new(4, 5, 7), Sig::range(4, 5));
        assert_eq!(Sig::new(1, 8, 3).card(), 3);
    }

    #[test]
    fn strided_intersection() {
        let a = Sig::new(0, 100, 4);
        let b = Sig::new(2, 100, 6);
        assert_eq!(set(&a.intersect(&b)), vec![8, 20, 32, 44, 56, 68, 80, 92]);
        assert!(Sig::new(0, 100, 2)
            .intersect(&Sig::new(1, 100, 2))
            .is_empty());
    }

    proptest! {
        #[test]
        fn intersection_is_set_intersection(b1 in -20i64..20, l1 in 0i64..40, s1 in 1i64..6,
                                            b2 in -20i64..20, l2 in 0i64..40, s2 in 1i64..6) {
            let a = Sig::new(b1, b1 + l1, s1);
            let b = Sig::new(b2, b2 + l2, s2);
            let want: Vec<i64> = set(&a).into_iter().filter(|i| b.contains(*i)).collect();
            let got = a.intersect(&b);
            prop_assert_eq!(set(&got), want.clone());
            prop_assert_eq!(got.card(), want.len());
            prop_assert!(a.contains_sig(&got) && b.contains_sig(&got));
        }

        #[test]
        fn containment_matches_sets(b1 in -10i64..10, l1 in 0i64..30, s1 in 1i64..5,
                                    b2 in -10i64..10, l2 in 0i64..30, s2 in 1i64..5) {
            let a = Sig::new(b1, b1 + l1, s1);
            let b = Sig::new(b2, b2 + l2, s2);
            let want = set(&b).iter().all(|i| a.contains(*i));
            prop_assert_eq!(a.contains_sig(&b), want);
        }
    }
}

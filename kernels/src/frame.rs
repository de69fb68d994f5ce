//! Buffer geometry as kernels see it: local indices, row-major, and the walk
//! over the contiguous rows of a region.

use smallvec::SmallVec;
use std::ops::Range;

/// Per-dimension values, inline up to four dimensions: a frame is built
/// for every launch, and three heap allocations each showed in the
/// profile of small grids.
type Dims<T> = SmallVec<[T; 4]>;

/// A row-major buffer's sizes and strides (in elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    dims: Dims<usize>,
    strides: Dims<usize>,
    /// Global index of the buffer's first element (zeros unless a
    /// controller says where the buffer sits).
    origin: Dims<i64>,
}

impl Frame {
    pub fn row_major(dims: &[usize]) -> Frame {
        let mut strides: Dims<usize> = smallvec::smallvec![1; dims.len()];
        for d in (0..dims.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * dims[d + 1];
        }
        Frame {
            dims: Dims::from_slice(dims),
            strides,
            origin: smallvec::smallvec![0; dims.len()],
        }
    }

    /// The same frame for a buffer whose first element has global index
    /// `origin` (kernels that read the global index use it).
    pub fn with_origin(mut self, origin: &[i64]) -> Frame {
        assert_eq!(origin.len(), self.dims.len(), "one origin per dimension");
        self.origin = Dims::from_slice(origin);
        self
    }

    /// Global index of the buffer's first element.
    pub fn origin(&self) -> &[i64] {
        &self.origin
    }

    /// The local index of linear position `at`.
    pub fn index_of(&self, at: usize) -> Vec<usize> {
        self.strides
            .iter()
            .zip(&self.dims)
            .map(|(&s, &n)| (at / s) % n)
            .collect()
    }

    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }
    pub fn ndims(&self) -> usize {
        self.dims.len()
    }
    /// Elements per index of dimension 0 (the unit a destination slab is cut in).
    pub fn plane(&self) -> usize {
        self.strides[0]
    }
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Linear distance of an offset.
    pub fn linear(&self, off: &[i64]) -> isize {
        off.iter()
            .zip(&self.strides)
            .map(|(&o, &s)| o as isize * s as isize)
            .sum()
    }
}

/// Calls `f(src_start, dst_start, len)` for every contiguous row (a run along
/// the last dimension) of `region`, row-major. `src_start` is the row's
/// position in the whole buffer; `dst_start` its position in the slab that
/// begins at dimension-0 index `region[0].start`.
#[inline(always)]
pub fn for_each_row(
    frame: &Frame,
    region: &[Range<usize>],
    mut f: impl FnMut(usize, usize, usize),
) {
    let nd = frame.ndims();
    if region.iter().any(|r| r.is_empty()) {
        return;
    }
    let slab0 = region[0].start * frame.plane();
    if nd == 1 {
        f(region[0].start, 0, region[0].len());
        return;
    }
    let last = nd - 1;
    let len = region[last].len();
    let st = frame.strides();
    // Odometer over dimensions 0..last.
    let mut idx: Vec<usize> = region[..last].iter().map(|r| r.start).collect();
    loop {
        let base: usize =
            idx.iter().zip(st).map(|(i, s)| i * s).sum::<usize>() + region[last].start;
        f(base, base - slab0, len);
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < region[d].end {
                break;
            }
            idx[d] = region[d].start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_a_3d_region() {
        let f = Frame::row_major(&[4, 5, 6]);
        assert_eq!(f.strides(), &[30, 6, 1]);
        let mut rows = Vec::new();
        for_each_row(&f, &[1..3, 2..4, 1..5], |s, d, n| rows.push((s, d, n)));
        assert_eq!(
            rows,
            vec![(43, 13, 4), (49, 19, 4), (73, 43, 4), (79, 49, 4)]
        );
        let mut one = Vec::new();
        for_each_row(
            &Frame::row_major(&[9]),
            std::slice::from_ref(&(2..7)),
            |s, d, n| one.push((s, d, n)),
        );
        assert_eq!(one, vec![(2, 0, 5)]);
    }
}

//! Transfer planning: a region of a row-major allocation as the fewest copy
//! commands a GPU API offers (3-D rectangles, or contiguous runs where the
//! region is strided), each with its place in the packed host buffer.
//! Device-free, so it is tested against brute force.

use hitmap::{Shape, Sig};

/// A 3-D rectangle of a device buffer, packed on the host (the host pitches
/// are the region's own: `bytes` and `bytes * rows`). This is what
/// `clEnqueue{Read,Write}BufferRect` and `cuMemcpy3D` take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Origin in the buffer: byte in the row, row, slice.
    pub origin: [usize; 3],
    /// Bytes along the row, rows, slices.
    pub size: [usize; 3],
    /// Bytes from one row of the buffer to the next.
    pub row_pitch: usize,
    /// Bytes from one slice of the buffer to the next.
    pub slice_pitch: usize,
}

/// One copy command's worth of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPiece {
    /// A rectangle, for regions contiguous in every dimension.
    Rect(Rect),
    /// `bytes` contiguous bytes at byte `offset` of the buffer, for regions
    /// strided along some dimension.
    Run {
        /// Byte offset in the buffer.
        offset: usize,
        /// Length in bytes.
        bytes: usize,
    },
}

impl CopyPiece {
    /// Bytes this piece moves (its length on the host).
    pub fn bytes(&self) -> usize {
        match self {
            CopyPiece::Rect(r) => r.size[0] * r.size[1] * r.size[2],
            CopyPiece::Run { bytes, .. } => *bytes,
        }
    }

    /// The piece as contiguous spans `(buffer byte offset, host byte offset
    /// within the piece, bytes)`: the meaning of a rectangle copy, for
    /// runtimes that copy host memory (the tests' mock) and for the tests.
    pub fn spans(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let (rows, slices, len) = match self {
            CopyPiece::Rect(r) => (r.size[1], r.size[2], r.size[0]),
            CopyPiece::Run { bytes, .. } => (1, 1, *bytes),
        };
        (0..slices).flat_map(move |z| {
            (0..rows).map(move |y| match self {
                CopyPiece::Rect(r) => (
                    (r.origin[2] + z) * r.slice_pitch
                        + (r.origin[1] + y) * r.row_pitch
                        + r.origin[0],
                    (z * rows + y) * len,
                    len,
                ),
                CopyPiece::Run { offset, .. } => (*offset, 0, len),
            })
        })
    }
}

/// The copy commands moving a region between a device allocation and a
/// host buffer that holds the region packed row-major.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyPlan {
    /// Each piece with its byte offset in the host buffer, in row-major
    /// order of the region (so host offsets increase and tile it).
    pub pieces: Vec<(usize, CopyPiece)>,
}

/// Row-major strides of an allocation of these extents, in elements.
pub fn strides(extents: &[usize]) -> Vec<usize> {
    let mut s = vec![1; extents.len()];
    for d in (0..extents.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * extents[d + 1];
    }
    s
}

impl CopyPlan {
    /// The plan for `region` (inside `alloc`, same dimensions) of cells of
    /// `size` bytes: one rectangle where the region is contiguous and has up
    /// to three dimensions (a column halo is one command, not one per row),
    /// one per index of the outer dimensions beyond three; contiguous runs
    /// (rows, or single cells where the last dimension is strided) when any
    /// dimension is strided.
    pub fn new(alloc: &Shape, region: &Shape, size: usize) -> CopyPlan {
        if region.is_empty() {
            return CopyPlan::default();
        }
        if region.sigs().iter().all(|s| s.stride() == 1) {
            Self::rects(alloc, region, size)
        } else {
            Self::runs(alloc, region, size)
        }
    }

    /// Total bytes the plan moves.
    pub fn bytes(&self) -> usize {
        self.pieces.iter().map(|(_, p)| p.bytes()).sum()
    }

    fn rects(alloc: &Shape, region: &Shape, size: usize) -> CopyPlan {
        let n = region.ndims();
        let ext = alloc.extents();
        let rel = |d: usize, i: i64| (i - alloc.sig(d).begin()) as usize;
        // The last three dimensions (padded with size-1 ones) form the box.
        let dim = |k: usize| (k < n).then(|| n - 1 - k);
        let count = |k: usize| dim(k).map_or(1, |d| region.sig(d).card());
        let row_pitch = dim(0).map_or(size, |d| ext[d] * size);
        let slice_pitch = dim(1).map_or(row_pitch, |d| ext[d] * row_pitch);
        let slice_len = dim(2).map_or(1, |d| ext[d]);
        let mut outer = region.clone();
        for d in n.saturating_sub(3)..n {
            let b = region.sig(d).begin();
            outer = outer.with_sig(d, Sig::range(b, b + 1));
        }
        let size3 = [count(0) * size, count(1), count(2)];
        let bytes = size3[0] * size3[1] * size3[2];
        let pieces = outer
            .iter()
            .enumerate()
            .map(|(k, idx)| {
                // Outer dimensions fold into the slice index: the allocation
                // is row-major, so one step of dimension d is (its stride /
                // slice) slices.
                let mut z = dim(2).map_or(0, |d| rel(d, idx[d]));
                let mut scale = slice_len;
                for d in (0..n.saturating_sub(3)).rev() {
                    z += rel(d, idx[d]) * scale;
                    scale *= ext[d];
                }
                let r = Rect {
                    origin: [
                        dim(0).map_or(0, |d| rel(d, idx[d]) * size),
                        dim(1).map_or(0, |d| rel(d, idx[d])),
                        z,
                    ],
                    size: size3,
                    row_pitch,
                    slice_pitch,
                };
                (k * bytes, CopyPiece::Rect(r))
            })
            .collect();
        CopyPlan { pieces }
    }

    fn runs(alloc: &Shape, region: &Shape, size: usize) -> CopyPlan {
        let st = strides(&alloc.extents());
        let last = region.ndims() - 1;
        let row = region.sig(last);
        let (starts, len) = if row.stride() == 1 {
            (
                region.with_sig(last, Sig::range(row.begin(), row.begin() + 1)),
                row.card(),
            )
        } else {
            (region.clone(), 1)
        };
        let pieces = starts
            .iter()
            .enumerate()
            .map(|(k, idx)| {
                let off: usize = idx
                    .iter()
                    .zip(alloc.sigs())
                    .zip(&st)
                    .map(|((&i, a), &s)| (i - a.begin()) as usize * s)
                    .sum();
                (
                    k * len * size,
                    CopyPiece::Run {
                        offset: off * size,
                        bytes: len * size,
                    },
                )
            })
            .collect();
        CopyPlan { pieces }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An allocation of 1 to 4 dimensions and a region inside it, possibly
    /// strided, possibly empty.
    fn alloc_and_region() -> impl Strategy<Value = (Shape, Shape)> {
        prop::collection::vec((-3i64..3, 1i64..6), 1..=4).prop_flat_map(|dims| {
            let alloc =
                Shape::from_ranges(&dims.iter().map(|&(b, n)| (b, b + n)).collect::<Vec<_>>());
            let sigs: Vec<_> = dims
                .iter()
                .map(|&(b, n)| {
                    (0..n, 0..=n, prop_oneof![4 => Just(1i64), 1 => 2i64..4]).prop_map(
                        move |(lo, len, stride)| {
                            let lo = b + lo;
                            let hi = (lo + len).min(b + n);
                            Sig::new(lo, hi.max(lo), stride)
                        },
                    )
                })
                .collect();
            (Just(alloc), sigs.prop_map(Shape::new))
        })
    }

    /// Byte offset of each region cell in the allocation, row-major.
    fn cell_offsets(alloc: &Shape, region: &Shape, size: usize) -> Vec<usize> {
        let st = strides(&alloc.extents());
        region
            .iter()
            .map(|idx| {
                idx.iter()
                    .zip(alloc.sigs())
                    .zip(&st)
                    .map(|((&i, a), &s)| (i - a.begin()) as usize * s)
                    .sum::<usize>()
                    * size
            })
            .collect()
    }

    proptest! {
        #[test]
        fn plan_moves_exactly_the_region(
            (alloc, region) in alloc_and_region(),
            size in prop_oneof![Just(1usize), Just(4), Just(8)],
        ) {
            let plan = CopyPlan::new(&alloc, &region, size);
            let host_len = region.card() * size;
            prop_assert_eq!(plan.bytes(), host_len);
            // Pieces tile the host buffer in order.
            let mut at = 0;
            for (h, p) in &plan.pieces {
                prop_assert_eq!(*h, at);
                at += p.bytes();
            }
            let dev_len = alloc.card() * size;
            let offsets = cell_offsets(&alloc, &region, size);

            // Host to device: the region's cells land at their places,
            // nothing else changes.
            let host: Vec<u8> = (0..host_len).map(|i| (i % 251) as u8 + 1).collect();
            let mut dev = vec![0u8; dev_len];
            for (h, p) in &plan.pieces {
                for (d, o, n) in p.spans() {
                    dev[d..d + n].copy_from_slice(&host[h + o..h + o + n]);
                }
            }
            let mut want = vec![0u8; dev_len];
            for (k, &off) in offsets.iter().enumerate() {
                want[off..off + size].copy_from_slice(&host[k * size..(k + 1) * size]);
            }
            prop_assert_eq!(&dev, &want);

            // Device to host: every host byte comes from its cell.
            let dev: Vec<u8> = (0..dev_len).map(|i| (i % 253) as u8 + 1).collect();
            let mut got = vec![0u8; host_len];
            for (h, p) in &plan.pieces {
                for (d, o, n) in p.spans() {
                    got[h + o..h + o + n].copy_from_slice(&dev[d..d + n]);
                }
            }
            let want: Vec<u8> = offsets
                .iter()
                .flat_map(|&off| dev[off..off + size].iter().copied())
                .collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn contiguous_regions_of_up_to_three_dims_are_one_command() {
        let alloc = Shape::from_ranges(&[(-2, 10), (0, 8), (1, 5)]);
        let region = Shape::from_ranges(&[(0, 6), (2, 3), (1, 5)]);
        assert_eq!(CopyPlan::new(&alloc, &region, 4).pieces.len(), 1);
        let alloc4 = Shape::from_sizes(&[3, 4, 5, 6]);
        let region4 = Shape::from_ranges(&[(1, 3), (0, 4), (1, 2), (0, 6)]);
        assert_eq!(CopyPlan::new(&alloc4, &region4, 4).pieces.len(), 2);
    }
}

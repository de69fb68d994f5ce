//! Array cells in planes (`kernels::CellLayout::Planes`): a buffer holds
//! component 0 of every cell, then component 1, and so on, so that a GPU's
//! threads reading one component of neighbouring cells read contiguous
//! memory. The host keeps cells whole; this module plans the copies of a
//! region plane by plane and reorders its cells on the way. Device-free,
//! so it is tested against brute force.

use super::copy_plan::CopyPlan;
use hitmap::{Shape, Sig};
use kernels::CellLayout;

/// How a controller's buffers hold their cells: `count` planes of
/// `part`-byte components (one plane: cells one after another).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planes {
    count: usize,
    part: usize,
}

impl Planes {
    /// Whole cells of `cell` bytes, one after another.
    pub fn cells(cell: usize) -> Planes {
        Planes {
            count: 1,
            part: cell,
        }
    }

    /// `count` planes of `part`-byte components (at least one).
    pub fn new(count: usize, part: usize) -> Planes {
        Planes {
            count: count.max(1),
            part,
        }
    }

    /// How many planes: 1 where cells lie whole.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The layout kernels are compiled for.
    pub fn layout(&self) -> CellLayout {
        if self.count > 1 {
            CellLayout::Planes
        } else {
            CellLayout::Cells
        }
    }

    /// The copies moving `region` of an allocation laid out over `alloc`.
    /// In planes, both gain a leading dimension, the plane, so one plan
    /// covers them all; its host side holds the region plane by plane
    /// ([`Planes::to_planes`]).
    pub fn plan(&self, alloc: &Shape, region: &Shape) -> CopyPlan {
        self.plans(&[alloc], region).remove(0)
    }

    /// The plans of `region` in each of `allocs`, piece for piece alike:
    /// copies from one allocation to another.
    pub fn plans(&self, allocs: &[&Shape], region: &Shape) -> Vec<CopyPlan> {
        if self.count == 1 {
            return allocs
                .iter()
                .map(|a| CopyPlan::new(a, region, self.part))
                .collect();
        }
        let with_planes = |s: &Shape| {
            let mut sigs = vec![Sig::range(0, self.count as i64)];
            sigs.extend_from_slice(s.sigs());
            Shape::new(sigs)
        };
        // Merged to one dimension, a plane is a row: CUDA's 2-d copies take
        // row pitches below 2^31 bytes, so bigger planes go unmerged.
        let shapes = if allocs.iter().all(|a| a.card() * self.part < 1 << 31) {
            merged(allocs, region)
        } else {
            allocs
                .iter()
                .map(|a| ((*a).clone(), region.clone()))
                .collect()
        };
        shapes
            .iter()
            .map(|(a, r)| CopyPlan::new(&with_planes(a), &with_planes(r), self.part))
            .collect()
    }

    /// Packed cells (`cells.len()` a multiple of the cell size) reordered
    /// plane by plane, as [`Planes::plan`]'s host side holds them; the
    /// same bytes where cells lie whole.
    pub fn to_planes<'a>(&self, cells: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.count == 1 {
            return cells.into();
        }
        let (_, n) = self.shape(cells.len());
        let mut planes = vec![0u8; cells.len()];
        self.transpose(cells, &mut planes, n, self.count);
        planes.into()
    }

    /// The inverse of [`Planes::to_planes`]: `planes` back into whole
    /// `cells` (of equal length).
    pub fn from_planes(&self, planes: &[u8], cells: &mut [u8]) {
        if self.count == 1 {
            cells.copy_from_slice(planes);
            return;
        }
        let (_, n) = self.shape(cells.len());
        self.transpose(planes, cells, self.count, n);
    }

    /// `to` = `from` transposed, both matrices of parts, `from` of `rows`
    /// rows of `cols`. A halo or a moved slab goes through here on every
    /// transfer, so the parts move as fixed-size words, a tile of the
    /// matrix at a time (a tile's reads and writes stay in the L1 cache):
    /// part by part through byte slices it ran at 0.9 GB/s, 29x slower
    /// than copying the bytes (benches/benches/planes.rs).
    fn transpose(&self, from: &[u8], to: &mut [u8], rows: usize, cols: usize) {
        match self.part {
            4 => transpose_words::<4>(from, to, rows, cols),
            8 => transpose_words::<8>(from, to, rows, cols),
            2 => transpose_words::<2>(from, to, rows, cols),
            1 => transpose_words::<1>(from, to, rows, cols),
            p => {
                for r in 0..rows {
                    for c in 0..cols {
                        let (f, t) = ((r * cols + c) * p, (c * rows + r) * p);
                        to[t..t + p].copy_from_slice(&from[f..f + p]);
                    }
                }
            }
        }
    }

    /// Bytes of a cell, and how many cells `bytes` hold.
    fn shape(&self, bytes: usize) -> (usize, usize) {
        let cell = self.count * self.part;
        (cell, bytes / cell.max(1))
    }
}

/// `region` of each of `allocs` with every dimension merged into the one
/// before where, in every allocation, the region spans that dimension whole
/// or one index of the dimensions before (coordinates relative to each
/// allocation): the same cells as fewer, longer rows, and pieces that
/// correspond one to one across the allocations. A halo of whole rows of a
/// 3-d tile is then one rectangle of all planes, where plane by plane it
/// was one copy command per component (19 for gas-sim, each a
/// synchronisation on CUDA).
fn merged(allocs: &[&Shape], region: &Shape) -> Vec<(Shape, Shape)> {
    if region.is_empty() || region.sigs().iter().any(|s| s.stride() != 1) {
        return allocs
            .iter()
            .map(|a| ((*a).clone(), region.clone()))
            .collect();
    }
    // Per allocation, (extent, (first, end)) of each merged dimension.
    let mut dims: Vec<Vec<(i64, (i64, i64))>> = vec![Vec::new(); allocs.len()];
    for (d, r) in region.sigs().iter().enumerate() {
        let here: Vec<(i64, i64, i64)> = allocs
            .iter()
            .map(|a| {
                let a = a.sig(d);
                (a.card() as i64, r.begin() - a.begin(), r.end() - a.begin())
            })
            .collect();
        let merge = here.iter().zip(&dims).all(|(&(e, lo, hi), v)| {
            v.last()
                .is_some_and(|&(_, (p0, p1))| (lo == 0 && hi == e) || p1 - p0 == 1)
        });
        for ((e, lo, hi), v) in here.into_iter().zip(dims.iter_mut()) {
            match v.last_mut() {
                Some((pe, (p0, p1))) if merge => {
                    (*p0, *p1) = (*p0 * e + lo, (*p1 - 1) * e + hi);
                    *pe *= e;
                }
                _ => v.push((e, (lo, hi))),
            }
        }
    }
    dims.into_iter()
        .map(|v| {
            let ext: Vec<usize> = v.iter().map(|&(e, _)| e as usize).collect();
            let cut: Vec<(i64, i64)> = v.iter().map(|&(_, c)| c).collect();
            (Shape::from_sizes(&ext), Shape::from_ranges(&cut))
        })
        .collect()
}

/// [`Planes::transpose`] for parts of `P` bytes.
fn transpose_words<const P: usize>(from: &[u8], to: &mut [u8], rows: usize, cols: usize) {
    const TILE: usize = 32;
    let (from, _) = from.as_chunks::<P>();
    let (to, _) = to.as_chunks_mut::<P>();
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for r in r0..r1 {
                let row = &from[r * cols..(r + 1) * cols];
                for c in c0..c1 {
                    to[c * rows + r] = row[c];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Byte `b` of component `q` of the cell at global index `idx`, in an
    /// allocation's planes: what a device buffer in planes holds.
    fn value(idx: &[i64], q: usize, b: usize) -> u8 {
        idx.iter()
            .fold(q as i64 * 31 + b as i64 * 7, |a, &i| a * 13 + i)
            .rem_euclid(251) as u8
    }

    /// The allocation's buffer in planes, written cell by cell.
    fn device(alloc: &Shape, p: &Planes) -> Vec<u8> {
        let n = alloc.card();
        let mut buf = vec![0u8; n * p.count * p.part];
        for (i, idx) in alloc.iter().enumerate() {
            for q in 0..p.count {
                for b in 0..p.part {
                    buf[(q * n + i) * p.part + b] = value(&idx, q, b);
                }
            }
        }
        buf
    }

    proptest! {
        /// Reading a region through the plan and `from_planes` gives its
        /// cells whole, in row-major order, however the region sits in the
        /// allocation; writing them back through `to_planes` restores the
        /// buffer.
        #[test]
        fn a_region_read_through_its_planes_is_its_cells(
            dims in 1usize..4,
            ext in proptest::collection::vec(1i64..6, 3),
            cut in proptest::collection::vec((0i64..6, 0i64..6), 3),
            count in 1usize..5,
            part in prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(8)],
        ) {
            let alloc = Shape::from_ranges(&(0..dims).map(|d| (-2, ext[d])).collect::<Vec<_>>());
            let region = Shape::from_ranges(&(0..dims).map(|d| {
                let (a, b) = cut[d];
                let lo = -2 + a.min(ext[d] + 1);
                (lo, (lo + b).min(ext[d]))
            }).collect::<Vec<_>>());
            let p = Planes::new(count, part);
            let buf = device(&alloc, &p);
            let plan = p.plan(&alloc, &region);
            let mut host = vec![0u8; region.card() * count * part];
            prop_assert_eq!(plan.bytes(), host.len());
            for (at, piece) in &plan.pieces {
                for (off, h, len) in piece.spans() {
                    host[at + h..at + h + len].copy_from_slice(&buf[off..off + len]);
                }
            }
            let mut cells = vec![0u8; host.len()];
            p.from_planes(&host, &mut cells);
            let want: Vec<u8> = region
                .iter()
                .flat_map(|idx| {
                    (0..count).flat_map(move |q| (0..part).map(move |b| (q, b)))
                        .map(move |(q, b)| value(&idx, q, b))
                })
                .collect();
            prop_assert_eq!(&cells, &want);
            let mut back = vec![0u8; buf.len()];
            let planes = p.to_planes(&cells);
            for (at, piece) in &plan.pieces {
                for (off, h, len) in piece.spans() {
                    back[off..off + len].copy_from_slice(&planes[at + h..at + h + len]);
                }
            }
            // Every byte of the region's cells, in every plane, and no other.
            let n = alloc.card();
            for (i, idx) in alloc.iter().enumerate() {
                for q in 0..count {
                    for b in 0..part {
                        let at = (q * n + i) * part + b;
                        let want = if region.contains(&idx) { buf[at] } else { 0 };
                        prop_assert_eq!(back[at], want, "{:?} q {} b {}", idx, q, b);
                    }
                }
            }
        }
    }

    proptest! {
        /// A region copied piece for piece from one allocation in planes to
        /// another of other extents (as a resize or a device message does)
        /// lands at the same global indices, in every plane.
        #[test]
        fn plans_of_two_allocations_correspond(
            dims in 1usize..4,
            ext in proptest::collection::vec(1i64..6, 3),
            grow in proptest::collection::vec((0i64..3, 0i64..3), 3),
            cut in proptest::collection::vec((0i64..6, 0i64..6), 3),
            count in 2usize..4,
        ) {
            let a = Shape::from_ranges(&(0..dims).map(|d| (0, ext[d])).collect::<Vec<_>>());
            let b = a.expand(&grow.iter().take(dims).map(|g| g.0).collect::<Vec<_>>(),
                &grow.iter().take(dims).map(|g| g.1).collect::<Vec<_>>());
            let region = Shape::from_ranges(&(0..dims).map(|d| {
                let lo = cut[d].0.min(ext[d] - 1);
                (lo, (lo + cut[d].1).min(ext[d]))
            }).collect::<Vec<_>>());
            let p = Planes::new(count, 4);
            let from = device(&a, &p);
            let mut to = vec![0u8; b.card() * count * 4];
            let plans = p.plans(&[&a, &b], &region);
            prop_assert_eq!(plans[0].pieces.len(), plans[1].pieces.len());
            for ((_, x), (_, y)) in plans[0].pieces.iter().zip(&plans[1].pieces) {
                prop_assert_eq!(x.bytes(), y.bytes());
                let xs: Vec<_> = x.spans().collect();
                let ys: Vec<_> = y.spans().collect();
                prop_assert_eq!(xs.len(), ys.len());
                for ((f, _, len), (t, _, _)) in xs.into_iter().zip(ys) {
                    to[t..t + len].copy_from_slice(&from[f..f + len]);
                }
            }
            let n = b.card();
            for (i, idx) in b.iter().enumerate() {
                for q in 0..count {
                    for byte in 0..4 {
                        let got = to[(q * n + i) * 4 + byte];
                        let want = if region.contains(&idx) { value(&idx, q, byte) } else { 0 };
                        prop_assert_eq!(got, want, "{:?} q {}", idx, q);
                    }
                }
            }
        }
    }

    #[test]
    fn halos_are_one_copy_of_all_planes() {
        let p = Planes::new(19, 4);
        let alloc = Shape::from_ranges(&[(-1, 9), (0, 4), (0, 6)]);
        let slab = Shape::from_ranges(&[(2, 4), (0, 4), (0, 6)]);
        assert_eq!(p.plan(&alloc, &slab).pieces.len(), 1);
        let row = Shape::from_ranges(&[(2, 3), (1, 2), (0, 6)]);
        assert_eq!(p.plan(&alloc, &row).pieces.len(), 1);
        // A column of a 3-d tile: rows of one cell, all planes as slices.
        let column = Shape::from_ranges(&[(-1, 9), (0, 4), (5, 6)]);
        assert_eq!(p.plan(&alloc, &column).pieces.len(), 1);
        // A block inside it in every dimension: a rectangle per plane.
        let block = Shape::from_ranges(&[(2, 4), (1, 3), (1, 5)]);
        assert_eq!(p.plan(&alloc, &block).pieces.len(), 19);
    }

    #[test]
    fn whole_cells_are_one_plane() {
        let p = Planes::cells(12);
        assert_eq!((p.count(), p.layout()), (1, CellLayout::Cells));
        assert_eq!(Planes::new(3, 4).layout(), CellLayout::Planes);
        let data: Vec<u8> = (0..24).collect();
        assert_eq!(&*p.to_planes(&data), &data[..]);
        // Two cells of three 4-byte parts: parts 0, 0, 1, 1, 2, 2.
        let planes = Planes::new(3, 4).to_planes(&data);
        assert_eq!(&planes[..8], &[0, 1, 2, 3, 12, 13, 14, 15]);
        assert_eq!(&planes[8..12], &[4, 5, 6, 7]);
    }
}

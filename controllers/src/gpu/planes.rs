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
        if self.count == 1 {
            return CopyPlan::new(alloc, region, self.part);
        }
        let with_planes = |s: &Shape| {
            let mut sigs = vec![Sig::range(0, self.count as i64)];
            sigs.extend_from_slice(s.sigs());
            Shape::new(sigs)
        };
        CopyPlan::new(&with_planes(alloc), &with_planes(region), self.part)
    }

    /// Packed cells (`cells.len()` a multiple of the cell size) reordered
    /// plane by plane, as [`Planes::plan`]'s host side holds them; the
    /// same bytes where cells lie whole.
    pub fn to_planes<'a>(&self, cells: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.count == 1 {
            return cells.into();
        }
        let (cell, n) = self.shape(cells.len());
        let mut planes = vec![0u8; cells.len()];
        for (i, c) in cells.chunks_exact(cell).enumerate() {
            for (q, part) in c.chunks_exact(self.part).enumerate() {
                let at = (q * n + i) * self.part;
                planes[at..at + self.part].copy_from_slice(part);
            }
        }
        planes.into()
    }

    /// The inverse of [`Planes::to_planes`]: `planes` back into whole
    /// `cells` (of equal length).
    pub fn from_planes(&self, planes: &[u8], cells: &mut [u8]) {
        if self.count == 1 {
            cells.copy_from_slice(planes);
            return;
        }
        let (cell, n) = self.shape(cells.len());
        for (i, c) in cells.chunks_exact_mut(cell).enumerate() {
            for (q, part) in c.chunks_exact_mut(self.part).enumerate() {
                let at = (q * n + i) * self.part;
                part.copy_from_slice(&planes[at..at + self.part]);
            }
        }
    }

    /// Bytes of a cell, and how many cells `bytes` hold.
    fn shape(&self, bytes: usize) -> (usize, usize) {
        let cell = self.count * self.part;
        (cell, bytes / cell.max(1))
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
            part in prop_oneof![Just(1usize), Just(4), Just(8)],
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

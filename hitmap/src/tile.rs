//! Tiles: n-d row-major arrays addressed by global indices, with an allocation
//! that may be larger than the current extent (halos, spare rows for rebalances).

use crate::error::HitmapError;
use crate::shape::Shape;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, Slice};

/// An n-d array over a contiguous global `Shape` (its extent), stored in an
/// allocation that covers the extent and possibly more.
///
/// Moving the extent inside the allocation keeps every element at its global
/// index, so a tile can gain or lose rows during a rebalance without copying
/// the rows it keeps.
#[derive(Clone, Debug)]
pub struct Tile<T> {
    alloc: Shape,
    extent: Shape,
    data: ArrayD<T>,
}

impl<T: Copy> Tile<T> {
    /// A tile whose allocation is exactly `extent`, every element `fill`.
    pub fn new(extent: Shape, fill: T) -> Result<Tile<T>, HitmapError> {
        Tile::with_capacity(extent.clone(), extent, fill)
    }

    /// A tile over `extent` stored in the larger allocation `alloc`.
    pub fn with_capacity(extent: Shape, alloc: Shape, fill: T) -> Result<Tile<T>, HitmapError> {
        if !extent.is_contiguous() || !alloc.is_contiguous() {
            return Err(HitmapError::StridedTile);
        }
        if extent.ndims() != alloc.ndims() || !alloc.contains_shape(&extent) {
            return Err(HitmapError::OutOfTile {
                region: extent.clone(),
                tile: alloc.clone(),
            });
        }
        let cells = alloc.card();
        let out_of_memory = || HitmapError::OutOfMemory {
            tile: alloc.clone(),
            cells,
            cell_bytes: std::mem::size_of::<T>(),
        };
        // Asked for, not assumed: a size beyond the machine is an error to
        // report, not an abort.
        let mut cells_vec = Vec::new();
        cells_vec
            .try_reserve_exact(cells)
            .map_err(|_| out_of_memory())?;
        // Every cell written now, zeros included (the allocator hands those
        // out as untouched pages), so rows later moved into the spare
        // capacity do not pay the page faults inside a rebalance (measured:
        // up to 2x its cost at 2050^2).
        cells_vec.resize(cells, fill);
        let data = ArrayD::from_shape_vec(IxDyn(&alloc.extents()), cells_vec)
            .map_err(|_| out_of_memory())?;
        Ok(Tile {
            alloc,
            extent,
            data,
        })
    }

    /// The current extent (global indices).
    pub fn shape(&self) -> &Shape {
        &self.extent
    }

    /// The allocated region (global indices), a superset of the extent.
    pub fn alloc_shape(&self) -> &Shape {
        &self.alloc
    }

    /// Number of dimensions.
    pub fn ndims(&self) -> usize {
        self.alloc.ndims()
    }

    /// Sizes of the allocation per dimension.
    pub fn alloc_dims(&self) -> &[usize] {
        self.data.shape()
    }

    /// Row-major strides of the allocation, in elements.
    pub fn strides(&self) -> Vec<usize> {
        self.data.strides().iter().map(|&s| s as usize).collect()
    }

    /// The whole allocation, row-major.
    pub fn as_slice(&self) -> &[T] {
        self.data
            .as_slice()
            .expect("tiles are always standard row-major")
    }

    /// The whole allocation, row-major, mutable.
    pub fn as_slice_mut(&mut self) -> &mut [T] {
        self.data
            .as_slice_mut()
            .expect("tiles are always standard row-major")
    }

    /// Local (allocation) index of a global index.
    pub fn local_index(&self, idx: &[i64]) -> Option<Vec<usize>> {
        self.alloc.contains(idx).then(|| {
            idx.iter()
                .zip(self.alloc.sigs())
                .map(|(&i, s)| (i - s.begin()) as usize)
                .collect()
        })
    }

    /// Position in `as_slice()` of a global index inside the allocation.
    pub fn offset(&self, idx: &[i64]) -> Option<usize> {
        let local = self.local_index(idx)?;
        Some(
            local
                .iter()
                .zip(self.data.strides())
                .map(|(&l, &s)| l * s as usize)
                .sum(),
        )
    }

    /// The cell at global index `idx`, if inside the extent.
    pub fn get(&self, idx: &[i64]) -> Option<&T> {
        if !self.extent.contains(idx) {
            return None;
        }
        self.offset(idx).map(|o| &self.as_slice()[o])
    }

    /// The cell at global index `idx`, mutable, if inside the extent.
    pub fn get_mut(&mut self, idx: &[i64]) -> Option<&mut T> {
        if !self.extent.contains(idx) {
            return None;
        }
        let o = self.offset(idx)?;
        Some(&mut self.as_slice_mut()[o])
    }

    fn slices(&self, region: &Shape) -> Result<Vec<Slice>, HitmapError> {
        if region.ndims() != self.ndims() || !self.extent.contains_shape(region) {
            return Err(HitmapError::OutOfTile {
                region: region.clone(),
                tile: self.extent.clone(),
            });
        }
        Ok(region
            .sigs()
            .iter()
            .zip(self.alloc.sigs())
            .map(|(r, a)| {
                if r.is_empty() {
                    Slice::new(0, Some(0), 1)
                } else {
                    let b = (r.begin() - a.begin()) as isize;
                    let e = (r.end() - a.begin()) as isize;
                    Slice::new(b, Some(e), r.stride() as isize)
                }
            })
            .collect())
    }

    /// A view of a sub-selection (any strides) of the extent.
    pub fn select(&self, region: &Shape) -> Result<ArrayViewD<'_, T>, HitmapError> {
        let sl = self.slices(region)?;
        Ok(self.data.slice_each_axis(|ax| sl[ax.axis.index()]))
    }

    /// A mutable view of a sub-selection (any strides) of the extent.
    pub fn select_mut(&mut self, region: &Shape) -> Result<ArrayViewMutD<'_, T>, HitmapError> {
        let sl = self.slices(region)?;
        Ok(self.data.slice_each_axis_mut(|ax| sl[ax.axis.index()]))
    }

    /// A view of the whole extent.
    pub fn view(&self) -> ArrayViewD<'_, T> {
        let extent = self.extent.clone();
        self.select(&extent).expect("the extent is inside the tile")
    }

    /// Appends the elements of `region` to `out`, row-major.
    pub fn pack_into(&self, region: &Shape, out: &mut Vec<T>) -> Result<(), HitmapError> {
        let view = self.select(region)?;
        out.reserve(region.card());
        if view.ndim() == 0 || view.is_empty() {
            return Ok(());
        }
        for row in view.rows() {
            match row.as_slice() {
                Some(s) => out.extend_from_slice(s),
                None => out.extend(row.iter().copied()),
            }
        }
        Ok(())
    }

    /// The elements of `region`, row-major.
    pub fn pack(&self, region: &Shape) -> Result<Vec<T>, HitmapError> {
        let mut v = Vec::new();
        self.pack_into(region, &mut v)?;
        Ok(v)
    }

    /// Writes `data` (row-major, as `pack` makes it) into `region`.
    pub fn unpack(&mut self, region: &Shape, data: &[T]) -> Result<(), HitmapError> {
        if data.len() != region.card() {
            return Err(HitmapError::LengthMismatch {
                expected: region.card(),
                got: data.len(),
            });
        }
        let mut view = self.select_mut(region)?;
        if view.ndim() == 0 || view.is_empty() {
            return Ok(());
        }
        let n = *view.shape().last().expect("at least one dimension");
        for (mut row, chunk) in view.rows_mut().into_iter().zip(data.chunks_exact(n)) {
            match row.as_slice_mut() {
                Some(s) => s.copy_from_slice(chunk),
                None => row.iter_mut().zip(chunk).for_each(|(d, s)| *d = *s),
            }
        }
        Ok(())
    }

    /// Sets every element of `region` from its global index.
    pub fn fill_with(
        &mut self,
        region: &Shape,
        mut f: impl FnMut(&[i64]) -> T,
    ) -> Result<(), HitmapError> {
        let mut vals: Vec<T> = Vec::with_capacity(region.card());
        region.for_each_index(|idx| vals.push(f(idx)));
        self.unpack(region, &vals)
    }

    /// Moves the extent to `extent`, keeping every element it shares with the old
    /// extent at its global index. Reuses the allocation when `extent` fits in
    /// it or is empty (a tile emptied by load balancing may be given rows
    /// again, and giving back a large allocation costs milliseconds);
    /// otherwise allocates `extent` grown by `spare[d]` on both
    /// sides of each dimension, new elements set to `fill`. Returns whether
    /// it reallocated.
    pub fn resize(&mut self, extent: Shape, spare: &[i64], fill: T) -> Result<bool, HitmapError> {
        if !extent.is_contiguous() || extent.ndims() != self.ndims() {
            return Err(HitmapError::StridedTile);
        }
        if extent.is_empty() || self.alloc.contains_shape(&extent) {
            self.extent = extent;
            return Ok(false);
        }
        let alloc = extent.expand(spare, spare);
        let keep = self.extent.intersect(&extent);
        if keep.is_empty() {
            // Nothing kept: the old memory goes first, so a tile given rows
            // again after it was emptied never holds both.
            let nd = self.ndims();
            *self = Tile::with_capacity(Shape::empty(nd), Shape::empty(nd), fill)?;
        }
        let mut next = Tile::with_capacity(extent, alloc, fill)?;
        if !keep.is_empty() {
            next.select_mut(&keep)?.assign(&self.select(&keep)?);
        }
        *self = next;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sig::Sig;
    use proptest::prelude::*;

    fn numbered(extent: &Shape) -> Tile<i64> {
        let mut t = Tile::new(extent.clone(), 0).unwrap();
        t.fill_with(extent, |i| i.iter().fold(0, |a, &x| a * 1000 + x))
            .unwrap();
        t
    }

    #[test]
    fn a_tile_beyond_memory_is_an_error() {
        // 2^62 f32 cells: more bytes than an address space holds.
        let huge = Shape::from_ranges(&[(0, 1 << 40), (0, 1 << 22)]);
        match Tile::<f32>::new(huge, 0.0) {
            Err(HitmapError::OutOfMemory {
                cells, cell_bytes, ..
            }) => assert_eq!((cells, cell_bytes), (1 << 62, 4)),
            other => panic!("{:?}", other.map(|t| t.shape().clone())),
        }
    }

    #[test]
    fn global_addressing() {
        let ext = Shape::from_ranges(&[(10, 13), (-2, 2)]);
        let t = numbered(&ext);
        assert_eq!(t.get(&[11, -1]), Some(&(11 * 1000 - 1)));
        assert_eq!(t.get(&[13, 0]), None);
        assert_eq!(t.strides(), vec![4, 1]);
    }

    #[test]
    fn strided_selection() {
        let ext = Shape::from_sizes(&[4, 6]);
        let t = numbered(&ext);
        let r = Shape::new(vec![Sig::new(1, 4, 2), Sig::new(0, 6, 3)]);
        assert_eq!(t.pack(&r).unwrap(), vec![1000, 1003, 3000, 3003]);
        assert!(t.select(&Shape::from_ranges(&[(0, 5), (0, 1)])).is_err());
    }

    #[test]
    fn resize_in_place_keeps_rows() {
        let ext = Shape::from_ranges(&[(5, 10), (0, 3)]);
        let alloc = Shape::from_ranges(&[(0, 20), (0, 3)]);
        let mut t = Tile::with_capacity(ext.clone(), alloc, 0i64).unwrap();
        t.fill_with(&ext, |i| i[0] * 10 + i[1]).unwrap();
        let grown = Shape::from_ranges(&[(7, 15), (0, 3)]);
        assert!(!t.resize(grown.clone(), &[2, 0], -1).unwrap());
        assert_eq!(t.get(&[9, 2]), Some(&92));
        assert_eq!(t.shape(), &grown);
        let far = Shape::from_ranges(&[(8, 30), (0, 3)]);
        assert!(t.resize(far.clone(), &[3, 0], -1).unwrap());
        assert_eq!(t.get(&[9, 1]), Some(&91));
        assert_eq!(t.get(&[20, 1]), Some(&-1));
        assert_eq!(t.alloc_shape(), &Shape::from_ranges(&[(5, 33), (0, 3)]));
        // Emptied, the tile keeps its allocation for rows it may get back.
        assert!(!t.resize(Shape::empty(2), &[3, 0], -1).unwrap());
        assert_eq!(t.shape().card(), 0);
        assert_eq!(t.alloc_shape(), &Shape::from_ranges(&[(5, 33), (0, 3)]));
        assert!(!t.resize(grown.clone(), &[3, 0], -1).unwrap());
        assert_eq!(t.shape(), &grown);
        // Emptied, then given rows beyond it: a new allocation, every
        // element the fill.
        assert!(!t.resize(Shape::empty(2), &[3, 0], -1).unwrap());
        let beyond = Shape::from_ranges(&[(40, 44), (0, 3)]);
        assert!(t.resize(beyond.clone(), &[1, 0], -1).unwrap());
        assert_eq!(t.alloc_shape(), &Shape::from_ranges(&[(39, 45), (0, 3)]));
        assert!(t.pack(&beyond).unwrap().iter().all(|&v| v == -1));
    }

    proptest! {
        #[test]
        fn pack_unpack_roundtrip(dims in prop::collection::vec(1usize..6, 1..5),
                                 cut in prop::collection::vec((0usize..6, 0usize..6, 1i64..3), 4)) {
            let ext = Shape::from_sizes(&dims);
            let t = numbered(&ext);
            let region = Shape::new(dims.iter().zip(&cut).map(|(&n, &(a, b, s))| {
                let (a, b) = (a.min(n), b.min(n));
                Sig::new(a.min(b) as i64, a.max(b) as i64, s)
            }).collect());
            let packed = t.pack(&region).unwrap();
            let want: Vec<i64> = region.iter().map(|i| *t.get(&i).unwrap()).collect();
            prop_assert_eq!(&packed, &want);
            let mut z = Tile::new(ext.clone(), -7i64).unwrap();
            z.unpack(&region, &packed).unwrap();
            for idx in ext.iter() {
                let v = *z.get(&idx).unwrap();
                if region.contains(&idx) {
                    prop_assert_eq!(v, *t.get(&idx).unwrap());
                } else {
                    prop_assert_eq!(v, -7);
                }
            }
        }
    }
}

//! Buffer bookkeeping for device backends: ids, each buffer's allocation and
//! extent, and what a resize has to do.

use crate::controller::BufferId;
use crate::error::DeviceError;
use hitmap::{HitmapError, Shape};

/// A device buffer with the shapes that give its cells global indices.
pub struct Slot<B> {
    /// What the buffer holds cells for, row-major.
    pub alloc: Shape,
    /// The cells in use (inside `alloc`).
    pub extent: Shape,
    /// The runtime's buffer.
    pub buf: B,
}

/// Buffers by [`BufferId`]; freed ids are never reused, so a stale id is an
/// error rather than another buffer.
pub struct Slots<B> {
    slots: Vec<Option<Slot<B>>>,
}

impl<B> Default for Slots<B> {
    fn default() -> Self {
        Slots { slots: Vec::new() }
    }
}

/// What a resize needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResizePlan {
    /// The new extent fits the allocation: only the extent changes.
    InPlace,
    /// A new allocation, into which the `keep` cells (at their global
    /// indices) move from the old buffer.
    Realloc {
        /// The new allocation.
        alloc: Shape,
        /// The cells both extents share.
        keep: Shape,
    },
}

/// Errors unless `extent` and `capacity` can make a buffer.
pub fn check_alloc(extent: &Shape, capacity: &Shape) -> Result<(), DeviceError> {
    if !extent.is_contiguous() || !capacity.is_contiguous() {
        return Err(DeviceError::Index(HitmapError::StridedTile));
    }
    if extent.ndims() != capacity.ndims() || !capacity.contains_shape(extent) {
        return Err(DeviceError::Index(HitmapError::OutOfTile {
            region: extent.clone(),
            tile: capacity.clone(),
        }));
    }
    Ok(())
}

impl<B> Slot<B> {
    /// Errors unless `region` lies in the extent.
    pub fn check_region(&self, region: &Shape) -> Result<(), DeviceError> {
        if region.ndims() != self.extent.ndims() || !self.extent.contains_shape(region) {
            return Err(DeviceError::Index(HitmapError::OutOfTile {
                region: region.clone(),
                tile: self.extent.clone(),
            }));
        }
        Ok(())
    }

    /// What moving the extent to `extent` needs: nothing but the new extent
    /// while it fits the allocation or is empty (a device load balancing
    /// emptied may be given rows again: it keeps its memory), else an
    /// allocation with `spare` cells each side per dimension.
    pub fn resize_plan(&self, extent: &Shape, spare: &[i64]) -> Result<ResizePlan, DeviceError> {
        if !extent.is_contiguous() || extent.ndims() != self.alloc.ndims() {
            return Err(DeviceError::Index(HitmapError::StridedTile));
        }
        if extent.is_empty() || self.alloc.contains_shape(extent) {
            return Ok(ResizePlan::InPlace);
        }
        let alloc = extent.expand(spare, spare);
        Ok(ResizePlan::Realloc {
            alloc,
            keep: self.extent.intersect(extent),
        })
    }
}

impl<B> Slots<B> {
    /// Adds a buffer; its id.
    pub fn insert(&mut self, slot: Slot<B>) -> BufferId {
        self.slots.push(Some(slot));
        BufferId(self.slots.len() - 1)
    }

    /// The buffer `b`.
    pub fn get(&self, b: BufferId) -> Result<&Slot<B>, DeviceError> {
        self.slots
            .get(b.0)
            .and_then(Option::as_ref)
            .ok_or(DeviceError::UnknownBuffer(b.0))
    }

    /// The buffer `b`, to change.
    pub fn get_mut(&mut self, b: BufferId) -> Result<&mut Slot<B>, DeviceError> {
        self.slots
            .get_mut(b.0)
            .and_then(Option::as_mut)
            .ok_or(DeviceError::UnknownBuffer(b.0))
    }

    /// Drops the buffer `b`.
    pub fn remove(&mut self, b: BufferId) -> Result<Slot<B>, DeviceError> {
        self.get(b)?;
        Ok(self.slots[b.0].take().expect("checked"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(alloc: &[(i64, i64)], extent: &[(i64, i64)]) -> Slot<()> {
        Slot {
            alloc: Shape::from_ranges(alloc),
            extent: Shape::from_ranges(extent),
            buf: (),
        }
    }

    #[test]
    fn resize_in_place_while_it_fits() {
        let s = slot(&[(6, 24), (0, 6)], &[(10, 20), (0, 6)]);
        let inside = Shape::from_ranges(&[(7, 23), (0, 6)]);
        assert_eq!(s.resize_plan(&inside, &[4, 0]), Ok(ResizePlan::InPlace));
        let beyond = Shape::from_ranges(&[(15, 40), (0, 6)]);
        assert_eq!(
            s.resize_plan(&beyond, &[4, 0]),
            Ok(ResizePlan::Realloc {
                alloc: Shape::from_ranges(&[(11, 44), (0, 6)]),
                keep: Shape::from_ranges(&[(15, 20), (0, 6)]),
            })
        );
        // Emptied, it keeps its memory for rows it may be given again.
        let empty = Shape::empty(2);
        assert_eq!(s.resize_plan(&empty, &[4, 0]), Ok(ResizePlan::InPlace));
        assert!(s.resize_plan(&Shape::from_ranges(&[(0, 4)]), &[1]).is_err());
    }

    #[test]
    fn freed_and_unknown_ids_are_errors() {
        let mut slots = Slots::default();
        let a = slots.insert(slot(&[(0, 4)], &[(0, 4)]));
        assert!(slots.get(a).is_ok());
        assert!(slots.remove(a).is_ok());
        assert!(matches!(slots.get(a), Err(DeviceError::UnknownBuffer(0))));
        assert!(matches!(
            slots.remove(BufferId(7)),
            Err(DeviceError::UnknownBuffer(7))
        ));
        assert!(check_alloc(
            &Shape::from_ranges(&[(0, 5)]),
            &Shape::from_ranges(&[(1, 5)])
        )
        .is_err());
    }
}

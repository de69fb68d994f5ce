//! The checks every backend makes before a launch, in one place.

use crate::error::{DeviceError, Mismatch};
use hitmap::{HitmapError, Shape};
use kernels::{check_launch, Frame, Kernel};
use smallvec::SmallVec;
use std::ops::Range;

/// Validates a launch of `kernel` over `region` (global indices) from a
/// source buffer to a destination buffer, given each one's allocation and
/// extent; returns the region in local indices of the (shared) allocation.
pub(crate) fn validate<T>(
    kernel: &dyn Kernel<T>,
    src: (&Shape, &Shape),
    dst: (&Shape, &Shape),
    region: &Shape,
) -> Result<Vec<Range<usize>>, DeviceError> {
    let ((src_alloc, src_extent), (dst_alloc, dst_extent)) = (src, dst);
    if src_alloc != dst_alloc {
        return Err(Mismatch::Allocations {
            src: src_alloc.clone(),
            dst: dst_alloc.clone(),
        }
        .into());
    }
    if region.is_empty() {
        return Ok(vec![0..0; region.ndims()]);
    }
    if !dst_extent.contains_shape(region) {
        return Err(DeviceError::Index(HitmapError::OutOfTile {
            region: region.clone(),
            tile: dst_extent.clone(),
        }));
    }
    let fp = kernel.footprint();
    if !fp.reads_within(region, src_extent) {
        return Err(DeviceError::ReadsOutside {
            region: region.clone(),
            extent: src_extent.clone(),
        });
    }
    let local: Vec<Range<usize>> = region
        .sigs()
        .iter()
        .zip(src_alloc.sigs())
        .map(|(r, a)| (r.begin() - a.begin()) as usize..(r.end() - a.begin()) as usize)
        .collect();
    let dims: SmallVec<[usize; 4]> = src_alloc.sigs().iter().map(|s| s.card()).collect();
    check_launch(kernel, &Frame::row_major(&dims), &local)?;
    Ok(local)
}

/// Validates the auxiliary field buffers bound to a launch of `kernel` over
/// `region` (global indices): one per field the kernel reads, each with the
/// source's allocation (the kernel indexes them as it indexes the source)
/// and an extent holding every cell the launch reads.
pub(crate) fn validate_aux<T>(
    kernel: &dyn Kernel<T>,
    src_alloc: &Shape,
    aux: &[(&Shape, &Shape)],
    region: &Shape,
) -> Result<(), DeviceError> {
    let wants = kernel.aux_fields().len();
    if aux.len() != wants {
        return Err(DeviceError::AuxFields {
            kernel: kernel.name().to_string(),
            wants,
            bound: aux.len(),
        });
    }
    if region.is_empty() {
        return Ok(());
    }
    let fp = kernel.footprint();
    for &(alloc, extent) in aux {
        if alloc != src_alloc {
            return Err(Mismatch::AuxAllocation {
                aux: alloc.clone(),
                src: src_alloc.clone(),
            }
            .into());
        }
        if !fp.reads_within(region, extent) {
            return Err(DeviceError::ReadsOutside {
                region: region.clone(),
                extent: extent.clone(),
            });
        }
    }
    Ok(())
}

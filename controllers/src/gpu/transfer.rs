//! Cells between host and device buffers, and between two device buffers, through copy plans.

use super::planes::Planes;
use super::runtime::DeviceRuntime;
use super::slots::Slot;
use crate::error::DeviceError;
use hitmap::Shape;
use kernels::Cell;

/// Writes `data`, the cells of `region` in order, into `slot`.
pub(super) fn write_region<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    slot: &Slot<R::Buffer>,
    region: &Shape,
    data: &[T],
) -> Result<(), DeviceError> {
    let bytes = planes.to_planes(bytemuck::cast_slice::<T, u8>(data));
    let plan = planes.plan(&slot.alloc, region);
    for (at, piece) in &plan.pieces {
        rt.write(&slot.buf, piece, &bytes[*at..*at + piece.bytes()])?;
    }
    Ok(())
}

/// Appends the cells of `region` of `slot` to `out`.
pub(super) fn read_region<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    slot: &Slot<R::Buffer>,
    region: &Shape,
    out: &mut Vec<T>,
) -> Result<(), DeviceError> {
    let start = out.len();
    out.resize(start + region.card(), T::zeroed());
    let bytes = bytemuck::cast_slice_mut::<T, u8>(&mut out[start..]);
    let plan = planes.plan(&slot.alloc, region);
    if planes.count() == 1 {
        // Straight into `out`: no staging copy.
        for (at, piece) in &plan.pieces {
            rt.read(&slot.buf, piece, &mut bytes[*at..*at + piece.bytes()])?;
        }
        return Ok(());
    }
    let mut staged = vec![0u8; bytes.len()];
    for (at, piece) in &plan.pieces {
        rt.read(&slot.buf, piece, &mut staged[*at..*at + piece.bytes()])?;
    }
    planes.from_planes(&staged, bytes);
    Ok(())
}

/// Copies `region` from one allocation to another on the device (each a
/// buffer and the shape it is laid out over), piece by piece (one region
/// in two allocations: pieces of equal sizes); `false` where the runtime
/// cannot, and then the caller copies through the host (which overwrites
/// whatever pieces were copied).
pub(super) fn copy_within<R: DeviceRuntime>(
    rt: &mut R,
    planes: Planes,
    (from, from_alloc): (&R::Buffer, &Shape),
    (to, to_alloc): (&R::Buffer, &Shape),
    region: &Shape,
) -> Result<bool, DeviceError> {
    // One plan per allocation, piece for piece alike.
    let plans = planes.plans(&[from_alloc, to_alloc], region);
    let (a, b) = (&plans[0], &plans[1]);
    if a.pieces.len() != b.pieces.len() {
        return Ok(false);
    }
    for ((_, p), (_, q)) in a.pieces.iter().zip(&b.pieces) {
        if !rt.copy_within(from, p, to, q)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copies `region` from one buffer to another of other pitches: on the
/// device where the runtime can, else through the host.
pub(super) fn move_cells<R: DeviceRuntime, T: Cell>(
    rt: &mut R,
    planes: Planes,
    from: &Slot<R::Buffer>,
    to: &Slot<R::Buffer>,
    region: &Shape,
) -> Result<(), DeviceError> {
    if !copy_within(
        rt,
        planes,
        (&from.buf, &from.alloc),
        (&to.buf, &to.alloc),
        region,
    )? {
        let mut cells: Vec<T> = Vec::new();
        read_region(rt, planes, from, region, &mut cells)?;
        write_region(rt, planes, to, region, &cells)?;
    }
    Ok(())
}

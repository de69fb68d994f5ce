//! Peer messaging: halos packed into device buffers a device of the same context unpacks.

use super::controller::GpuController;
use super::runtime::DeviceRuntime;
use super::transfer::copy_within;
use crate::controller::{BufferId, Controller};
use crate::error::{BadOption, DeviceError};
use crate::peer::DeviceMessage;
use hitmap::Shape;
use kernels::Cell;

impl<R: DeviceRuntime, T: Cell> GpuController<R, T> {
    /// [`Controller::pack_peer`]: `regions` of `buf` into device buffers,
    /// those of `reuse` where they fit.
    pub(super) fn pack_message(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        let domain = self
            .peer_domain()
            .ok_or(BadOption::NoSharedMemory { api: R::API })?;
        let size = std::mem::size_of::<T>();
        let lens: Vec<usize> = regions.iter().map(|r| r.card() * size).collect();
        // Buffers of a message that came in, where they fit: a neighbour's
        // halo is the size of this device's halo to it.
        let mut parts: Vec<R::Buffer> = match reuse {
            Some(m) if m.domain == domain && m.lens == lens && m.parts.is::<Vec<R::Buffer>>() => *m
                .parts
                .downcast::<Vec<R::Buffer>>()
                .map_err(|_| BadOption::ForeignMessage { api: R::API })?,
            Some(m) => {
                // Copies out of it may still run on this device's lanes,
                // and a CUDA buffer is freed on the stream it came from.
                self.rt.finish()?;
                drop(m);
                Vec::new()
            }
            None => Vec::new(),
        };
        if parts.len() != regions.len() {
            parts = lens
                .iter()
                .map(|&n| self.rt.alloc(n))
                .collect::<Result<_, _>>()?;
        }
        let planes = self.planes();
        let slot = self.slots.get(buf)?;
        for (r, part) in regions.iter().zip(&parts) {
            slot.check_region(r)?;
            // The part is laid out over the region itself: packed.
            if !copy_within(&mut self.rt, planes, (&slot.buf, &slot.alloc), (part, r), r)? {
                return Err(BadOption::NoCopyWithin {
                    api: R::API,
                    region: r.clone(),
                }
                .into());
            }
        }
        self.rt.finish()?;
        Ok(DeviceMessage {
            domain,
            lens,
            planes: planes.count(),
            parts: Box::new(parts),
        })
    }

    /// [`Controller::unpack_peer`]: a message of this device's domain into
    /// `regions` of `buf`.
    pub(super) fn unpack_message(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        if Some(&msg.domain) != self.peer_domain().as_ref() {
            return Err(BadOption::OtherMemory {
                domain: msg.domain.clone(),
            }
            .into());
        }
        let size = std::mem::size_of::<T>();
        let lens: Vec<usize> = regions.iter().map(|r| r.card() * size).collect();
        if lens != msg.lens {
            return Err(BadOption::RegionBytes {
                got: msg.lens.clone(),
                want: lens,
            }
            .into());
        }
        let planes = self.planes();
        if msg.planes != planes.count() {
            return Err(BadOption::Planes {
                got: msg.planes,
                here: planes.count(),
            }
            .into());
        }
        let parts = msg
            .parts
            .downcast_ref::<Vec<R::Buffer>>()
            .ok_or(BadOption::ForeignMessage { api: R::API })?;
        let slot = self.slots.get(buf)?;
        for (r, part) in regions.iter().zip(parts) {
            slot.check_region(r)?;
            if !copy_within(&mut self.rt, planes, (part, r), (&slot.buf, &slot.alloc), r)? {
                return Err(BadOption::NoCopyWithin {
                    api: R::API,
                    region: r.clone(),
                }
                .into());
            }
        }
        Ok(())
    }
}

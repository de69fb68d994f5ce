//! Peer messaging: halos packed into device buffers a device of the same context unpacks.

use super::controller::GpuController;
use super::runtime::DeviceRuntime;
use super::transfer::copy_within;
use crate::capability::PeerCopies;
use crate::controller::BufferId;
use crate::error::{BadOption, DeviceError};
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::Shape;
use kernels::Cell;

impl<R: DeviceRuntime, T: Cell> GpuController<R, T> {
    /// The domain of the devices that can copy this one's buffers, where
    /// the runtime shares its memory. Devices asked for different layouts
    /// hold one kernel's cells differently: their messages go through the
    /// host. (A run asks before its kernel fixes the layout, so scalar
    /// cells, one layout either way, go through the host too between such
    /// devices.)
    pub(super) fn domain(&self) -> Option<PeerDomain> {
        self.rt.peer_domain().map(|id| PeerDomain {
            api: R::API,
            id,
            cells: self.asked_layout(),
        })
    }
}

impl<R: DeviceRuntime, T: Cell> PeerCopies for GpuController<R, T> {
    fn peer_domain(&mut self) -> Option<PeerDomain> {
        self.domain()
    }

    /// `regions` of `buf` into device buffers, those of `reuse` where they
    /// fit.
    fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        let domain = self
            .domain()
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

    /// A message of this device's domain into `regions` of `buf`.
    fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        if Some(&msg.domain) != self.domain().as_ref() {
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

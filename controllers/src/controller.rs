//! The device interface every backend implements: a core of what every
//! device does, and accessors to the optional capabilities
//! (`crate::capability`) a backend opts into.

use crate::capability::{CellPlanes, DeviceFill, FusedSteps, OverlappedLaunch, PeerCopies};
use crate::error::{BadOption, DeviceError, Mismatch};
pub use crate::ids::{BufferId, KernelId};
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::Shape;
use kernels::{CellLayout, DeviceKernel, Kernel};
use std::sync::Arc;

/// One device: its memory, transfers to and from the host, kernel launches,
/// and device-side timing. Buffers are addressed by global indices, like
/// `hitmap::Tile`s, so callers never compute device offsets.
///
/// Launches may run asynchronously; `wait` completes them, and reads and
/// writes are ordered after earlier launches.
///
/// What only some devices do (fused steps, a second queue, peer copies,
/// device-side fills, cells in planes) is a capability trait of its own,
/// handed out by an accessor here (`None` by default). Callers use the
/// methods on `dyn Controller`, which fall back where a device lacks one.
pub trait Controller<T>: Send {
    /// What this device is, e.g. `cpu:threads=2`.
    fn describe(&self) -> String;

    /// A buffer over `extent`, allocated over `capacity` (a superset: halos and
    /// spare rows for later rebalances). Contents are unspecified until written.
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError>;
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError>;
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError>;
    /// Moves the buffer's extent, keeping shared elements at their global
    /// indices; reallocates (with `spare` elements each side per dimension)
    /// only when the new extent leaves the allocation. Returns whether it did.
    fn resize(&mut self, buf: BufferId, extent: &Shape, spare: &[i64])
        -> Result<bool, DeviceError>;

    /// Host to device: `data` row-major over `region`.
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError>;
    /// Device to host: appends `region`'s elements, row-major, to `out`.
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError>;
    /// Copies `region` of `from` into the same cells of `to` (distinct
    /// buffers). The default goes through the host; a device that can copy
    /// in its own memory does.
    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        check_copy(from, to, region)?;
        let mut cells = Vec::with_capacity(region.card());
        self.read(from, region, &mut cells)?;
        self.write(to, region, &cells)
    }
    /// Sets `region` from each element's global index (host-side init).
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError>;

    /// Prepares a kernel for launches on this device.
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError>;
    /// Binds the auxiliary field buffers a loaded kernel reads
    /// ([`kernels::Kernel::aux_fields`], in that order) to its later
    /// launches. Each must share the launches' source allocation; the
    /// launch checks them.
    /// The default is for devices that take no auxiliary fields.
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        let _ = kernel;
        match aux {
            [] => Ok(()),
            _ => Err(BadOption::NoAuxFields {
                device: self.describe(),
            }
            .into()),
        }
    }
    /// Computes `region` (global indices) of `dst` from `src`, which must be
    /// distinct buffers with the same allocation.
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError>;
    /// Waits for every launch so far.
    fn wait(&mut self) -> Result<(), DeviceError>;
    /// Device-measured seconds of the kernel launches since the last
    /// `take_kernel_seconds` (complete them with `wait` first).
    fn take_kernel_seconds(&mut self) -> f64;

    /// Told at the start of each iteration (emulated slow devices use it).
    fn set_iteration(&mut self, _iter: u64) {}

    /// Several iterations in one launch, where the device fuses them.
    fn fused(&mut self) -> Option<&mut dyn FusedSteps<T>> {
        None
    }
    /// A second queue for launches that overlap halo traffic.
    fn overlapped(&mut self) -> Option<&mut dyn OverlappedLaunch<T>> {
        None
    }
    /// Halos that stay in device memory, where the device shares it with
    /// others of its kind.
    fn peers(&mut self) -> Option<&mut dyn PeerCopies> {
        None
    }
    /// Initial states computed on the device.
    fn device_fill(&mut self) -> Option<&mut dyn DeviceFill> {
        None
    }
    /// Cells with components held in planes.
    fn cell_planes(&mut self) -> Option<&mut dyn CellPlanes> {
        None
    }
}

/// Every capability through one interface: the device's where it has it,
/// else what a device without it does.
impl<T> dyn Controller<T> + '_ {
    /// How many iterations [`Self::launch_steps`] may fuse (1 where the
    /// device does not fuse).
    pub fn fused_steps(&mut self) -> usize {
        self.fused().map_or(1, |f| f.fused_steps())
    }
    /// [`FusedSteps::prepare_steps`]; nothing where the device does not fuse.
    pub fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.prepare_steps(kernel, steps),
            None => Ok(()),
        }
    }
    /// [`FusedSteps::launch_steps`]; a device that does not fuse takes one
    /// step only.
    pub fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.launch_steps(kernel, src, dst, steps),
            None => self.one_step(kernel, src, dst, steps),
        }
    }
    /// [`FusedSteps::launch_steps_overlapped`]; a device that does not fuse
    /// takes one step only, as [`Self::launch_steps`].
    pub fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match self.fused() {
            Some(f) => f.launch_steps_overlapped(kernel, src, dst, steps),
            None => self.one_step(kernel, src, dst, steps),
        }
    }
    fn one_step(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        match steps {
            [one] => self.launch(kernel, src, dst, one),
            _ => Err(BadOption::NoFusing {
                device: self.describe(),
                steps: steps.len(),
            }
            .into()),
        }
    }
    /// [`OverlappedLaunch::launch_overlapped`]; `launch` on a device with
    /// one queue.
    pub fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        match self.overlapped() {
            Some(o) => o.launch_overlapped(kernel, src, dst, region),
            None => self.launch(kernel, src, dst, region),
        }
    }
    /// The device's [`PeerCopies::peer_domain`]; `None` where its halos go
    /// through the host.
    pub fn peer_domain(&mut self) -> Option<PeerDomain> {
        self.peers().and_then(|p| p.peer_domain())
    }
    /// [`PeerCopies::pack_peer`]; an error where the device has no peers.
    pub fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        match self.peers() {
            Some(p) => p.pack_peer(buf, regions, reuse),
            None => Err(no_peers(&self.describe())),
        }
    }
    /// [`PeerCopies::unpack_peer`]; an error where the device has no peers.
    pub fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        match self.peers() {
            Some(p) => p.unpack_peer(buf, regions, msg),
            None => Err(no_peers(&self.describe())),
        }
    }
    /// [`DeviceFill::fill_device`]; `Ok(false)` where the device does not
    /// fill, and the caller fills from the host.
    pub fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError> {
        match self.device_fill() {
            Some(f) => f.fill_device(buf, region, init),
            None => Ok(false),
        }
    }
    /// [`CellPlanes::cell_layout`]; whole cells where the device holds no
    /// planes.
    pub fn cell_layout(&mut self) -> CellLayout {
        self.cell_planes()
            .map_or(CellLayout::Cells, |p| p.cell_layout())
    }
}

fn no_peers(device: &str) -> DeviceError {
    BadOption::NoPeers {
        device: device.to_string(),
    }
    .into()
}

/// Errors unless a copy of `region` goes between two distinct buffers
/// (what [`Controller::copy_region`] promises every implementation checks).
pub(crate) fn check_copy(from: BufferId, to: BufferId, region: &Shape) -> Result<(), DeviceError> {
    if from == to {
        return Err(Mismatch::CopyIntoItself {
            region: region.clone(),
            buffer: from.0,
        }
        .into());
    }
    Ok(())
}

//! What a device may do beyond [`Controller`](crate::Controller)'s core,
//! each a trait of its own that a backend implements and hands out through
//! the core's accessor (`Controller::fused` and the like, `None` by
//! default). Callers go through the methods on `dyn Controller`
//! (`controller.rs`), which take the capability where the device has it
//! and a fallback where it does not.

use crate::error::DeviceError;
use crate::ids::{BufferId, KernelId};
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::Shape;
use kernels::{CellLayout, DeviceKernel};

/// Several iterations in one launch (temporal blocking). Without it a
/// device takes one step a launch.
pub trait FusedSteps<T> {
    /// How many iterations one [`FusedSteps::launch_steps`] may fuse into
    /// a pass over memory (1: none now, and the skeleton launches
    /// iteration by iteration).
    fn fused_steps(&mut self) -> usize;
    /// Readies whatever [`FusedSteps::launch_steps`] of `steps` iterations
    /// of `kernel` needs, so that the first such launch does not pay for
    /// it (a GPU compiles its fused kernels). Nothing by default.
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        let _ = (kernel, steps);
        Ok(())
    }
    /// Computes `steps.len()` iterations in one launch: step `j` computes
    /// region `steps[j]` (global indices) from the values step `j - 1`
    /// left, the first from `src`; only the last step's values are
    /// stored, in `dst` over `steps.last()`, and `src` is only read. Each
    /// region lies within the one before it, and the caller promises that
    /// a step reads, outside the region of the step before, only cells no
    /// step writes (boundary cells): their `src` values are then the right
    /// ones, as in a step-by-step run.
    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError>;
    /// As [`FusedSteps::launch_steps`], with the promise of
    /// [`OverlappedLaunch::launch_overlapped`]: a device with two queues
    /// runs the fused launch on the second. The default runs
    /// `launch_steps`.
    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.launch_steps(kernel, src, dst, steps)
    }
}

/// A second queue for launches. Without it an overlapped launch is an
/// ordinary one.
pub trait OverlappedLaunch<T> {
    /// As `Controller::launch`, but the launch may still run during the
    /// reads, writes and launches that follow, up to the next `wait`
    /// (which completes it): the halo traffic of the cells around `region`
    /// need not queue behind it. The caller promises that none of those
    /// commands writes a cell this launch reads or touches a cell it
    /// writes; breaking the promise gives wrong values, never unsafety.
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError>;
}

/// Halos that stay in device memory between controllers of one
/// [`PeerDomain`]. Without it a device's halos go through the host.
pub trait PeerCopies {
    /// The domain of controllers that can copy this one's buffers; `None`
    /// where it shares its memory with none (its halos go through the host).
    fn peer_domain(&mut self) -> Option<PeerDomain>;
    /// Packs `regions` of `buf`, in order, into device memory that a
    /// controller of the same domain can copy from, reusing `reuse`'s
    /// buffers where they fit. Complete on return: the receiver may copy
    /// from it at once.
    fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError>;
    /// Copies `msg` (packed by a controller of this one's domain over
    /// regions of the same sizes) into `regions` of `buf`. The copy may
    /// still run until the next `wait`, and `msg` must live until then.
    fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError>;
}

/// Initial states computed on the device. Without it the caller fills
/// from the host.
pub trait DeviceFill {
    /// Sets `region` of `buf` by launching `init` (a kernel that writes
    /// each cell from its global index and reads nothing, such as
    /// `kernels::InitSpec::device_kernel`): no host fill, no transfer.
    /// `Ok(false)` where it cannot for this region or kernel, and the
    /// caller then fills from the host. Ordered like a launch.
    fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError>;
}

/// Cells with components held in planes (`kernels::CellLayout`). Without
/// it a device holds cells whole.
pub trait CellPlanes {
    /// How its buffers hold cells now.
    fn cell_layout(&mut self) -> CellLayout;
}

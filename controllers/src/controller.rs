//! The device interface every backend implements.

use crate::error::{BadOption, DeviceError, Mismatch};
use crate::peer::{DeviceMessage, PeerDomain};
use hitmap::Shape;
use kernels::{DeviceKernel, Kernel};
use std::sync::Arc;

/// A buffer on a device, valid for the controller that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub usize);

/// A kernel loaded (compiled, where that applies) on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub usize);

/// One device: its memory, transfers to and from the host, kernel launches,
/// and device-side timing. Buffers are addressed by global indices, like
/// `hitmap::Tile`s, so callers never compute device offsets.
///
/// Launches may run asynchronously; `wait` completes them, and reads and
/// writes are ordered after earlier launches.
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

    /// Sets `region` of `buf` on the device by launching `init` (a
    /// kernel that writes each cell from its global index and reads
    /// nothing, such as `kernels::InitSpec::device_kernel`): no host fill,
    /// no transfer. `Ok(false)` (the default) where the device does not,
    /// and the caller then fills from the host. Ordered like a launch.
    fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError> {
        let _ = (buf, region, init);
        Ok(false)
    }
    /// The domain of controllers that can copy this one's buffers, for
    /// halos that stay on the device ([`Controller::pack_peer`]); `None`
    /// (the default): its halos go through the host.
    fn peer_domain(&self) -> Option<PeerDomain> {
        None
    }
    /// How its buffers hold cells with components (whole, the default, or
    /// in planes: `kernels::CellLayout`).
    fn cell_layout(&self) -> kernels::CellLayout {
        kernels::CellLayout::Cells
    }
    /// Packs `regions` of `buf`, in order, into device memory that a
    /// controller of the same [`Controller::peer_domain`] can copy from,
    /// reusing `reuse`'s buffers where they fit. Complete on return: the
    /// receiver may copy from it at once.
    fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        let _ = (buf, regions, reuse);
        Err(no_peers(&self.describe()))
    }
    /// Copies `msg` (packed by a controller of this one's domain over
    /// regions of the same sizes) into `regions` of `buf`. The copy may
    /// still run until the next `wait`, and `msg` must live until then.
    fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        let _ = (buf, regions, msg);
        Err(no_peers(&self.describe()))
    }

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
    /// As [`Controller::launch`], but the launch may still run during the
    /// reads, writes and launches that follow, up to the next `wait` (which
    /// completes it): a device with two queues runs it on the second, so the
    /// halo traffic of the cells around `region` need not queue behind it.
    /// The caller promises that none of those commands writes a cell this
    /// launch reads or touches a cell it writes; breaking the promise gives
    /// wrong values, never unsafety. Devices with one queue run `launch`.
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.launch(kernel, src, dst, region)
    }
    /// How many iterations one [`Controller::launch_steps`] may fuse into a
    /// pass over memory (1: none, and the skeleton launches iteration by
    /// iteration).
    fn fused_steps(&self) -> usize {
        1
    }
    /// Computes `steps.len()` iterations in one launch (temporal blocking):
    /// step `j` computes region `steps[j]` (global indices) from the values
    /// step `j - 1` left, the first from `src`; only the last step's values
    /// are stored, in `dst` over `steps.last()`, and `src` is only read.
    /// Each region lies within the one before it, and the caller promises
    /// that a step reads, outside the region of the step before, only cells
    /// no step writes (boundary cells): their `src` values are then the
    /// right ones, as in a step-by-step run. Devices that do not fuse
    /// ([`Controller::fused_steps`] is 1) take one step only.
    fn launch_steps(
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
    /// Readies whatever [`Controller::launch_steps`] of `steps` iterations
    /// of `kernel` needs, so that the first such launch does not pay for
    /// it (a GPU compiles its fused kernels). Nothing by default.
    fn prepare_steps(&mut self, _kernel: KernelId, _steps: usize) -> Result<(), DeviceError> {
        Ok(())
    }
    /// As [`Controller::launch_steps`], with the promise of
    /// [`Controller::launch_overlapped`]: a device with two queues runs the
    /// fused launch on the second, so the halos written meanwhile need not
    /// queue behind it.
    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        self.launch_steps(kernel, src, dst, steps)
    }
    /// Waits for every launch so far.
    fn wait(&mut self) -> Result<(), DeviceError>;
    /// Device-measured seconds of the kernel launches since the last
    /// `take_kernel_seconds` (complete them with `wait` first).
    fn take_kernel_seconds(&mut self) -> f64;

    /// Told at the start of each iteration (emulated slow devices use it).
    fn set_iteration(&mut self, _iter: u64) {}
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

/// The memory, transfer and kernel-loading methods of [`Controller`],
/// passed to `self.$inner`: what a decorator (one that changes launches or
/// timing, like [`crate::Slowdown`]) leaves as it is.
macro_rules! forward_memory {
    ($inner:ident) => {
        $crate::controller::forward_memory!($inner, but load);
        fn load(
            &mut self,
            kernel: std::sync::Arc<dyn kernels::Kernel<T>>,
        ) -> Result<$crate::KernelId, $crate::DeviceError> {
            self.$inner.load(kernel)
        }
    };
    // All of them but `load`, for a wrapper that must see each kernel.
    ($inner:ident, but load) => {
        fn alloc(
            &mut self,
            extent: &hitmap::Shape,
            capacity: &hitmap::Shape,
        ) -> Result<$crate::BufferId, $crate::DeviceError> {
            self.$inner.alloc(extent, capacity)
        }
        fn free(&mut self, buf: $crate::BufferId) -> Result<(), $crate::DeviceError> {
            self.$inner.free(buf)
        }
        fn extent(&self, buf: $crate::BufferId) -> Result<hitmap::Shape, $crate::DeviceError> {
            self.$inner.extent(buf)
        }
        fn resize(
            &mut self,
            buf: $crate::BufferId,
            extent: &hitmap::Shape,
            spare: &[i64],
        ) -> Result<bool, $crate::DeviceError> {
            self.$inner.resize(buf, extent, spare)
        }
        fn write(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            data: &[T],
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.write(buf, region, data)
        }
        fn read(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            out: &mut Vec<T>,
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.read(buf, region, out)
        }
        fn copy_region(
            &mut self,
            from: $crate::BufferId,
            to: $crate::BufferId,
            region: &hitmap::Shape,
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.copy_region(from, to, region)
        }
        fn fill(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            f: &(dyn Fn(&[i64]) -> T + Sync),
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.fill(buf, region, f)
        }
        fn fill_device(
            &mut self,
            buf: $crate::BufferId,
            region: &hitmap::Shape,
            init: &kernels::DeviceKernel,
        ) -> Result<bool, $crate::DeviceError> {
            self.$inner.fill_device(buf, region, init)
        }
        fn peer_domain(&self) -> Option<$crate::PeerDomain> {
            self.$inner.peer_domain()
        }
        fn cell_layout(&self) -> kernels::CellLayout {
            self.$inner.cell_layout()
        }
        fn pack_peer(
            &mut self,
            buf: $crate::BufferId,
            regions: &[hitmap::Shape],
            reuse: Option<$crate::DeviceMessage>,
        ) -> Result<$crate::DeviceMessage, $crate::DeviceError> {
            self.$inner.pack_peer(buf, regions, reuse)
        }
        fn unpack_peer(
            &mut self,
            buf: $crate::BufferId,
            regions: &[hitmap::Shape],
            msg: &$crate::DeviceMessage,
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.unpack_peer(buf, regions, msg)
        }
        fn bind_aux(
            &mut self,
            kernel: $crate::KernelId,
            aux: &[$crate::BufferId],
        ) -> Result<(), $crate::DeviceError> {
            self.$inner.bind_aux(kernel, aux)
        }
        fn wait(&mut self) -> Result<(), $crate::DeviceError> {
            self.$inner.wait()
        }
    };
}
pub(crate) use forward_memory;

impl<T, C: Controller<T> + ?Sized> Controller<T> for Box<C> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        (**self).alloc(extent, capacity)
    }
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        (**self).free(buf)
    }
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        (**self).extent(buf)
    }
    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        (**self).resize(buf, extent, spare)
    }
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        (**self).write(buf, region, data)
    }
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        (**self).read(buf, region, out)
    }
    fn copy_region(
        &mut self,
        from: BufferId,
        to: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        (**self).copy_region(from, to, region)
    }
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        (**self).fill(buf, region, f)
    }
    fn fill_device(
        &mut self,
        buf: BufferId,
        region: &Shape,
        init: &DeviceKernel,
    ) -> Result<bool, DeviceError> {
        (**self).fill_device(buf, region, init)
    }
    fn peer_domain(&self) -> Option<PeerDomain> {
        (**self).peer_domain()
    }
    fn cell_layout(&self) -> kernels::CellLayout {
        (**self).cell_layout()
    }
    fn pack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        reuse: Option<DeviceMessage>,
    ) -> Result<DeviceMessage, DeviceError> {
        (**self).pack_peer(buf, regions, reuse)
    }
    fn unpack_peer(
        &mut self,
        buf: BufferId,
        regions: &[Shape],
        msg: &DeviceMessage,
    ) -> Result<(), DeviceError> {
        (**self).unpack_peer(buf, regions, msg)
    }
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        (**self).load(kernel)
    }
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        (**self).bind_aux(kernel, aux)
    }
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        (**self).launch(kernel, src, dst, region)
    }
    fn launch_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        (**self).launch_overlapped(kernel, src, dst, region)
    }
    fn fused_steps(&self) -> usize {
        (**self).fused_steps()
    }
    fn prepare_steps(&mut self, kernel: KernelId, steps: usize) -> Result<(), DeviceError> {
        (**self).prepare_steps(kernel, steps)
    }
    fn launch_steps(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        (**self).launch_steps(kernel, src, dst, steps)
    }
    fn launch_steps_overlapped(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        steps: &[Shape],
    ) -> Result<(), DeviceError> {
        (**self).launch_steps_overlapped(kernel, src, dst, steps)
    }
    fn wait(&mut self) -> Result<(), DeviceError> {
        (**self).wait()
    }
    fn take_kernel_seconds(&mut self) -> f64 {
        (**self).take_kernel_seconds()
    }
    fn set_iteration(&mut self, iter: u64) {
        (**self).set_iteration(iter)
    }
}

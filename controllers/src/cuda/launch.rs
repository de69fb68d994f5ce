//! CUDA launch shapes: block and grid dimensions, device limits for fused kernels, shaped launches.

use crate::error::{backend, BackendError, DeviceError};
use crate::gpu::fused::MAX_OVERHEAD;
use crate::gpu::runs::RunShape;
use crate::gpu::FusedLimits;
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg,
};
use kernels::device::abi::{ArgKind, BufferArg, ARGS};

/// A launch's pair of events: its start and its end on its stream.
pub(super) type Events = (CudaEvent, CudaEvent);

/// Nothing to run; still two recorded events so timing stays uniform.
pub(super) fn no_launch(stream: &CudaStream) -> Result<Events, DeviceError> {
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let a = stream.record_event(flags).map_err(backend("CUDA"))?;
    let b = stream.record_event(flags).map_err(backend("CUDA"))?;
    Ok((a, b))
}

/// What fused kernels may use on the device of `ctx`.
pub(super) fn fused_limits(ctx: &CudaContext) -> Option<FusedLimits> {
    use sys::CUdevice_attribute as A;
    // Static shared arrays: the 48 KiB every block may declare without
    // opting in to more.
    let local = ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
        .ok()?;
    let threads = ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .unwrap_or(0);
    Some(FusedLimits {
        local_bytes: usize::try_from(local).ok()?.min(48 << 10),
        max_group: usize::try_from(threads).unwrap_or(0),
        gpu: true,
        max_overhead: MAX_OVERHEAD,
    })
}

/// A fused launch of `groups` blocks of `group` threads, or why CUDA cannot
/// run one that large.
pub(super) fn fused_config(groups: [usize; 3], group: usize) -> Result<LaunchConfig, DeviceError> {
    let dim = |n: usize, most: usize| {
        u32::try_from(n)
            .ok()
            .filter(|&v| v as usize <= most)
            .ok_or_else(|| DeviceError::from(BackendError::FusedLaunchTooLarge { groups }))
    };
    Ok(LaunchConfig {
        grid_dim: (
            dim(groups[0], i32::MAX as usize)?,
            dim(groups[1], 65535)?,
            dim(groups[2], 65535)?,
        ),
        block_dim: (dim(group, 1024)?, 1, 1),
        // The tiles are static `__shared__` arrays.
        shared_mem_bytes: 0,
    })
}

/// Logs (`info`) what the candidates of a launch ran at and which was chosen.
pub(super) fn log_choice(grid: [usize; 3], timed: &[(RunShape, f64)], chosen: RunShape) {
    let cells = grid.iter().product::<usize>() as f64;
    let all: Vec<String> = timed
        .iter()
        .map(|(s, t)| {
            format!(
                "{}x{}x{}: {:.1} G/s",
                s.block[0],
                s.block[1],
                s.rows,
                cells / t / 1e9
            )
        })
        .collect();
    tracing::info!(
        "cuda launch {grid:?}: {} -> {}x{}x{}",
        all.join(", "),
        chosen.block[0],
        chosen.block[1],
        chosen.rows
    );
}

/// Enqueues one launch of `kernel` over `grid` cells in `shape` (the run
/// shape and the block's depth along z), timed by a pair of events.
///
/// # Safety
///
/// As [`DeviceRuntime::launch`](crate::gpu::DeviceRuntime::launch).
pub(super) unsafe fn launch_shaped(
    stream: &CudaStream,
    kernel: &CudaFunction,
    (src, dst, aux): (sys::CUdeviceptr, sys::CUdeviceptr, &[sys::CUdeviceptr]),
    index_args: &[i64],
    grid: [usize; 3],
    (shape, z_block): (RunShape, usize),
) -> Result<(CudaEvent, CudaEvent), DeviceError> {
    let blocks = shape.blocks(grid, z_block);
    let dim = |n: usize| {
        u32::try_from(n).map_err(|_| DeviceError::from(BackendError::LaunchTooLarge { grid }))
    };
    let cfg = LaunchConfig {
        grid_dim: (dim(blocks[0])?, dim(blocks[1])?, dim(blocks[2])?),
        block_dim: (
            dim(shape.block[0])?,
            dim(shape.block[1])?,
            dim(z_block.max(1))?,
        ),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(kernel);
    b.record_kernel_launch(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut index_args = index_args.iter();
    for (_, kind) in ARGS {
        match kind {
            ArgKind::Buffer(BufferArg::Src) => b.arg(&src),
            ArgKind::Buffer(BufferArg::Dst) => b.arg(&dst),
            ArgKind::Long(_) => match index_args.next() {
                Some(v) => b.arg(v),
                None => return Err(BackendError::TooFewArgs.into()),
            },
        };
    }
    for a in aux {
        b.arg(a);
    }
    // SAFETY: the caller guarantees the kernel's accesses for these
    // arguments lie inside `src`, `dst` and `aux`; the arguments follow the
    // ABI's order and types (two device addresses, `long long`s, then the
    // auxiliary fields' device addresses); the
    // buffers outlive the launch because the controller finishes both
    // streams before freeing any, and `Drop` synchronises.
    let events = unsafe { b.launch(cfg) }.map_err(backend("CUDA"))?;
    events.ok_or_else(|| BackendError::NoEvents { api: "CUDA" }.into())
}

//! Handles to what a device holds: its buffers and loaded kernels.

/// A buffer on a device, valid for the controller that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub usize);

/// A kernel loaded (compiled, where that applies) on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub usize);

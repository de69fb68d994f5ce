//! A kernel as a GPU controller holds it: compiled, its Rust twin, its fused variants.

use super::geometry::GroupHints;
use crate::controller::BufferId;
use kernels::device::FusedShape;
use kernels::Kernel;
use std::collections::HashMap;
use std::sync::Arc;

/// A kernel loaded on the controller.
pub(super) struct Loaded<K, T> {
    pub(super) kernel: K,
    /// The Rust kernel, for its footprint in launch checks.
    pub(super) source: Arc<dyn Kernel<T>>,
    pub(super) hints: GroupHints,
    /// Auxiliary field buffers bound to its launches.
    pub(super) aux: Vec<BufferId>,
    /// Steps one fused launch takes where `launch_steps` asks for more (1:
    /// none fuse), by the count asked for.
    pub(super) fuses: HashMap<usize, usize>,
    /// Its fused kernels, by step count.
    pub(super) fused: HashMap<usize, Fused<K>>,
}

/// A compiled fused kernel and the shape its source was generated for.
pub(super) struct Fused<K> {
    pub(super) kernel: K,
    pub(super) shape: FusedShape,
}

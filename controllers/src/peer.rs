//! Halo messages that stay in device memory. Between controllers of one
//! process that can copy one another's buffers (virtual devices on one GPU,
//! devices of one OpenCL context), the sender packs its regions into
//! device buffers and the receiver copies them into its tile: no trip
//! through the host, where every halo of two devices on one GPU otherwise
//! crosses the bus twice.

use std::any::Any;

/// Which controllers can copy one another's buffers: those of equal
/// domains share device memory (one OpenCL context, one CUDA context).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PeerDomain {
    /// The API, so that ids of different APIs never match.
    pub api: &'static str,
    /// The shared context, unique within the process for its API.
    pub id: u64,
    /// How the devices were asked to lay out cells with components: two
    /// that would hold one kernel's cells differently do not share.
    pub cells: kernels::CellLayout,
}

/// Regions packed into device memory by one controller, for another of
/// the same [`PeerDomain`] ([`crate::PeerCopies::pack_peer`]).
pub struct DeviceMessage {
    pub(crate) domain: PeerDomain,
    /// Bytes of each region, in order.
    pub(crate) lens: Vec<usize>,
    /// Planes its cells are laid out in (1: whole cells), as the sender's
    /// tiles hold them.
    pub(crate) planes: usize,
    /// The runtime's buffers, one per region.
    pub(crate) parts: Box<dyn Any + Send>,
}

impl DeviceMessage {
    /// The domain it was packed in.
    pub fn domain(&self) -> &PeerDomain {
        &self.domain
    }

    /// Bytes of each region, in order.
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }
}

impl std::fmt::Debug for DeviceMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMessage")
            .field("domain", &self.domain)
            .field("lens", &self.lens)
            .finish_non_exhaustive()
    }
}

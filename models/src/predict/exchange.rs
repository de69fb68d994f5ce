//! The published methods' message terms that stand apart from a machine:
//! LogGP's back-to-back sends, Rivera's packets, HCLogP's kinds of
//! operation.

use serde::{Deserialize, Serialize};

use crate::link::{Hockney, LogGp};

/// Header bytes per packet in Rivera's model: MPI 22, TCP 32, IP 20,
/// Ethernet 14 (modelling.md §4.1).
pub const RIVERA_HEADER_BYTES: f64 = 88.0;
/// TCP/IP payload per packet at a 1,500 B MTU.
pub const RIVERA_PAYLOAD_BYTES: f64 = 1460.0;

/// Rivera's point-to-point time (Eqs. 4.5–4.11) for one message of `m`
/// bytes: `L + D/β + N_paq·L_sw`, `N_paq = ceil(m / payload)`,
/// `D = m + N_paq · headers`, with L = alpha and β = 1/beta of `link`.
pub fn rivera_p2p(link: &Hockney, switch_latency: f64, m: f64) -> f64 {
    let packets = (m / RIVERA_PAYLOAD_BYTES).ceil().max(1.0);
    let wire = m + packets * RIVERA_HEADER_BYTES;
    link.alpha + wire * link.beta + packets * switch_latency
}

/// `nb` back-to-back messages of `m` bytes in LogGP: the first arrives after
/// `o_s + (k−1)G + L + o_r`, each further one a sender slot later, the slot
/// being the larger of the gap `g` and the sender's busy time
/// `o_s + (k−1)G`.
pub(super) fn loggp_exchange(p: &LogGp, nb: f64, m: f64) -> f64 {
    if nb <= 0.0 {
        return 0.0;
    }
    let k = m.max(1.0);
    p.time(m) + (nb - 1.0) * p.g.max(p.o_s + (k - 1.0) * p.big_g)
}

/// The kinds of operation in HCLogP's communication term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Point to point: one message per call.
    SendRecv,
    /// All-to-all: P−1 messages per call.
    AllToAll,
    /// Tree collectives (AllReduce, Scatter, Gather, one-to-all): log2 P
    /// messages per call.
    Tree,
}

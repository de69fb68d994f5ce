//! What a process's messages cost: their sizes as laws of the face divisor
//! (one per offset of the pattern) and their time per message and byte.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::ScalingError;
use super::pattern::Pattern;
use super::signature::{Message, Signature};
use crate::fit::PowerLaw;

/// Exchange time of a process: `alpha` per message plus `beta` per byte,
/// fitted to the part of each signature's iteration time beyond its
/// slowest kernel, against its busiest process's messages and bytes (on
/// CPU time: one sender's own halo seconds, messages and bytes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExchangeCost {
    /// Seconds per message.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl ExchangeCost {
    /// Least squares through the origin over `(messages, bytes, seconds)`;
    /// per message alone when the two features cannot be told apart or a
    /// coefficient comes out negative.
    pub fn fit(rows: &[(f64, f64, f64)]) -> ExchangeCost {
        let s = |f: &dyn Fn(&(f64, f64, f64)) -> f64| rows.iter().map(f).sum::<f64>();
        let (nn, nb, bb) = (s(&|r| r.0 * r.0), s(&|r| r.0 * r.1), s(&|r| r.1 * r.1));
        let (nt, bt) = (s(&|r| r.0 * r.2), s(&|r| r.1 * r.2));
        let det = nn * bb - nb * nb;
        if det > 1e-12 * nn * bb {
            let alpha = (nt * bb - bt * nb) / det;
            let beta = (bt * nn - nt * nb) / det;
            if alpha >= 0.0 && beta >= 0.0 {
                return ExchangeCost { alpha, beta };
            }
        }
        ExchangeCost {
            alpha: if nn > 0.0 { (nt / nn).max(0.0) } else { 0.0 },
            beta: 0.0,
        }
    }

    /// The seconds of `sends`.
    pub fn time(&self, sends: &[Message]) -> f64 {
        let bytes: u64 = sends.iter().map(|m| m.bytes).sum();
        self.alpha * sends.len() as f64 + self.beta * bytes as f64
    }
}

/// A message size law: `bytes = law(face divisor)` for one offset.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) enum Volume {
    /// The same size at every count seen.
    Constant(f64),
    /// A power law of the face divisor.
    Law(PowerLaw),
}

impl Volume {
    pub(super) fn at(&self, x: f64) -> f64 {
        match self {
            Volume::Constant(b) => *b,
            Volume::Law(l) => l.at(x),
        }
    }
}

/// Per offset: the mean size of its messages at each count, as a power law
/// of the face divisor (constant when the divisor never changes).
pub(super) fn fit_volumes(
    pattern: &Pattern,
    signatures: &[Signature],
) -> Result<Vec<Volume>, ScalingError> {
    let mut per_offset: Vec<Vec<(f64, f64)>> = vec![Vec::new(); pattern.offsets.len()];
    for s in signatures {
        let mut sums = vec![(0.0, 0usize); pattern.offsets.len()];
        for (rank, mine) in pattern.peers(s.count()).into_iter().enumerate() {
            for (peer, k) in mine {
                let m = s.processes[rank]
                    .sends
                    .iter()
                    .find(|m| m.peer == peer)
                    .expect("the pattern explains every signature");
                sums[k].0 += m.bytes as f64;
                sums[k].1 += 1;
            }
        }
        for (k, (sum, n)) in sums.into_iter().enumerate() {
            if n > 0 {
                per_offset[k].push((pattern.face_divisor(k, s.count()), sum / n as f64));
            }
        }
    }
    per_offset
        .into_iter()
        .map(|pts| {
            let distinct: BTreeSet<u64> = pts.iter().map(|p| p.0.to_bits()).collect();
            if distinct.len() >= 2 {
                Ok(Volume::Law(PowerLaw::fit(&pts)?))
            } else {
                Ok(Volume::Constant(
                    pts.iter().map(|p| p.1).sum::<f64>() / pts.len().max(1) as f64,
                ))
            }
        })
        .collect()
}

//! A communication phase's features, computed exactly from who sends what
//! to whom, the benchmark's random pattern, and a measured sample: what
//! every model is fitted to.

use serde::{Deserialize, Serialize};

use crate::semi_empirical::Load;

/// Names of the features, in [`Features::values`] order.
pub const FEATURES: [&str; 15] = [
    "ranks", "per_rank", "l", "pm", "pd", "nd_min", "nd_avg", "nd_max", "nm_min", "nm_avg",
    "nm_max", "ind_max", "inm_max", "td", "tm",
];

/// A communication phase's features (the study's classes A and B; class
/// C, the network's switches and racks, has no counterpart on one host).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Features {
    /// Ranks ("nodes").
    pub ranks: f64,
    /// Most processes on one rank ("ppn").
    pub per_rank: f64,
    /// Largest message, bytes.
    pub l: f64,
    /// Most messages sent by one process.
    pub pm: f64,
    /// Most bytes sent by one process.
    pub pd: f64,
    /// Bytes a rank sends to other ranks: least, mean, most.
    pub nd_min: f64,
    /// See `nd_min`.
    pub nd_avg: f64,
    /// See `nd_min`.
    pub nd_max: f64,
    /// Messages a rank sends to other ranks: least, mean, most.
    pub nm_min: f64,
    /// See `nm_min`.
    pub nm_avg: f64,
    /// See `nm_min`.
    pub nm_max: f64,
    /// Most bytes sent within one rank.
    pub ind_max: f64,
    /// Most messages sent within one rank.
    pub inm_max: f64,
    /// Bytes sent in all.
    pub td: f64,
    /// Messages sent in all.
    pub tm: f64,
}

impl Features {
    /// The features of a phase in which process `p`, on rank `owners[p]`,
    /// sends `sends[p]` (peer, bytes).
    pub fn of(sends: &[Vec<(usize, u64)>], owners: &[usize]) -> Features {
        let ranks = owners.iter().max().map_or(0, |&r| r + 1);
        let mut per_rank = vec![0usize; ranks];
        let (mut nd, mut nm) = (vec![0f64; ranks], vec![0f64; ranks]);
        let (mut ind, mut inm) = (vec![0f64; ranks], vec![0f64; ranks]);
        let (mut l, mut pm, mut pd, mut td, mut tm) = (0f64, 0f64, 0f64, 0f64, 0f64);
        for (p, mine) in sends.iter().enumerate() {
            let r = owners[p];
            per_rank[r] += 1;
            let bytes: u64 = mine.iter().map(|m| m.1).sum();
            pm = pm.max(mine.len() as f64);
            pd = pd.max(bytes as f64);
            for &(q, b) in mine {
                l = l.max(b as f64);
                td += b as f64;
                tm += 1.0;
                if owners[q] == r {
                    ind[r] += b as f64;
                    inm[r] += 1.0;
                } else {
                    nd[r] += b as f64;
                    nm[r] += 1.0;
                }
            }
        }
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        Features {
            ranks: ranks as f64,
            per_rank: per_rank.iter().copied().max().unwrap_or(0) as f64,
            l,
            pm,
            pd,
            nd_min: if ranks == 0 { 0.0 } else { min(&nd) },
            nd_avg: avg(&nd),
            nd_max: max(&nd),
            nm_min: if ranks == 0 { 0.0 } else { min(&nm) },
            nm_avg: avg(&nm),
            nm_max: max(&nm),
            ind_max: max(&ind),
            inm_max: max(&inm),
            td,
            tm,
        }
    }

    /// The values, in [`FEATURES`] order.
    pub fn values(&self) -> [f64; 15] {
        [
            self.ranks,
            self.per_rank,
            self.l,
            self.pm,
            self.pd,
            self.nd_min,
            self.nd_avg,
            self.nd_max,
            self.nm_min,
            self.nm_avg,
            self.nm_max,
            self.ind_max,
            self.inm_max,
            self.td,
            self.tm,
        ]
    }

    /// What the semi-empirical model reads: the busiest process's messages
    /// and bytes, the processes per rank, the busiest rank's messages per
    /// message of a process as those sharing its link at once (each round
    /// of a pattern sends one per process), and the messages that leave a
    /// rank per process of it as hops past the first.
    pub fn load(&self) -> Load {
        let per_message = |v: f64| if self.pm > 0.0 { v / self.pm } else { 0.0 };
        Load {
            messages: self.pm,
            bytes: self.pd,
            per_rank: self.per_rank,
            concurrent: per_message(self.inm_max + self.nm_max),
            hops: if self.per_rank > 0.0 {
                self.nm_max / self.per_rank
            } else {
                0.0
            },
        }
    }

    /// Features from values in [`FEATURES`] order.
    pub fn from_values(v: [f64; 15]) -> Features {
        Features {
            ranks: v[0],
            per_rank: v[1],
            l: v[2],
            pm: v[3],
            pd: v[4],
            nd_min: v[5],
            nd_avg: v[6],
            nd_max: v[7],
            nm_min: v[8],
            nm_avg: v[9],
            nm_max: v[10],
            ind_max: v[11],
            inm_max: v[12],
            td: v[13],
            tm: v[14],
        }
    }
}

/// The communication benchmark's pattern (the study's Alg. 3.1): in each
/// of `pm` rounds the processes are shuffled (seeded) and paired off, and
/// each pair exchanges one message both ways; an odd one out sits the
/// round out. Returns each process's partners with the round (a tag that
/// keeps repeated partners' messages apart).
pub fn random_pairs(procs: usize, pm: usize, seed: u64) -> Vec<Vec<(usize, u64)>> {
    let mut partners = vec![Vec::new(); procs];
    for round in 0..pm as u64 {
        let mut order: Vec<usize> = (0..procs).collect();
        order.sort_by_key(|&p| mix(seed ^ mix(round) ^ mix(p as u64 + 1)));
        for pair in order.chunks_exact(2) {
            partners[pair[0]].push((pair[1], round));
            partners[pair[1]].push((pair[0], round));
        }
    }
    partners
}

/// SplitMix64's finaliser: a well-spread hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// What it moved.
    pub features: Features,
    /// Its time, seconds (the slowest process).
    pub seconds: f64,
}

//! Rivera's sweep over one choice's layouts (slabs seeded or equal, blocks,
//! devices per rank) and the ranking of every candidate the plan weighs.

use super::choice::{slabs, Choice, Problem, Weights};
use super::inventory::Inventory;

/// Every candidate the plan weighs, fastest first: the best choice's
/// layouts (its [`sweep`]) and the best choice of every other device count
/// ([`per_count`](crate::plan::per_count), slabs of seeded rows). Ties go
/// to fewer devices, then to fewer ranks.
pub fn ranked(sweep: &[Choice], per_count: &[Choice]) -> Vec<Choice> {
    let best = sweep.first().map(|c| (&c.counts, &c.network));
    let mut out: Vec<Choice> = sweep.to_vec();
    // The best's own count is already in the sweep, at every layout.
    out.extend(
        per_count
            .iter()
            .filter(|c| Some((&c.counts, &c.network)) != best)
            .cloned(),
    );
    out.sort_by(|a, b| {
        a.seconds
            .total_cmp(&b.seconds)
            .then(a.devices.cmp(&b.devices))
            .then(b.per_rank.cmp(&a.per_rank))
    });
    out
}

/// The first candidate of `ranked` that is another run than its first:
/// other devices, network, partition or weights, not the same layout at
/// another number of devices per rank (one device: any layout is the same).
pub fn runner_up(ranked: &[Choice]) -> Option<&Choice> {
    let first = ranked.first()?;
    let run = |c: &Choice| {
        let layout = (c.devices > 1).then(|| (c.partition.clone(), c.weights));
        (c.counts.clone(), c.network.clone(), layout)
    };
    ranked.iter().find(|c| run(c) != run(first))
}

/// Rivera's sweep over one choice of devices: slabs with rows seeded or
/// equal, and, for a domain of two or more dimensions (extents `size`),
/// the block partition `m` ([`Inventory::time_blocks`]); each at every
/// devices-per-rank from 1 to the most devices on a host, sorted by
/// estimated time.
pub fn sweep(inv: &Inventory, p: &Problem, best: &Choice, size: &[usize]) -> Vec<Choice> {
    let net = best
        .network
        .as_ref()
        .and_then(|n| inv.networks.iter().find(|x| &x.name == n));
    // The most devices the choice puts on one host.
    let mut per_host: std::collections::BTreeMap<&str, usize> = Default::default();
    for (d, &n) in inv.devices.iter().zip(&best.counts) {
        *per_host.entry(d.host.as_str()).or_default() += n;
    }
    let most = per_host.values().copied().max().unwrap_or(1).max(1);
    let mut out = Vec::new();
    for weights in [Weights::Seeded, Weights::Equal] {
        for per_rank in 1..=most {
            if let Some(seconds) = inv.time(p, &best.counts, net, per_rank, weights) {
                out.push(Choice {
                    per_rank,
                    weights,
                    partition: slabs(),
                    seconds,
                    ..best.clone()
                });
            }
        }
    }
    // In one dimension `m` is the slabs of equal rows again.
    if size.len() > 1 {
        for per_rank in 1..=most {
            if let Some(seconds) = inv.time_blocks(p, size, &best.counts, net, per_rank) {
                out.push(Choice {
                    per_rank,
                    weights: Weights::Equal,
                    partition: "m".into(),
                    seconds,
                    ..best.clone()
                });
            }
        }
    }
    out.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    out
}

//! A choice's estimated loop time: its devices laid out as the skeleton's
//! chain of slabs, or as hitmap's blocks, each device's compute and
//! messages over the links between them.

use hitmap::halo::Footprint;
use hitmap::layout::{Layout, Partition};
use hitmap::shape::Shape;

use super::choice::{Estimate, Problem, Weights};
use super::inventory::{Inventory, Network};
use crate::link::Hockney;
use crate::predict::balance;
use crate::simulate::Geometry;

/// The devices in chain order: (host, (fixed seconds, seconds per cell)).
type Chain = Vec<(usize, (f64, f64))>;

impl Inventory {
    /// Estimated loop seconds of `counts` devices over `network`, `per_rank`
    /// devices a rank, rows shared by `weights`; `None` for no devices, or
    /// several hosts without a network.
    pub fn time(
        &self,
        p: &Problem,
        counts: &[usize],
        network: Option<&Network>,
        per_rank: usize,
        weights: Weights,
    ) -> Option<f64> {
        let (chain, rank) = self.chain(counts, network, per_rank)?;
        let m = p.halo_rows * p.bytes_per_row;
        let link = |a: usize, b: usize| self.link(&chain, &rank, network, a, b);
        let n = chain.len();
        let cells = p.rows * p.cells_per_row;
        let costs: Vec<(f64, f64)> = chain.iter().map(|c| c.1).collect();
        let seeded = balance(&costs, cells).1;
        let mut worst: f64 = 0.0;
        for (d, &(_, (a, s))) in chain.iter().enumerate() {
            let mine = match weights {
                Weights::Seeded => seeded[d],
                Weights::Equal => cells / n as f64,
            };
            let mut exchange = 0.0;
            let mut nb = 0.0;
            for q in [d.wrapping_sub(1), d + 1] {
                if q < n {
                    exchange += link(d, q).time(m);
                    nb += 1.0;
                }
            }
            // A device with no rows launches nothing (the balanced split
            // leaves out one whose fixed cost exceeds the others' time).
            let fixed = if mine > 0.0 { a } else { 0.0 };
            let compute = fixed + mine * s;
            let t = match p.estimate {
                Estimate::Additive => compute + exchange,
                Estimate::Overlap => {
                    let rows = mine / p.cells_per_row;
                    let border = fixed + rows.min(p.halo_rows * nb) * p.cells_per_row * s;
                    border + exchange.max(compute - border)
                }
            };
            worst = worst.max(t);
        }
        Some(worst * p.iterations)
    }

    /// The devices of `counts` as the skeleton's chain, grouped by host
    /// (inventory order within one), each with its host and `(a, b)`, and
    /// each device's rank (`per_rank` consecutive devices of a host); `None`
    /// for no devices, or several hosts without a network.
    fn chain(
        &self,
        counts: &[usize],
        network: Option<&Network>,
        per_rank: usize,
    ) -> Option<(Chain, Vec<usize>)> {
        let mut hosts: Vec<&str> = Vec::new();
        for (d, &n) in self.devices.iter().zip(counts) {
            if n > 0 && !hosts.contains(&d.host.as_str()) {
                hosts.push(&d.host);
            }
        }
        let mut chain: Chain = Vec::new();
        for (h, host) in hosts.iter().enumerate() {
            for (d, &n) in self.devices.iter().zip(counts) {
                if d.host == *host {
                    let cost = (d.fixed_seconds, d.seconds_per_cell);
                    chain.extend(std::iter::repeat_n((h, cost), n));
                }
            }
        }
        if chain.is_empty() || (hosts.len() > 1 && network.is_none()) {
            return None;
        }
        let per_rank = per_rank.max(1);
        let mut rank = Vec::with_capacity(chain.len());
        let (mut r, mut in_rank, mut host) = (0usize, 0usize, chain[0].0);
        for &(h, _) in &chain {
            if h != host || in_rank == per_rank {
                r += 1;
                in_rank = 0;
                host = h;
            }
            rank.push(r);
            in_rank += 1;
        }
        Some((chain, rank))
    }

    /// The link between chain devices `a` and `b`: the network across
    /// hosts, shared memory across ranks of a host, else in-process.
    fn link(
        &self,
        chain: &Chain,
        rank: &[usize],
        network: Option<&Network>,
        a: usize,
        b: usize,
    ) -> Hockney {
        if chain[a].0 != chain[b].0 {
            network
                .expect("a chain over several hosts has a network")
                .link()
                .hockney()
        } else if rank[a] != rank[b] {
            self.shared_memory.unwrap_or(self.in_process).hockney()
        } else {
            self.in_process.hockney()
        }
    }

    /// Estimated loop seconds of `counts` devices under the block
    /// partition `m` of a domain of extents `size`: hitmap's layout (a grid
    /// as square as the device count's prime factors allow, regular
    /// blocks, device `d` of the chain on block `d`) and its halo plan for a
    /// stencil reaching `halo_rows` either way along every axis (faces
    /// only), each message its cells times the bytes of a cell. A device's
    /// time: `a + b · block cells` and its messages, added or with the
    /// exchange behind the inner cells, by the estimate. `None` as for
    /// [`Inventory::time`], for a size of another dimensionality than the
    /// problem's cells, or when hitmap cannot build the layout.
    pub fn time_blocks(
        &self,
        p: &Problem,
        size: &[usize],
        counts: &[usize],
        network: Option<&Network>,
        per_rank: usize,
    ) -> Option<f64> {
        let (chain, rank) = self.chain(counts, network, per_rank)?;
        let total: f64 = size.iter().map(|&n| n as f64).product();
        if size.is_empty() || total != p.rows * p.cells_per_row {
            return None;
        }
        let domain = Shape::from_ranges(&size.iter().map(|&n| (0, n as i64)).collect::<Vec<_>>());
        let nd = size.len();
        let reach = p.halo_rows.max(1.0) as i64;
        let offsets = (0..nd)
            .flat_map(|d| {
                (1..=reach).flat_map(move |k| {
                    [-k, k].map(|o| {
                        let mut v = vec![0i64; nd];
                        v[d] = o;
                        v
                    })
                })
            })
            .collect();
        let footprint = Footprint::new(nd, offsets);
        let layout = Layout::new(&domain, Partition::Multi, chain.len(), None).ok()?;
        let cell_bytes = p.bytes_per_row / p.cells_per_row;
        let g = Geometry::new(layout, &footprint, cell_bytes).ok()?;
        let mut worst: f64 = 0.0;
        for (d, &(_, (a, s))) in chain.iter().enumerate() {
            let cells = g.cells[d];
            let fixed = if cells > 0.0 { a } else { 0.0 };
            let compute = fixed + cells * s;
            let exchange: f64 = g.sends[d]
                .iter()
                .map(|&(q, bytes)| self.link(&chain, &rank, network, d, q).time(bytes))
                .sum();
            let t = match p.estimate {
                Estimate::Additive => compute + exchange,
                Estimate::Overlap => {
                    let border = fixed + g.border[d] * s;
                    border + exchange.max(compute - border)
                }
            };
            worst = worst.max(t);
        }
        Some(worst * p.iterations)
    }
}

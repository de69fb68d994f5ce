//! Which devices, network and layout to run on: HCLogP's scheduler
//! (Soares 2017, ch. 4) over a device inventory, Rivera's configuration
//! sweep, and the Pareto front of (devices, time).
//!
//! A choice is a number of devices from each class of the inventory and one
//! network between hosts. The devices form the skeleton's chain of slabs,
//! grouped by host (only the chain's host boundaries cross the network),
//! `per_rank` consecutive devices of a host in one MPI rank. Its time per
//! iteration, by [`Estimate`]:
//! - `Additive` (HCLogP, Eq. 3.5): balanced compute (`cells / Σ 1/s_d`
//!   without fixed costs; with them each device's `a_d + s_d · cells_d`
//!   of the seeded split) plus the slowest device's messages, `Σ_neighbours (α + β·M)` over the
//!   link each neighbour is on;
//! - `Overlap` (this skeleton): `max_d border_d + max(inner_d, exchange_d)`.
//!
//! [`branch_and_bound`] finds the best choice; it is exact (tested against
//! [`exhaustive`]): it tries classes fastest first, every count from all to
//! none, and prunes a branch once even the balanced compute of everything
//! still open cannot beat the best found.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use hitmap::halo::Footprint;
use hitmap::layout::{Layout, Partition};
use hitmap::shape::Shape;

use crate::link::Hockney;
use crate::predict::balance;
use crate::simulate::Geometry;

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlanError {
    /// No devices, or no network with devices on several hosts.
    #[error("the inventory has {0}")]
    Empty(&'static str),
    /// Two entries of one name (devices: of one name on one host).
    #[error("the inventory names {0} twice: give each entry a name of its own")]
    Duplicate(String),
    /// More devices or choices than the search covers in reasonable time.
    #[error("the inventory is too large to plan: {0}")]
    TooLarge(String),
    /// A number that must be finite and positive is not.
    #[error("{what} must be a finite number > 0, got {value}")]
    Bad {
        /// Which.
        what: String,
        /// Its value.
        value: f64,
    },
}

/// A link's Hockney parameters as an inventory writes them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Latency in seconds.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl LinkSpec {
    fn hockney(&self) -> Hockney {
        Hockney {
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// A network between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Its name.
    pub name: String,
    /// Latency in seconds.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl Network {
    fn link(&self) -> LinkSpec {
        LinkSpec {
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// Identical devices on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceClass {
    /// Their name.
    pub name: String,
    /// Their host.
    pub host: String,
    /// Calibrated seconds per cell.
    pub seconds_per_cell: f64,
    /// Calibrated seconds per iteration whatever the cells (a machine's
    /// `fixed_seconds`; default 0).
    #[serde(default)]
    pub fixed_seconds: f64,
    /// How many.
    #[serde(default = "one")]
    pub count: usize,
}

fn one() -> usize {
    1
}

/// The devices in chain order: (host, (fixed seconds, seconds per cell)).
type Chain = Vec<(usize, (f64, f64))>;

fn slabs() -> String {
    "w0".into()
}

/// What can be booked: device classes on hosts, the links within a rank
/// (`in_process`) and between ranks of one host (`shared_memory`, by
/// default the same), and the networks between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Between devices of one rank.
    pub in_process: LinkSpec,
    /// Between ranks of one host.
    #[serde(default)]
    pub shared_memory: Option<LinkSpec>,
    /// Between hosts.
    #[serde(default, rename = "network")]
    pub networks: Vec<Network>,
    /// The devices.
    #[serde(rename = "device")]
    pub devices: Vec<DeviceClass>,
}

/// How a choice's time is estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Estimate {
    /// HCLogP's compute plus communication.
    Additive,
    /// Borders, then the exchange behind the inner rows.
    Overlap,
}

/// The run to plan: a slab partition of `rows` rows of `cells_per_row`
/// cells, `halo_rows` rows deep halos of `bytes_per_row` bytes a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Rows along the partitioned axis.
    pub rows: f64,
    /// Cells per row.
    pub cells_per_row: f64,
    /// Halo depth in rows.
    pub halo_rows: f64,
    /// Bytes of one halo row.
    pub bytes_per_row: f64,
    /// Iterations.
    pub iterations: f64,
    /// How to estimate.
    pub estimate: Estimate,
}

/// How the rows are shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Weights {
    /// In proportion to each device's speed (`--weights-from`).
    Seeded,
    /// Equal rows (`w0` without weights).
    Equal,
}

/// One configuration and its estimated loop time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Devices taken from each class, in inventory order.
    pub counts: Vec<usize>,
    /// The network between hosts (`None`: one host).
    pub network: Option<String>,
    /// Consecutive devices of a host in one rank.
    pub per_rank: usize,
    /// How the rows are shared (regular blocks: `Equal`).
    pub weights: Weights,
    /// The partition: `w0` (slabs along the first axis) or `m` (blocks on
    /// a grid as square as hitmap's `Topology::square` makes it).
    #[serde(default = "slabs")]
    pub partition: String,
    /// Devices in all.
    pub devices: usize,
    /// Estimated loop seconds.
    pub seconds: f64,
}

/// The most devices an inventory may hold: the Pareto front searches once
/// per device count, and each estimate lays every device out.
pub const MAX_DEVICES: usize = 1024;
/// The most count vectors (every class from none to all of its devices) an
/// inventory may span: the branch and bound prunes, but a front's searches
/// with an exact count prune little.
pub const MAX_CHOICES: f64 = 1e6;

impl Inventory {
    /// Checks every number, and that the search is of a size to finish.
    pub fn check(&self) -> Result<(), PlanError> {
        if self.devices.iter().all(|d| d.count == 0) {
            return Err(PlanError::Empty("no devices"));
        }
        let total = self
            .devices
            .iter()
            .try_fold(0usize, |n, d| n.checked_add(d.count))
            .unwrap_or(usize::MAX);
        if total > MAX_DEVICES {
            return Err(PlanError::TooLarge(format!(
                "{total} devices, at most {MAX_DEVICES}"
            )));
        }
        // The plan names devices by name@host and networks by name.
        if let Some(d) = first_repeat(&self.devices, |a, b| {
            (&a.name, &a.host) == (&b.name, &b.host)
        }) {
            return Err(PlanError::Duplicate(format!(
                "device {}@{}",
                d.name, d.host
            )));
        }
        if let Some(n) = first_repeat(&self.networks, |a, b| a.name == b.name) {
            return Err(PlanError::Duplicate(format!("network {}", n.name)));
        }
        let choices: f64 = self.devices.iter().map(|d| d.count as f64 + 1.0).product();
        if choices > MAX_CHOICES {
            return Err(PlanError::TooLarge(format!(
                "{choices:.1e} choices of counts over {} entries, at most {MAX_CHOICES:.0e} \
                 (merge entries of one host and kind into one with a count)",
                self.devices.len()
            )));
        }
        let finite = |what: String, v: f64, zero_ok: bool| {
            if v.is_finite() && (v > 0.0 || zero_ok && v == 0.0) {
                Ok(())
            } else {
                Err(PlanError::Bad { what, value: v })
            }
        };
        for d in &self.devices {
            finite(
                format!("device {} seconds_per_cell", d.name),
                d.seconds_per_cell,
                false,
            )?;
            finite(
                format!("device {} fixed_seconds", d.name),
                d.fixed_seconds,
                true,
            )?;
        }
        let mut links = vec![("in_process".to_string(), self.in_process)];
        links.extend(self.shared_memory.map(|l| ("shared_memory".to_string(), l)));
        links.extend(
            self.networks
                .iter()
                .map(|n| (format!("network {}", n.name), n.link())),
        );
        for (name, l) in links {
            finite(format!("{name} alpha"), l.alpha, true)?;
            finite(format!("{name} beta"), l.beta, true)?;
        }
        Ok(())
    }

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

    fn choice(&self, p: &Problem, counts: Vec<usize>, network: Option<&Network>) -> Option<Choice> {
        let per_rank = counts.iter().sum::<usize>().max(1);
        let seconds = self.time(p, &counts, network, per_rank, Weights::Seeded)?;
        Some(Choice {
            devices: counts.iter().sum(),
            network: network.map(|n| n.name.clone()),
            counts,
            per_rank,
            weights: Weights::Seeded,
            partition: slabs(),
            seconds,
        })
    }

    /// The networks a choice may use: none (one host) and each network.
    fn network_options(&self) -> Vec<Option<&Network>> {
        std::iter::once(None)
            .chain(self.networks.iter().map(Some))
            .collect()
    }
}

/// A better choice: less time, then fewer devices, then the earlier.
fn better(a: &Choice, b: &Option<Choice>) -> bool {
    match b {
        None => true,
        Some(b) => a.seconds < b.seconds || (a.seconds == b.seconds && a.devices < b.devices),
    }
}

/// Every choice of counts (one rank per host, seeded weights) over every
/// network: the reference the others are tested against.
pub fn exhaustive(inv: &Inventory, p: &Problem) -> Result<Choice, PlanError> {
    inv.check()?;
    let mut best: Option<Choice> = None;
    for net in inv.network_options() {
        let mut counts = vec![0usize; inv.devices.len()];
        loop {
            if let Some(c) = inv.choice(p, counts.clone(), net) {
                if better(&c, &best) {
                    best = Some(c);
                }
            }
            // The next count vector, odometer-wise.
            let mut i = 0;
            while i < counts.len() && counts[i] == inv.devices[i].count {
                counts[i] = 0;
                i += 1;
            }
            if i == counts.len() {
                break;
            }
            counts[i] += 1;
        }
    }
    best.ok_or(PlanError::Empty(
        "no usable choice (several hosts need a network)",
    ))
}

/// HCLogP's branch and bound: classes fastest first, from the fastest
/// device on, each class's count from all to none; a branch is cut when
/// the balanced compute of the fastest devices it can still add (a lower
/// bound on any completion's time) is no better than the best found.
pub fn branch_and_bound(inv: &Inventory, p: &Problem) -> Result<Choice, PlanError> {
    inv.check()?;
    best_of(inv, p, None).ok_or(PlanError::Empty(
        "no usable choice (several hosts need a network)",
    ))
}

/// The best choice with exactly `want` devices (any number when `None`).
fn best_of(inv: &Inventory, p: &Problem, want: Option<usize>) -> Option<Choice> {
    let mut order: Vec<usize> = (0..inv.devices.len()).collect();
    order.sort_by(|&a, &b| {
        inv.devices[a]
            .seconds_per_cell
            .total_cmp(&inv.devices[b].seconds_per_cell)
    });
    let mut best: Option<Choice> = None;
    for net in inv.network_options() {
        let mut b = Bound {
            inv,
            p,
            net,
            order: &order,
            cells: p.rows * p.cells_per_row * p.iterations,
            counts: vec![0; inv.devices.len()],
            best: best.take(),
        };
        b.search(0, 0.0, want.unwrap_or(usize::MAX), want.is_some());
        best = b.best;
    }
    best
}

/// One branch-and-bound search over the classes in `order`.
struct Bound<'a> {
    inv: &'a Inventory,
    p: &'a Problem,
    net: Option<&'a Network>,
    order: &'a [usize],
    cells: f64,
    counts: Vec<usize>,
    best: Option<Choice>,
}

impl Bound<'_> {
    /// Decides classes `order[i..]` with `speed` chosen so far and at most
    /// `left` devices more (exactly, when `exact`).
    fn search(&mut self, i: usize, speed: f64, left: usize, exact: bool) {
        // The fastest devices still open: no completion computes faster.
        let mut open = 0.0;
        let mut room = left;
        for &c in &self.order[i..] {
            let d = &self.inv.devices[c];
            let k = room.min(d.count);
            open += k as f64 / d.seconds_per_cell;
            room -= k;
        }
        if exact && room > 0 {
            return;
        }
        let total = speed + open;
        if total <= 0.0 {
            return;
        }
        if let Some(b) = &self.best {
            if self.cells / total > b.seconds {
                return;
            }
        }
        if i == self.order.len() {
            if let Some(c) = self.inv.choice(self.p, self.counts.clone(), self.net) {
                if better(&c, &self.best) {
                    self.best = Some(c);
                }
            }
            return;
        }
        let class = self.order[i];
        let (count, spc) = {
            let d = &self.inv.devices[class];
            (d.count, d.seconds_per_cell)
        };
        for n in (0..=count.min(left)).rev() {
            self.counts[class] = n;
            self.search(i + 1, speed + n as f64 / spc, left - n, exact);
        }
        self.counts[class] = 0;
    }
}

/// The Pareto front of (devices, time): for each device count the best
/// choice with exactly that many (branch and bound under the count), kept
/// when it beats every smaller count.
pub fn pareto(inv: &Inventory, p: &Problem) -> Result<Vec<Choice>, PlanError> {
    Ok(front(&per_count(inv, p)?))
}

/// The choices of `per_count` (fewest devices first) that beat every
/// smaller count: the Pareto front of (devices, time).
pub fn front(per_count: &[Choice]) -> Vec<Choice> {
    let mut front: Vec<Choice> = Vec::new();
    for c in per_count {
        if front.last().is_none_or(|f| c.seconds < f.seconds) {
            front.push(c.clone());
        }
    }
    front
}

/// For each device count the best choice with exactly that many (branch
/// and bound under the count), fewest devices first; a count no choice
/// can use is left out.
pub fn per_count(inv: &Inventory, p: &Problem) -> Result<Vec<Choice>, PlanError> {
    inv.check()?;
    let total: usize = inv.devices.iter().map(|d| d.count).sum();
    Ok((1..=total)
        .filter_map(|n| best_of(inv, p, Some(n)))
        .collect())
}

/// Every candidate the plan weighs, fastest first: the best choice's
/// layouts (its [`sweep`]) and the best choice of every other device count
/// ([`per_count`], slabs of seeded rows). Ties go to fewer devices, then
/// to fewer ranks.
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

/// The first item that an earlier item is `same` as.
fn first_repeat<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find_map(|(k, x)| items[..k].iter().any(|e| same(e, x)).then_some(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn problem(rows: f64, estimate: Estimate) -> Problem {
        Problem {
            rows,
            cells_per_row: 1024.0,
            halo_rows: 1.0,
            bytes_per_row: 4096.0,
            iterations: 100.0,
            estimate,
        }
    }

    fn inventory(classes: &[(usize, f64, usize)], nets: &[(f64, f64)]) -> Inventory {
        Inventory {
            in_process: LinkSpec {
                alpha: 2e-6,
                beta: 1e-11,
            },
            shared_memory: Some(LinkSpec {
                alpha: 5e-6,
                beta: 1e-10,
            }),
            networks: nets
                .iter()
                .enumerate()
                .map(|(i, &(alpha, beta))| Network {
                    name: format!("net{i}"),
                    alpha,
                    beta,
                })
                .collect(),
            devices: classes
                .iter()
                .enumerate()
                .map(|(i, &(host, spc, count))| DeviceClass {
                    name: format!("c{i}"),
                    host: format!("h{host}"),
                    seconds_per_cell: spc,
                    fixed_seconds: 0.0,
                    count,
                })
                .collect(),
        }
    }

    /// Every subset of individual devices, for the Pareto front's reference.
    fn brute_front(inv: &Inventory, p: &Problem) -> Vec<(usize, f64)> {
        let total: usize = inv.devices.iter().map(|d| d.count).sum();
        let mut best = vec![f64::INFINITY; total + 1];
        let mut counts = vec![0usize; inv.devices.len()];
        loop {
            let n: usize = counts.iter().sum();
            for net in inv.network_options() {
                if let Some(t) = inv.time(p, &counts, net, n.max(1), Weights::Seeded) {
                    best[n] = best[n].min(t);
                }
            }
            let mut i = 0;
            while i < counts.len() && counts[i] == inv.devices[i].count {
                counts[i] = 0;
                i += 1;
            }
            if i == counts.len() {
                break;
            }
            counts[i] += 1;
        }
        let mut front = Vec::new();
        for (n, &t) in best.iter().enumerate().skip(1) {
            if t.is_finite() && front.last().is_none_or(|&(_, f)| t < f) {
                front.push((n, t));
            }
        }
        front
    }

    fn classes() -> impl Strategy<Value = Vec<(usize, f64, usize)>> {
        prop::collection::vec((0usize..3, 1e-10f64..1e-8, 0usize..4), 1..5)
            .prop_filter("some device", |c| c.iter().any(|x| x.2 > 0))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Branch and bound finds the exhaustive optimum, and the Pareto
        /// front is brute force's, for either estimate.
        #[test]
        fn branch_and_bound_and_the_front_match_brute_force(
            c in classes(),
            nets in prop::collection::vec((1e-6f64..1e-3, 1e-11f64..1e-8), 0..3),
            rows in 16.0f64..100_000.0,
            overlap in any::<bool>(),
            fixed in prop::collection::vec(prop_oneof![Just(0.0), 1e-7f64..1e-3], 4),
        ) {
            let mut inv = inventory(&c, &nets);
            // Fixed costs per iteration keep the search exact: its bound
            // (balanced compute without them) only gets looser.
            for (d, &a) in inv.devices.iter_mut().zip(&fixed) {
                d.fixed_seconds = a;
            }
            let p = problem(rows, if overlap { Estimate::Overlap } else { Estimate::Additive });
            let (bb, ex) = (branch_and_bound(&inv, &p).unwrap(), exhaustive(&inv, &p).unwrap());
            prop_assert!((bb.seconds - ex.seconds).abs() <= 1e-12 * ex.seconds, "{:?} {:?}", bb, ex);
            let front: Vec<(usize, f64)> = pareto(&inv, &p).unwrap().iter().map(|c| (c.devices, c.seconds)).collect();
            let brute = brute_front(&inv, &p);
            prop_assert_eq!(front.len(), brute.len(), "{:?} {:?}", front, brute);
            for (a, b) in front.iter().zip(&brute) {
                prop_assert_eq!(a.0, b.0);
                prop_assert!((a.1 - b.1).abs() <= 1e-12 * b.1);
            }
        }
    }

    /// Soares §4.1: fast devices behind a slow network lose to slower ones
    /// on a fast one when messages dominate, and win when compute does.
    #[test]
    fn the_network_decides_when_messages_dominate() {
        // Host 0: two devices, 4x faster, reachable only over the slow
        // network from host 1; host 1: eight slow devices.
        let inv = inventory(&[(0, 1e-9, 2), (1, 4e-9, 8)], &[(1e-3, 1e-7)]);
        // Few rows: an iteration is microseconds of compute, the network
        // milliseconds.
        let small = branch_and_bound(&inv, &problem(64.0, Estimate::Additive)).unwrap();
        assert_eq!(small.network, None);
        assert_eq!(small.counts, vec![2, 0], "{small:?}");
        // Many rows: compute dominates and every device pays off.
        let big = branch_and_bound(&inv, &problem(1e6, Estimate::Additive)).unwrap();
        assert_eq!(big.counts, vec![2, 8], "{big:?}");
        assert_eq!(big.network.as_deref(), Some("net0"));
    }

    /// Two fast and two slow devices on one host, 4096 rows, additive (the
    /// messages count, hidden by nothing): the inventory, the problem, the
    /// best choice and its sweep.
    fn mixed() -> (Inventory, Problem, Choice, Vec<Choice>) {
        let inv = inventory(&[(0, 1e-9, 2), (0, 3e-9, 2)], &[]);
        let p = problem(4096.0, Estimate::Additive);
        let best = branch_and_bound(&inv, &p).unwrap();
        let s = sweep(&inv, &p, &best, &[4096, 1024]);
        (inv, p, best, s)
    }

    #[test]
    fn the_sweep_ranks_layouts_and_seeding_wins_on_mixed_devices() {
        let (inv, p, best, s) = mixed();
        assert_eq!(s.len(), 12, "2 weightings and m x 1..4 per rank");
        assert!(s.windows(2).all(|w| w[0].seconds <= w[1].seconds));
        assert_eq!(s[0].weights, Weights::Seeded);
        assert_eq!(s[0].per_rank, 4, "in-process links are the cheapest");
        // One dimension: no m.
        let flat = Problem {
            cells_per_row: 1.0,
            bytes_per_row: 4.0,
            ..p
        };
        assert!(sweep(&inv, &flat, &best, &[4096])
            .iter()
            .all(|c| c.partition == "w0"));
    }

    /// The ranking: the best's layouts and each other count's best,
    /// fastest first; the runner-up is the first other run, past the same
    /// layout at fewer devices per rank.
    #[test]
    fn the_ranking_and_its_runner_up() {
        let (inv, p, _, s) = mixed();
        let counts = per_count(&inv, &p).unwrap();
        assert_eq!(
            counts.iter().map(|c| c.devices).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        let r = ranked(&s, &counts);
        assert_eq!(r.len(), s.len() + 3, "{r:?}");
        assert!(r.windows(2).all(|w| w[0].seconds <= w[1].seconds));
        assert_eq!(r[0], s[0]);
        let second = runner_up(&r).unwrap();
        let k = r.iter().position(|c| c == second).unwrap();
        assert!(k > 1, "seeded slabs at 3 and 4 per rank first: {r:?}");
        let layout = |c: &Choice| (c.counts.clone(), c.partition.clone(), c.weights);
        assert!(r[..k].iter().all(|c| layout(c) == layout(&r[0])));
        assert_ne!(layout(second), layout(&r[0]));
        // One device: its three layouts are one run.
        let one = inventory(&[(0, 1e-9, 1)], &[]);
        let b = branch_and_bound(&one, &p).unwrap();
        let r = ranked(
            &sweep(&one, &p, &b, &[4096, 1024]),
            &per_count(&one, &p).unwrap(),
        );
        assert_eq!(r.len(), 3);
        assert_eq!(runner_up(&r), None);
    }

    /// Hand-computed blocks: four 10 ns devices on 64x64 cells of 4 B make a
    /// 2x2 grid of 32x32 blocks, each sending 32 cells (128 B) to its two
    /// face neighbours, against slabs of 16 rows whose inner devices send
    /// 64 cells (256 B) to two. With messages dear per byte, m wins. In 3-d
    /// eight devices on 16³ make 2x2x2 blocks of 8³ with three neighbours.
    #[test]
    fn the_sweep_times_block_partitions_by_hand() {
        let mut inv = inventory(&[(0, 1e-8, 4)], &[]);
        inv.in_process = LinkSpec {
            alpha: 2e-6,
            beta: 1e-9,
        };
        let p = Problem {
            rows: 64.0,
            cells_per_row: 64.0,
            halo_rows: 1.0,
            bytes_per_row: 256.0,
            iterations: 100.0,
            estimate: Estimate::Additive,
        };
        let best = branch_and_bound(&inv, &p).unwrap();
        assert_eq!(best.counts, vec![4]);
        let s = sweep(&inv, &p, &best, &[64, 64]);
        let m = &s[0];
        assert_eq!((m.partition.as_str(), m.per_rank), ("m", 4), "{s:?}");
        let blocks = 1024e-8 + 2.0 * (2e-6 + 128e-9);
        assert!((m.seconds - 100.0 * blocks).abs() < 1e-15, "{m:?}");
        let slab = s
            .iter()
            .find(|c| c.partition == "w0" && c.per_rank == 4 && c.weights == Weights::Equal)
            .unwrap();
        let slabs = 1024e-8 + 2.0 * (2e-6 + 256e-9);
        assert!((slab.seconds - 100.0 * slabs).abs() < 1e-15, "{slab:?}");

        let mut inv = inventory(&[(0, 1e-8, 8)], &[]);
        inv.in_process = LinkSpec {
            alpha: 2e-6,
            beta: 1e-9,
        };
        let p = Problem {
            rows: 16.0,
            cells_per_row: 256.0,
            bytes_per_row: 1024.0,
            ..p
        };
        let t = inv.time_blocks(&p, &[16, 16, 16], &[8], None, 8).unwrap();
        let blocks = 512e-8 + 3.0 * (2e-6 + 256e-9);
        assert!((t - 100.0 * blocks).abs() < 1e-15, "{t}");
        // A size that is not the problem's is refused.
        assert_eq!(inv.time_blocks(&p, &[16, 16], &[8], None, 8), None);
    }

    /// A fixed cost per iteration makes small devices not worth booking:
    /// by rate alone eight slow devices add 8/4 = 2 fast devices' worth, but
    /// the two fast ones finish an iteration in 0.52 ms, less than the slow
    /// ones' fixed 0.6 ms.
    #[test]
    fn a_fixed_cost_per_iteration_drops_devices_that_do_not_pay() {
        let mut inv = inventory(&[(0, 1e-9, 2), (0, 4e-9, 8)], &[]);
        let p = problem(1024.0, Estimate::Additive);
        assert_eq!(branch_and_bound(&inv, &p).unwrap().counts, vec![2, 8]);
        inv.devices[1].fixed_seconds = 6e-4;
        let best = branch_and_bound(&inv, &p).unwrap();
        assert_eq!(best.counts, vec![2, 0], "{best:?}");
        // 1024 x 1024 cells over two 1 ns devices, plus one message.
        let alone = 1024.0 * 1024.0 * 1e-9 / 2.0 + 2e-6 + 4096.0 * 1e-11;
        assert!((best.seconds - 100.0 * alone).abs() < 1e-12, "{best:?}");
        inv.devices[1].fixed_seconds = -1.0;
        assert!(exhaustive(&inv, &p).is_err());
    }

    #[test]
    fn bad_inventories_are_refused() {
        let mut inv = inventory(&[(0, 1e-9, 0)], &[]);
        assert_eq!(
            branch_and_bound(&inv, &problem(10.0, Estimate::Additive)).unwrap_err(),
            PlanError::Empty("no devices")
        );
        inv.devices[0].count = 1;
        inv.devices[0].seconds_per_cell = -1.0;
        assert_eq!(
            exhaustive(&inv, &problem(10.0, Estimate::Additive))
                .unwrap_err()
                .to_string(),
            "device c0 seconds_per_cell must be a finite number > 0, got -1"
        );
        // Too many devices, or too many choices of counts, before any
        // search (99999999999 devices once asked for 2.4 TB).
        let p = problem(10.0, Estimate::Additive);
        for (classes, why) in [
            (
                vec![(0, 1e-9, 99_999_999_999)],
                "99999999999 devices, at most 1024",
            ),
            (
                vec![(0, 1e-9, usize::MAX), (1, 1e-9, 1)],
                "devices, at most 1024",
            ),
            (vec![(0, 1e-9, 16); 41], "choices of counts over 41 entries"),
        ] {
            let inv = inventory(&classes, &[(1e-6, 1e-9)]);
            for e in [
                branch_and_bound(&inv, &p).unwrap_err(),
                pareto(&inv, &p).unwrap_err(),
            ] {
                assert!(e.to_string().contains(why), "{e}");
            }
        }
        let mut twice = inventory(&[(0, 1e-9, 1), (0, 2e-9, 1)], &[(1e-6, 1e-9)]);
        twice.devices[1].name = "c0".into();
        assert_eq!(
            branch_and_bound(&twice, &p).unwrap_err().to_string(),
            "the inventory names device c0@h0 twice: give each entry a name of its own"
        );
        twice.devices[1].host = "h1".into();
        branch_and_bound(&twice, &p).unwrap();
        twice.networks.push(twice.networks[0].clone());
        assert!(branch_and_bound(&twice, &p)
            .unwrap_err()
            .to_string()
            .contains("network net0 twice"));
        // Two hosts and no network: each host alone.
        let inv = inventory(&[(0, 1e-9, 1), (1, 1e-9, 1)], &[]);
        let c = branch_and_bound(&inv, &problem(10.0, Estimate::Additive)).unwrap();
        assert_eq!(c.devices, 1);
    }
}

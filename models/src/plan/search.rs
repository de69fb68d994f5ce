//! The best choice of devices and network: HCLogP's branch and bound, the
//! exhaustive search it is tested against, and the Pareto front of
//! (devices, time).

use super::choice::{slabs, Choice, Problem, Weights};
use super::inventory::{Inventory, Network, PlanError};

impl Inventory {
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
    pub(super) fn network_options(&self) -> Vec<Option<&Network>> {
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

//! The perfectly balanced split of a run's cells: water-filling over the
//! devices' lines, bisection with tile curves, and the weights it seeds a
//! run with.

use super::device::Device;
use super::machine::Machine;
use super::run::Run;

/// Halvings of an interval in [`Machine::balanced`]'s bisections: down to
/// the last bits of an f64.
const BISECTIONS: usize = 64;

/// The perfectly balanced split of `total` cells over devices whose
/// iteration costs `a + b · cells` (`(a, b)` pairs, `b > 0`, `a >= 0`): the
/// least time `T` at which every device busy finishes together, and each
/// device's cells `(T − a) / b` (0 for a device whose fixed cost alone is
/// at least `T`: adding it would only slow the iteration). Water-filling
/// over the devices by fixed cost, cheapest first. With every `a = 0` this
/// is HCLogP's split by relative power, `T = total / Σ 1/b`.
pub fn balance(costs: &[(f64, f64)], total: f64) -> (f64, Vec<f64>) {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&x, &y| costs[x].0.total_cmp(&costs[y].0));
    let (mut speed, mut offset) = (0.0, 0.0);
    let mut t = f64::INFINITY;
    for (k, &i) in order.iter().enumerate() {
        let (a, b) = costs[i];
        speed += 1.0 / b;
        offset += a / b;
        t = (total + offset) / speed;
        // The next device joins only when the others would still be busy
        // past its fixed cost.
        if order.get(k + 1).is_none_or(|&j| t <= costs[j].0) {
            break;
        }
    }
    let cells = costs.iter().map(|&(a, b)| ((t - a) / b).max(0.0)).collect();
    (t, cells)
}

impl Machine {
    /// Each device's `(a, b)`: fixed seconds per iteration, seconds per
    /// cell.
    pub fn costs(&self) -> Vec<(f64, f64)> {
        self.devices
            .iter()
            .map(|d| (d.fixed_seconds, d.seconds_per_cell))
            .collect()
    }

    /// The balanced split of `total_cells`: the least time `T` at which
    /// every device busy finishes together, and each device's cells. On
    /// lines alone it is [`balance`]'s water-filling. With tile curves each
    /// device's time still rises with its cells ([`Machine::new`] refuses a
    /// falling factor), so the cells it computes by a time are found by
    /// bisection, and so is the time at which they add up to the total. A
    /// fixed-point split (each device's line scaled by its factor at the
    /// last split's cells) swapped between two splits for ever on a curve
    /// from 0.25 to 1 over a doubling of cells.
    pub fn balanced(&self, total_cells: f64) -> (f64, Vec<f64>) {
        if total_cells <= 0.0 || self.devices.iter().all(|d| d.tile_curve.is_empty()) {
            return balance(&self.costs(), total_cells);
        }
        let bisect = |mut lo: f64, mut hi: f64, below: &dyn Fn(f64) -> bool| {
            for _ in 0..BISECTIONS {
                let mid = 0.5 * (lo + hi);
                if below(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo, hi)
        };
        // The most cells `d` computes within `t` seconds.
        let cells_by = |d: &Device, t: f64| {
            if d.time(total_cells) <= t {
                total_cells
            } else {
                bisect(0.0, total_cells, &|c| d.time(c) <= t).0
            }
        };
        let sum = |t: f64| self.devices.iter().map(|d| cells_by(d, t)).sum::<f64>();
        // By the fastest device's time for all cells they are all placed.
        let alone = self
            .devices
            .iter()
            .map(|d| d.time(total_cells))
            .fold(f64::INFINITY, f64::min);
        let (_, t) = bisect(0.0, alone, &|t| sum(t) < total_cells);
        let mut cells: Vec<f64> = self.devices.iter().map(|d| cells_by(d, t)).collect();
        // At `t` they hold at least the total: trimmed to it, none slower.
        let placed: f64 = cells.iter().sum();
        for c in &mut cells {
            *c *= total_cells / placed;
        }
        let t = self
            .devices
            .iter()
            .zip(&cells)
            .map(|(d, &c)| d.time(c))
            .fold(0.0, f64::max);
        (t, cells)
    }

    /// The model-seeded weights for a run of `total_cells` cells: the cells
    /// each device computes in the balanced split ([`Machine::balanced`]),
    /// so every device's kernel time is equal. Without fixed costs or tile
    /// curves they are proportional to the relative powers. A device the
    /// split leaves idle keeps a weight of one cell: a partition gives
    /// every device a block.
    pub fn seeded_weights(&self, total_cells: f64) -> Vec<f64> {
        self.balanced(total_cells)
            .1
            .into_iter()
            .map(|c| c.max(1.0))
            .collect()
    }

    /// [`Machine::seeded_weights`] at the cost each device has in the run
    /// the weights seed: `global_rows` rows of `cells_per_row` cells of
    /// `cell_bytes`, a stencil reaching `halo_rows` rows. The split is taken
    /// again on the machine at the working set of the plain split's tiles
    /// ([`Machine::at_working_set`], as `predict` costs a run): one
    /// correction, so the weights are a function of the run alone.
    pub fn seeded_weights_for(
        &self,
        global_rows: u64,
        cells_per_row: u64,
        halo_rows: u64,
        cell_bytes: f64,
    ) -> Vec<f64> {
        let total = global_rows as f64 * cells_per_row as f64;
        let plain = self.seeded_weights(total);
        if self.memory.is_none() || self.calibrated_at.is_none() {
            return plain;
        }
        let halo_bytes = cells_per_row as f64 * cell_bytes;
        // The link is not read: only the rows and the tiles' shape are.
        match Run::from_weights(
            global_rows,
            cells_per_row,
            halo_rows,
            halo_bytes,
            1,
            &plain,
            "",
        ) {
            Ok(run) => self.at_working_set(&run).seeded_weights(total),
            Err(_) => plain,
        }
    }
}

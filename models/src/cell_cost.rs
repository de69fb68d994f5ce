//! A device's seconds per cell as a function of where its tile sits: the
//! working set every device in host memory streams through together and
//! the rows a stencil reuses, read against the host's memory curve. One
//! calibration at one tile size then predicts tiles it never ran.
//!
//! The model: a cell's time is the calibrated one plus the change in the
//! memory time of its bytes, `Δm = m(now) − m(calibrated)`, with
//! `m(ws) = bytes per cell · streams / rate(ws)` at the curve's rate for
//! the whole working set (non-increasing in it: a curve measured on a
//! loaded host may rise between points, which no cache does). Every device
//! in host memory is scaled by `1 + Δm / s_ref`, `s_ref` the fastest such
//! device's seconds per cell: an emulated slow device (a slowdown waits a
//! multiple of its kernel) stretches with its kernel.

use serde::{Deserialize, Serialize};

use crate::memory::HostMemory;

/// A device never runs faster than this share of its calibrated seconds
/// per cell, however far into the caches a tile moves: the arithmetic
/// stays when the memory time goes.
pub const MIN_CELL_COST_SHARE: f64 = 0.5;

/// What the devices in host memory stream through it in an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkingSet {
    /// Bytes resident: both time levels of every such device's cells.
    pub bytes: f64,
    /// Devices streaming at once (sharing the rate).
    pub streams: f64,
    /// Bytes of one cell.
    pub cell_bytes: f64,
    /// Bytes of one row of a tile (the product of the non-partitioned
    /// extents, times the cell bytes).
    pub row_bytes: f64,
    /// Rows of the source a row's update reads: `2 · halo_rows + 1`.
    pub reach_rows: f64,
}

impl WorkingSet {
    /// The working set of devices computing `cells` each (those in host
    /// memory only) with rows of `cells_per_row` cells of `cell_bytes`,
    /// and a stencil reaching `halo_rows` rows either way.
    pub fn of(cells: &[f64], cells_per_row: f64, cell_bytes: f64, halo_rows: f64) -> Self {
        let streaming = cells.iter().filter(|&&c| c > 0.0);
        Self {
            bytes: 2.0 * cell_bytes * streaming.clone().sum::<f64>(),
            streams: streaming.count() as f64,
            cell_bytes,
            row_bytes: cells_per_row * cell_bytes,
            reach_rows: 2.0 * halo_rows + 1.0,
        }
    }

    /// Bytes a cell's update moves from where the tile sits: its source
    /// read and its destination written while the rows it reuses stay in
    /// a nearer cache; each source row read again for every row of the
    /// reach when those rows (of every stream) outgrow the nearest working
    /// set the curve measured.
    pub fn bytes_per_cell(&self, memory: &HostMemory) -> f64 {
        let window = (self.reach_rows + 1.0) * self.row_bytes * self.streams.max(1.0);
        let nearest = memory.rates.first().map_or(f64::INFINITY, |p| p.0);
        if window > nearest {
            (self.reach_rows + 1.0) * self.cell_bytes
        } else {
            2.0 * self.cell_bytes
        }
    }

    /// Seconds per cell its memory traffic takes: the bytes per cell, each
    /// stream with its share of the rate at the whole working set.
    pub fn memory_seconds_per_cell(&self, memory: &HostMemory) -> f64 {
        self.bytes_per_cell(memory) * self.streams.max(1.0) / falling_rate(memory, self.bytes)
    }
}

/// The curve's rate at `bytes`, never above its rate at a smaller working
/// set: the lowest of the curve there and every point at or below `bytes`.
pub fn falling_rate(memory: &HostMemory, bytes: f64) -> f64 {
    memory
        .rates
        .iter()
        .take_while(|p| p.0 <= bytes)
        .map(|p| p.1)
        .fold(memory.rate_at(bytes), f64::min)
}

/// The factor on a host-memory device's calibrated seconds per cell at the
/// working set `now`, calibrated at `at` with `reference` the fastest such
/// device's seconds per cell: `1 + Δm / reference`, at least
/// [`MIN_CELL_COST_SHARE`]; 1 at the calibrated working set.
pub fn cell_cost_factor(
    memory: &HostMemory,
    at: &WorkingSet,
    now: &WorkingSet,
    reference: f64,
) -> f64 {
    if reference.is_nan() || reference <= 0.0 {
        return 1.0;
    }
    let delta = now.memory_seconds_per_cell(memory) - at.memory_seconds_per_cell(memory);
    (1.0 + delta / reference).max(MIN_CELL_COST_SHARE)
}

/// A device's seconds per cell at `now`, calibrated at `calibrated` over
/// `at` ([`cell_cost_factor`], the device its own reference).
pub fn seconds_per_cell(
    calibrated: f64,
    memory: &HostMemory,
    at: &WorkingSet,
    now: &WorkingSet,
) -> f64 {
    calibrated * cell_cost_factor(memory, at, now, calibrated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// In a 4 MiB cache 64 GB/s, beyond 32 MiB 8 GB/s.
    fn memory() -> HostMemory {
        HostMemory::new(vec![(2e6, 64e9), (4e6, 64e9), (32e6, 8e9), (512e6, 8e9)]).unwrap()
    }

    fn ws(cells_each: f64, devices: usize, row: f64) -> WorkingSet {
        WorkingSet::of(&vec![cells_each; devices], row, 4.0, 1.0)
    }

    #[test]
    fn the_calibrated_working_set_gives_the_calibrated_cost() {
        let at = ws(5e5, 2, 1024.0);
        assert_eq!(seconds_per_cell(2.4e-10, &memory(), &at, &at), 2.4e-10);
    }

    /// Hand-computed: calibrated with two 0.5 M-cell tiles (8 MB resident,
    /// a third of the way in logs from 4 to 32 MB: 32 GB/s; 8 B a cell, 2
    /// streams: 0.5 ns), a layout of two 1.6 M-cell tiles (25.6 MB) costs
    /// the calibrated 0.24 ns plus the difference of memory times.
    #[test]
    fn a_tile_beyond_the_cache_pays_the_memory_it_waits_for() {
        let m = memory();
        let (at, now) = (ws(5e5, 2, 1024.0), ws(1.6e6, 2, 1024.0));
        assert_eq!(at.bytes, 8e6);
        assert!((m.rate_at(8e6) / 32e9 - 1.0).abs() < 1e-12);
        let want = 2.4e-10 + 16.0 / m.rate_at(25.6e6) - 16.0 / 32e9;
        let got = seconds_per_cell(2.4e-10, &m, &at, &now);
        assert!((got / want - 1.0).abs() < 1e-12, "{got} {want}");
        assert!(got > 1.5 * 2.4e-10);
        // A smaller tile runs faster, never below the floor.
        let small = seconds_per_cell(2.4e-10, &m, &now, &at);
        assert_eq!(small, 2.4e-10 * MIN_CELL_COST_SHARE);
    }

    /// A reference faster than the device (an emulated slow one) scales
    /// it by the reference's factor.
    #[test]
    fn a_slow_device_stretches_with_its_reference() {
        let m = memory();
        let (at, now) = (ws(5e5, 2, 1024.0), ws(1.6e6, 2, 1024.0));
        let f = cell_cost_factor(&m, &at, &now, 2.4e-10);
        assert_eq!(f, seconds_per_cell(2.4e-10, &m, &at, &now) / 2.4e-10);
        assert!(f > 1.0);
        assert_eq!(cell_cost_factor(&m, &at, &now, 0.0), 1.0);
    }

    /// Rows too long for the stencil's reuse to stay near: each source row
    /// is read once per row of the reach.
    #[test]
    fn long_rows_are_read_again() {
        let m = memory();
        assert_eq!(ws(5e5, 2, 1024.0).bytes_per_cell(&m), 8.0);
        // 4 rows of 2^18 cells of 4 B, two streams: 8 MiB > 2 MB.
        assert_eq!(ws(5e6, 2, 262144.0).bytes_per_cell(&m), 16.0);
    }

    #[test]
    fn a_curve_that_rises_is_held_falling() {
        let rising = HostMemory::new(vec![(2e6, 60e9), (8e6, 9e9), (16e6, 10e9)]).unwrap();
        assert_eq!(falling_rate(&rising, 16e6), 9e9);
        assert_eq!(falling_rate(&rising, 1e6), 60e9);
    }

    proptest! {
        /// Seconds per cell never fall as the working set grows, nor as
        /// more streams share it; and they are the calibrated ones where
        /// calibrated.
        #[test]
        fn the_cost_is_monotone_in_the_working_set(
            a in 1e3f64..1e8, b in 1e3f64..1e8, s in 1e-11f64..1e-8,
            rates in prop::collection::vec(1e9f64..1e11, 2..8),
        ) {
            let m = HostMemory::new(
                rates.iter().enumerate().map(|(k, &r)| (2e6 * 2f64.powi(k as i32), r)).collect(),
            ).unwrap();
            let at = ws(1e6, 2, 1024.0);
            let (lo, hi) = (a.min(b), a.max(b));
            let cost = |c: f64, n: usize| seconds_per_cell(s, &m, &at, &ws(c, n, 1024.0));
            prop_assert!(cost(lo, 2) <= cost(hi, 2));
            prop_assert!(cost(lo, 1) <= cost(lo, 2) * (1.0 + 1e-12));
            prop_assert_eq!(cost(1e6, 2), s);
        }
    }
}

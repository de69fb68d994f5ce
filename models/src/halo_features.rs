//! A predicted run's halo exchange described by the learned models'
//! features ([`Features`]): the messages are read from hitmap's
//! [`HaloPlan`] of the run's own layout, so a learned model sees the
//! exchange the skeleton would post, block remainders, short blocks that
//! reach past their neighbour and all.

use hitmap::{Footprint, HaloPlan, HitmapError, Layout, Partition, Shape};

use crate::learned::Features;
use crate::predict::Run;
use crate::ModelError;

/// Why a run's exchange could not be described.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HaloFeatureError {
    /// The run's partition is not a layout hitmap accepts.
    #[error("the run's layout: {0}")]
    Layout(#[from] HitmapError),
    /// Processes per rank must be at least one.
    #[error("processes per rank must be at least 1")]
    NoProcessesPerRank,
    /// A run value the features cannot use.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The run's layout: its rows weighted along the first axis (`w0`) of a
/// `rows × cells_per_row` domain. Along the one cut axis this is the real
/// domain's plan, whatever its other extents: a message carries
/// `halo rows × cells_per_row` cells either way.
pub fn layout_of(run: &Run) -> Result<Layout, HaloFeatureError> {
    let rows: u64 = run.rows.iter().sum();
    let domain = Shape::from_sizes(&[rows as usize, run.cells_per_row as usize]);
    // Weights equal to the rows reproduce them exactly: each boundary is
    // round(N · W_k / N) = W_k.
    let weights: Vec<f64> = run.rows.iter().map(|&r| r as f64).collect();
    Ok(Layout::new(
        &domain,
        Partition::Weighted(0),
        run.rows.len(),
        Some(&weights),
    )?)
}

/// A stencil reading `halo_rows` rows either way along the cut axis.
fn footprint(halo_rows: u64) -> Footprint {
    let reach = halo_rows as i64;
    Footprint::new(
        2,
        (1..=reach)
            .flat_map(|k| [vec![-k, 0], vec![k, 0]])
            .collect(),
    )
}

/// The features of one iteration's halo exchange of `run`, its devices
/// placed `per_rank` to a rank in order (device `d` on rank
/// `d / per_rank`), as `epsilod run` places them under `mpirun`.
pub fn halo_features(run: &Run, per_rank: usize) -> Result<Features, HaloFeatureError> {
    if per_rank == 0 {
        return Err(HaloFeatureError::NoProcessesPerRank);
    }
    let bytes_per_cell = crate::check_finite("halo bytes per row", run.halo_bytes_per_row)?
        / run.cells_per_row.max(1) as f64;
    let layout = layout_of(run)?;
    let plan = HaloPlan::new(&layout, &footprint(run.halo_rows))?;
    let sends: Vec<Vec<(usize, u64)>> = (0..plan.procs())
        .map(|p| {
            plan.vp(p)
                .sends
                .iter()
                .map(|e| (e.peer, (e.card() as f64 * bytes_per_cell).round() as u64))
                .collect()
        })
        .collect();
    let owners: Vec<usize> = (0..plan.procs()).map(|p| p / per_rank).collect();
    Ok(Features::of(&sends, &owners))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(rows: &[u64], cells: u64, halo: u64) -> Run {
        Run {
            rows: rows.to_vec(),
            cells_per_row: cells,
            halo_rows: halo,
            halo_bytes_per_row: cells as f64 * 4.0,
            iterations: 1,
            link: "net".into(),
        }
    }

    #[test]
    fn three_devices_by_hand() {
        // 100 cells of 4 bytes per row, one halo row: every message 400 B;
        // the middle device sends two, the ends one each.
        let r = run(&[10, 20, 30], 100, 1);
        let one = halo_features(&r, 3).unwrap();
        assert_eq!(
            (one.ranks, one.per_rank, one.l, one.pm, one.pd),
            (1.0, 3.0, 400.0, 2.0, 800.0)
        );
        assert_eq!(
            (one.td, one.tm, one.ind_max, one.inm_max),
            (1600.0, 4.0, 1600.0, 4.0)
        );
        assert_eq!((one.nd_max, one.nm_max), (0.0, 0.0));
        // One device per rank: every message leaves its rank.
        let spread = halo_features(&r, 1).unwrap();
        assert_eq!(
            (spread.nd_min, spread.nd_avg, spread.nd_max),
            (400.0, 1600.0 / 3.0, 800.0)
        );
        assert_eq!(
            (spread.nm_min, spread.nm_max, spread.ind_max),
            (1.0, 2.0, 0.0)
        );
        // Two on rank 0, one on rank 1: only 1<->2 crosses.
        let two = halo_features(&r, 2).unwrap();
        assert_eq!((two.ranks, two.nd_min, two.nd_max), (2.0, 400.0, 400.0));
        assert_eq!((two.ind_max, two.inm_max), (800.0, 2.0));
    }

    #[test]
    fn a_block_thinner_than_the_halo_makes_its_neighbours_reach_past_it() {
        // Reach 2 over a 1-row middle block: devices 0 and 2 exchange too.
        let f = halo_features(&run(&[8, 1, 8], 10, 2), 3).unwrap();
        assert_eq!(f.pm, 2.0, "{f:?}");
        assert_eq!(f.tm, 6.0, "{f:?}");
    }

    #[test]
    fn bad_runs_are_named() {
        let r = run(&[4, 4], 10, 1);
        assert_eq!(
            halo_features(&r, 0),
            Err(HaloFeatureError::NoProcessesPerRank)
        );
        let mut nan = r.clone();
        nan.halo_bytes_per_row = f64::NAN;
        assert!(matches!(
            halo_features(&nan, 1),
            Err(HaloFeatureError::Model(ModelError::InvalidValue { .. }))
        ));
    }

    proptest! {
        /// Against a hand-built chain: with every block at least as deep as
        /// the halo, each device exchanges `halo × cells × 4` bytes with
        /// each existing neighbour and no one else.
        #[test]
        fn deep_blocks_exchange_with_their_chain_neighbours(
            rows in prop::collection::vec(3u64..50, 1..9),
            cells in 1u64..300,
            halo in 1u64..4,
            per_rank in 1usize..5,
        ) {
            let f = halo_features(&run(&rows, cells, halo), per_rank).unwrap();
            let p = rows.len();
            let m = halo * cells * 4;
            let sends: Vec<Vec<(usize, u64)>> = (0..p)
                .map(|d| {
                    let mut s = Vec::new();
                    if d > 0 { s.push((d - 1, m)); }
                    if d + 1 < p { s.push((d + 1, m)); }
                    s
                })
                .collect();
            let owners: Vec<usize> = (0..p).map(|d| d / per_rank).collect();
            prop_assert_eq!(f, Features::of(&sends, &owners));
        }
    }
}

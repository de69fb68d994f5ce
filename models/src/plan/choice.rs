//! The run to plan, how its time is estimated, and one choice of devices,
//! network and layout with its estimated time: what every search returns.

use serde::{Deserialize, Serialize};

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

pub(super) fn slabs() -> String {
    "w0".into()
}

//! A run to predict (the row partition and what moves each iteration) and
//! the times predicted for it.

use serde::{Deserialize, Serialize};

use super::method::Method;
use crate::{check_finite, ModelError};

/// A run to predict: the partition and what moves each iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Rows owned by each device, in machine order.
    pub rows: Vec<u64>,
    /// Cells per row (the product of the non-partitioned extents).
    pub cells_per_row: u64,
    /// Halo depth in rows (the stencil's radius along the partitioned axis).
    pub halo_rows: u64,
    /// Bytes of one halo row.
    pub halo_bytes_per_row: f64,
    /// Loop iterations.
    pub iterations: u64,
    /// The link class between neighbours.
    pub link: String,
}

impl Run {
    /// Bytes of one cell: a halo row's bytes over its cells.
    pub fn cell_bytes(&self) -> f64 {
        if self.cells_per_row == 0 {
            0.0
        } else {
            self.halo_bytes_per_row / self.cells_per_row as f64
        }
    }

    /// Splits `global_rows` by `weights` as the skeleton's weighted
    /// partition does (`hitmap::weighted_blocks`: cumulative rounding, so
    /// the rows sum exactly and match the run's row for row).
    pub fn from_weights(
        global_rows: u64,
        cells_per_row: u64,
        halo_rows: u64,
        halo_bytes_per_row: f64,
        iterations: u64,
        weights: &[f64],
        link: &str,
    ) -> Result<Self, ModelError> {
        if weights.is_empty() {
            return Err(ModelError::TooFewPoints {
                what: "a partition",
                needed: 1,
                got: 0,
            });
        }
        for &w in weights {
            if check_finite("weight", w)? < 0.0 {
                return Err(ModelError::InvalidValue {
                    what: "weight",
                    value: w,
                });
            }
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(ModelError::InvalidValue {
                what: "sum of weights",
                value: total,
            });
        }
        let rows = hitmap::weighted_blocks(hitmap::Sig::range(0, global_rows as i64), weights)
            .map_err(|_| ModelError::InvalidValue {
                what: "sum of weights",
                value: total,
            })?
            .iter()
            .map(|b| b.card() as u64)
            .collect();
        Ok(Self {
            rows,
            cells_per_row,
            halo_rows,
            halo_bytes_per_row,
            iterations,
            link: link.to_owned(),
        })
    }
}

/// Predicted times of one device, per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceTime {
    /// Compute seconds.
    pub compute: f64,
    /// Exchange seconds.
    pub exchange: f64,
}

/// A prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The method used.
    pub method: Method,
    /// Per-device times, machine order.
    pub devices: Vec<DeviceTime>,
    /// Seconds per iteration: the slowest device under the method's rule.
    pub iteration: f64,
    /// `iteration · iterations`.
    pub loop_time: f64,
    /// Compute alone, perfectly balanced: total cells over the summed
    /// speeds. A lower bound for every method and partition.
    pub balanced_iteration: f64,
    /// `balanced_iteration · iterations`.
    pub balanced_loop: f64,
}

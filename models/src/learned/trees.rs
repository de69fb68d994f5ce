//! The tree models' settings (boosted trees, and the forests of
//! [`crate::forest`]) and the samples as the `gbdt` crate reads them.

use gbdt::decision_tree::{Data, DataVec};
use serde::{Deserialize, Serialize};

use super::features::Sample;
use crate::forest::ForestOptions;

/// Settings of the boosted trees (the study tuned 500-1000 trees of depth
/// 6-7 with learning rates 0.003-0.01 on thousands of points; these suit a
/// few hundred).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GbrtOptions {
    /// Trees.
    pub trees: usize,
    /// Learning rate.
    pub shrinkage: f32,
    /// Depth of each tree.
    pub depth: u32,
    /// Fewest samples in a leaf.
    pub min_leaf: usize,
}

impl Default for GbrtOptions {
    fn default() -> Self {
        GbrtOptions {
            trees: 300,
            shrinkage: 0.1,
            depth: 6,
            min_leaf: 2,
        }
    }
}

pub(super) fn tree_data(samples: &[Sample]) -> DataVec {
    samples
        .iter()
        .map(|s| {
            let v: Vec<f32> = s.features.values().iter().map(|&x| x as f32).collect();
            Data::new_training_data(v, 1.0, s.seconds.ln() as f32, None)
        })
        .collect()
}

/// Settings of every tree model a fit may grow.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TreeOptions {
    /// The boosted trees.
    pub gbrt: GbrtOptions,
    /// The random forest and extra trees, and their seed.
    pub forest: ForestOptions,
}

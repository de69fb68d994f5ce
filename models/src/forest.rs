//! Randomised ensembles of regression trees: a random forest (Breiman
//! 2001: bootstrap samples, the best split over a random third of the
//! features) and extra trees (Geurts et al. 2006: the whole sample, one
//! random threshold per feature, the best of those). Both average their
//! trees and are seeded, so a fit is the same on every run and machine.
//!
//! Written here rather than taken from a crate: smartcore and linfa-trees
//! are not in this tree's registry, and either would bring dozens of
//! crates for some 200 lines; the trees' serialised form also stays ours.

use serde::{Deserialize, Serialize};

use crate::ModelError;

/// Which ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ensemble {
    /// Bootstrap samples, the best split over a random subset of features.
    RandomForest,
    /// The whole sample, one uniform random threshold per feature.
    ExtraTrees,
}

/// Settings of a forest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForestOptions {
    /// Trees averaged.
    pub trees: usize,
    /// Fewest samples in a leaf.
    pub min_leaf: usize,
    /// Seed of the samples, features and thresholds drawn.
    pub seed: u64,
}

impl Default for ForestOptions {
    fn default() -> Self {
        ForestOptions {
            trees: 200,
            min_leaf: 2,
            seed: 0,
        }
    }
}

/// SplitMix64: a small generator whose stream is fixed by its seed alone,
/// whatever crate versions the tree resolves.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is below 2^-40 here.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A node: a split sends `x[feature] <= threshold` left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Node {
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf(f64),
}

/// One tree, its root first; children always come after their parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Tree(Vec<Node>);

impl Tree {
    fn predict(&self, x: &[f64]) -> f64 {
        let mut at = 0;
        loop {
            match self.0[at] {
                Node::Leaf(v) => return v,
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => at = if x[feature] <= threshold { left } else { right },
            }
        }
    }
}

/// A fitted ensemble: the mean of its trees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    /// How it was grown.
    pub ensemble: Ensemble,
    trees: Vec<Tree>,
}

/// What growing one tree reads.
struct Grow<'a> {
    x: &'a [Vec<f64>],
    y: &'a [f64],
    ensemble: Ensemble,
    min_leaf: usize,
    rng: SplitMix,
}

impl Grow<'_> {
    fn mean(&self, rows: &[usize]) -> f64 {
        rows.iter().map(|&r| self.y[r]).sum::<f64>() / rows.len() as f64
    }

    /// The features a node may split on: a random third (at least one)
    /// for the forest, every one for extra trees (each author's default
    /// for regression).
    fn candidates(&mut self, features: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..features).collect();
        if self.ensemble == Ensemble::ExtraTrees {
            return all;
        }
        let k = (features / 3).max(1);
        for i in 0..k {
            let j = i + self.rng.below(features - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }

    /// The best split of `rows` as (feature, threshold, left rows, right
    /// rows), by the sum of squares it removes; None where none leaves
    /// `min_leaf` on both sides.
    fn split(&mut self, rows: &[usize]) -> Option<(usize, f64, Vec<usize>, Vec<usize>)> {
        let features = self.x[0].len();
        let total: f64 = rows.iter().map(|&r| self.y[r]).sum();
        let n = rows.len() as f64;
        // Gain of a left part with `ln` rows summing to `ls`: the drop in
        // the sum of squares, up to a constant of the node.
        let gain = |ls: f64, ln: f64| ls * ls / ln + (total - ls).powi(2) / (n - ln);
        let mut best: Option<(f64, usize, f64)> = None;
        for f in self.candidates(features) {
            let mut sorted: Vec<(f64, f64)> =
                rows.iter().map(|&r| (self.x[r][f], self.y[r])).collect();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (lo, hi) = (sorted[0].0, sorted[sorted.len() - 1].0);
            if lo >= hi {
                continue;
            }
            let mut consider = |g: f64, t: f64| {
                if best.is_none_or(|(bg, _, _)| g > bg) {
                    best = Some((g, f, t));
                }
            };
            match self.ensemble {
                Ensemble::ExtraTrees => {
                    // Uniform over the node's range; a side left too small
                    // (rounding can put t on hi) makes no split.
                    let t = lo + (hi - lo) * self.rng.unit();
                    let left = sorted.partition_point(|p| p.0 <= t);
                    if left >= self.min_leaf && sorted.len() - left >= self.min_leaf {
                        let ls: f64 = sorted[..left].iter().map(|p| p.1).sum();
                        consider(gain(ls, left as f64), t);
                    }
                }
                Ensemble::RandomForest => {
                    let mut ls = 0.0;
                    for i in 0..sorted.len() - 1 {
                        ls += sorted[i].1;
                        let left = i + 1;
                        if sorted[i].0 == sorted[i + 1].0
                            || left < self.min_leaf
                            || sorted.len() - left < self.min_leaf
                        {
                            continue;
                        }
                        consider(gain(ls, left as f64), 0.5 * (sorted[i].0 + sorted[i + 1].0));
                    }
                }
            }
        }
        let (_, f, t) = best?;
        let (left, right): (Vec<usize>, Vec<usize>) =
            rows.iter().partition(|&&r| self.x[r][f] <= t);
        Some((f, t, left, right))
    }

    fn tree(&mut self, rows: Vec<usize>) -> Tree {
        let mut nodes = vec![Node::Leaf(0.0)];
        let mut todo = vec![(0usize, rows)];
        while let Some((at, rows)) = todo.pop() {
            let split = if rows.len() >= 2 * self.min_leaf {
                self.split(&rows)
            } else {
                None
            };
            nodes[at] = match split {
                None => Node::Leaf(self.mean(&rows)),
                Some((feature, threshold, l, r)) => {
                    let (left, right) = (nodes.len(), nodes.len() + 1);
                    nodes.push(Node::Leaf(0.0));
                    nodes.push(Node::Leaf(0.0));
                    todo.push((right, r));
                    todo.push((left, l));
                    Node::Split {
                        feature,
                        threshold,
                        left,
                        right,
                    }
                }
            };
        }
        Tree(nodes)
    }
}

impl Forest {
    /// Grows `options.trees` trees of `ensemble` on rows `x` (each of the
    /// same length) and targets `y`.
    pub fn fit(
        ensemble: Ensemble,
        x: &[Vec<f64>],
        y: &[f64],
        options: ForestOptions,
    ) -> Result<Forest, ModelError> {
        if x.len() != y.len() {
            return Err(ModelError::LengthMismatch {
                left: x.len(),
                right: y.len(),
            });
        }
        if x.is_empty() || options.trees == 0 {
            return Err(ModelError::TooFewPoints {
                what: "a forest (samples and trees)",
                needed: 1,
                got: x.len().min(options.trees),
            });
        }
        if let Some(row) = x.iter().find(|r| r.len() != x[0].len()) {
            return Err(ModelError::LengthMismatch {
                left: row.len(),
                right: x[0].len(),
            });
        }
        let mut grow = Grow {
            x,
            y,
            ensemble,
            min_leaf: options.min_leaf.max(1),
            rng: SplitMix(options.seed),
        };
        let trees = (0..options.trees)
            .map(|_| {
                let rows = match ensemble {
                    Ensemble::RandomForest => {
                        (0..x.len()).map(|_| grow.rng.below(x.len())).collect()
                    }
                    Ensemble::ExtraTrees => (0..x.len()).collect(),
                };
                grow.tree(rows)
            })
            .collect();
        Ok(Forest { ensemble, trees })
    }

    /// The mean of the trees' predictions at `x`.
    pub fn predict(&self, x: &[f64]) -> f64 {
        self.trees.iter().map(|t| t.predict(x)).sum::<f64>() / self.trees.len() as f64
    }

    /// Checks a forest read back from a file: at least one tree, feature
    /// indices below `features`, every child after its parent and in the
    /// tree (so that walking a tree ends), finite values.
    pub fn check(&self, features: usize) -> Result<(), ModelError> {
        let bad = |what: &'static str, value: f64| Err(ModelError::InvalidValue { what, value });
        if self.trees.is_empty() {
            return bad("a forest's tree count", 0.0);
        }
        for tree in &self.trees {
            if tree.0.is_empty() {
                return bad("a tree's node count", 0.0);
            }
            for (at, node) in tree.0.iter().enumerate() {
                match *node {
                    Node::Leaf(v) if !v.is_finite() => return bad("a leaf's value", v),
                    Node::Leaf(_) => {}
                    Node::Split {
                        feature,
                        threshold,
                        left,
                        right,
                    } => {
                        if feature >= features {
                            return bad("a model's feature index", feature as f64);
                        }
                        if threshold.is_nan() {
                            return bad("a split's threshold", threshold);
                        }
                        for child in [left, right] {
                            if child <= at || child >= tree.0.len() {
                                return bad("a tree's child index", child as f64);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// y = x0 · (1 + x1) on a grid, x2 pure noise from the seed.
    fn data() -> (Vec<Vec<f64>>, Vec<f64>) {
        let mut rng = SplitMix(5);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for a in 0..12 {
            for b in 0..4 {
                x.push(vec![a as f64, b as f64, rng.unit()]);
                y.push(a as f64 * (1.0 + b as f64));
            }
        }
        (x, y)
    }

    #[test]
    fn both_ensembles_fit_in_range_and_are_seeded() {
        let (x, y) = data();
        for ensemble in [Ensemble::RandomForest, Ensemble::ExtraTrees] {
            let opts = ForestOptions {
                trees: 50,
                min_leaf: 1,
                seed: 3,
            };
            let f = Forest::fit(ensemble, &x, &y, opts).unwrap();
            let mse = x
                .iter()
                .zip(&y)
                .map(|(r, t)| (f.predict(r) - t).powi(2))
                .sum::<f64>()
                / y.len() as f64;
            let mean = y.iter().sum::<f64>() / y.len() as f64;
            let var = y.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / y.len() as f64;
            assert!(mse < 0.1 * var, "{ensemble:?}: training MSE {mse} of {var}");
            // The same seed grows the same trees; another seed others.
            assert_eq!(Forest::fit(ensemble, &x, &y, opts).unwrap(), f);
            let other = Forest::fit(ensemble, &x, &y, ForestOptions { seed: 4, ..opts }).unwrap();
            assert_ne!(other, f, "{ensemble:?}");
            // An average of leaves: never outside the targets seen.
            let far = f.predict(&[1e9, 1e9, 1e9]);
            assert!((0.0..=44.0).contains(&far), "{far}");
            f.check(3).unwrap();
        }
    }

    #[test]
    fn a_broken_forest_is_refused() {
        let (x, y) = data();
        let f = Forest::fit(Ensemble::ExtraTrees, &x, &y, ForestOptions::default()).unwrap();
        assert_eq!(
            f.check(2).unwrap_err().to_string(),
            ModelError::InvalidValue {
                what: "a model's feature index",
                value: 2.0
            }
            .to_string()
        );
        let mut looped = f.clone();
        looped.trees[0].0[0] = Node::Split {
            feature: 0,
            threshold: 1.0,
            left: 0,
            right: 1,
        };
        assert!(matches!(
            looped.check(3),
            Err(ModelError::InvalidValue {
                what: "a tree's child index",
                ..
            })
        ));
        assert!(matches!(
            Forest::fit(
                Ensemble::RandomForest,
                &x,
                &y[1..],
                ForestOptions::default()
            ),
            Err(ModelError::LengthMismatch { .. })
        ));
    }
}

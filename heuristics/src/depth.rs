//! How deep a halo to keep (`--halo-depth auto`): a cost model of the
//! iteration time as a function of the depth K, fitted to measured times.
//!
//! With ghost cells K reaches deep, a device exchanges halos once every K
//! iterations and computes a shrinking ring of ghost cells in between. Per
//! iteration that costs
//!
//! ```text
//! T(K) = a + b / K + c * K
//! ```
//!
//! - `a`: the work every iteration does whatever K (the block's cells, the
//!   bytes of the halos: K times deeper, K times rarer);
//! - `b / K`: what is paid once per exchange and so spread over K
//!   iterations: each message's latency, and on a device that fuses the
//!   iterations of a period, the pass over memory;
//! - `c * K`: the redundant compute, the ring of ghost cells (about
//!   (K - 1) / 2 reaches wide on average) computed by both neighbours.
//!
//! Times measured at a few depths fix the three costs (least squares); the
//! depth chosen is the one the model gives the least time, within the
//! depths measured (never extrapolated).

/// The fitted costs of [`T(K) = a + b / K + c K`](self), in seconds per
/// iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthModel {
    /// Seconds per iteration at any depth.
    pub a: f64,
    /// Seconds per exchange (spread over the K iterations of a period).
    pub b: f64,
    /// Seconds per iteration per unit of depth (redundant ring compute).
    pub c: f64,
}

impl DepthModel {
    /// Least-squares fit to `(depth, seconds per iteration)` samples.
    /// `None` unless three distinct depths were measured (and every time is
    /// finite): fewer cannot fix three costs.
    pub fn fit(samples: &[(usize, f64)]) -> Option<DepthModel> {
        let mut depths: Vec<usize> = samples.iter().map(|s| s.0).filter(|&k| k > 0).collect();
        depths.sort_unstable();
        depths.dedup();
        if depths.len() < 3 || samples.iter().any(|&(k, t)| k == 0 || !t.is_finite()) {
            return None;
        }
        // Normal equations of t = a + b x + c y, x = 1/K, y = K.
        let mut m = [[0.0f64; 4]; 3];
        for &(k, t) in samples {
            let row = [1.0, 1.0 / k as f64, k as f64];
            for i in 0..3 {
                for j in 0..3 {
                    m[i][j] += row[i] * row[j];
                }
                m[i][3] += row[i] * t;
            }
        }
        let [a, b, c] = solve3(m)?;
        Some(DepthModel { a, b, c })
    }

    /// The modelled seconds per iteration at depth `k`.
    pub fn predict(&self, k: usize) -> f64 {
        let k = k.max(1) as f64;
        self.a + self.b / k + self.c * k
    }

    /// The depth in `1..=max` with the least modelled time (the smallest of
    /// equals).
    pub fn best(&self, max: usize) -> usize {
        (1..=max.max(1)).fold(1, |best, k| {
            if self.predict(k) < self.predict(best) {
                k
            } else {
                best
            }
        })
    }
}

/// The depth to run at from `(depth, seconds per iteration)` samples: the
/// model's best within the depths measured, or, where the samples cannot be
/// fitted, the fastest depth measured (1 with none).
pub fn choose_depth(samples: &[(usize, f64)]) -> usize {
    let max = samples.iter().map(|s| s.0).max().unwrap_or(1);
    match DepthModel::fit(samples) {
        Some(m) => m.best(max),
        None => samples
            .iter()
            .filter(|s| s.1.is_finite())
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .map_or(1, |s| s.0.max(1)),
    }
}

/// Gaussian elimination with partial pivoting on an augmented 3x3 system;
/// `None` when it is singular.
fn solve3(mut m: [[f64; 4]; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        let lead = m[col];
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / lead[col];
                for (x, l) in r.iter_mut().zip(lead).skip(col) {
                    *x -= f * l;
                }
            }
        }
    }
    let x = [m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]];
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn times(m: DepthModel, depths: &[usize]) -> Vec<(usize, f64)> {
        depths.iter().map(|&k| (k, m.predict(k))).collect()
    }

    #[test]
    fn recovers_the_costs_of_exact_times() {
        let m = DepthModel {
            a: 3e-3,
            b: 1.2e-3,
            c: 4e-5,
        };
        let f = DepthModel::fit(&times(m, &[1, 2, 4, 8])).unwrap();
        for (got, want) in [(f.a, m.a), (f.b, m.b), (f.c, m.c)] {
            assert!((got - want).abs() < 1e-12, "{f:?} vs {m:?}");
        }
        // sqrt(b / c) = 5.48: the best integer depth is 5.
        assert_eq!(f.best(8), 5);
    }

    #[test]
    fn latency_without_redundancy_goes_deep_and_redundancy_without_latency_stays_at_one() {
        let latency = DepthModel {
            a: 1e-3,
            b: 5e-4,
            c: 0.0,
        };
        assert_eq!(choose_depth(&times(latency, &[1, 2, 4, 8])), 8);
        let ring = DepthModel {
            a: 1e-3,
            b: 0.0,
            c: 1e-5,
        };
        assert_eq!(choose_depth(&times(ring, &[1, 2, 4, 8])), 1);
    }

    #[test]
    fn too_few_depths_fall_back_to_the_fastest_measured() {
        assert_eq!(DepthModel::fit(&[(1, 2.0), (2, 1.0), (2, 1.5)]), None);
        assert_eq!(choose_depth(&[(1, 2.0), (2, 1.0), (2, 1.5)]), 2);
        assert_eq!(choose_depth(&[(1, 2.0), (4, f64::NAN)]), 1);
        assert_eq!(choose_depth(&[]), 1);
    }

    proptest! {
        /// Times with up to 5% noise around a model whose best depth clearly
        /// beats its neighbours still choose a depth whose true time is
        /// within 10% of the true best's; the choice stays in the measured
        /// range.
        #[test]
        fn noisy_times_choose_a_near_best_depth(
            a in 1e-4f64..1e-2, b in 0.0f64..1e-2, c in 0.0f64..1e-3,
            noise in prop::collection::vec(-0.05f64..0.05, 8),
        ) {
            let truth = DepthModel { a, b, c };
            let depths = [1usize, 2, 4, 8, 1, 2, 4, 8];
            let samples: Vec<(usize, f64)> = depths
                .iter()
                .zip(&noise)
                .map(|(&k, e)| (k, truth.predict(k) * (1.0 + e)))
                .collect();
            let k = choose_depth(&samples);
            prop_assert!((1..=8).contains(&k));
            let best = truth.predict(truth.best(8));
            prop_assert!(truth.predict(k) <= best * 1.10 + 1e-15, "chose {k}: {} vs {best}", truth.predict(k));
        }
    }
}

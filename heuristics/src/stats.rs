//! Statistics the heuristics share.

use crate::DeviceWindow;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The mean of `v`; 0 if empty.
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The unbiased sample variance of `v`; 0 with fewer than two values.
pub fn variance(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// The median of `v` (mean of the middle two for even lengths); 0 if empty.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// New weights proportional to each device's measured throughput (rows per
/// second): EPSILOD's `w_k = S / t_k` with `t_k` the time per row. A device
/// with no rows or no time keeps the mean weight of the others.
pub fn throughput_weights(devices: &[DeviceWindow]) -> Vec<f64> {
    let raw: Vec<Option<f64>> = devices.iter().map(DeviceWindow::throughput).collect();
    let known: Vec<f64> = raw.iter().flatten().copied().collect();
    let fill = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    let w: Vec<f64> = raw.iter().map(|r| r.unwrap_or(fill)).collect();
    let total: f64 = w.iter().sum();
    w.iter().map(|x| x / total).collect()
}

/// Predicted iteration kernel time once rows follow throughput:
/// all rows over the summed throughput.
pub fn balanced_time(devices: &[DeviceWindow]) -> f64 {
    let rows: usize = devices.iter().map(|d| d.rows).sum();
    let rate: f64 = devices.iter().filter_map(DeviceWindow::throughput).sum();
    if rate > 0.0 {
        rows as f64 / rate
    } else {
        0.0
    }
}

/// The statistics of a Welch t-test of `a` against `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WelchResult {
    /// The t statistic: (mean(a) - mean(b)) / se.
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub dof: f64,
    /// One-sided p-value for "a is larger than b".
    pub p_greater: f64,
    /// Standard error of mean(a) - mean(b).
    pub se: f64,
}

impl WelchResult {
    /// Half-width of the 95% confidence interval of mean(a) - mean(b).
    /// (Not computed with the test: the quantile is an iterative solve, too
    /// slow for a check that runs every iteration.)
    pub fn ci95(&self) -> f64 {
        StudentsT::new(0.0, 1.0, self.dof).map_or(f64::NAN, |d| d.inverse_cdf(0.975) * self.se)
    }
}

/// Welch's unequal-variance t-test of `a` against `b`; `None` when either
/// has fewer than two samples.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<WelchResult> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (variance(a) / na, variance(b) / nb);
    let se2 = va + vb;
    if se2 <= 0.0 {
        // No spread at all: the difference is exact.
        let p = if ma > mb { 0.0 } else { 1.0 };
        return Some(WelchResult {
            t: f64::INFINITY.copysign(ma - mb),
            dof: na + nb - 2.0,
            p_greater: p,
            se: 0.0,
        });
    }
    let t = (ma - mb) / se2.sqrt();
    let dof = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, dof).ok()?;
    Some(WelchResult {
        t,
        dof,
        p_greater: 1.0 - dist.cdf(t),
        se: se2.sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(rows: usize, t: f64) -> DeviceWindow {
        crate::testing::steady(rows, t, 30)
    }

    #[test]
    fn weights_follow_throughput() {
        // Same rows, one device 3x slower: it should get a quarter.
        let got = throughput_weights(&[w(100, 3.0), w(100, 1.0)]);
        assert!((got[0] - 0.25).abs() < 1e-12 && (got[1] - 0.75).abs() < 1e-12);
        // Balanced: 0.03 and 0.01 seconds per row, so together 1/0.03 + 1/0.01
        // = 133.3 rows per second, and all 200 rows take 1.5 seconds.
        let b = balanced_time(&[w(100, 3.0), w(100, 1.0)]);
        assert!((b - 1.5).abs() < 1e-12, "{b}");
        // A device without rows gets the others' mean weight.
        let got = throughput_weights(&[w(0, 0.0), w(50, 1.0), w(50, 1.0)]);
        assert!(got.iter().all(|x| (x - 1.0 / 3.0).abs() < 1e-12));
    }

    #[test]
    fn welch_matches_a_textbook_case() {
        // Two samples with known Welch statistics (computed independently).
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let r = welch_t_test(&a, &b).unwrap();
        assert!((r.t - -2.46).abs() < 0.01, "{r:?}");
        assert!((r.dof - 24.99).abs() < 0.05, "{r:?}");
        // two-sided p = 0.021 -> one-sided "a > b" is 1 - 0.0105
        assert!((r.p_greater - (1.0 - 0.0105)).abs() < 0.002, "{r:?}");
        assert!(welch_t_test(&a[..1], &b).is_none());
    }
}

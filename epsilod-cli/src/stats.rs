//! `epsilod compare`: each heuristic run R times, and the statistics table of
//! the EPSILOD study (reference.md §4): mean, standard deviation, 95%
//! confidence interval of the mean (Student t), median, 99th percentile, and
//! the 95% Welch interval of the difference of means against a baseline.

use epsilod::Report;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::{Data, Distribution, Max, Min, OrderStatistics};

/// One heuristic's runs, summarised over their loop times.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub heuristic: String,
    pub runs: usize,
    pub mean_seconds: f64,
    pub sd_seconds: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    pub median_seconds: f64,
    pub p99_seconds: f64,
    pub min_seconds: f64,
    pub max_seconds: f64,
    /// The baseline this row is compared with (`none` when it was run).
    pub baseline: String,
    /// mean(this) - mean(baseline), and its 95% Welch interval.
    pub diff_seconds: f64,
    pub diff_ci95_low: f64,
    pub diff_ci95_high: f64,
    /// 100 * diff / mean(baseline).
    pub diff_percent: f64,
    pub mean_rebalances: f64,
    pub mean_redistribution_seconds: f64,
}

/// Mean, standard deviation and the 95% Student-t interval of the mean.
pub fn mean_ci(samples: &[f64]) -> (f64, f64, f64, f64) {
    let d = Data::new(samples.to_vec());
    let mean = d.mean().unwrap_or(f64::NAN);
    let sd = d.std_dev().unwrap_or(f64::NAN);
    let n = samples.len() as f64;
    let half = StudentsT::new(0.0, 1.0, n - 1.0).map_or(f64::NAN, |t| t.inverse_cdf(0.975)) * sd
        / n.sqrt();
    (mean, sd, mean - half, mean + half)
}

/// The table: one row per heuristic, `loops[h]` its runs' loop seconds.
pub fn table(names: &[String], reports: &[Vec<Report>]) -> Vec<Row> {
    let loops: Vec<Vec<f64>> = reports
        .iter()
        .map(|rs| rs.iter().map(|r| r.summary.loop_seconds).collect())
        .collect();
    let base = names.iter().position(|n| n == "none").unwrap_or(0);
    names
        .iter()
        .zip(reports)
        .zip(&loops)
        .map(|((name, rs), xs)| {
            let (mean, sd, lo, hi) = mean_ci(xs);
            let mut d = Data::new(xs.clone());
            let (diff, dlo, dhi) = match heuristics::welch_t_test(xs, &loops[base]) {
                Some(w) => {
                    let diff = mean - mean_ci(&loops[base]).0;
                    let half = w.ci95();
                    (diff, diff - half, diff + half)
                }
                None => (f64::NAN, f64::NAN, f64::NAN),
            };
            let base_mean = mean_ci(&loops[base]).0;
            Row {
                heuristic: name.clone(),
                runs: xs.len(),
                mean_seconds: mean,
                sd_seconds: sd,
                ci95_low: lo,
                ci95_high: hi,
                median_seconds: d.median(),
                p99_seconds: d.percentile(99),
                min_seconds: d.min(),
                max_seconds: d.max(),
                baseline: names[base].clone(),
                diff_seconds: diff,
                diff_ci95_low: dlo,
                diff_ci95_high: dhi,
                diff_percent: 100.0 * diff / base_mean,
                mean_rebalances: rs.iter().map(|r| r.summary.rebalances as f64).sum::<f64>()
                    / rs.len() as f64,
                mean_redistribution_seconds: rs
                    .iter()
                    .map(|r| r.summary.redistribution_seconds_total)
                    .fold(0.0, |a, b| a + b)
                    / rs.len() as f64,
            }
        })
        .collect()
}

/// The table as text, one heuristic a line.
pub fn render(rows: &[Row]) -> String {
    let base = rows
        .first()
        .map_or("none".to_string(), |r| r.baseline.clone());
    let mut s = format!(
        "{:<13} {:>4} {:>10} {:>9} {:>23} {:>10} {:>10} {:>34} {:>10}\n",
        "heuristic",
        "runs",
        "mean [s]",
        "sd [s]",
        "95% CI of mean [s]",
        "median [s]",
        "p99 [s]",
        format!("vs {base}: diff [s] (95% Welch CI)"),
        "rebalances"
    );
    for r in rows {
        let diff = if r.heuristic == r.baseline {
            "-".to_string()
        } else {
            format!(
                "{:+.4} ({:+.1}%) [{:+.4}, {:+.4}]",
                r.diff_seconds, r.diff_percent, r.diff_ci95_low, r.diff_ci95_high
            )
        };
        s += &format!(
            "{:<13} {:>4} {:>10.4} {:>9.4} {:>23} {:>10.4} {:>10.4} {:>34} {:>10.1}\n",
            r.heuristic,
            r.runs,
            r.mean_seconds,
            r.sd_seconds,
            format!("[{:.4}, {:.4}]", r.ci95_low, r.ci95_high),
            r.median_seconds,
            r.p99_seconds,
            diff,
            r.mean_rebalances
        );
    }
    s
}

/// The table as CSV, with a header line.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "heuristic,runs,mean_seconds,sd_seconds,ci95_low,ci95_high,median_seconds,p99_seconds,min_seconds,max_seconds,baseline,diff_seconds,diff_ci95_low,diff_ci95_high,diff_percent,mean_rebalances,mean_redistribution_seconds\n",
    );
    for r in rows {
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.heuristic,
            r.runs,
            r.mean_seconds,
            r.sd_seconds,
            r.ci95_low,
            r.ci95_high,
            r.median_seconds,
            r.p99_seconds,
            r.min_seconds,
            r.max_seconds,
            r.baseline,
            r.diff_seconds,
            r.diff_ci95_low,
            r.diff_ci95_high,
            r.diff_percent,
            r.mean_rebalances,
            r.mean_redistribution_seconds
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_interval_of_a_known_sample() {
        // mean 5, sd sqrt(2.5), n = 5: t(0.975, 4) = 2.7764
        let (m, sd, lo, hi) = mean_ci(&[3.0, 4.0, 5.0, 6.0, 7.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((sd - 2.5f64.sqrt()).abs() < 1e-12);
        let half = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!(
            (hi - m - half).abs() < 1e-5 && (m - lo - half).abs() < 1e-5,
            "{lo} {hi}"
        );
    }
}

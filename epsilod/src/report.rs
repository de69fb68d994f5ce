//! The JSON run report (keys fixed by cli.md: scripts rely on them).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub config: ReportConfig,
    pub summary: Summary,
    pub iterations: Vec<IterationRecord>,
    pub redistributions: Vec<Redistribution>,
    pub heuristic: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReportConfig {
    pub stencil: String,
    pub size: Vec<usize>,
    pub iters: u64,
    pub devices: Vec<String>,
    pub alb: String,
    pub partition: String,
    pub kernel: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Setup, iterations and result assembly.
    pub total_seconds: f64,
    /// The iteration loop alone (the slowest virtual process).
    pub loop_seconds: f64,
    pub mean_iteration_seconds: f64,
    pub median_iteration_seconds: f64,
    pub rebalances: usize,
    pub redistribution_seconds_total: f64,
    pub cell_updates_per_second: f64,
    /// Mean per iteration of the iteration time not spent in the slowest
    /// device's kernels: halo packing, messages, waiting, bookkeeping.
    pub skeleton_overhead_seconds_per_iteration: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iter: u64,
    /// Wall time of the iteration on the slowest virtual process.
    pub seconds: f64,
    /// Loop time at the end of this iteration (slowest virtual process): the
    /// rate over a span of iterations is the difference of two of these,
    /// free of the upward bias of taking each iteration's maximum.
    #[serde(default)]
    pub elapsed_seconds: f64,
    pub devices: Vec<DeviceIteration>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceIteration {
    /// Device-timed kernel seconds.
    pub compute_seconds: f64,
    /// Halo packing, sending, receiving (waiting included) and unpacking.
    pub comm_seconds: f64,
    pub rows: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Redistribution {
    pub iter: u64,
    pub seconds: f64,
    pub rows_moved: usize,
    pub bytes_moved: usize,
    pub weights_before: Vec<f64>,
    pub weights_after: Vec<f64>,
}

pub use heuristics::median;

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}

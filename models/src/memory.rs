//! The host's memory as a limit on compute: devices that update cells in
//! host memory (CPU devices) share its bandwidth, and a stencil streaming
//! its two time levels cannot go faster than that bandwidth moves their
//! bytes. What the bandwidth is depends on the working set: inside the
//! caches it is several times what it is beyond them, so it is calibrated
//! as a curve, not one number.

use serde::{Deserialize, Serialize};

use crate::curve::{checked, log_log};
use crate::ModelError;

/// The rate a copy moves bytes (read plus written) with a thread on every
/// core of the host, at working sets from inside its caches to beyond
/// them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    /// `(working-set bytes, bytes per second)`, working sets increasing.
    pub rates: Vec<(f64, f64)>,
}

impl HostMemory {
    /// A curve through measured `(working set, rate)` points, in any order.
    pub fn new(rates: Vec<(f64, f64)>) -> Result<Self, ModelError> {
        Ok(Self {
            rates: checked(
                rates,
                "a memory curve",
                ("working-set bytes", "bytes per second"),
            )?,
        })
    }

    /// The rate at a working set of `bytes`: between two measured working
    /// sets the straight line in log-log coordinates (rates fall by powers
    /// as a working set leaves a cache), beyond either end that end's rate.
    pub fn rate_at(&self, bytes: f64) -> f64 {
        log_log(&self.rates, bytes)
    }

    /// The least seconds each device needs to move its bytes of one
    /// iteration (`traffic[d]`) when all of them stream at once through
    /// this memory, with `resident` bytes held between them (the working
    /// set that decides the rate): equal shares of the rate while they all
    /// stream, the rate of those gone shared by the rest (processor
    /// sharing), so a device with little to move finishes early and leaves
    /// the others the bandwidth. Devices with nothing to move get 0.
    pub fn floors(&self, traffic: &[f64], resident: f64) -> Vec<f64> {
        let rate = self.rate_at(resident);
        let mut order: Vec<usize> = (0..traffic.len()).filter(|&d| traffic[d] > 0.0).collect();
        order.sort_by(|&a, &b| traffic[a].total_cmp(&traffic[b]));
        let mut floors = vec![0.0; traffic.len()];
        let (mut t, mut moved) = (0.0, 0.0);
        for (k, &d) in order.iter().enumerate() {
            let sharing = (order.len() - k) as f64;
            t += (traffic[d] - moved) * sharing / rate;
            moved = traffic[d];
            floors[d] = t;
        }
        floors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn curve() -> HostMemory {
        HostMemory::new(vec![(64e6, 30e9), (4e6, 120e9), (16e6, 60e9)]).unwrap()
    }

    #[test]
    fn rates_are_the_measured_ones_at_their_working_sets_and_log_linear_between() {
        let m = curve();
        assert_eq!(m.rate_at(4e6), 120e9);
        assert_eq!(m.rate_at(16e6), 60e9);
        // Halfway in log between 4 and 16 MB (8 MB): halfway in log rate.
        assert!((m.rate_at(8e6) - (120e9f64 * 60e9).sqrt()).abs() < 1.0);
        // Beyond the ends: the ends.
        assert_eq!(m.rate_at(1e3), 120e9);
        assert_eq!(m.rate_at(1e12), 30e9);
    }

    #[test]
    fn bad_curves_are_refused() {
        assert!(HostMemory::new(vec![]).is_err());
        assert!(HostMemory::new(vec![(1e6, 0.0)]).is_err());
        assert!(HostMemory::new(vec![(0.0, 1e9)]).is_err());
        assert!(HostMemory::new(vec![(1e6, f64::NAN)]).is_err());
        assert!(HostMemory::new(vec![(-1.0, 1e9)]).is_err());
        assert_eq!(
            HostMemory::new(vec![(1e6, 1e9), (1e6, 2e9)])
                .unwrap_err()
                .to_string(),
            "working-set bytes 1000000 is measured twice"
        );
    }

    /// Equal devices share the rate equally; a smaller one finishes first
    /// and the larger one has the whole rate after it.
    #[test]
    fn floors_share_the_rate() {
        let m = HostMemory::new(vec![(1.0, 10.0)]).unwrap();
        assert_eq!(m.floors(&[5.0, 5.0], 1.0), vec![1.0, 1.0]);
        // 2 and 6 bytes: both at 5 B/s until the first has moved its 2
        // (0.4 s), then 4 bytes alone at 10 B/s (0.4 s more).
        let f = m.floors(&[6.0, 0.0, 2.0], 1.0);
        assert!((f[2] - 0.4).abs() < 1e-12 && (f[0] - 0.8).abs() < 1e-12);
        assert_eq!(f[1], 0.0);
    }

    proptest! {
        /// The last device done has moved every byte at the full rate: the
        /// node's time is the total traffic over the rate, whatever the
        /// split; and no device is done before its own bytes at the full
        /// rate.
        #[test]
        fn the_last_floor_is_the_total_traffic_over_the_rate(
            traffic in prop::collection::vec(0.0f64..1e9, 1..8),
            rate in 1e6f64..1e12,
        ) {
            let m = HostMemory::new(vec![(1.0, rate)]).unwrap();
            let f = m.floors(&traffic, 1.0);
            let total: f64 = traffic.iter().sum();
            let last = f.iter().cloned().fold(0.0, f64::max);
            prop_assert!((last - total / rate).abs() <= 1e-9 * (1.0 + total / rate));
            for (t, x) in f.iter().zip(&traffic) {
                prop_assert!(*t >= x / rate * (1.0 - 1e-12));
            }
        }
    }
}

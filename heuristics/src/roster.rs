//! Which devices hold rows. A device far slower than the fastest still
//! costs every iteration a part that its share does not shrink: its
//! launches, its halos, and for a GPU neighbour the staging of those halos
//! through host memory (docs/alb.md gives the measurement). So at a
//! rebalance a device whose measured
//! throughput is below [`Roster::drop_below`] of the fastest's gets no rows,
//! and the heuristics see only the devices that hold rows. A dropped device
//! comes back when the throughput it last measured reaches twice that
//! fraction of the fastest's (the others slowed down); twice, so that a
//! device near the threshold does not come and go at every rebalance.
//!
//! Shared by the skeleton and the simulator, so both drop the same devices
//! at the same rebalances.

use crate::{Decision, DeviceWindow};

/// The default [`Roster::drop_below`]: a device under a twentieth of the
/// fastest's throughput adds under 5% to the whole and costs every
/// iteration an exchange. 0 keeps every device, as EPSILOD does.
pub const DROP_BELOW: f64 = 0.05;

/// Why a rebalance's weights cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WeightsError {
    /// The heuristic gave weights of the wrong number or value.
    #[error("the heuristic proposed invalid weights {weights:?}: expected one finite weight >= 0 for each of the {holding} devices holding rows, or of all {devices}")]
    Invalid {
        /// What it proposed.
        weights: Vec<f64>,
        /// Devices holding rows.
        holding: usize,
        /// All devices.
        devices: usize,
    },
    /// Every weight came out zero.
    #[error("the proposed weights {0:?} leave no device any rows")]
    NoRows(Vec<f64>),
}

/// The devices holding rows, and the throughput of each the rule dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Roster {
    drop_below: f64,
    /// Rows per second each device measured when the rule dropped it;
    /// `None` for devices holding rows or out by the heuristic's own zero
    /// weight or their spec's (never brought back by the rule).
    dropped: Vec<Option<f64>>,
}

impl Roster {
    /// `devices` devices, dropping those below `drop_below` (clamped to
    /// `0..0.5`: above, a dropped device would need more than the
    /// fastest's throughput to come back) of the fastest's throughput.
    pub fn new(devices: usize, drop_below: f64) -> Roster {
        let drop_below = if drop_below.is_finite() {
            drop_below.clamp(0.0, 0.5)
        } else {
            0.0
        };
        Roster {
            drop_below,
            dropped: vec![None; devices],
        }
    }

    /// The threshold in use, a fraction of the fastest device's throughput.
    pub fn drop_below(&self) -> f64 {
        self.drop_below
    }

    /// The devices whose positive weight is under the threshold of the
    /// largest: those the rule drops, whether the weights are measured
    /// throughputs or a model's balanced shares (a run seeded from a
    /// machine file starts without them).
    pub fn too_slow(&self, weights: &[f64]) -> Vec<usize> {
        let top = weights.iter().copied().fold(0.0, f64::max);
        (0..weights.len())
            .filter(|&i| weights[i] > 0.0 && weights[i] < self.drop_below * top)
            .collect()
    }

    /// The windows of the devices holding rows, in device order: what
    /// heuristics see.
    pub fn holding(windows: &[DeviceWindow]) -> Vec<DeviceWindow> {
        windows.iter().filter(|w| w.rows > 0).cloned().collect()
    }

    /// One weight per device for a rebalance, normalised to sum 1, from
    /// every device's window and the heuristic's weights: `None` weighs the
    /// devices holding rows by their throughput; the heuristic's own are
    /// for the devices holding rows or for every device (zeros then drop
    /// devices, positive weights bring them back). A weight below the
    /// threshold of the largest becomes 0 (weights are throughputs, so
    /// this drops a device that slow, and decides on the weights alone, so
    /// a script of weights stays one whatever the timings). Unless the
    /// heuristic weighed every device, dropped devices whose last
    /// throughput clears twice the threshold of the fastest's come back.
    pub fn weights(
        &mut self,
        windows: &[DeviceWindow],
        chosen: Option<&[f64]>,
    ) -> Result<Vec<f64>, WeightsError> {
        let held: Vec<usize> = (0..windows.len())
            .filter(|&i| windows[i].rows > 0)
            .collect();
        let mut weights = vec![0.0; windows.len()];
        match chosen {
            Some(c) => {
                if !(c.len() == held.len() || c.len() == windows.len())
                    || c.iter().any(|w| !w.is_finite() || *w < 0.0)
                {
                    return Err(WeightsError::Invalid {
                        weights: c.to_vec(),
                        holding: held.len(),
                        devices: windows.len(),
                    });
                }
                if c.len() == windows.len() {
                    weights.copy_from_slice(c);
                } else {
                    for (&i, &w) in held.iter().zip(c) {
                        weights[i] = w;
                    }
                }
            }
            None => {
                let held_windows: Vec<DeviceWindow> =
                    held.iter().map(|&i| windows[i].clone()).collect();
                for (&i, w) in held.iter().zip(crate::throughput_weights(&held_windows)) {
                    weights[i] = w;
                }
            }
        }
        if self.drop_below > 0.0 {
            // Weights are throughputs, measured or the heuristic's view of
            // them: the rule reads them alike.
            for i in self.too_slow(&weights) {
                weights[i] = 0.0;
                if windows[i].rows > 0 {
                    self.dropped[i] = windows[i].throughput();
                }
            }
            // Weights for every device decided the dropped ones too.
            if chosen.is_none_or(|c| c.len() != windows.len()) {
                self.readmit(windows, &mut weights);
            }
        }
        // A device given rows is no longer the rule's to bring back.
        for (d, &w) in self.dropped.iter_mut().zip(&weights) {
            if w > 0.0 {
                *d = None;
            }
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(WeightsError::NoRows(weights));
        }
        Ok(weights.iter().map(|w| w / total).collect())
    }

    /// Whether a dropped device would come back now: its last throughput
    /// clears twice the threshold of the fastest device holding rows over
    /// `windows`. The skeleton and the simulator then rebalance whatever
    /// the heuristic says: a heuristic sees only the devices holding rows,
    /// and with one left (or all slowed alike) it has no imbalance to see.
    pub fn wants_back(&self, windows: &[DeviceWindow]) -> bool {
        if self.drop_below <= 0.0 {
            return false;
        }
        let fastest = fastest(windows);
        fastest > 0.0
            && windows.iter().zip(&self.dropped).any(|(w, r)| {
                w.rows == 0 && r.is_some_and(|r| r >= 2.0 * self.drop_below * fastest)
            })
    }

    /// The decision of a check: the heuristic's, or a rebalance to
    /// throughput weights where a dropped device [wants back](Self::wants_back)
    /// (the value `readmit` says so in the report).
    pub fn decide(&self, windows: &[DeviceWindow], heuristic: Decision) -> Decision {
        if heuristic.rebalance || !self.wants_back(windows) {
            return heuristic;
        }
        Decision {
            rebalance: true,
            weights: None,
            ..heuristic
        }
        .with("readmit", 1.0)
    }

    /// Gives a device the rule dropped whose throughput then clears twice
    /// the threshold of the fastest's now a weight on the scale of the
    /// others'.
    fn readmit(&self, windows: &[DeviceWindow], weights: &mut [f64]) {
        let fastest = fastest(windows);
        // Weight per unit of throughput of the devices kept.
        let (w, r) = (0..windows.len())
            .filter(|&i| windows[i].rows > 0 && weights[i] > 0.0)
            .filter_map(|i| windows[i].throughput().map(|r| (weights[i], r)))
            .fold((0.0, 0.0), |(sw, sr), (w, r)| (sw + w, sr + r));
        if fastest <= 0.0 || r <= 0.0 {
            return;
        }
        for (i, dropped) in self.dropped.iter().enumerate() {
            if let (0, Some(rate)) = (windows[i].rows, dropped) {
                if weights[i] == 0.0 && *rate >= 2.0 * self.drop_below * fastest {
                    weights[i] = rate * w / r;
                }
            }
        }
    }

    /// Forgets the devices whose `keep` is false (failed ones): the others
    /// keep what they measured, in order.
    pub fn retain(&mut self, keep: &[bool]) {
        let mut k = keep.iter();
        self.dropped.retain(|_| k.next().copied().unwrap_or(true));
    }

    /// What a checkpoint keeps: the throughput of each device the rule
    /// dropped (negative for the others).
    pub fn state(&self) -> Vec<f64> {
        self.dropped.iter().map(|r| r.unwrap_or(-1.0)).collect()
    }

    /// Takes back what [`Roster::state`] gave; a state for another number
    /// of devices is ignored (a restart on other devices starts with every
    /// device its spec's weight).
    pub fn restore(&mut self, state: &[f64]) {
        if state.len() == self.dropped.len() {
            self.dropped = state
                .iter()
                .map(|&r| (r.is_finite() && r > 0.0).then_some(r))
                .collect();
        }
    }
}

/// The fastest throughput among the devices holding rows (0 if none is
/// known).
fn fastest(windows: &[DeviceWindow]) -> f64 {
    windows
        .iter()
        .filter(|w| w.rows > 0)
        .filter_map(DeviceWindow::throughput)
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(rows: usize, t: f64) -> DeviceWindow {
        crate::testing::steady(rows, t, 3)
    }

    /// A device 43x slower than the fastest (the H200's CPU device) is
    /// dropped at the default threshold; one 10x slower is kept.
    #[test]
    fn drops_a_device_under_the_threshold_only() {
        let mut r = Roster::new(3, DROP_BELOW);
        // Rows per second: 1000, 1000/43, 100.
        let ws = [w(1000, 1.0), w(100, 4.3), w(100, 1.0)];
        let got = r.weights(&ws, None).unwrap();
        assert_eq!(got[1], 0.0);
        assert!((got[0] / got[2] - 10.0).abs() < 1e-9, "{got:?}");
        // At 0 nothing is dropped.
        let mut keep = Roster::new(3, 0.0);
        assert!(keep.weights(&ws, None).unwrap().iter().all(|&x| x > 0.0));
    }

    /// Shares a model balanced (cells at the balanced time, so
    /// throughputs) meet the same threshold: under it out, at it kept, a
    /// zero is not "dropped" again, and the threshold is clamped as the
    /// roster's.
    #[test]
    fn too_slow_reads_any_weights_as_throughputs() {
        let r = Roster::new(4, DROP_BELOW);
        assert_eq!(r.too_slow(&[7742.0, 387.0, 387.1, 0.0]), vec![1]);
        assert_eq!(
            Roster::new(2, 0.0).too_slow(&[1e6, 1.0]),
            Vec::<usize>::new()
        );
        assert_eq!(Roster::new(2, 0.9).too_slow(&[1.0, 0.49]), vec![1]);
        assert_eq!(
            Roster::new(2, 0.9).too_slow(&[1.0, 0.5]),
            Vec::<usize>::new()
        );
    }

    /// A dropped device stays out while the fastest keeps its speed, and
    /// comes back, weighted by its last throughput, once its throughput is
    /// twice the threshold of the fastest's (not merely the threshold).
    #[test]
    fn a_dropped_device_comes_back_past_twice_the_threshold() {
        let mut r = Roster::new(2, 0.1);
        let first = r.weights(&[w(900, 1.0), w(100, 2.0)], None).unwrap();
        assert_eq!(first, vec![1.0, 0.0]); // 50 < 0.1 * 900
                                           // The fastest slows to 600 rows/s: 50 is above 0.1 * 600 but under twice it.
        let out = r
            .weights(&[w(1000, 1000.0 / 600.0), w(0, 0.0)], None)
            .unwrap();
        assert_eq!(out, vec![1.0, 0.0]);
        // Then to 200 rows/s: 50 >= 0.2 * 200, back with 50 / 250 of the rows.
        let back = r.weights(&[w(1000, 5.0), w(0, 0.0)], None).unwrap();
        assert!(
            (back[1] / (back[0] + back[1]) - 0.2).abs() < 1e-12,
            "{back:?}"
        );
    }

    /// A device that never measured (weight 0 from the start) stays out,
    /// heuristics' own weights are per device holding rows, and bad ones
    /// are errors.
    #[test]
    fn chosen_weights_cover_the_devices_holding_rows_or_all() {
        let mut r = Roster::new(3, DROP_BELOW);
        let ws = [w(0, 0.0), w(500, 1.0), w(500, 1.0)];
        assert_eq!(
            r.weights(&ws, Some(&[1.0, 3.0])).unwrap(),
            vec![0.0, 0.25, 0.75]
        );
        assert_eq!(r.weights(&ws, None).unwrap(), vec![0.0, 0.5, 0.5]);
        // Weights for every device may bring one back, or keep it out.
        assert_eq!(
            r.weights(&ws, Some(&[2.0, 1.0, 1.0])).unwrap(),
            vec![0.5, 0.25, 0.25]
        );
        let mut known = Roster::new(2, DROP_BELOW);
        known.restore(&[500.0, 500.0]);
        let out = [w(0, 0.0), w(500, 1.0)];
        assert_eq!(
            known.weights(&out, Some(&[0.0, 1.0])).unwrap(),
            vec![0.0, 1.0]
        );
        assert_eq!(known.weights(&out, None).unwrap(), vec![0.5, 0.5]);
        assert!(matches!(
            r.weights(&ws, Some(&[1.0, 1.0, 1.0, 1.0])),
            Err(WeightsError::Invalid {
                holding: 2,
                devices: 3,
                ..
            })
        ));
        assert!(matches!(
            r.weights(&ws, Some(&[f64::NAN, 1.0])),
            Err(WeightsError::Invalid { .. })
        ));
        assert!(matches!(
            r.weights(&ws, Some(&[0.0, 0.0])),
            Err(WeightsError::NoRows(_))
        ));
        assert_eq!(Roster::holding(&ws), ws[1..].to_vec());
        // A heuristic's own weights decide, whatever the timings: the
        // device measured 100x slower keeps its rows, a weight under a
        // twentieth of the largest does not.
        let mut r = Roster::new(2, DROP_BELOW);
        let ws = [w(1000, 1.0), w(10, 1.0)];
        assert_eq!(r.weights(&ws, Some(&[1.0, 1.0])).unwrap(), vec![0.5, 0.5]);
        assert_eq!(r.weights(&ws, Some(&[0.0, 1.0])).unwrap(), vec![0.0, 1.0]);
        assert_eq!(r.weights(&ws, Some(&[1.0, 0.04])).unwrap(), vec![1.0, 0.0]);
    }

    /// With one device left holding rows no heuristic sees an imbalance;
    /// the roster asks for the rebalance that brings a dropped device back
    /// once the one left slows past it, and only then.
    #[test]
    fn a_dropped_device_is_asked_back_whatever_the_heuristic() {
        let mut r = Roster::new(2, 0.1);
        r.weights(&[w(900, 1.0), w(100, 2.0)], None).unwrap(); // 50 < 90: out
        let no = Decision::no().with("gap", f64::INFINITY);
        let kept = r.decide(&[w(1000, 1000.0 / 600.0), w(0, 0.0)], no.clone());
        assert_eq!(kept, no);
        let back = r.decide(&[w(1000, 5.0), w(0, 0.0)], no);
        assert!(back.rebalance && back.weights.is_none());
        assert_eq!(back.values, vec![("gap", f64::INFINITY), ("readmit", 1.0)]);
        // At threshold 0 nothing is dropped, and nothing asked back.
        let mut zero = Roster::new(2, 0.0);
        zero.restore(&[1e9, 1e9]);
        assert!(!zero.wants_back(&[w(1000, 5.0), w(0, 0.0)]));
    }

    #[test]
    fn state_round_trips() {
        let mut r = Roster::new(2, DROP_BELOW);
        r.weights(&[w(10, 1.0), w(0, 0.0)], None).unwrap();
        let mut s = Roster::new(2, DROP_BELOW);
        s.restore(&r.state());
        assert_eq!(r, s);
        s.restore(&[1.0]);
        assert_eq!(r, s);
        s.retain(&[false, true]);
        assert_eq!(s.state(), vec![-1.0]);
    }
}

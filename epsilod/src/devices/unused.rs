//! Options a run is given but never uses (a weight its partition ignores,
//! a slowdown or failure past its last iteration), for the run to say so.

use super::spec::DeviceSpec;
use hitmap::Partition;
use std::fmt;

/// A device's `weight=` that its run's partition does not use: only a
/// weighted partition (`w<d>`) splits rows by weight, so under `m`, `m<n>`
/// or `s<d>` the run goes on as if it were not given.
#[derive(Clone, Debug, PartialEq)]
pub struct IgnoredWeight {
    /// The device's place in the run's device list, from 0.
    pub device: usize,
    /// The device as given.
    pub spec: DeviceSpec,
    /// The partition that ignores it.
    pub partition: Partition,
}

impl fmt::Display for IgnoredWeight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--partition {} ignores device {}'s weight={} ({}): only w<d> partitions split rows by weight (e.g. --partition w0)",
            self.partition, self.device, self.spec.weight, self.spec
        )
    }
}

/// The weights among `devices` that `partition` ignores (every weight but
/// the default 1, unless the partition is weighted), in device order.
pub fn ignored_weights(devices: &[DeviceSpec], partition: Partition) -> Vec<IgnoredWeight> {
    if matches!(partition, Partition::Weighted(_)) {
        return Vec::new();
    }
    devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.weight != 1.0)
        .map(|(device, d)| IgnoredWeight {
            device,
            spec: d.clone(),
            partition,
        })
        .collect()
}

/// A device's emulated slowdown or failure (`slowdown=F@ITER`, `fail@ITER`)
/// at an iteration its run never reaches: the run goes on as if it were
/// not given.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreached {
    /// The device's place in the run's device list, from 0.
    pub device: usize,
    /// The option, as the device's description writes it: `slowdown=3@500`
    /// or `fail@500`.
    pub option: String,
    /// Its iteration.
    pub at: u64,
    /// The run's iterations.
    pub iters: u64,
}

impl fmt::Display for Unreached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let never = if self.option.starts_with("fail") {
            "fails"
        } else {
            "slows down"
        };
        write!(
            f,
            "device {}'s {} is at iteration {}, beyond --iters {}: the device never {never} (give an iteration below {})",
            self.device, self.option, self.at, self.iters, self.iters
        )
    }
}

/// The emulated slowdowns and failures among `devices` that a run of
/// `iters` iterations never reaches (iterations count from 0: one at
/// `iters` or later), in device order. A run of 0 iterations only writes
/// its initial state: none is said.
pub fn unreached(devices: &[DeviceSpec], iters: u64) -> Vec<Unreached> {
    let mut out = Vec::new();
    if iters == 0 {
        return out;
    }
    for (device, d) in devices.iter().enumerate() {
        let slow = d.slowdown.filter(|s| s.factor > 1.0).map(|s| {
            (
                format!("slowdown={}@{}", s.factor, s.from_iter),
                s.from_iter,
            )
        });
        let fail = d.fail.map(|at| (format!("fail@{at}"), at));
        for (option, at) in slow.into_iter().chain(fail) {
            if at >= iters {
                out.push(Unreached {
                    device,
                    option,
                    at,
                    iters,
                });
            }
        }
    }
    out
}

//! One compute device as calibration describes it: its line `a + b · cells`,
//! its tile curve, its noise, and where its memory is.

use serde::{Deserialize, Serialize};

use crate::curve::{factor_at, kernel_time};

/// One compute device, calibrated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Display name.
    pub name: String,
    /// Measured seconds to update one cell with the run's kernel: the
    /// slope `b` of the device's kernel time `a + b · cells`.
    pub seconds_per_cell: f64,
    /// Seconds the device's kernels cost per iteration whatever its cell
    /// count: the intercept `a` of `a + b · cells` (thread wake-ups,
    /// launches, border strips). Absent in machines written before it was
    /// calibrated, and then 0.
    #[serde(default)]
    pub fixed_seconds: f64,
    /// Relative power R_p: the slowest device of the machine is 1
    /// (HCLogP's Eq. 3.1, `Perf_x / Perf_y = Time_y / Time_x`). Set by
    /// [`Machine::new`](crate::predict::Machine::new).
    #[serde(default)]
    pub relative_power: f64,
    /// Spread of the per-iteration seconds per cell measured: the robust
    /// coefficient of variation (1.4826 · MAD / median). The simulator's
    /// noise.
    #[serde(default)]
    pub cv: f64,
    /// Slow spells: the log spread of the device's speed from one run to
    /// the next (calibration's repeated tile, or its blocks of
    /// iterations), which a loop's many iterations do not average out. The
    /// predicted interval's
    /// ([`Machine::interval`](crate::predict::Machine::interval)); 0: none
    /// measured.
    #[serde(default)]
    pub spell: f64,
    /// Iterations measured (0: written by hand).
    #[serde(default)]
    pub samples: usize,
    /// Whether the device computes in host memory (a CPU device), and so
    /// shares [`Machine::memory`](crate::predict::Machine::memory) with the
    /// others that do.
    #[serde(default)]
    pub host_memory: bool,
    /// The link class between the device's memory and the host's, for a
    /// device with memory of its own (a GPU): its halos go out through a
    /// read into host memory and come in through a write, unless the
    /// neighbour is of its [`Device::peer_group`]. `None`: the device
    /// computes in host memory, or the machine does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_link: Option<String>,
    /// Devices of one group copy one another's memory (virtual devices on
    /// one GPU, devices of one OpenCL context): halos between them stay in
    /// device memory and pay no host staging. `None`: a group of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_group: Option<usize>,
    /// How the kernel's time at other tile sizes departs from the line:
    /// `(cells, measured time over the line's)` points, cells increasing
    /// (`calibrate --tile-sweep`): a tile that fits a cache runs off the
    /// line calibrated on larger ones. The time of `cells` is the line's
    /// times this curve ([`Device::tile_factor`]). Empty: the line alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tile_curve: Vec<(f64, f64)>,
}

impl Device {
    /// A device updating one cell in `seconds_per_cell`; its relative power
    /// is set when it joins a [`Machine`](crate::predict::Machine).
    pub fn new(name: impl Into<String>, seconds_per_cell: f64) -> Self {
        Self {
            name: name.into(),
            seconds_per_cell,
            fixed_seconds: 0.0,
            relative_power: 0.0,
            cv: 0.0,
            spell: 0.0,
            samples: 0,
            host_memory: false,
            host_link: None,
            peer_group: None,
            tile_curve: Vec::new(),
        }
    }

    /// The same device with memory of its own, reached from the host over
    /// the link class `link` ([`Device::host_link`]).
    pub fn with_host_link(mut self, link: impl Into<String>) -> Self {
        self.host_link = Some(link.into());
        self
    }

    /// Whether halos between this device and `other` stay in device memory.
    pub fn shares_memory_with(&self, other: &Device) -> bool {
        matches!((self.peer_group, other.peer_group), (Some(a), Some(b)) if a == b)
    }

    /// The same device computing in host memory ([`Device::host_memory`]).
    pub fn in_host_memory(mut self) -> Self {
        self.host_memory = true;
        self
    }

    /// The same device with a fixed cost of `seconds` per iteration.
    pub fn with_fixed(mut self, seconds: f64) -> Self {
        self.fixed_seconds = seconds;
        self
    }

    /// Kernel seconds of one iteration over `cells` cells: `a + b · cells`
    /// times the [`Device::tile_factor`] of `cells`, and nothing for a
    /// device with no cells (it launches no kernel).
    pub fn time(&self, cells: f64) -> f64 {
        if cells > 0.0 {
            kernel_time(
                self.fixed_seconds,
                self.seconds_per_cell,
                &self.tile_curve,
                cells,
            )
        } else {
            0.0
        }
    }

    /// The measured time over the line's at a tile of `cells`: the
    /// [`Device::tile_curve`] between its points in log-log coordinates
    /// (speed changes by powers as a tile leaves a cache), its end's value
    /// beyond either end, 1 without a curve.
    pub fn tile_factor(&self, cells: f64) -> f64 {
        factor_at(&self.tile_curve, cells)
    }
}

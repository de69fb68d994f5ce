//! [`DeviceSpec`]: one device as the user asked for it, its defaults, and
//! its device string (which [`DeviceSpec::parse`] reads back). Every other
//! file here builds on it.

use controllers::registry::{DeviceKind, GpuOptions};
use kernels::CellLayout;
use std::fmt;

/// An emulated slow device: every kernel takes `factor` times as long from
/// iteration `from_iter` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowdownSpec {
    /// At least 1.
    pub factor: f64,
    /// The first slow iteration.
    pub from_iter: u64,
}

/// One device (one virtual process) as the user asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    /// Which device.
    pub kind: DeviceKind,
    /// Static share of the rows under partition `w<d>`.
    pub weight: f64,
    /// Emulated slowness.
    pub slowdown: Option<SlowdownSpec>,
    /// Emulated failure: the device's first launch of this iteration fails.
    pub fail: Option<u64>,
    /// How an OpenCL or CUDA device lays out cells with components for
    /// kernels that can read them in planes (`layout=planes|cells`);
    /// `None`: `tuning`'s layout, else the device's own choice (planes on
    /// GPUs).
    pub layout: Option<CellLayout>,
    /// How a GPU device runs where its device string does not say: set by
    /// the program (the command line from its environment), never written
    /// in the device string.
    pub tuning: GpuOptions,
}

impl DeviceSpec {
    /// A CPU device of `threads` threads.
    pub fn cpu(threads: usize) -> DeviceSpec {
        DeviceSpec::of(DeviceKind::Cpu {
            threads: Some(threads),
        })
    }

    /// A CPU device taking its share of the cores the run's other devices
    /// leave (`cpu` with no `threads=`; see [`share_cores`](super::share_cores)).
    pub fn cpu_share() -> DeviceSpec {
        DeviceSpec::of(DeviceKind::Cpu { threads: None })
    }

    /// Device `kind` with every other option at its default.
    pub(super) fn of(kind: DeviceKind) -> DeviceSpec {
        DeviceSpec {
            kind,
            weight: 1.0,
            slowdown: None,
            fail: None,
            layout: None,
            tuning: GpuOptions::default(),
        }
    }

    /// This device, run as `tuning` says where it is a GPU device (see
    /// [`DeviceSpec::tuning`]).
    pub fn tuned(self, tuning: GpuOptions) -> DeviceSpec {
        DeviceSpec { tuning, ..self }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            DeviceKind::Cpu { threads: None } => "cpu".to_string(),
            DeviceKind::Cpu {
                threads: Some(threads),
            } => format!("cpu:threads={threads}"),
            DeviceKind::Gpu(device) => device.to_string(),
        };
        // Options follow a colon, then commas: `cpu:weight=2` parses back,
        // `cpu,weight=2` would not.
        let mut sep = if kind.contains(':') { ',' } else { ':' };
        let mut options = Vec::new();
        if self.weight != 1.0 {
            options.push(format!("weight={}", self.weight));
        }
        if let Some(s) = self.slowdown {
            options.push(format!("slowdown={}@{}", s.factor, s.from_iter));
        }
        if let Some(at) = self.fail {
            options.push(format!("fail@{at}"));
        }
        match self.layout {
            Some(CellLayout::Planes) => options.push("layout=planes".into()),
            Some(CellLayout::Cells) => options.push("layout=cells".into()),
            None => {}
        }
        write!(f, "{kind}")?;
        for o in options {
            write!(f, "{sep}{o}")?;
            sep = ',';
        }
        Ok(())
    }
}

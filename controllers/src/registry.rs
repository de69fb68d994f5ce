//! The backends device strings may name (`cpu`, `opencl:platform=0`,
//! `cuda:device=1`): each one's name, the options its devices take, and,
//! where this build has it, its runtime (how to open a device and list
//! them). A GPU backend registers with one line in `gpu_backends!` and
//! its runtime module's `open` and `list`.

use crate::controller::Controller;
use crate::cpu::CpuController;
pub use crate::device_spec::{BackendOptions, DeviceKind, GpuDevice, GpuOptions, Listing};
use crate::error::DeviceError;
use kernels::{Cell, CellLayout};
use thiserror::Error;

/// The most threads one CPU device may have: beyond the largest nodes'
/// cores, threads only take turns, and spawning tens of thousands took
/// minutes before the run began.
pub const MAX_THREADS: usize = 1024;

/// Which options a backend's devices take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// `threads=` (the CPU).
    Threads,
    /// `platform=`, `device=` and `layout=` (OpenCL).
    PlatformAndDevice,
    /// `device=` and `layout=` (CUDA).
    Device,
}

/// One backend device strings may name, built into this binary or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backend {
    /// Its name in device strings.
    pub name: &'static str,
    /// The options its devices take.
    pub takes: Takes,
    /// The cargo feature that builds its runtime; `None`: always built.
    pub feature: Option<&'static str>,
}

/// A device string's backend options that its backend does not take.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OptionError {
    /// No backend of that name.
    #[error("unknown device kind '{kind}' (use {known}{})", options_hint(.kind))]
    UnknownKind {
        /// The name given.
        kind: String,
        /// The names there are, `a, b or c`.
        known: String,
    },
    /// An option the backend does not take.
    #[error("{backend} devices take {takes}")]
    NotTaken {
        /// The backend.
        backend: &'static str,
        /// What it takes instead.
        takes: &'static str,
    },
    /// `layout=` on a backend that keeps cells whole.
    #[error("{backend} devices keep cells whole: layout= is for {gpus} devices")]
    NoLayout {
        /// The backend.
        backend: &'static str,
        /// The backends that take it, `a and b`.
        gpus: String,
    },
    /// `threads=0`.
    #[error("threads=0: a device needs at least one thread")]
    NoThreads,
    /// More threads than [`MAX_THREADS`].
    #[error(
        "threads={0}: a device may have at most {MAX_THREADS} threads (give as many as it has cores)"
    )]
    TooManyThreads(usize),
    /// A `layout=` value that is neither layout.
    #[error(
        "layout={0}: expected planes (each component of every cell together) or cells (cells whole)"
    )]
    Layout(String),
}

/// `; options follow a colon: opencl:weight=0` for `opencl,weight=0`.
fn options_hint(kind: &str) -> String {
    match kind.split_once(',') {
        Some((k, rest)) if backends().any(|b| b.name == k) => {
            format!("; options follow a colon: {k}:{rest}")
        }
        _ => String::new(),
    }
}

/// The CPU backend, always built.
pub const CPU: Backend = Backend {
    name: "cpu",
    takes: Takes::Threads,
    feature: None,
};

/// Registers the GPU backends, one line each: name, the options its
/// devices take, the cargo feature that builds it, and its runtime module,
/// which has `open(&GpuDevice, &GpuOptions)` and `list()`. A build without
/// the feature still reads the backend's device strings, and says how to
/// add it where one is opened or listed.
macro_rules! gpu_backends {
    ($($name:literal takes $takes:ident, feature $feature:literal => $module:ident;)*) => {
        /// The GPU backends, in the order `epsilod list` shows them.
        pub const GPU_BACKENDS: &[Backend] = &[$(Backend {
            name: $name,
            takes: Takes::$takes,
            feature: Some($feature),
        }),*];

        /// Opens `device` where this build has its backend.
        fn open_built<T: Cell>(
            device: &GpuDevice,
            options: &GpuOptions,
        ) -> Option<Result<Box<dyn Controller<T>>, DeviceError>> {
            // Read only by the backends this build has.
            let _ = options;
            match device.backend {
                $(#[cfg(feature = $feature)]
                $name => Some(crate::$module::open(device, options)),)*
                _ => None,
            }
        }

        /// `backend`'s devices where this build has it.
        fn list_built(backend: &str) -> Option<Listing> {
            match backend {
                $(#[cfg(feature = $feature)]
                $name => Some(crate::$module::list()),)*
                _ => None,
            }
        }
    };
}

gpu_backends! {
    "opencl" takes PlatformAndDevice, feature "opencl" => opencl;
    "cuda" takes Device, feature "cuda" => cuda;
}

/// Every backend, the CPU first.
pub fn backends() -> impl Iterator<Item = &'static Backend> {
    std::iter::once(&CPU).chain(GPU_BACKENDS)
}

/// The device of backend `name` with options `o`, checked: each backend
/// takes only its own options.
pub fn device_kind(name: &str, o: &BackendOptions) -> Result<DeviceKind, OptionError> {
    let Some(backend) = backends().find(|b| b.name == name) else {
        return Err(OptionError::UnknownKind {
            kind: name.to_string(),
            known: names(backends(), "or"),
        });
    };
    let not_taken = |takes| OptionError::NotTaken {
        backend: backend.name,
        takes,
    };
    let gpu = |platform| {
        DeviceKind::Gpu(GpuDevice {
            backend: backend.name,
            platform,
            device: o.device.unwrap_or(0),
        })
    };
    match backend.takes {
        Takes::Threads => {
            if o.platform.is_some() || o.device.is_some() {
                return Err(not_taken("threads=, not platform=/device="));
            }
            if o.layout.is_some() {
                return Err(OptionError::NoLayout {
                    backend: backend.name,
                    gpus: names(GPU_BACKENDS.iter(), "and"),
                });
            }
            Ok(DeviceKind::Cpu {
                threads: o.threads.map(check_threads).transpose()?,
            })
        }
        Takes::PlatformAndDevice => match o.threads {
            Some(_) => Err(not_taken("platform= and device=, not threads=")),
            None => Ok(gpu(Some(o.platform.unwrap_or(0)))),
        },
        Takes::Device => match (o.threads, o.platform) {
            (None, None) => Ok(gpu(None)),
            _ => Err(not_taken("device= only")),
        },
    }
}

/// `a, b or c`.
fn names<'a>(backends: impl Iterator<Item = &'a Backend>, last: &str) -> String {
    let names: Vec<&str> = backends.map(|b| b.name).collect();
    match names.split_last() {
        Some((end, [])) => end.to_string(),
        Some((end, rest)) => format!("{} {last} {end}", rest.join(", ")),
        None => String::new(),
    }
}

fn check_threads(t: usize) -> Result<usize, OptionError> {
    match t {
        0 => Err(OptionError::NoThreads),
        t if t > MAX_THREADS => Err(OptionError::TooManyThreads(t)),
        t => Ok(t),
    }
}

/// `planes` or `cells`.
pub fn parse_layout(v: &str) -> Result<CellLayout, OptionError> {
    match v {
        "planes" => Ok(CellLayout::Planes),
        "cells" => Ok(CellLayout::Cells),
        _ => Err(OptionError::Layout(v.to_string())),
    }
}

/// A CPU device of `threads` threads, its pool pinned to `cores` (nothing
/// pinned where empty).
pub fn open_cpu<T: Cell>(
    threads: usize,
    cores: &[usize],
) -> Result<Box<dyn Controller<T>>, DeviceError> {
    Ok(Box::new(CpuController::<T>::pinned(threads, cores)?))
}

/// GPU device `device`, run as `options` say.
pub fn open_gpu<T: Cell>(
    device: &GpuDevice,
    options: &GpuOptions,
) -> Result<Box<dyn Controller<T>>, DeviceError> {
    open_built(device, options).unwrap_or_else(|| {
        Err(DeviceError::NotBuilt {
            kind: device.backend,
            feature: feature_of(device.backend),
        })
    })
}

fn feature_of(backend: &str) -> &'static str {
    backends()
        .find(|b| b.name == backend)
        .and_then(|b| b.feature)
        .unwrap_or("")
}

/// What `epsilod list` shows for every backend, in order: the CPU's cores,
/// then each GPU backend's devices.
pub fn list() -> Vec<(&'static str, Listing)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = Listing::Note(format!("{cores} core(s): cpu, cpu:threads=T"));
    std::iter::once((CPU.name, cpu))
        .chain(GPU_BACKENDS.iter().map(|b| {
            let listing = list_built(b.name).unwrap_or_else(|| {
                Listing::Note(format!(
                    "not in this build (rebuild with --features {})",
                    feature_of(b.name)
                ))
            });
            (b.name, listing)
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_reads_only_its_own_options() {
        let o = |threads, platform, device| BackendOptions {
            threads,
            platform,
            device,
            layout: None,
        };
        assert_eq!(
            device_kind("cpu", &o(Some(2), None, None)),
            Ok(DeviceKind::Cpu { threads: Some(2) })
        );
        assert_eq!(
            device_kind("opencl", &o(None, None, Some(1))).map(|k| match k {
                DeviceKind::Gpu(d) => d.to_string(),
                DeviceKind::Cpu { .. } => "cpu".into(),
            }),
            Ok("opencl:platform=0,device=1".to_string())
        );
        assert!(matches!(
            device_kind("cuda", &o(None, Some(0), None)),
            Err(OptionError::NotTaken {
                backend: "cuda",
                ..
            })
        ));
        let e = device_kind("gpu", &o(None, None, None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown device kind 'gpu' (use cpu, opencl or cuda)"
        );
    }

    /// Listed in order, whatever this build has.
    #[test]
    fn lists_every_backend() {
        let names: Vec<&str> = list().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["cpu", "opencl", "cuda"]);
    }
}

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
    /// Whether builds without it name it.
    pub shown: Shown,
}

/// Where a backend is named: in every build, or only in those that have it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Listed by every build, with how to add it where it is not built.
    Always,
    /// A stand-in for tests and examples (`mock`): a build without it
    /// neither lists it nor takes it, and says how to add it.
    WhenBuilt,
}

/// A device string's backend options that its backend does not take.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OptionError {
    /// No backend of that name.
    #[error("unknown device kind '{kind}' (use {}{})", known_kinds(), options_hint(.kind))]
    UnknownKind {
        /// The name given.
        kind: String,
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
    #[error(
        "{backend} devices keep cells whole: layout= is for {} devices",
        layout_kinds()
    )]
    NoLayout {
        /// The backend.
        backend: &'static str,
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

/// `; options follow a colon: opencl:weight=0` for `opencl,weight=0`, and
/// how to build in a backend that this build does not name.
fn options_hint(kind: &str) -> String {
    if let Some(b) = GPU_BACKENDS.iter().find(|b| b.name == kind && !named(b)) {
        return format!(
            "; {kind} is not in this build: rebuild with --features {}",
            feature_of(b.name)
        );
    }
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
    shown: Shown::Always,
};

/// Registers the GPU backends, one line each: name, the options its
/// devices take, the cargo feature that builds it, where it is named
/// ([`Shown`]), and its runtime module, which has
/// `open(&GpuDevice, &GpuOptions)` and `list()`. A build without the
/// feature still reads an `Always` backend's device strings, and says how
/// to add it where one is opened or listed.
macro_rules! gpu_backends {
    ($($name:literal takes $takes:ident, feature $feature:literal, shown $shown:ident
        => $($module:ident)::+;)*) => {
        /// Every GPU backend, in the order `epsilod list` shows them; those
        /// this build does not name too ([`backends`] has only the named).
        pub const GPU_BACKENDS: &[Backend] = &[$(Backend {
            name: $name,
            takes: Takes::$takes,
            feature: Some($feature),
            shown: Shown::$shown,
        }),*];

        /// Whether this build has `backend`'s runtime.
        fn built(backend: &str) -> bool {
            match backend {
                $(#[cfg(feature = $feature)]
                $name => true,)*
                _ => false,
            }
        }

        /// Opens `device` where this build has its backend.
        fn open_built<T: Cell>(
            device: &GpuDevice,
            options: &GpuOptions,
        ) -> Option<Result<Box<dyn Controller<T>>, DeviceError>> {
            // Read only by the backends this build has.
            let _ = options;
            match device.backend {
                $(#[cfg(feature = $feature)]
                $name => Some(crate::$($module)::+::open(device, options)),)*
                _ => None,
            }
        }

        /// `backend`'s devices where this build has it.
        fn list_built(backend: &str) -> Option<Listing> {
            match backend {
                $(#[cfg(feature = $feature)]
                $name => Some(crate::$($module)::+::list()),)*
                _ => None,
            }
        }
    };
}

gpu_backends! {
    "opencl" takes PlatformAndDevice, feature "opencl", shown Always => opencl;
    "cuda" takes Device, feature "cuda", shown Always => cuda;
    "mock" takes Device, feature "mock", shown WhenBuilt => gpu::mock_register;
}

/// Whether this build names `backend` (in device strings and listings).
fn named(backend: &Backend) -> bool {
    backend.shown == Shown::Always || built(backend.name)
}

/// Every backend this build names, the CPU first.
pub fn backends() -> impl Iterator<Item = &'static Backend> {
    std::iter::once(&CPU).chain(GPU_BACKENDS.iter().filter(|b| named(b)))
}

/// The device of backend `name` with options `o`, checked: each backend
/// takes only its own options.
pub fn device_kind(name: &str, o: &BackendOptions) -> Result<DeviceKind, OptionError> {
    let Some(backend) = backends().find(|b| b.name == name) else {
        return Err(OptionError::UnknownKind {
            kind: name.to_string(),
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
/// The kinds a device string may name, `a, b or c`: those every build
/// has (a stand-in is not advertised).
fn known_kinds() -> String {
    names(backends().filter(|b| b.shown == Shown::Always), "or")
}

/// The backends that take `layout=`, `a and b`.
fn layout_kinds() -> String {
    names(GPU_BACKENDS.iter().filter(|b| named(b)), "and")
}

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
    std::iter::once(&CPU)
        .chain(GPU_BACKENDS)
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
        .chain(backends().skip(1).map(|b| {
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
        let mut want = vec!["cpu", "opencl", "cuda"];
        if cfg!(feature = "mock") {
            want.push("mock");
        }
        assert_eq!(names, want);
    }

    /// The mock is named only where built, and otherwise refused with how
    /// to build it in.
    #[test]
    fn the_mock_is_named_only_where_built() {
        let parsed = device_kind("mock", &BackendOptions::default());
        if cfg!(feature = "mock") {
            assert!(matches!(parsed, Ok(DeviceKind::Gpu(d)) if d.backend == "mock"));
        } else {
            assert_eq!(
                parsed.unwrap_err().to_string(),
                "unknown device kind 'mock' (use cpu, opencl or cuda; \
                 mock is not in this build: rebuild with --features mock)"
            );
        }
    }
}

//! Device specifications: `--devices cpu:threads=2,weight=3,slowdown=2@100`
//! and the TOML device file. Both fill one [`DeviceOptions`], checked in one
//! place.
//!
//! The device itself (`spec`) is made from a `--devices` string (`parse`)
//! or a device file (`file`), both through `options`; it is built into a
//! controller in `build`; `placement` gives a run its devices' cores and
//! ranks, and `unused` names options a run never uses.

mod build;
mod file;
mod options;
mod parse;
mod placement;
mod spec;
#[cfg(test)]
mod tests;
mod unused;

pub use controllers::registry::{DeviceKind, GpuDevice, GpuOptions, MAX_THREADS};
pub use file::{load_device_file, parse_device_file, DeviceFile};
pub use options::DeviceOptions;
pub use placement::{one_cpu_per_rank, share_cores, Placed};
pub use spec::{DeviceSpec, SlowdownSpec};
pub use unused::{ignored_weights, unreached, IgnoredWeight, Unreached};

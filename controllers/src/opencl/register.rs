//! How the backend registry opens and lists OpenCL devices.

use super::{platforms, OpenClController};
use crate::device_spec::{GpuDevice, GpuOptions, Listing};
use crate::error::DeviceError;
use kernels::Cell;

/// Opens an OpenCL device for the registry ([`crate::registry`]).
pub(crate) fn open<T: Cell>(
    d: &GpuDevice,
    o: &GpuOptions,
) -> Result<Box<dyn crate::Controller<T>>, DeviceError> {
    let c =
        OpenClController::<T>::new(d.platform.unwrap_or(0), d.device)?.with_fused_log(o.log_fused);
    Ok(Box::new(match o.layout {
        Some(l) => c.with_cell_layout(l),
        None => c,
    }))
}

/// Every device of every platform, for `epsilod list`.
pub(crate) fn list() -> Listing {
    let plats = platforms();
    if plats.is_empty() {
        return Listing::Note("no platform found (install one, e.g. pocl-opencl-icd)".into());
    }
    let mut devices = Vec::new();
    for (p, (name, devs)) in plats.iter().enumerate() {
        for (d, dev) in devs.iter().enumerate() {
            devices.push((
                format!("opencl:platform={p},device={d}"),
                format!("{name}: {dev}"),
            ));
        }
    }
    Listing::Devices(devices)
}

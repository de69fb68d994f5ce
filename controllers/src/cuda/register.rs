//! How the backend registry opens and lists CUDA devices.

use super::{devices, CudaDeviceInfo, CudaRuntime};
use crate::device_spec::{GpuDevice, GpuOptions, Listing};
use crate::error::DeviceError;
use crate::gpu::GpuController;
use kernels::Cell;

/// Opens a CUDA device for the registry ([`crate::registry`]).
pub(crate) fn open<T: Cell>(
    d: &GpuDevice,
    o: &GpuOptions,
) -> Result<Box<dyn crate::Controller<T>>, DeviceError> {
    let rt = CudaRuntime::new(d.device)?
        .with_launch(o.launch)
        .with_launch_log(o.log_launch);
    let c = GpuController::with_runtime(rt).with_fused_log(o.log_fused);
    Ok(Box::new(match o.layout {
        Some(l) => c.with_cell_layout(l),
        None => c,
    }))
}

/// Every CUDA device, for `epsilod list`.
pub(crate) fn list() -> Listing {
    let devs = match devices() {
        Ok(d) => d,
        Err(e) => return Listing::Note(e.to_string()),
    };
    if devs.is_empty() {
        return Listing::Note("the driver reports no CUDA device".into());
    }
    let about = |d: &CudaDeviceInfo| {
        let nvrtc = match d.nvrtc_version {
            Some((major, minor)) => format!("NVRTC {major}.{minor}"),
            None => "no NVRTC (cannot compile kernels)".into(),
        };
        format!(
            "{}: {:.1} GiB, compute {}.{}, driver CUDA {}.{}, {nvrtc}",
            d.name,
            d.memory as f64 / (1u64 << 30) as f64,
            d.compute_capability.0,
            d.compute_capability.1,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10,
        )
    };
    Listing::Devices(
        devs.iter()
            .map(|d| (format!("cuda:device={}", d.ordinal), about(d)))
            .collect(),
    )
}

//! The CUDA driver and NVRTC libraries: probes that they load, their versions, and the devices.

use crate::error::{backend, DeviceError, Unavailable};
use cudarc::driver::sys;
use cudarc::driver::CudaContext;

/// Fails with one clear line unless the CUDA driver can be loaded: cudarc's
/// dynamic loading panics on the first call into a missing library.
pub(super) fn probe_driver() -> Result<(), DeviceError> {
    // SAFETY: loading the driver library runs its initialisers, which is
    // what every CUDA program does; nothing else is touched.
    if unsafe { sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Unavailable::NoCudaDriver.into())
    }
}

/// As [`probe_driver`], for NVRTC (the run-time compiler, shipped with the
/// CUDA runtime libraries rather than the driver).
pub(super) fn probe_nvrtc() -> Result<(), DeviceError> {
    // SAFETY: as in `probe_driver`: it only loads the library.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Unavailable::NoNvrtc.into())
    }
}

/// What `epsilod list` says about one CUDA device.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaDeviceInfo {
    /// Device ordinal, as `cuda:device=D` takes it.
    pub ordinal: usize,
    /// The device's name.
    pub name: String,
    /// Device memory in bytes.
    pub memory: usize,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// CUDA version the driver supports (e.g. 12080 for 12.8).
    pub driver_version: i32,
    /// NVRTC version (major, minor), or `None` when NVRTC is missing (the
    /// device can then be listed but not run).
    pub nvrtc_version: Option<(i32, i32)>,
}

pub(super) fn driver_version() -> Result<i32, DeviceError> {
    let mut v = 0;
    // SAFETY: the driver was probed; `v` is a valid out-pointer.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    r.result().map_err(backend("CUDA"))?;
    Ok(v)
}

pub(super) fn nvrtc_version() -> Option<(i32, i32)> {
    probe_nvrtc().ok()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC was probed; both are valid out-pointers.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Every CUDA device of this machine, or why there are none to use.
pub fn devices() -> Result<Vec<CudaDeviceInfo>, DeviceError> {
    probe_driver()?;
    let count = CudaContext::device_count().map_err(backend("CUDA"))?;
    let driver_version = driver_version()?;
    let nvrtc_version = nvrtc_version();
    (0..count.max(0) as usize)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal).map_err(backend("CUDA"))?;
            Ok(CudaDeviceInfo {
                ordinal,
                name: ctx.name().map_err(backend("CUDA"))?,
                memory: ctx.total_mem().map_err(backend("CUDA"))?,
                compute_capability: ctx.compute_capability().map_err(backend("CUDA"))?,
                driver_version,
                nvrtc_version,
            })
        })
        .collect()
}

//! [`DeviceOptions`]: a device's options however they were written (the
//! `--devices` list or a device file's table), checked in one place into a
//! [`DeviceSpec`], with the value checks both routes share.

use super::spec::{DeviceSpec, SlowdownSpec};
use crate::error::DeviceSpecError;
use controllers::registry::{self, BackendOptions};
use kernels::CellLayout;

/// The options a device may be given, however they were written: the
/// `key=value` list of `--devices` or the fields of a device file's table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceOptions {
    /// CPU threads.
    pub threads: Option<usize>,
    /// OpenCL platform.
    pub platform: Option<usize>,
    /// OpenCL or CUDA device number.
    pub device: Option<usize>,
    /// Static share (> 0).
    pub weight: Option<f64>,
    /// Emulated slowness.
    pub slowdown: Option<SlowdownSpec>,
    /// Emulated failure at this iteration.
    pub fail: Option<u64>,
    /// Cells with components in planes or whole, on OpenCL and CUDA.
    pub layout: Option<CellLayout>,
}

impl DeviceSpec {
    /// A device of backend `kind` (`cpu`, `opencl`, `cuda`: see
    /// [`controllers::registry`]) with options `o`, checked: each backend
    /// takes only its own options.
    pub fn from_options(kind: &str, o: &DeviceOptions) -> Result<DeviceSpec, DeviceSpecError> {
        let kind = registry::device_kind(
            kind,
            &BackendOptions {
                threads: o.threads,
                platform: o.platform,
                device: o.device,
                layout: o.layout,
            },
        )?;
        if let Some(w) = o.weight {
            check_weight(w, &w.to_string())?;
        }
        Ok(DeviceSpec {
            weight: o.weight.unwrap_or(1.0),
            slowdown: o.slowdown,
            fail: o.fail,
            layout: o.layout,
            ..DeviceSpec::of(kind)
        })
    }
}

pub(super) fn check_weight(w: f64, text: &str) -> Result<f64, DeviceSpecError> {
    if w.is_finite() && w >= 0.0 {
        Ok(w)
    } else {
        Err(DeviceSpecError::Weight(text.to_string()))
    }
}

/// `text` as given, or its first characters where it is long (a 300-digit
/// number in an error line helps nobody).
pub(crate) fn short(text: &str) -> String {
    const MOST: usize = 24;
    match text.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// `F` or `F@ITER`.
pub(super) fn parse_slowdown(v: &str) -> Result<SlowdownSpec, DeviceSpecError> {
    let (f, from) = v.split_once('@').unwrap_or((v, "0"));
    let max = controllers::slowdown::MAX_FACTOR;
    let factor = match f.parse::<f64>() {
        Ok(x) if (1.0..=max).contains(&x) => x,
        _ => return Err(DeviceSpecError::SlowdownFactor(short(v))),
    };
    let from_iter = from
        .parse::<u64>()
        .map_err(|_| DeviceSpecError::SlowdownFrom(v.to_string()))?;
    Ok(SlowdownSpec { factor, from_iter })
}

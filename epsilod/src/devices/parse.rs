//! The `--devices` string: `kind[:key=value,...]` read into
//! [`DeviceOptions`], then checked as a device file's table is.

use super::options::{check_weight, parse_slowdown, DeviceOptions};
use super::spec::DeviceSpec;
use crate::error::{DeviceSpecError, SetupError};
use controllers::registry;

impl DeviceSpec {
    /// Parses `kind[:key=value,...]`.
    pub fn parse(text: &str) -> Result<DeviceSpec, SetupError> {
        Self::parse_options(text).map_err(|why| SetupError::Device {
            spec: text.to_string(),
            why,
        })
    }

    fn parse_options(text: &str) -> Result<DeviceSpec, DeviceSpecError> {
        let (kind, opts) = text.split_once(':').unwrap_or((text, ""));
        let mut o = DeviceOptions::default();
        let mut seen: Vec<String> = Vec::new();
        for opt in opts.split(',').filter(|o| !o.is_empty()) {
            // `fail@ITER`, as `slowdown=F@ITER` reads.
            let opt = match opt.strip_prefix("fail@") {
                Some(at) => format!("fail={at}"),
                None => opt.to_string(),
            };
            let (k, v) = opt
                .split_once('=')
                .ok_or_else(|| DeviceSpecError::NotKeyValue(opt.clone()))?;
            if seen.iter().any(|s| s == k) {
                return Err(DeviceSpecError::Twice(k.to_string()));
            }
            seen.push(k.to_string());
            let int = |v: &str| {
                v.parse::<usize>().map_err(|_| DeviceSpecError::NotWhole {
                    key: k.to_string(),
                    value: v.to_string(),
                })
            };
            match k {
                "threads" => o.threads = Some(int(v)?),
                "platform" => o.platform = Some(int(v)?),
                "device" => o.device = Some(int(v)?),
                "weight" => o.weight = Some(parse_weight(v)?),
                "slowdown" => o.slowdown = Some(parse_slowdown(v)?),
                "layout" => o.layout = Some(registry::parse_layout(v)?),
                "fail" => {
                    o.fail = Some(
                        v.parse::<u64>()
                            .map_err(|_| DeviceSpecError::FailAt(v.to_string()))?,
                    )
                }
                _ => return Err(DeviceSpecError::UnknownOption(k.to_string())),
            }
        }
        DeviceSpec::from_options(kind, &o)
    }
}

fn parse_weight(v: &str) -> Result<f64, DeviceSpecError> {
    check_weight(v.parse::<f64>().unwrap_or(f64::NAN), v)
}

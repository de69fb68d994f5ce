//! The TOML device file: its `[[device]]` tables read and checked into
//! devices, and placed on ranks by host or rank.

use super::options::{parse_slowdown, DeviceOptions};
use super::placement::Placed;
use super::spec::DeviceSpec;
use crate::error::{DeviceFileError, DeviceSpecError, SetupError};
use controllers::registry;
use kernels::TomlError;
use serde::Deserialize;
use std::path::Path;

/// One `[[device]]` table of a device file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDevice {
    kind: String,
    threads: Option<usize>,
    platform: Option<usize>,
    device: Option<usize>,
    weight: Option<f64>,
    /// `3` or `"3@300"`.
    slowdown: Option<FileSlowdown>,
    /// Emulated failure at this iteration.
    fail: Option<u64>,
    /// `"planes"` or `"cells"`.
    layout: Option<String>,
    /// Under MPI: every rank on this host (`"*"`: on any host) gets the device.
    host: Option<String>,
    /// Under MPI: this rank gets the device.
    rank: Option<usize>,
}

/// A slowdown as a device file may write it.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileSlowdown {
    Factor(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceFileToml {
    device: Vec<FileDevice>,
}

/// A device file: devices in order, each maybe tied to hosts or a rank.
///
/// ```toml
/// [[device]]
/// kind = "cpu"
/// threads = 1
///
/// [[device]]
/// kind = "cpu"
/// threads = 1
/// weight = 2
/// slowdown = "3@300"
/// ```
///
/// Under MPI, a file whose tables name no `host` or `rank` deals its devices
/// out like `--devices`: device `i` to rank `i mod ranks`. Otherwise every
/// table names a `host` (a host name, or `"*"` for any) or a `rank`, and
/// each rank gets, in file order, every table naming its rank or its host: a
/// `host` table gives a device to every rank on that host. Devices are then
/// numbered rank by rank. A single process is rank 0 on its own host.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceFile {
    /// Where it was read from (for messages).
    pub path: String,
    entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    spec: DeviceSpec,
    host: Option<String>,
    rank: Option<usize>,
}

impl DeviceFile {
    /// Every device with its rank, for ranks on `hosts` (one per rank).
    pub fn place(&self, hosts: &[String]) -> Result<Placed, SetupError> {
        let selected = self
            .entries
            .iter()
            .filter(|e| e.host.is_some() || e.rank.is_some())
            .count();
        if selected == 0 {
            return Ok((self.entries.iter().map(|e| e.spec.clone()).collect(), None));
        }
        if selected < self.entries.len() {
            return Err(SetupError::DeviceFile {
                path: self.path.clone(),
                why: DeviceFileError::MixedPlacement,
            });
        }
        let mut specs = Vec::new();
        let mut owners = Vec::new();
        for (r, host) in hosts.iter().enumerate() {
            let before = specs.len();
            for e in &self.entries {
                let by_rank = e.rank == Some(r);
                let by_host =
                    e.rank.is_none() && e.host.as_deref().is_some_and(|h| h == "*" || h == host);
                if by_rank || by_host {
                    specs.push(e.spec.clone());
                    owners.push(r);
                }
            }
            if specs.len() == before {
                return Err(SetupError::RankWithoutTable {
                    rank: r,
                    host: host.clone(),
                    path: self.path.clone(),
                });
            }
        }
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.rank.is_some_and(|r| r >= hosts.len()))
        {
            return Err(SetupError::DeviceFile {
                path: self.path.clone(),
                why: DeviceFileError::RankOutsideJob {
                    rank: e.rank.unwrap_or(0),
                    ranks: hosts.len(),
                },
            });
        }
        Ok((specs, Some(owners)))
    }
}

/// Reads a device file (see [`DeviceFile`]).
pub fn load_device_file(path: &Path) -> Result<DeviceFile, SetupError> {
    let name = path.display().to_string();
    let text = kernels::input_file::read_text(path).map_err(|e| SetupError::DeviceFile {
        path: name.clone(),
        why: DeviceFileError::Read(e),
    })?;
    parse_device_file(&text, &name)
}

/// Parses a device file's text (`name` is for messages).
pub fn parse_device_file(text: &str, name: &str) -> Result<DeviceFile, SetupError> {
    let err = |why: DeviceFileError| SetupError::DeviceFile {
        path: name.to_string(),
        why,
    };
    let bad = |why: DeviceSpecError| SetupError::DeviceTable {
        path: name.to_string(),
        why,
    };
    let file: DeviceFileToml =
        toml::from_str(text).map_err(|e| err(TomlError::new(text, e).into()))?;
    if file.device.is_empty() {
        return Err(err(DeviceFileError::NoTables));
    }
    let entries = file
        .device
        .iter()
        .map(|d| {
            let slowdown = match &d.slowdown {
                None => None,
                Some(FileSlowdown::Factor(x)) => Some(parse_slowdown(&x.to_string()).map_err(bad)?),
                Some(FileSlowdown::Text(t)) => Some(parse_slowdown(t).map_err(bad)?),
            };
            let options = DeviceOptions {
                threads: d.threads,
                platform: d.platform,
                device: d.device,
                weight: d.weight,
                slowdown,
                fail: d.fail,
                layout: d
                    .layout
                    .as_deref()
                    .map(registry::parse_layout)
                    .transpose()
                    .map_err(|e| bad(e.into()))?,
            };
            if d.host.as_deref() == Some("") {
                return Err(err(DeviceFileError::EmptyHost));
            }
            Ok(Entry {
                spec: DeviceSpec::from_options(&d.kind, &options).map_err(bad)?,
                host: d.host.clone(),
                rank: d.rank,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DeviceFile {
        path: name.to_string(),
        entries,
    })
}

//! What can be booked: device classes on hosts and the links between them,
//! as an inventory file writes them, checked before any search.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::link::Hockney;

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlanError {
    /// No devices, or no network with devices on several hosts.
    #[error("the inventory has {0}")]
    Empty(&'static str),
    /// Two entries of one name (devices: of one name on one host).
    #[error("the inventory names {0} twice: give each entry a name of its own")]
    Duplicate(String),
    /// More devices or choices than the search covers in reasonable time.
    #[error("the inventory is too large to plan: {0}")]
    TooLarge(String),
    /// A number that must be finite and positive is not.
    #[error("{what} must be a finite number > 0, got {value}")]
    Bad {
        /// Which.
        what: String,
        /// Its value.
        value: f64,
    },
}

/// What can be booked: device classes on hosts, the links within a rank
/// (`in_process`) and between ranks of one host (`shared_memory`, by
/// default the same), and the networks between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Between devices of one rank.
    pub in_process: LinkSpec,
    /// Between ranks of one host.
    #[serde(default)]
    pub shared_memory: Option<LinkSpec>,
    /// Between hosts.
    #[serde(default, rename = "network")]
    pub networks: Vec<Network>,
    /// The devices.
    #[serde(rename = "device")]
    pub devices: Vec<DeviceClass>,
}

/// A link's Hockney parameters as an inventory writes them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Latency in seconds.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl LinkSpec {
    pub(super) fn hockney(&self) -> Hockney {
        Hockney {
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// A network between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Its name.
    pub name: String,
    /// Latency in seconds.
    pub alpha: f64,
    /// Seconds per byte.
    pub beta: f64,
}

impl Network {
    pub(super) fn link(&self) -> LinkSpec {
        LinkSpec {
            alpha: self.alpha,
            beta: self.beta,
        }
    }
}

/// Identical devices on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceClass {
    /// Their name.
    pub name: String,
    /// Their host.
    pub host: String,
    /// Calibrated seconds per cell.
    pub seconds_per_cell: f64,
    /// Calibrated seconds per iteration whatever the cells (a machine's
    /// `fixed_seconds`; default 0).
    #[serde(default)]
    pub fixed_seconds: f64,
    /// How many.
    #[serde(default = "one")]
    pub count: usize,
}

fn one() -> usize {
    1
}

/// The most devices an inventory may hold: the Pareto front searches once
/// per device count, and each estimate lays every device out.
pub const MAX_DEVICES: usize = 1024;
/// The most count vectors (every class from none to all of its devices) an
/// inventory may span: the branch and bound prunes, but a front's searches
/// with an exact count prune little.
pub const MAX_CHOICES: f64 = 1e6;

impl Inventory {
    /// Checks every number, and that the search is of a size to finish.
    pub fn check(&self) -> Result<(), PlanError> {
        if self.devices.iter().all(|d| d.count == 0) {
            return Err(PlanError::Empty("no devices"));
        }
        let total = self
            .devices
            .iter()
            .try_fold(0usize, |n, d| n.checked_add(d.count))
            .unwrap_or(usize::MAX);
        if total > MAX_DEVICES {
            return Err(PlanError::TooLarge(format!(
                "{total} devices, at most {MAX_DEVICES}"
            )));
        }
        // The plan names devices by name@host and networks by name.
        if let Some(d) = first_repeat(&self.devices, |a, b| {
            (&a.name, &a.host) == (&b.name, &b.host)
        }) {
            return Err(PlanError::Duplicate(format!(
                "device {}@{}",
                d.name, d.host
            )));
        }
        if let Some(n) = first_repeat(&self.networks, |a, b| a.name == b.name) {
            return Err(PlanError::Duplicate(format!("network {}", n.name)));
        }
        let choices: f64 = self.devices.iter().map(|d| d.count as f64 + 1.0).product();
        if choices > MAX_CHOICES {
            return Err(PlanError::TooLarge(format!(
                "{choices:.1e} choices of counts over {} entries, at most {MAX_CHOICES:.0e} \
                 (merge entries of one host and kind into one with a count)",
                self.devices.len()
            )));
        }
        let finite = |what: String, v: f64, zero_ok: bool| {
            if v.is_finite() && (v > 0.0 || zero_ok && v == 0.0) {
                Ok(())
            } else {
                Err(PlanError::Bad { what, value: v })
            }
        };
        for d in &self.devices {
            finite(
                format!("device {} seconds_per_cell", d.name),
                d.seconds_per_cell,
                false,
            )?;
            finite(
                format!("device {} fixed_seconds", d.name),
                d.fixed_seconds,
                true,
            )?;
        }
        let mut links = vec![("in_process".to_string(), self.in_process)];
        links.extend(self.shared_memory.map(|l| ("shared_memory".to_string(), l)));
        links.extend(
            self.networks
                .iter()
                .map(|n| (format!("network {}", n.name), n.link())),
        );
        for (name, l) in links {
            finite(format!("{name} alpha"), l.alpha, true)?;
            finite(format!("{name} beta"), l.beta, true)?;
        }
        Ok(())
    }
}

/// The first item that an earlier item is `same` as.
fn first_repeat<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find_map(|(k, x)| items[..k].iter().any(|e| same(e, x)).then_some(x))
}

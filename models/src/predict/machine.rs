//! A calibrated machine: its devices and link classes, checked when it is
//! built, each device's kernel time under the host's memory floor, and the
//! machine at a run's working set.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::device::Device;
use super::run::Run;
use crate::cell_cost::{cell_cost_factor, WorkingSet};
use crate::curve::tile_curve_fault;
use crate::link::{Hockney, LogGp, Piecewise};
use crate::memory::HostMemory;
use crate::{check_finite, ModelError};

/// One class of link (in-process, MPI intra-node, inter-node, ...) with
/// the models fitted to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkClass {
    /// Name the run refers to.
    pub name: String,
    /// Hockney fit, used by `Hockney`, `Rivera` (alpha as L, 1/beta as β)
    /// and `Overlap`.
    pub hockney: Hockney,
    /// LogGP parameters, used by `LogGp` and `HcLogP`.
    pub loggp: LogGp,
    /// Piecewise fit, when calibration found breakpoints; kept for
    /// inspection and for later methods.
    #[serde(default)]
    pub piecewise: Option<Piecewise>,
    /// Rivera's per-packet switch latency L_sw in seconds (0 without a
    /// switch).
    #[serde(default)]
    pub switch_latency: f64,
    /// The ping-pong samples the models were fitted to (bytes, one-way
    /// seconds), when calibrated.
    #[serde(default)]
    pub samples: Vec<crate::link::Sample>,
}

impl LinkClass {
    /// A link class described by a Hockney fit alone: LogGP is derived with
    /// zero overheads and gap, L = alpha and G = beta, which gives the same
    /// single-message time.
    pub fn from_hockney(name: impl Into<String>, hockney: Hockney) -> Self {
        Self {
            name: name.into(),
            hockney,
            loggp: LogGp {
                l: hockney.alpha,
                o_s: 0.0,
                o_r: 0.0,
                g: 0.0,
                big_g: hockney.beta,
            },
            piecewise: None,
            switch_latency: 0.0,
            samples: Vec::new(),
        }
    }
}

/// A calibrated machine: devices and link classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Devices, in partition order.
    pub devices: Vec<Device>,
    /// Link classes by name.
    pub links: Vec<LinkClass>,
    /// The skeleton's own seconds per iteration beyond the slowest
    /// device's kernels (packing, posting, bookkeeping), as calibration
    /// measured it: `Overlap` and the simulator add it to every iteration.
    #[serde(default)]
    pub iteration_overhead: f64,
    /// Seconds of one rebalance against the bytes it moves, as calibration
    /// measured it (barrier, moves, reallocation, halo refresh): the
    /// simulator's rebalance cost. `None`: modelled from the links.
    #[serde(default)]
    pub rebalance: Option<Hockney>,
    /// The host's memory bandwidth against working set, shared by the
    /// devices in host memory: a device's kernel time is at least the time
    /// its share of that bandwidth takes to move its cells' bytes
    /// ([`Machine::kernel_times`]). `None`: no such floor (machines
    /// written before it was calibrated, hand-written ones, MPI runs over
    /// several hosts).
    #[serde(default)]
    pub memory: Option<HostMemory>,
    /// The working set the devices' lines were calibrated at: with
    /// [`Machine::memory`], the seconds per cell of a device in host
    /// memory follow a run's working set ([`Machine::at_working_set`]).
    /// `None`: the line at every tile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrated_at: Option<WorkingSet>,
}

impl Machine {
    /// Validates the devices and sets each relative power against the
    /// slowest.
    pub fn new(mut devices: Vec<Device>, links: Vec<LinkClass>) -> Result<Self, ModelError> {
        if devices.is_empty() {
            return Err(ModelError::NoDevices);
        }
        let mut slowest: f64 = 0.0;
        for d in &devices {
            let s = check_finite("seconds per cell", d.seconds_per_cell)?;
            if s == 0.0 {
                return Err(ModelError::InvalidValue {
                    what: "seconds per cell",
                    value: s,
                });
            }
            check_finite("cv", d.cv)?;
            check_finite("spell", d.spell)?;
            let a = check_finite("fixed seconds per iteration", d.fixed_seconds)?;
            if a < 0.0 {
                return Err(ModelError::InvalidValue {
                    what: "fixed seconds per iteration",
                    value: a,
                });
            }
            slowest = slowest.max(s);
        }
        for (device, d) in devices.iter().enumerate() {
            if let Some((what, bound, value)) = tile_curve_fault(&d.tile_curve) {
                return Err(ModelError::BadTileCurve {
                    device,
                    what,
                    bound,
                    value,
                });
            }
        }
        // A negative latency or gap would make an exchange cost less than
        // nothing.
        for l in &links {
            let h = &l.hockney;
            let g = &l.loggp;
            for (what, v) in [
                ("link alpha", h.alpha),
                ("link beta", h.beta),
                ("link LogGP l", g.l),
                ("link LogGP o_s", g.o_s),
                ("link LogGP o_r", g.o_r),
                ("link LogGP g", g.g),
                ("link LogGP big_g", g.big_g),
                ("link switch latency", l.switch_latency),
            ] {
                check_finite(what, v)?;
            }
        }
        for d in &mut devices {
            d.relative_power = slowest / d.seconds_per_cell;
        }
        Ok(Self {
            devices,
            links,
            iteration_overhead: 0.0,
            rebalance: None,
            memory: None,
            calibrated_at: None,
        })
    }

    /// The same machine with the skeleton's per-iteration overhead.
    pub fn with_overhead(mut self, seconds: f64) -> Result<Self, ModelError> {
        self.iteration_overhead = check_finite("iteration overhead", seconds)?;
        Ok(self)
    }

    /// The same machine with its host's memory curve.
    pub fn with_memory(mut self, memory: HostMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Each device's kernel seconds per iteration over `cells[d]` cells of
    /// `cell_bytes` bytes: [`Device::time`] (`(a + b · cells)` times the
    /// tile factor), and for the devices in host
    /// memory at least the time their share of the host's bandwidth takes
    /// to move each cell's bytes twice (the source read, the destination
    /// written: counted as the copy that measured the bandwidth counts
    /// them), at the rate of the working set their two levels make together
    /// ([`HostMemory::floors`]); not three times, since a host's stores
    /// need not read the line first (a measured run beat that floor). The
    /// line is calibrated where the tiles fit the caches; a run whose tiles
    /// do not is held back by memory instead.
    pub fn kernel_times(&self, cells: &[f64], cell_bytes: f64) -> Vec<f64> {
        let mut times: Vec<f64> = self
            .devices
            .iter()
            .zip(cells)
            .map(|(d, &c)| d.time(c))
            .collect();
        if let Some(memory) = &self.memory {
            let traffic: Vec<f64> = self
                .devices
                .iter()
                .zip(cells)
                .map(|(d, &c)| {
                    if d.host_memory {
                        2.0 * c * cell_bytes
                    } else {
                        0.0
                    }
                })
                .collect();
            // Two levels of every cell stay resident.
            let resident: f64 = traffic.iter().sum::<f64>();
            for (t, floor) in times.iter_mut().zip(memory.floors(&traffic, resident)) {
                *t = t.max(floor);
            }
        }
        times
    }

    pub(super) fn link(&self, name: &str) -> Result<&LinkClass, ModelError> {
        self.links
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| ModelError::UnknownLink(name.to_owned()))
    }

    /// The machine as it runs `run`: with a host memory curve and a
    /// calibrated working set, the seconds per cell of each device in host
    /// memory without a tile curve (a sweep measured its tiles) times
    /// [`cell_cost_factor`] at the run's working set, the fastest such
    /// device the reference. Otherwise the machine itself.
    pub fn at_working_set(&self, run: &Run) -> Cow<'_, Machine> {
        let (Some(memory), Some(at)) = (&self.memory, &self.calibrated_at) else {
            return Cow::Borrowed(self);
        };
        let cells: Vec<f64> = self
            .devices
            .iter()
            .zip(&run.rows)
            .filter(|(d, _)| d.host_memory)
            .map(|(_, &r)| (r * run.cells_per_row) as f64)
            .collect();
        let now = WorkingSet::of(
            &cells,
            run.cells_per_row as f64,
            run.cell_bytes(),
            run.halo_rows as f64,
        );
        let reference = self
            .devices
            .iter()
            .filter(|d| d.host_memory)
            .map(|d| d.seconds_per_cell)
            .fold(f64::INFINITY, f64::min);
        let factor = cell_cost_factor(memory, at, &now, reference);
        let mut m = self.clone();
        for d in m
            .devices
            .iter_mut()
            .filter(|d| d.host_memory && d.tile_curve.is_empty())
        {
            d.seconds_per_cell *= factor;
        }
        Cow::Owned(m)
    }
}

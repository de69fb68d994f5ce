//! Time prediction of a stencil run over a described machine, by the
//! published additive methods and by `Overlap`, this skeleton's schedule.
//!
//! The run is the skeleton's 1-D row partition: device `d` owns
//! `rows[d]` consecutive rows of `cells_per_row` cells and exchanges
//! `halo_rows · halo_bytes_per_row` bytes with each of its neighbours (one
//! at the ends of the chain, two inside) every iteration.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::cell_cost::{cell_cost_factor, WorkingSet};
use crate::curve::{factor_at, kernel_time, tile_curve_fault};
use crate::interval::{loop_interval, IterationShape, LoopInterval};
use crate::link::{Hockney, LogGp, Piecewise};
use crate::memory::HostMemory;
use crate::{check_finite, ModelError};

/// One compute device, calibrated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Display name.
    pub name: String,
    /// Measured seconds to update one cell with the run's kernel: the
    /// slope `b` of the device's kernel time `a + b · cells`.
    pub seconds_per_cell: f64,
    /// Seconds the device's kernels cost per iteration whatever its cell
    /// count: the intercept `a` of `a + b · cells` (thread wake-ups,
    /// launches, border strips). Absent in machines written before it was
    /// calibrated, and then 0.
    #[serde(default)]
    pub fixed_seconds: f64,
    /// Relative power R_p: the slowest device of the machine is 1
    /// (HCLogP's Eq. 3.1, `Perf_x / Perf_y = Time_y / Time_x`). Set by
    /// [`Machine::new`].
    #[serde(default)]
    pub relative_power: f64,
    /// Spread of the per-iteration seconds per cell measured: the robust
    /// coefficient of variation (1.4826 · MAD / median). The simulator's
    /// noise.
    #[serde(default)]
    pub cv: f64,
    /// Slow spells: the log spread of the device's speed from one run to
    /// the next (calibration's repeated tile, or its blocks of
    /// iterations), which a loop's many iterations do not average out. The
    /// predicted interval's ([`Machine::interval`]); 0: none measured.
    #[serde(default)]
    pub spell: f64,
    /// Iterations measured (0: written by hand).
    #[serde(default)]
    pub samples: usize,
    /// Whether the device computes in host memory (a CPU device), and so
    /// shares [`Machine::memory`] with the others that do.
    #[serde(default)]
    pub host_memory: bool,
    /// The link class between the device's memory and the host's, for a
    /// device with memory of its own (a GPU): its halos go out through a
    /// read into host memory and come in through a write, unless the
    /// neighbour is of its [`Device::peer_group`]. `None`: the device
    /// computes in host memory, or the machine does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_link: Option<String>,
    /// Devices of one group copy one another's memory (virtual devices on
    /// one GPU, devices of one OpenCL context): halos between them stay in
    /// device memory and pay no host staging. `None`: a group of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_group: Option<usize>,
    /// How the kernel's time at other tile sizes departs from the line:
    /// `(cells, measured time over the line's)` points, cells increasing
    /// (`calibrate --tile-sweep`). A tile inside a core's L2 ran 25% under
    /// the line calibrated on tiles four times larger; the time of `cells`
    /// is the line's times this curve ([`Device::tile_factor`]). Empty: the
    /// line alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tile_curve: Vec<(f64, f64)>,
}

impl Device {
    /// A device updating one cell in `seconds_per_cell`; its relative power
    /// is set when it joins a [`Machine`].
    pub fn new(name: impl Into<String>, seconds_per_cell: f64) -> Self {
        Self {
            name: name.into(),
            seconds_per_cell,
            fixed_seconds: 0.0,
            relative_power: 0.0,
            cv: 0.0,
            spell: 0.0,
            samples: 0,
            host_memory: false,
            host_link: None,
            peer_group: None,
            tile_curve: Vec::new(),
        }
    }

    /// The same device with memory of its own, reached from the host over
    /// the link class `link` ([`Device::host_link`]).
    pub fn with_host_link(mut self, link: impl Into<String>) -> Self {
        self.host_link = Some(link.into());
        self
    }

    /// Whether halos between this device and `other` stay in device memory.
    pub fn shares_memory_with(&self, other: &Device) -> bool {
        matches!((self.peer_group, other.peer_group), (Some(a), Some(b)) if a == b)
    }

    /// The same device computing in host memory ([`Device::host_memory`]).
    pub fn in_host_memory(mut self) -> Self {
        self.host_memory = true;
        self
    }

    /// The same device with a fixed cost of `seconds` per iteration.
    pub fn with_fixed(mut self, seconds: f64) -> Self {
        self.fixed_seconds = seconds;
        self
    }

    /// Kernel seconds of one iteration over `cells` cells: `a + b · cells`
    /// times the [`Device::tile_factor`] of `cells`, and nothing for a
    /// device with no cells (it launches no kernel).
    pub fn time(&self, cells: f64) -> f64 {
        if cells > 0.0 {
            kernel_time(
                self.fixed_seconds,
                self.seconds_per_cell,
                &self.tile_curve,
                cells,
            )
        } else {
            0.0
        }
    }

    /// The measured time over the line's at a tile of `cells`: the
    /// [`Device::tile_curve`] between its points in log-log coordinates
    /// (speed changes by powers as a tile leaves a cache), its end's value
    /// beyond either end, 1 without a curve.
    pub fn tile_factor(&self, cells: f64) -> f64 {
        factor_at(&self.tile_curve, cells)
    }
}

/// Halvings of an interval in [`Machine::balanced`]'s bisections: down to
/// the last bits of an f64.
const BISECTIONS: usize = 64;

/// The perfectly balanced split of `total` cells over devices whose
/// iteration costs `a + b · cells` (`(a, b)` pairs, `b > 0`, `a >= 0`): the
/// least time `T` at which every device busy finishes together, and each
/// device's cells `(T − a) / b` (0 for a device whose fixed cost alone is
/// at least `T`: adding it would only slow the iteration). Water-filling
/// over the devices by fixed cost, cheapest first. With every `a = 0` this
/// is HCLogP's split by relative power, `T = total / Σ 1/b`.
pub fn balance(costs: &[(f64, f64)], total: f64) -> (f64, Vec<f64>) {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&x, &y| costs[x].0.total_cmp(&costs[y].0));
    let (mut speed, mut offset) = (0.0, 0.0);
    let mut t = f64::INFINITY;
    for (k, &i) in order.iter().enumerate() {
        let (a, b) = costs[i];
        speed += 1.0 / b;
        offset += a / b;
        t = (total + offset) / speed;
        // The next device joins only when the others would still be busy
        // past its fixed cost.
        if order.get(k + 1).is_none_or(|&j| t <= costs[j].0) {
            break;
        }
    }
    let cells = costs.iter().map(|&(a, b)| ((t - a) / b).max(0.0)).collect();
    (t, cells)
}

/// Header bytes per packet in Rivera's model: MPI 22, TCP 32, IP 20,
/// Ethernet 14 (modelling.md §4.1).
pub const RIVERA_HEADER_BYTES: f64 = 88.0;
/// TCP/IP payload per packet at a 1,500 B MTU.
pub const RIVERA_PAYLOAD_BYTES: f64 = 1460.0;

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

    /// Each device's `(a, b)`: fixed seconds per iteration, seconds per
    /// cell.
    pub fn costs(&self) -> Vec<(f64, f64)> {
        self.devices
            .iter()
            .map(|d| (d.fixed_seconds, d.seconds_per_cell))
            .collect()
    }

    /// The balanced split of `total_cells`: the least time `T` at which
    /// every device busy finishes together, and each device's cells. On
    /// lines alone it is [`balance`]'s water-filling. With tile curves each
    /// device's time still rises with its cells ([`Machine::new`] refuses a
    /// falling factor), so the cells it computes by a time are found by
    /// bisection, and so is the time at which they add up to the total. A
    /// fixed-point split (each device's line scaled by its factor at the
    /// last split's cells) swapped between two splits for ever on a curve
    /// from 0.25 to 1 over a doubling of cells.
    pub fn balanced(&self, total_cells: f64) -> (f64, Vec<f64>) {
        if total_cells <= 0.0 || self.devices.iter().all(|d| d.tile_curve.is_empty()) {
            return balance(&self.costs(), total_cells);
        }
        let bisect = |mut lo: f64, mut hi: f64, below: &dyn Fn(f64) -> bool| {
            for _ in 0..BISECTIONS {
                let mid = 0.5 * (lo + hi);
                if below(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo, hi)
        };
        // The most cells `d` computes within `t` seconds.
        let cells_by = |d: &Device, t: f64| {
            if d.time(total_cells) <= t {
                total_cells
            } else {
                bisect(0.0, total_cells, &|c| d.time(c) <= t).0
            }
        };
        let sum = |t: f64| self.devices.iter().map(|d| cells_by(d, t)).sum::<f64>();
        // By the fastest device's time for all cells they are all placed.
        let alone = self
            .devices
            .iter()
            .map(|d| d.time(total_cells))
            .fold(f64::INFINITY, f64::min);
        let (_, t) = bisect(0.0, alone, &|t| sum(t) < total_cells);
        let mut cells: Vec<f64> = self.devices.iter().map(|d| cells_by(d, t)).collect();
        // At `t` they hold at least the total: trimmed to it, none slower.
        let placed: f64 = cells.iter().sum();
        for c in &mut cells {
            *c *= total_cells / placed;
        }
        let t = self
            .devices
            .iter()
            .zip(&cells)
            .map(|(d, &c)| d.time(c))
            .fold(0.0, f64::max);
        (t, cells)
    }

    /// The model-seeded weights for a run of `total_cells` cells: the cells
    /// each device computes in the balanced split ([`Machine::balanced`]),
    /// so every device's kernel time is equal. Without fixed costs or tile
    /// curves they are proportional to the relative powers. A device the
    /// split leaves idle keeps a weight of one cell: a partition gives
    /// every device a block.
    pub fn seeded_weights(&self, total_cells: f64) -> Vec<f64> {
        self.balanced(total_cells)
            .1
            .into_iter()
            .map(|c| c.max(1.0))
            .collect()
    }

    /// [`Machine::seeded_weights`] at the cost each device has in the run
    /// the weights seed: `global_rows` rows of `cells_per_row` cells of
    /// `cell_bytes`, a stencil reaching `halo_rows` rows. The split is taken
    /// again on the machine at the working set of the plain split's tiles
    /// ([`Machine::at_working_set`], as `predict` costs a run): one
    /// correction, so the weights are a function of the run alone.
    pub fn seeded_weights_for(
        &self,
        global_rows: u64,
        cells_per_row: u64,
        halo_rows: u64,
        cell_bytes: f64,
    ) -> Vec<f64> {
        let total = global_rows as f64 * cells_per_row as f64;
        let plain = self.seeded_weights(total);
        if self.memory.is_none() || self.calibrated_at.is_none() {
            return plain;
        }
        let halo_bytes = cells_per_row as f64 * cell_bytes;
        // The link is not read: only the rows and the tiles' shape are.
        match Run::from_weights(
            global_rows,
            cells_per_row,
            halo_rows,
            halo_bytes,
            1,
            &plain,
            "",
        ) {
            Ok(run) => self.at_working_set(&run).seeded_weights(total),
            Err(_) => plain,
        }
    }

    /// Each device's seconds per iteration spent moving halos of `m` bytes
    /// between device and host memory, per neighbour outside its peer
    /// group, each transfer timed by a host link's Hockney fit: a device
    /// with memory of its own reads its border out and writes the halo in
    /// (the neighbour's read, if it has one, runs meanwhile); a device
    /// without a host link (in host memory, or a machine that does not say)
    /// waits for a neighbour with one to read its border out before the
    /// halo can leave.
    fn staging(&self, m: f64, chain: &[Vec<usize>]) -> Result<Vec<f64>, ModelError> {
        let p = self.devices.len();
        let once = |dev: &Device| -> Result<Option<f64>, ModelError> {
            dev.host_link
                .as_ref()
                .map(|name| Ok(self.link(name)?.hockney.time(m)))
                .transpose()
        };
        let mut staging = Vec::with_capacity(p);
        for (d, dev) in self.devices.iter().enumerate() {
            let mine = once(dev)?;
            let mut t = 0.0;
            for &e in chain[d]
                .iter()
                .filter(|&&e| !dev.shares_memory_with(&self.devices[e]))
            {
                t += match (mine, once(&self.devices[e])?) {
                    (Some(own), _) => 2.0 * own,
                    (None, Some(theirs)) => theirs,
                    (None, None) => 0.0,
                };
            }
            staging.push(t);
        }
        Ok(staging)
    }

    fn link(&self, name: &str) -> Result<&LinkClass, ModelError> {
        self.links
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| ModelError::UnknownLink(name.to_owned()))
    }

    /// Predicts `run` by `method`, exchanges timed by the machine's links.
    pub fn predict(&self, run: &Run, method: Method) -> Result<Prediction, ModelError> {
        self.predict_with(run, method, ExchangeTime::Links)
    }

    /// Predicts `run` by `method`, exchanges timed by `exchange`, on the
    /// machine at the run's working set ([`Machine::at_working_set`]).
    pub fn predict_with(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<Prediction, ModelError> {
        Ok(self.at_working_set(run).shapes(run, method, exchange)?.0)
    }

    /// The loop time of [`Machine::predict_with`]'s prediction as a
    /// distribution: its median and 90% interval under each device's
    /// per-iteration noise (`cv`) and slow spells (`spell`), drawn with a
    /// fixed seed ([`loop_interval`]).
    pub fn interval(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<LoopInterval, ModelError> {
        let (_, shapes) = self.at_working_set(run).shapes(run, method, exchange)?;
        Ok(loop_interval(&shapes, run.iterations))
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

    /// The prediction, and each device's iteration as its noise moves it.
    fn shapes(
        &self,
        run: &Run,
        method: Method,
        exchange: ExchangeTime,
    ) -> Result<(Prediction, Vec<IterationShape>), ModelError> {
        let p = self.devices.len();
        if run.rows.len() != p {
            return Err(ModelError::DeviceCount {
                run: run.rows.len(),
                machine: p,
            });
        }
        check_finite("halo bytes per row", run.halo_bytes_per_row)?;
        if let ExchangeTime::Phase(t) = exchange {
            check_finite("exchange phase seconds", t)?;
        }
        let link = self.link(&run.link)?;
        let cells = run.cells_per_row as f64;
        let total_cells = run.rows.iter().sum::<u64>() as f64 * cells;
        let m = run.halo_rows as f64 * run.halo_bytes_per_row;
        let chain = chain(&run.rows);
        let neighbours = |d: usize| chain[d].len() as f64;
        let kernel = self.kernel_times(
            &run.rows
                .iter()
                .map(|&r| r as f64 * cells)
                .collect::<Vec<_>>(),
            run.cell_bytes(),
        );
        let own = |d: usize| kernel[d];
        let (balanced_iteration, _) = self.balanced(total_cells);
        let staging = self.staging(m, &chain)?;

        let mut devices = Vec::with_capacity(p);
        let mut shapes = Vec::with_capacity(p);
        let mut iteration: f64 = 0.0;
        for (d, &staged) in staging.iter().enumerate() {
            let nb = neighbours(d);
            // A learned model times the whole phase, the slowest process's:
            // every device that exchanges at all waits for it.
            let phase = |e: f64| match exchange {
                ExchangeTime::Links => e,
                ExchangeTime::Phase(_) if nb == 0.0 => 0.0,
                ExchangeTime::Phase(t) => t,
            };
            let dev = &self.devices[d];
            let additive = |compute: f64, exchange: f64| IterationShape {
                before: compute,
                overlapped: 0.0,
                exchange,
                after: 0.0,
                cv: dev.cv,
                spell: dev.spell,
            };
            let (compute, exchange, time, shape) = match method {
                Method::Hockney => {
                    let (c, e) = (own(d), phase(nb * link.hockney.time(m)) + staged);
                    (c, e, c + e, additive(c, e))
                }
                Method::LogGp => {
                    let (c, e) = (own(d), phase(loggp_exchange(&link.loggp, nb, m)) + staged);
                    (c, e, c + e, additive(c, e))
                }
                Method::HcLogP => {
                    // HCLogP assumes the work divided by power (Eq. 3.2 with
                    // I = I_s, F_r = 0): the partition does not enter. With
                    // fixed costs or tile curves "by power" is the split
                    // that equalises each device's time (`Machine::balanced`),
                    // of which Eq. 3.2 is the case of lines through 0.
                    let c = balanced_iteration;
                    let l = &link.loggp;
                    let e = phase(hclogp::comm_time(
                        Op::SendRecv,
                        nb,
                        p,
                        l.l,
                        m,
                        1.0 / l.big_g,
                        l.o_s + l.o_r,
                    )) + staged;
                    (c, e, c + e, additive(c, e))
                }
                Method::Rivera => {
                    // Rivera assumes equal work per process (§4.2).
                    let c = self.devices[d].time(total_cells / p as f64);
                    let e = phase(nb * rivera_p2p(&link.hockney, link.switch_latency, m)) + staged;
                    (c, e, c + e, additive(c, e))
                }
                Method::Overlap => {
                    let rows = run.rows[d];
                    // A strip on each side that sends goes before the
                    // halos leave (`hitmap::VpHalo::send_widths`), as the
                    // simulator has it.
                    let border_rows = rows.min(run.halo_rows * nb as u64);
                    let spc = dev.seconds_per_cell;
                    // The fixed cost is paid before the halos leave: the
                    // threads wake for the border strips first.
                    let fixed = if rows > 0 { dev.fixed_seconds } else { 0.0 };
                    let border = fixed + border_rows as f64 * cells * spc;
                    let inner = (rows - border_rows) as f64 * cells * spc;
                    // Held back by memory, both parts stretch alike.
                    let stretch = if border + inner > 0.0 {
                        own(d) / (border + inner)
                    } else {
                        1.0
                    };
                    let (border, inner) = (border * stretch, inner * stretch);
                    let e = phase(nb * link.hockney.time(m)) + staged;
                    (
                        border + inner,
                        e,
                        border + e.max(inner) + self.iteration_overhead,
                        IterationShape {
                            before: border,
                            overlapped: inner,
                            exchange: e,
                            after: self.iteration_overhead,
                            cv: dev.cv,
                            spell: dev.spell,
                        },
                    )
                }
            };
            iteration = iteration.max(time);
            devices.push(DeviceTime { compute, exchange });
            shapes.push(shape);
        }
        let iters = run.iterations as f64;
        let prediction = Prediction {
            method,
            devices,
            iteration,
            loop_time: iteration * iters,
            balanced_iteration,
            balanced_loop: balanced_iteration * iters,
        };
        Ok((prediction, shapes))
    }
}

/// Each device's neighbours along the partitioned axis: the nearest
/// devices on either side that hold rows. A device without rows has none
/// and is no one's: the skeleton exchanges no halos with it.
fn chain(rows: &[u64]) -> Vec<Vec<usize>> {
    let holding: Vec<usize> = (0..rows.len()).filter(|&d| rows[d] > 0).collect();
    let mut chain = vec![Vec::new(); rows.len()];
    for (k, &d) in holding.iter().enumerate() {
        chain[d] = [k.checked_sub(1), holding.get(k + 1).map(|_| k + 1)]
            .into_iter()
            .flatten()
            .map(|j| holding[j])
            .collect();
    }
    chain
}

/// Where a prediction's halo-exchange time comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExchangeTime {
    /// Each method's own formula over the run's link class.
    Links,
    /// One phase time for every device that exchanges, seconds per
    /// iteration: a learned model's prediction for the run's features
    /// (`learned::CommModel` over `halo_features::halo_features`).
    Phase(f64),
}

/// `nb` back-to-back messages of `m` bytes in LogGP: the first arrives after
/// `o_s + (k−1)G + L + o_r`, each further one a sender slot later, the slot
/// being the larger of the gap `g` and the sender's busy time
/// `o_s + (k−1)G`.
fn loggp_exchange(p: &LogGp, nb: f64, m: f64) -> f64 {
    if nb <= 0.0 {
        return 0.0;
    }
    let k = m.max(1.0);
    p.time(m) + (nb - 1.0) * p.g.max(p.o_s + (k - 1.0) * p.big_g)
}

/// Rivera's point-to-point time (Eqs. 4.5–4.11) for one message of `m`
/// bytes: `L + D/β + N_paq·L_sw`, `N_paq = ceil(m / payload)`,
/// `D = m + N_paq · headers`, with L = alpha and β = 1/beta of `link`.
pub fn rivera_p2p(link: &Hockney, switch_latency: f64, m: f64) -> f64 {
    let packets = (m / RIVERA_PAYLOAD_BYTES).ceil().max(1.0);
    let wire = m + packets * RIVERA_HEADER_BYTES;
    link.alpha + wire * link.beta + packets * switch_latency
}

/// The kinds of operation in HCLogP's communication term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// Point to point: one message per call.
    SendRecv,
    /// All-to-all: P−1 messages per call.
    AllToAll,
    /// Tree collectives (AllReduce, Scatter, Gather, one-to-all): log2 P
    /// messages per call.
    Tree,
}

/// HCLogP's published formulas (Soares 2017, ch. 3).
pub mod hclogp {
    use super::Op;

    /// Eq. 3.2: `T_comp = (I / I_s) · I_e / (ΣR_p + F_r)`, where `I_e` is the
    /// time of `I_s` iterations on the slowest unit.
    pub fn comp_time(i: f64, i_s: f64, i_e: f64, sum_rp: f64, f_r: f64) -> f64 {
        (i / i_s) * (i_e / (sum_rp + f_r))
    }

    /// Eqs. 3.8–3.10 for one operation type: `N_op · k · (L + M/B + o_d)`
    /// with `k` = 1, P−1 or log2 P by `op`. `b` is in bytes per second.
    pub fn comm_time(op: Op, n_op: f64, p: usize, l: f64, m: f64, b: f64, o_d: f64) -> f64 {
        let k = match op {
            Op::SendRecv => 1.0,
            Op::AllToAll => p.saturating_sub(1) as f64,
            Op::Tree => (p as f64).log2(),
        };
        n_op * k * (l + m / b + o_d)
    }
}

/// How to predict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Compute of the own rows plus Hockney time per neighbour, added.
    Hockney,
    /// Compute plus back-to-back LogGP messages, added.
    LogGp,
    /// HCLogP: power-weighted balanced compute plus `N_op·(L + M/B + o_d)`.
    HcLogP,
    /// Rivera: equal-work compute plus packetised point-to-point time.
    Rivera,
    /// This skeleton: border compute, then the exchange hidden behind the
    /// inner compute: `max_d border_d + max(exchange_d, inner_d)`.
    Overlap,
}

impl Method {
    /// Every method, in documentation order.
    pub const ALL: [Method; 5] = [
        Method::Hockney,
        Method::LogGp,
        Method::HcLogP,
        Method::Rivera,
        Method::Overlap,
    ];

    /// The lower-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Method::Hockney => "hockney",
            Method::LogGp => "loggp",
            Method::HcLogP => "hclogp",
            Method::Rivera => "rivera",
            Method::Overlap => "overlap",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A method name that is none of [`Method::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown method {0:?}: expected hockney, loggp, hclogp, rivera or overlap")]
pub struct UnknownMethod(pub String);

impl FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMethod(s.to_owned()))
    }
}

/// A run to predict: the partition and what moves each iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Rows owned by each device, in machine order.
    pub rows: Vec<u64>,
    /// Cells per row (the product of the non-partitioned extents).
    pub cells_per_row: u64,
    /// Halo depth in rows (the stencil's radius along the partitioned axis).
    pub halo_rows: u64,
    /// Bytes of one halo row.
    pub halo_bytes_per_row: f64,
    /// Loop iterations.
    pub iterations: u64,
    /// The link class between neighbours.
    pub link: String,
}

impl Run {
    /// Bytes of one cell: a halo row's bytes over its cells.
    pub fn cell_bytes(&self) -> f64 {
        if self.cells_per_row == 0 {
            0.0
        } else {
            self.halo_bytes_per_row / self.cells_per_row as f64
        }
    }

    /// Splits `global_rows` by `weights` as the skeleton's weighted
    /// partition does (`hitmap::weighted_blocks`: cumulative rounding, so
    /// the rows sum exactly and match the run's row for row).
    pub fn from_weights(
        global_rows: u64,
        cells_per_row: u64,
        halo_rows: u64,
        halo_bytes_per_row: f64,
        iterations: u64,
        weights: &[f64],
        link: &str,
    ) -> Result<Self, ModelError> {
        if weights.is_empty() {
            return Err(ModelError::TooFewPoints {
                what: "a partition",
                needed: 1,
                got: 0,
            });
        }
        for &w in weights {
            if check_finite("weight", w)? < 0.0 {
                return Err(ModelError::InvalidValue {
                    what: "weight",
                    value: w,
                });
            }
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(ModelError::InvalidValue {
                what: "sum of weights",
                value: total,
            });
        }
        let rows = hitmap::weighted_blocks(hitmap::Sig::range(0, global_rows as i64), weights)
            .map_err(|_| ModelError::InvalidValue {
                what: "sum of weights",
                value: total,
            })?
            .iter()
            .map(|b| b.card() as u64)
            .collect();
        Ok(Self {
            rows,
            cells_per_row,
            halo_rows,
            halo_bytes_per_row,
            iterations,
            link: link.to_owned(),
        })
    }
}

/// Predicted times of one device, per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceTime {
    /// Compute seconds.
    pub compute: f64,
    /// Exchange seconds.
    pub exchange: f64,
}

/// A prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The method used.
    pub method: Method,
    /// Per-device times, machine order.
    pub devices: Vec<DeviceTime>,
    /// Seconds per iteration: the slowest device under the method's rule.
    pub iteration: f64,
    /// `iteration · iterations`.
    pub loop_time: f64,
    /// Compute alone, perfectly balanced: total cells over the summed
    /// speeds. A lower bound for every method and partition.
    pub balanced_iteration: f64,
    /// `balanced_iteration · iterations`.
    pub balanced_loop: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round1(x: f64) -> f64 {
        (x * 10.0).round() / 10.0
    }

    /// modelling.md §2.3: FT with I = 20, I_s = 2, I_e = 13.412 s.
    #[test]
    fn hclogp_reproduces_ft_compute_table() {
        let comp = |sum_rp: f64| round1(hclogp::comp_time(20.0, 2.0, 13.412, sum_rp, 0.0));
        assert_eq!(comp(2.0), 67.1);
        assert_eq!(comp(4.0), 33.5);
        assert_eq!(comp(8.0), 16.8);
        // Heterogeneous: one AMD (1) and one Intel (1.78) core.
        assert_eq!(comp(1.0 + 1.78), 48.2);
    }

    /// modelling.md §2.3: FT's all-to-all, N_op = 2, M = 512·256·256·4/P
    /// bytes, Ethernet L = 6.9e-5 s, B = 93.4 MB/s, over I = 20 iterations.
    #[test]
    fn hclogp_reproduces_ft_communication_table() {
        let comm = |p: usize| {
            let m = 512.0 * 256.0 * 256.0 * 4.0 / p as f64;
            round1(20.0 * hclogp::comm_time(Op::AllToAll, 2.0, p, 6.9e-5, m, 93.4e6, 0.0))
        };
        assert_eq!(comm(2), 28.7);
        assert_eq!(comm(4), 43.1);
        assert_eq!(comm(8), 50.3);
        // The published total check: compute + communication + overhead.
        assert_eq!(round1(67.1 + comm(2) + 2.1), 97.9);
    }

    fn machine(spc: &[f64]) -> Machine {
        let devices = spc
            .iter()
            .enumerate()
            .map(|(i, &s)| Device::new(format!("d{i}"), s))
            .collect();
        let mut link = LinkClass::from_hockney(
            "net",
            Hockney {
                alpha: 2e-5,
                beta: 1e-9,
            },
        );
        link.loggp = LogGp {
            l: 1.5e-5,
            o_s: 2e-6,
            o_r: 3e-6,
            g: 4e-6,
            big_g: 1e-9,
        };
        link.switch_latency = 1e-6;
        Machine::new(devices, vec![link]).unwrap()
    }

    /// Devices in host memory whose cells outgrow the cache are held to
    /// the memory's rate; those whose cells fit, and devices with their own
    /// memory, keep their line. Hand-computed.
    #[test]
    fn host_memory_floors_kernels_beyond_the_cache() {
        // 1e-9 s a cell: 1e6 cells take 1 ms by the line. 8-byte cells move
        // 16 MB an iteration (read, write); two such devices hold 32 MB.
        let memory = HostMemory::new(vec![(1e6, 64e9), (32e6, 8e9)]).unwrap();
        let mut m = machine(&[1e-9, 1e-9]).with_memory(memory);
        let run = |cells_per_row: u64| Run {
            rows: vec![1000, 1000],
            cells_per_row,
            halo_rows: 1,
            halo_bytes_per_row: 8.0 * cells_per_row as f64,
            iterations: 1,
            link: "net".into(),
        };
        // Not in host memory: the line.
        let o = m.predict(&run(1000), Method::Overlap).unwrap();
        assert!((o.devices[0].compute - 1e-3).abs() < 1e-15);
        for d in &mut m.devices {
            d.host_memory = true;
        }
        // 32 MB resident at 8 GB/s, shared by two: 16 MB each at 4 GB/s,
        // 4 ms, over the line's 1 ms.
        for method in [Method::Overlap, Method::Hockney] {
            let p = m.predict(&run(1000), method).unwrap();
            assert!((p.devices[1].compute - 4e-3).abs() < 1e-15, "{p:?}");
        }
        // A fortieth of the cells: 0.4 MB each, 0.8 MB resident (inside
        // the first point: 64 GB/s); half of it each takes 12.5 us, under
        // the line's 25 us.
        let small = m.predict(&run(25), Method::Overlap).unwrap();
        assert!(
            (small.devices[0].compute - 2.5e-5).abs() < 1e-15,
            "{small:?}"
        );
        // Overlap stretches border and inner alike where memory binds.
        let o = m.predict(&run(1000), Method::Overlap).unwrap();
        assert!(
            (o.iteration - (4e-3 + m.iteration_overhead)).abs() < 1e-15,
            "{o:?}"
        );
        // Machine files without the fields read as before.
        let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
        let back: Machine = serde_json::from_str(json).unwrap();
        assert!(back.memory.is_none() && !back.devices[0].host_memory);
    }

    /// At the working set it was calibrated at, a machine predicts as its
    /// lines do; at four times the cells per device its host devices' cells
    /// cost the factor `cell_cost` gives, the same for both, and the
    /// balanced time with them. Without noise the interval is the point;
    /// with it, it brackets the median.
    #[test]
    fn the_working_set_moves_host_devices_and_noise_makes_an_interval() {
        let memory = HostMemory::new(vec![(2e6, 64e9), (32e6, 8e9)]).unwrap();
        let mut m = machine(&[1e-9, 2e-9]).with_memory(memory.clone());
        for d in &mut m.devices {
            d.host_memory = true;
        }
        let run = |rows: u64| Run {
            rows: vec![rows, rows],
            cells_per_row: 1000,
            halo_rows: 1,
            halo_bytes_per_row: 4000.0,
            iterations: 100,
            link: "net".into(),
        };
        let at = WorkingSet::of(&[5e5, 5e5], 1000.0, 4.0, 1.0);
        let mut calibrated = m.clone();
        calibrated.calibrated_at = Some(at);
        for method in Method::ALL {
            assert_eq!(
                calibrated.predict(&run(500), method).unwrap(),
                m.predict(&run(500), method).unwrap()
            );
        }
        let big = calibrated.predict(&run(2000), Method::Hockney).unwrap();
        let k = cell_cost_factor(
            &memory,
            &at,
            &WorkingSet::of(&[2e6, 2e6], 1000.0, 4.0, 1.0),
            1e-9,
        );
        assert!(k > 1.0);
        for (d, spc) in [(0, 1e-9), (1, 2e-9)] {
            let want = (k * spc * 2e6).max(m.kernel_times(&[2e6, 2e6], 4.0)[d]);
            assert!(
                (big.devices[d].compute / want - 1.0).abs() < 1e-12,
                "{big:?}"
            );
        }
        let quiet = calibrated.predict(&run(2000), Method::Overlap).unwrap();
        let i = calibrated
            .interval(&run(2000), Method::Overlap, ExchangeTime::Links)
            .unwrap();
        for x in [i.low, i.median, i.high] {
            assert!((x / quiet.loop_time - 1.0).abs() < 1e-12, "{i:?}");
        }
        for d in &mut calibrated.devices {
            d.cv = 0.1;
            d.spell = 0.05;
        }
        let i = calibrated
            .interval(&run(2000), Method::Overlap, ExchangeTime::Links)
            .unwrap();
        assert!(i.low < i.median && i.median < i.high, "{i:?}");
        assert!(i.low < quiet.loop_time && quiet.loop_time < i.high, "{i:?}");
    }

    /// `--weights-from`'s split: where the host's memory rate falls past
    /// the calibrated working set, the device in host memory costs more per
    /// cell and gets fewer rows than the plain split gives it; at the
    /// calibrated tiles the split is the plain one.
    #[test]
    fn seeded_weights_follow_the_working_set_of_their_tiles() {
        let memory = HostMemory::new(vec![(2e6, 64e9), (32e6, 8e9)]).unwrap();
        // Equal lines: the plain split halves the rows.
        let mut m = machine(&[1e-9, 1e-9]).with_memory(memory);
        m.devices[0].host_memory = true;
        m.calibrated_at = Some(WorkingSet::of(&[2.5e5], 1000.0, 4.0, 1.0));
        let plain = m.seeded_weights(4e6);
        assert_eq!(plain[0], plain[1]);
        let big = m.seeded_weights_for(4000, 1000, 1, 4.0);
        assert!(big[0] < 0.9 * big[1], "{big:?}");
        assert!(
            (big.iter().sum::<f64>() / 4e6 - 1.0).abs() < 1e-9,
            "{big:?}"
        );
        // The plain split's tiles are the calibrated ones: nothing moves.
        assert_eq!(
            m.seeded_weights_for(500, 1000, 1, 4.0),
            m.seeded_weights(5e5)
        );
        // Without a calibrated working set the plain split stands.
        m.calibrated_at = None;
        assert_eq!(m.seeded_weights_for(4000, 1000, 1, 4.0), plain);
    }

    #[test]
    fn relative_power_is_normalised_to_the_slowest() {
        let m = machine(&[1e-9, 4e-9, 2e-9]);
        let rp: Vec<f64> = m.devices.iter().map(|d| d.relative_power).collect();
        assert_eq!(rp, vec![4.0, 1.0, 2.0]);
    }

    #[test]
    fn hand_computed_two_device_prediction() {
        let m = machine(&[1e-9, 2e-9]);
        let run = Run {
            rows: vec![600, 400],
            cells_per_row: 1000,
            halo_rows: 1,
            halo_bytes_per_row: 8000.0,
            iterations: 10,
            link: "net".into(),
        };
        let h = m.predict(&run, Method::Hockney).unwrap();
        let ex = 2e-5 + 8000.0 * 1e-9;
        assert!((h.devices[0].compute - 6e-4).abs() < 1e-15);
        assert!((h.devices[1].compute - 8e-4).abs() < 1e-15);
        assert!((h.iteration - (8e-4 + ex)).abs() < 1e-15);
        assert!((h.loop_time - 10.0 * (8e-4 + ex)).abs() < 1e-14);
        // 1e6 cells over speeds 1e9 + 0.5e9 cells/s.
        assert!((h.balanced_iteration - 1e6 / 1.5e9).abs() < 1e-15);
        let o = m.predict(&run, Method::Overlap).unwrap();
        // Device 1: border 2 rows = 4e-6 s, inner 398 rows = 7.96e-4 s > exchange.
        assert!((o.iteration - 8e-4).abs() < 1e-15, "{o:?}");
        let hc = m.predict(&run, Method::HcLogP).unwrap();
        let hc_ex = 1.5e-5 + 8000.0 * 1e-9 + 5e-6;
        assert!(
            (hc.iteration - (1e6 / 1.5e9 + hc_ex)).abs() < 1e-15,
            "{hc:?}"
        );
    }

    /// A device without rows (dropped by ALB, or seeded out) exchanges
    /// nothing and is no one's neighbour: the devices either side of it
    /// exchange with each other, one halo each, as the skeleton's plan has.
    #[test]
    fn a_device_without_rows_leaves_the_chain() {
        let m = machine(&[1e-9, 5e-9, 2e-9]);
        let run = |rows: Vec<u64>| Run {
            rows,
            cells_per_row: 1000,
            halo_rows: 1,
            halo_bytes_per_row: 8000.0,
            iterations: 10,
            link: "net".into(),
        };
        let ex = 2e-5 + 8000.0 * 1e-9;
        let h = m.predict(&run(vec![600, 0, 400]), Method::Hockney).unwrap();
        assert!((h.devices[0].exchange - ex).abs() < 1e-15, "{h:?}");
        assert_eq!(h.devices[1].compute, 0.0);
        assert_eq!(h.devices[1].exchange, 0.0);
        assert!((h.devices[2].exchange - ex).abs() < 1e-15, "{h:?}");
        assert!((h.iteration - (8e-4 + ex)).abs() < 1e-15);
        // Alone with rows, a device waits for no halo: the run is its
        // kernel.
        let o = m.predict(&run(vec![0, 0, 1000]), Method::Overlap).unwrap();
        assert!(o.devices.iter().all(|d| d.exchange == 0.0), "{o:?}");
        assert!((o.iteration - 2e-3).abs() < 1e-15, "{o:?}");
    }

    /// A device with memory of its own pays a read out and a write in per
    /// neighbour outside its peer group, on every method's exchange; one of
    /// its group pays none. Hand-computed: three devices in a chain, the
    /// halo 8000 B, the host link 10 µs + 0.1 ns/B (10.8 µs a halo).
    #[test]
    fn halos_of_devices_with_their_own_memory_pass_through_the_host() {
        let mut host = machine(&[1e-9, 1e-10, 1e-10]);
        host.links.push(LinkClass::from_hockney(
            "pcie",
            Hockney {
                alpha: 1e-5,
                beta: 1e-10,
            },
        ));
        let run = Run {
            rows: vec![100, 400, 500],
            cells_per_row: 1000,
            halo_rows: 1,
            halo_bytes_per_row: 8000.0,
            iterations: 1,
            link: "net".into(),
        };
        let once = 1e-5 + 8000.0 * 1e-10;
        // Devices 1 and 2 with memory of their own, in no group (each its
        // own), then in one group.
        let mut alone = host.clone();
        for d in [1, 2] {
            alone.devices[d] = alone.devices[d].clone().with_host_link("pcie");
        }
        let mut grouped = alone.clone();
        grouped.devices[1].peer_group = Some(7);
        grouped.devices[2].peer_group = Some(7);
        for method in Method::ALL {
            let before = host.predict(&run, method).unwrap();
            let staged = alone.predict(&run, method).unwrap();
            let shared = grouped.predict(&run, method).unwrap();
            // Alone: device 1 stages both neighbours' halos (a read and a
            // write each), device 2 its one; device 0, in host memory,
            // waits for device 1's read. In one group: device 1 stages only
            // its host neighbour's, device 2 none, device 0 as before.
            for (p, wants) in [
                (&staged, [once, 4.0 * once, 2.0 * once]),
                (&shared, [once, 2.0 * once, 0.0]),
            ] {
                for (d, want) in wants.into_iter().enumerate() {
                    let got = p.devices[d].exchange - before.devices[d].exchange;
                    assert!(
                        (got - want).abs() < 1e-15,
                        "{method} device {d}: staged {got}, want {want}"
                    );
                }
            }
        }
        // A host link that names no link class is the typed error.
        alone.devices[0] = alone.devices[0].clone().with_host_link("nowhere");
        assert_eq!(
            alone.predict(&run, Method::Overlap),
            Err(ModelError::UnknownLink("nowhere".into()))
        );
    }

    /// Hand-computed: `a` = 0.2 ms and 0, `b` = 1 ns and 0.1 ns, 1e6 cells.
    /// Both busy: T = (1e6 + 2e5) / (1e9 + 1e10) s = 109.09 µs < 0.2 ms, so
    /// the slow device's fixed cost alone exceeds it and it sits out:
    /// T = 1e6 · 0.1 ns = 100 µs, all cells on the fast one.
    #[test]
    fn balance_equalises_fixed_plus_per_cell_time() {
        let (t, cells) = balance(&[(2e-4, 1e-9), (0.0, 1e-10)], 1e6);
        assert!((t - 1e-4).abs() < 1e-15, "{t}");
        assert_eq!(cells, vec![0.0, 1e6]);
        // Larger: T = (1e7 + 2e5) / 1.1e10 = 927.27 µs > 0.2 ms, both busy
        // and both finishing at T.
        let costs = [(2e-4, 1e-9), (0.0, 1e-10)];
        let (t, cells) = balance(&costs, 1e7);
        assert!((t - 1.02e7 / 1.1e10).abs() < 1e-15, "{t}");
        assert!((cells.iter().sum::<f64>() - 1e7).abs() < 1e-6);
        for (c, (a, b)) in cells.iter().zip(costs) {
            assert!((a + b * c - t).abs() < 1e-15);
        }
        // No fixed costs: HCLogP's split by power.
        let (t, cells) = balance(&[(0.0, 1e-9), (0.0, 3e-9)], 4e6);
        assert!((t - 4e6 / (1e9 + 1e9 / 3.0)).abs() < 1e-15);
        assert!((cells[0] / cells[1] - 3.0).abs() < 1e-12);
    }

    /// The measured CPU+GPU case in miniature: a CPU device with a fixed
    /// cost per iteration and a GPU 14x faster per cell. The seeded weights
    /// shift rows to the GPU, every method charges the fixed cost, and the
    /// old single-rate machine predicts the seeded iteration far too short.
    #[test]
    fn the_fixed_cost_enters_every_method_and_the_seeded_weights() {
        let mut m = machine(&[4.8e-11, 3.3e-12]);
        m.devices[0].fixed_seconds = 2e-4;
        let m = Machine::new(m.devices, m.links).unwrap();
        let (rows, cpr) = (8194u64, 8194u64);
        let total = (rows * cpr) as f64;
        let w = m.seeded_weights(total);
        let by_power: Vec<f64> = m.devices.iter().map(|d| d.relative_power).collect();
        assert!(w[0] / w[1] < by_power[0] / by_power[1] * 0.9, "{w:?}");
        let run = Run::from_weights(rows, cpr, 1, cpr as f64 * 4.0, 10, &w, "net").unwrap();
        let cells = |d: usize| run.rows[d] as f64 * cpr as f64;
        for method in [Method::Hockney, Method::LogGp, Method::Overlap] {
            let p = m.predict(&run, method).unwrap();
            let cpu = 2e-4 + 4.8e-11 * cells(0);
            assert!(
                (p.devices[0].compute - cpu).abs() < 1e-15,
                "{method}: {p:?}"
            );
            assert!((p.devices[1].compute - 3.3e-12 * cells(1)).abs() < 1e-15);
        }
        let (t, _) = balance(&m.costs(), total);
        let hc = m.predict(&run, Method::HcLogP).unwrap();
        assert_eq!(hc.devices[0].compute, t);
        assert_eq!(hc.balanced_iteration, t);
        let rv = m.predict(&run, Method::Rivera).unwrap();
        assert!((rv.devices[0].compute - (2e-4 + 4.8e-11 * total / 2.0)).abs() < 1e-15);
        // Seeded rows put both devices within one row's time of T.
        let ovl = m.predict(&run, Method::Overlap).unwrap();
        for d in &ovl.devices {
            assert!(
                (d.compute - t).abs() < 4.8e-11 * cpr as f64 + 1e-12,
                "{ovl:?}"
            );
        }
        // The single-rate machine seeds by power and predicts the CPU's
        // share as if it cost nothing fixed.
        let old = machine(&[4.8e-11, 3.3e-12]);
        let w_old = old.seeded_weights(total);
        let run_old = Run::from_weights(rows, cpr, 1, cpr as f64 * 4.0, 10, &w_old, "net").unwrap();
        let under = old.predict(&run_old, Method::Overlap).unwrap();
        let real = m.predict(&run_old, Method::Overlap).unwrap();
        assert!(real.iteration > under.iteration * 1.5, "{under:?} {real:?}");
        // A machine file from before the field loads with no fixed cost.
        let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
        let back: Machine = serde_json::from_str(json).unwrap();
        assert_eq!(back.devices[0].fixed_seconds, 0.0);
        let mut neg = Device::new("n", 1e-9);
        neg.fixed_seconds = -1e-6;
        assert!(Machine::new(vec![neg], vec![]).is_err());
    }

    /// A tile curve scales the line by the factor at the tile's cells,
    /// log-linear between its points and flat beyond them; the balanced
    /// split finds the cells where the curved times meet; the machine
    /// refuses a bad curve and reads one without a curve as the line.
    #[test]
    fn a_tile_curve_scales_the_line_and_the_balanced_split() {
        let mut d = Device::new("d", 1e-9).with_fixed(1e-5);
        d.tile_curve = vec![(1e5, 0.75), (1e6, 1.0)];
        let line = |c: f64| 1e-5 + 1e-9 * c;
        assert_eq!(d.time(1e5), line(1e5) * 0.75);
        assert_eq!(
            d.time(1e4),
            line(1e4) * 0.75,
            "below the curve: its first factor"
        );
        assert_eq!(d.time(4e6), line(4e6), "beyond: its last");
        // Halfway in log between 1e5 and 1e6 cells: halfway in log factor.
        let mid = 1e5 * 10f64.sqrt();
        assert!((d.time(mid) - line(mid) * 0.75f64.sqrt()).abs() < 1e-15);
        assert_eq!(d.time(0.0), 0.0);

        // One point is a constant factor: a device twice as fast by its
        // curve takes two thirds of the cells, as a line at half the rate
        // would, and the iteration is what either device then takes.
        let mut fast = Device::new("fast", 1e-9);
        fast.tile_curve = vec![(1e3, 0.5)];
        let m = Machine::new(vec![fast.clone(), Device::new("slow", 1e-9)], vec![]).unwrap();
        let (t, cells) = m.balanced(3e6);
        assert!(
            (cells[0] - 2e6).abs() < 1e-3 && (cells[1] - 1e6).abs() < 1e-3,
            "{cells:?}"
        );
        assert!((t - 1e-3).abs() < 1e-12, "{t}");
        assert_eq!(m.seeded_weights(3e6), cells);
        let times_at = |m: &Machine, cells: &[f64]| -> Vec<f64> {
            m.devices
                .iter()
                .zip(cells)
                .map(|(d, &c)| d.time(c))
                .collect()
        };
        // A curve that varies: the split settles where both times meet.
        fast.tile_curve = vec![(1e5, 0.5), (1e7, 1.0)];
        let m = Machine::new(vec![fast, Device::new("slow", 1e-9)], vec![]).unwrap();
        let (t, cells) = m.balanced(3e6);
        let times = times_at(&m, &cells);
        assert!((times[0] - times[1]).abs() < 1e-9 * t, "{times:?}");
        assert!(
            (times[0] - t).abs() < 1e-9 * t && cells[0] > 1.5e6,
            "{cells:?}"
        );

        // The factor enters the compute of every method that times each
        // device's own rows (a prediction of the two devices' seeded
        // rows), and Rivera's equal shares.
        let run = Run::from_weights(3000, 1000, 1, 4000.0, 1, &cells, "l").unwrap();
        let with_link = Machine::new(
            m.devices.clone(),
            vec![LinkClass::from_hockney(
                "l",
                Hockney {
                    alpha: 1e-6,
                    beta: 1e-10,
                },
            )],
        )
        .unwrap();
        let c0 = run.rows[0] as f64 * 1000.0;
        for method in [Method::Hockney, Method::LogGp, Method::Overlap] {
            let p = with_link.predict(&run, method).unwrap();
            let want = m.devices[0].time(c0);
            assert!(
                (p.devices[0].compute - want).abs() < 1e-12 * want,
                "{method}: {p:?}"
            );
        }
        let rivera = with_link.predict(&run, Method::Rivera).unwrap();
        assert_eq!(rivera.devices[0].compute, m.devices[0].time(3e6 / 2.0));
        assert!(m.devices[0].tile_factor(c0) < 0.9, "a factor that shows");
        // HCLogP's compute is the balanced split's time, curves included,
        // not the lines' water-filling.
        let hclogp = with_link.predict(&run, Method::HcLogP).unwrap();
        assert_eq!(hclogp.devices[0].compute, t);
        assert!(balance(&m.costs(), 3e6).0 > 1.1 * t, "{t}");

        // A steep curve (0.25 to 1 over a doubling of cells, as a tile
        // leaving the L2 showed): each round of a fixed-point split
        // overshot the last, and it swapped between two splits for ever.
        let steep = |spc: f64| {
            let mut d = Device::new("s", spc);
            d.tile_curve = vec![(1.04e5, 0.25), (2.1e5, 1.0), (5.2e5, 1.0)];
            d
        };
        let m = Machine::new(vec![steep(1e-9), steep(2e-9)], vec![]).unwrap();
        let (t, cells) = m.balanced(262144.0);
        let times = times_at(&m, &cells);
        assert!(
            (cells.iter().sum::<f64>() - 262144.0).abs() < 1e-6,
            "{cells:?}"
        );
        assert!(
            (times[0] - times[1]).abs() < 1e-9 * t,
            "{times:?} {cells:?}"
        );
        assert!((t - 7.17e-5).abs() < 0.01e-5, "{t}");

        for (curve, want) in [
            (
                vec![(1e5, 0.0)],
                "device 0: tile curve factor must be a finite number > 0 and not falling, got 0",
            ),
            (
                vec![(1e5, 1.0), (1e4, 1.0)],
                "device 0: tile curve cells must be a finite number > 0 and increasing, got 10000",
            ),
            (
                vec![(1e5, 1.0), (2e5, 0.4)],
                "device 0: tile curve factor must be a finite number > 0 and not falling, got 0.4",
            ),
            (
                vec![(1e5, 1.0), (1e5, 1.2)],
                "device 0: tile curve cells must be a finite number > 0 and increasing, got 100000",
            ),
            (
                vec![(f64::NAN, 1.0)],
                "device 0: tile curve cells must be a finite number > 0 and increasing, got NaN",
            ),
            (
                vec![(1e5, f64::INFINITY)],
                "device 0: tile curve factor must be a finite number > 0 and not falling, got inf",
            ),
        ] {
            let mut bad = Device::new("b", 1e-9);
            bad.tile_curve = curve;
            assert_eq!(
                Machine::new(vec![bad], vec![]).unwrap_err().to_string(),
                want
            );
        }
        let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
        let back: Machine = serde_json::from_str(json).unwrap();
        assert!(back.devices[0].tile_curve.is_empty());
        let round: Machine = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(round, m);
    }

    #[test]
    fn a_learned_phase_time_replaces_every_methods_exchange() {
        let m = machine(&[1e-9, 2e-9]);
        let run = Run::from_weights(1000, 1000, 1, 8000.0, 10, &[3.0, 2.0], "net").unwrap();
        let t = 3e-4;
        for method in Method::ALL {
            let linked = m.predict(&run, method).unwrap();
            let learned = m
                .predict_with(&run, method, ExchangeTime::Phase(t))
                .unwrap();
            for (a, b) in linked.devices.iter().zip(&learned.devices) {
                assert_eq!(a.compute, b.compute, "{method}");
                assert_eq!(b.exchange, t, "{method}");
            }
            if method != Method::Overlap {
                let slowest = learned
                    .devices
                    .iter()
                    .map(|d| d.compute)
                    .fold(0.0, f64::max);
                assert!(
                    (learned.iteration - (slowest + t)).abs() < 1e-15,
                    "{method}"
                );
            }
        }
        // Overlap: 1 border row (the strip facing the other device; the
        // domain's edge sends nothing), then the phase against 399 inner
        // rows.
        let o = m
            .predict_with(&run, Method::Overlap, ExchangeTime::Phase(1.0))
            .unwrap();
        assert!((o.iteration - (1000.0 * 2e-9 + 1.0)).abs() < 1e-12, "{o:?}");
        // One device exchanges nothing, whatever the phase model says.
        let alone = machine(&[1e-9]);
        let one = Run::from_weights(10, 10, 1, 80.0, 1, &[1.0], "net").unwrap();
        let p = alone
            .predict_with(&one, Method::Hockney, ExchangeTime::Phase(t))
            .unwrap();
        assert_eq!(p.devices[0].exchange, 0.0);
        assert!(matches!(
            m.predict_with(&run, Method::Hockney, ExchangeTime::Phase(f64::NAN)),
            Err(ModelError::InvalidValue { .. })
        ));
    }

    #[test]
    fn errors_are_typed() {
        let m = machine(&[1e-9, 2e-9]);
        let mut run = Run::from_weights(100, 10, 1, 80.0, 1, &[1.0, 1.0], "net").unwrap();
        run.link = "nowhere".into();
        assert_eq!(
            m.predict(&run, Method::Hockney),
            Err(ModelError::UnknownLink("nowhere".into()))
        );
        let run = Run::from_weights(100, 10, 1, 80.0, 1, &[1.0], "net").unwrap();
        assert_eq!(
            m.predict(&run, Method::Hockney),
            Err(ModelError::DeviceCount { run: 1, machine: 2 })
        );
        assert!(Machine::new(vec![Device::new("z", 0.0)], vec![]).is_err());
        // Links' parameters are checked as devices' are.
        let mut bad = m.links[0].clone();
        bad.hockney.alpha = -1.0;
        assert_eq!(
            Machine::new(m.devices.clone(), vec![bad.clone()]).unwrap_err(),
            ModelError::InvalidValue {
                what: "link alpha",
                value: -1.0
            }
        );
        bad.hockney.alpha = 1e-6;
        bad.loggp.big_g = f64::NAN;
        assert!(Machine::new(m.devices.clone(), vec![bad]).is_err());
    }

    #[test]
    fn method_names_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>(), Ok(m));
        }
        assert!("logp".parse::<Method>().is_err());
    }

    #[test]
    fn from_weights_sums_exactly_and_follows_weights() {
        let r = Run::from_weights(1001, 1, 1, 8.0, 1, &[3.0, 1.0, 1.0], "net").unwrap();
        assert_eq!(r.rows.iter().sum::<u64>(), 1001);
        assert_eq!(r.rows, vec![601, 200, 200]);
        // Cumulative rounding, as the run: bounds round(10/3) = 3 and
        // round(20/3) = 7 (largest remainder would give 4, 3, 3).
        let r = Run::from_weights(10, 1, 1, 8.0, 1, &[1.0; 3], "net").unwrap();
        assert_eq!(r.rows, vec![3, 4, 3]);
        assert!(matches!(
            Run::from_weights(10, 1, 1, 8.0, 1, &[2.0, -1.0], "net"),
            Err(ModelError::InvalidValue { what: "weight", .. })
        ));
    }

    #[test]
    fn machine_round_trips_through_serde() {
        let m = machine(&[1e-9, 3e-9]);
        let json = serde_json::to_string(&m).unwrap();
        let back: Machine = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        let p = m
            .predict(
                &Run::from_weights(10, 1, 1, 8.0, 1, &[1.0, 1.0], "net").unwrap(),
                Method::LogGp,
            )
            .unwrap();
        assert!(serde_json::to_string(&p)
            .unwrap()
            .contains("\"method\":\"loggp\""));
    }

    proptest! {
        #[test]
        fn overlap_never_exceeds_additive_and_balanced_is_a_lower_bound(
            spc in prop::collection::vec(1e-10f64..1e-8, 1..8),
            fixed in prop::collection::vec(0.0f64..1e-4, 8),
            weights in prop::collection::vec(0.01f64..10.0, 8),
            rows in 8u64..5000,
            cells in 1u64..2000,
            halo in 1u64..4,
        ) {
            let mut m = machine(&spc);
            for (d, &a) in m.devices.iter_mut().zip(&fixed) {
                d.fixed_seconds = a;
            }
            let w = &weights[..spc.len()];
            let run = Run::from_weights(rows, cells, halo, cells as f64 * 8.0, 7, w, "net").unwrap();
            let add = m.predict(&run, Method::Hockney).unwrap();
            let ovl = m.predict(&run, Method::Overlap).unwrap();
            prop_assert!(ovl.iteration <= add.iteration * (1.0 + 1e-12));
            for method in Method::ALL {
                let p = m.predict(&run, method).unwrap();
                prop_assert!(p.balanced_loop <= p.loop_time * (1.0 + 1e-12), "{method}: {p:?}");
            }
        }
    }
}

//! What calibrate writes: the machine JSON (`--out`), and its summary of
//! fitted figures and the measurements behind them, as `--json` and as text.

use models::calibrate::Pass;
use models::cell_cost::WorkingSet;
use models::link::{Hockney, LogGp};
use models::predict::Machine;
use serde::Serialize;

pub(super) fn to_json(m: &Machine) -> String {
    serde_json::to_string_pretty(m).expect("machines serialise")
}

/// What `calibrate` prints, as `--json` writes it (docs/json.md): the
/// machine's fitted figures and the measurements behind them.
#[derive(Debug, Serialize)]
pub(super) struct Summary<'a> {
    devices: Vec<DeviceSummary<'a>>,
    links: Vec<LinkSummary<'a>>,
    /// The skeleton's own seconds per iteration.
    iteration_overhead_seconds: f64,
    /// The run's halo message sizes in bytes.
    halo_bytes: &'a [u64],
    /// Seconds of a rebalance: alpha + beta per byte moved.
    rebalance: Option<Hockney>,
    /// The host's copy rate by working set.
    host_memory: Vec<MemoryRate>,
    /// The working set the lines were fitted at, when the memory curve is
    /// measured: seconds per cell follow a run's working set from it.
    calibrated_at: Option<WorkingSet>,
}

/// One device's fitted line and the points it went through.
#[derive(Debug, Serialize)]
struct DeviceSummary<'a> {
    name: &'a str,
    seconds_per_cell: f64,
    fixed_seconds: f64,
    cv: f64,
    /// Slow spells: the log spread of the device's speed between runs.
    spell: f64,
    relative_power: f64,
    samples: usize,
    /// Each pass's median kernel seconds and cells.
    passes: Vec<Point>,
    /// The tile sweep's, likewise.
    tile_sweep: Vec<Point>,
    /// Kernel time over the line at each tile's cells.
    tile_curve: Vec<CurvePoint>,
    /// The link class to the host's memory, and its peer group.
    host_link: Option<&'a str>,
    peer_group: Option<usize>,
}

/// A pass's median kernel time over its cells.
#[derive(Debug, Serialize)]
struct Point {
    cells: f64,
    median_seconds: f64,
}

/// A tile curve's factor at a tile size.
#[derive(Debug, Serialize)]
struct CurvePoint {
    cells: f64,
    factor: f64,
}

/// A link class's fitted models.
#[derive(Debug, Serialize)]
struct LinkSummary<'a> {
    name: &'a str,
    hockney: Hockney,
    loggp: LogGp,
    /// Where the piecewise model's segments start, in bytes.
    breakpoints: Vec<f64>,
}

/// The host's copy rate at one working set.
#[derive(Debug, Serialize)]
struct MemoryRate {
    bytes: f64,
    bytes_per_second: f64,
}

impl<'a> Summary<'a> {
    pub(super) fn of(
        m: &'a Machine,
        halos: &'a [u64],
        passes: &[Vec<Pass>],
        swept: &[Vec<Pass>],
    ) -> Summary<'a> {
        let points = |ps: Option<&Vec<Pass>>| -> Vec<Point> {
            ps.into_iter()
                .flatten()
                .map(|p| Point {
                    cells: p.cells,
                    median_seconds: heuristics::median(&p.seconds),
                })
                .collect()
        };
        Summary {
            devices: m
                .devices
                .iter()
                .enumerate()
                .map(|(k, d)| DeviceSummary {
                    name: &d.name,
                    seconds_per_cell: d.seconds_per_cell,
                    fixed_seconds: d.fixed_seconds,
                    cv: d.cv,
                    spell: d.spell,
                    relative_power: d.relative_power,
                    samples: d.samples,
                    passes: points(passes.get(k)),
                    tile_sweep: points(swept.get(k)),
                    tile_curve: d
                        .tile_curve
                        .iter()
                        .map(|&(cells, factor)| CurvePoint { cells, factor })
                        .collect(),
                    host_link: d.host_link.as_deref(),
                    peer_group: d.peer_group,
                })
                .collect(),
            links: m
                .links
                .iter()
                .map(|l| LinkSummary {
                    name: &l.name,
                    hockney: l.hockney,
                    loggp: l.loggp,
                    breakpoints: l
                        .piecewise
                        .as_ref()
                        .map(|p| p.breakpoints())
                        .unwrap_or_default(),
                })
                .collect(),
            iteration_overhead_seconds: m.iteration_overhead,
            halo_bytes: halos,
            rebalance: m.rebalance,
            host_memory: m
                .memory
                .iter()
                .flat_map(|mem| &mem.rates)
                .map(|&(bytes, bytes_per_second)| MemoryRate {
                    bytes,
                    bytes_per_second,
                })
                .collect(),
            calibrated_at: m.calibrated_at,
        }
    }

    /// The text for people.
    pub(super) fn text(&self) -> String {
        let mut s = String::from("device  seconds/cell  fixed_s/iteration  cv  R_p  samples\n");
        for d in &self.devices {
            s += &format!(
                "  {}  {:.4e}  {:.4e}  {:.3}  {:.3}  {}\n",
                d.name, d.seconds_per_cell, d.fixed_seconds, d.cv, d.relative_power, d.samples
            );
        }
        // The points the line went through, so a fixed cost that was not
        // believed (or one that was) can be checked against the tiles; then
        // the sweep's, and the curve they made.
        let medians = |ps: &[Point]| {
            ps.iter()
                .map(|p| format!("{:.4e} s over {:.4e} cells", p.median_seconds, p.cells))
                .collect::<Vec<_>>()
                .join("; ")
        };
        for d in &self.devices {
            s += &format!(
                "  {} passes (median kernel): {}\n",
                d.name,
                medians(&d.passes)
            );
        }
        for d in self.devices.iter().filter(|d| !d.tile_sweep.is_empty()) {
            s += &format!(
                "  {} tile sweep (median kernel): {}\n",
                d.name,
                medians(&d.tile_sweep)
            );
            if d.tile_curve.is_empty() {
                s += &format!("  {} tile curve: none beyond the line's noise\n", d.name);
            } else {
                let points: Vec<String> = d
                    .tile_curve
                    .iter()
                    .map(|p| format!("{:.4e} cells x{:.3}", p.cells, p.factor))
                    .collect();
                s += &format!(
                    "  {} tile curve (time over the line): {}\n",
                    d.name,
                    points.join("; ")
                );
            }
        }
        for d in &self.devices {
            if let Some(link) = d.host_link {
                let group = d.peer_group.map_or(String::from("none"), |g| g.to_string());
                s += &format!(
                    "  {} reaches host memory over link {link} (peer group {group})\n",
                    d.name
                );
            }
        }
        for l in &self.links {
            s += &format!(
                "link {}: hockney alpha {:.3e} s beta {:.3e} s/B; loggp L {:.3e} o_s {:.3e} o_r {:.3e} g {:.3e} G {:.3e}; breakpoints {:?} B\n",
                l.name, l.hockney.alpha, l.hockney.beta, l.loggp.l, l.loggp.o_s, l.loggp.o_r, l.loggp.g, l.loggp.big_g, l.breakpoints
            );
        }
        s += &format!(
            "skeleton overhead {:.3e} s/iteration; halo message sizes {:?} B\n",
            self.iteration_overhead_seconds, self.halo_bytes
        );
        if let Some(h) = self.rebalance {
            s += &format!("rebalance {:.3e} s + {:.3e} s/B moved\n", h.alpha, h.beta);
        }
        if !self.host_memory.is_empty() {
            let points: Vec<String> = self
                .host_memory
                .iter()
                .map(|r| {
                    format!(
                        "{} MiB {:.1}",
                        r.bytes / (1 << 20) as f64,
                        r.bytes_per_second / 1e9
                    )
                })
                .collect();
            s += &format!(
                "host memory (copy GB/s by working set, all cores): {}\n",
                points.join(", ")
            );
        }
        if let Some(w) = &self.calibrated_at {
            s += &format!(
                "calibrated working set {:.1} MiB over {} stream(s), rows of {} B: seconds per cell follow a run's working set from it\n",
                w.bytes / (1 << 20) as f64,
                w.streams,
                w.row_bytes
            );
        }
        let spells: Vec<String> = self
            .devices
            .iter()
            .map(|d| format!("{} {:.3}", d.name, d.spell))
            .collect();
        s += &format!(
            "slow spells (log spread between runs): {}\n",
            spells.join(", ")
        );
        s
    }
}

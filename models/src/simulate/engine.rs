//! The simulation loop: devices' clocks, halo arrivals, the ALB cycle and
//! rebalances, one iteration at a time.

use heuristics::gather::Gather;
use heuristics::sampling::{default_records, is_recorded, record_every, RECORDED_ITERATIONS};
use heuristics::{
    relayout, CheckLog, Cycle, Heuristic, HeuristicSpec, Ordered, Rebalanced, Roster, Snapshot,
    CHECKS_KEPT,
};
use hitmap::{Layout, RedistributionPlan};
use std::collections::VecDeque;
use std::ops::Range;

use super::noise::Noise;
use super::*;

/// One message of `bytes` from host `a` to host `b`, given the bytes
/// leaving `a` for other hosts this iteration.
fn link_time(l: &Links, a: usize, b: usize, bytes: f64, host_out: f64) -> f64 {
    if a == b {
        l.intra.time(bytes)
    } else {
        l.inter.alpha + l.inter.beta * host_out.max(bytes)
    }
}

/// Runs the scenario.
pub(super) fn run(s: &Scenario) -> Result<Simulated, SimError> {
    let mut sim = Sim::new(s)?;
    let depth = s.halo_depth.max(1) as u64;
    let mut it = 0;
    while it < s.iters {
        // A period of the halo depth's iterations, cut by the run's end.
        let period = it..(it + depth).min(s.iters);
        let len = (period.end - period.start) as f64;
        sim.fail_devices(&period)?;
        sim.check_trace(&period)?;
        sim.kernel_times(&period);
        let (step, slowest) = sim.iterate(&period);
        // Each iteration's share, as the skeleton shares a period's time.
        let row = sim.compute[..sim.live.len()]
            .iter()
            .map(|c| c / len)
            .collect();
        sim.balance(&period)?;
        // Kept for as long as the skeleton's gather takes to deliver it.
        sim.recent.push_back((period.clone(), row));
        if sim.recent.len() > sim.lag() {
            sim.recent.pop_front();
        }
        sim.record(&period, step, slowest);
        it = period.end;
    }
    Ok(sim.finish())
}

/// A simulation in progress.
struct Sim<'a> {
    s: &'a Scenario,
    /// Live devices, in device order: layouts and windows are over these.
    live: Vec<usize>,
    geo: Geometry,
    heuristic: Option<Box<dyn Heuristic>>,
    cycle: Cycle,
    /// Which devices hold rows, by live index.
    roster: Roster,
    noise: Noise,
    /// Each device's virtual clock.
    clock: Vec<f64>,
    /// Kernel times of the last periods (each its iterations and their
    /// mean), oldest first: ALB reads them as late as the skeleton's
    /// gather delivers them (`heuristics::gather`: one period up to
    /// `Scenario::direct_times_up_to` devices, 32 by default).
    recent: VecDeque<(Range<u64>, Vec<f64>)>,
    /// The checks, bounded as the skeleton bounds its own.
    checks: CheckLog<Check>,
    out: Simulated,
    /// Sum of wall minus slowest kernel over iterations.
    overhead: f64,
    /// Sum of wall times over iterations.
    wall: f64,
    /// The stencil's reach below and above.
    low: Vec<usize>,
    high: Vec<usize>,
    // Scratch by live index: kernel seconds, when the halos left, when the
    // last one arrived, when the iteration began; bytes out per host.
    compute: Vec<f64>,
    /// The part of each kernel time spent on the border strips.
    border_share: Vec<f64>,
    /// Cells each device computes in the period.
    cells: Vec<f64>,
    sent_at: Vec<f64>,
    arrive: Vec<f64>,
    began: Vec<f64>,
    host_out: Vec<f64>,
}

impl<'a> Sim<'a> {
    fn new(s: &'a Scenario) -> Result<Sim<'a>, SimError> {
        let n = s.devices.len();
        let hosts = s.devices.iter().map(|d| d.host).max().unwrap_or(0) + 1;
        let weights: Vec<f64> = s.devices.iter().map(|d| d.weight).collect();
        let layout = Layout::new(&s.domain, s.partition, n, Some(&weights))?;
        let (low, high) = (s.footprint.low().to_vec(), s.footprint.high().to_vec());
        layout.check_width(&low, &high)?;
        let mut heuristic: Option<Box<dyn Heuristic>> = s
            .heuristic
            .as_ref()
            .filter(|h| h.name() != "none")
            .map(HeuristicSpec::build);
        if let Some(h) = heuristic.as_mut() {
            h.init(s.iters);
        }
        let seed = match s.kernels {
            Kernels::Modelled { seed } => seed,
            Kernels::Trace { .. } => 0,
        };
        Ok(Sim {
            s,
            live: (0..n).collect(),
            geo: Geometry::deep(layout, &s.footprint, s.cell_bytes, s.halo_depth)?,
            heuristic,
            cycle: Cycle::new(n, s.window, 0, s.iters),
            roster: Roster::new(n, s.drop_below),
            noise: Noise::new(&s.devices, seed, &s.noise),
            clock: vec![0.0; n],
            recent: VecDeque::new(),
            checks: CheckLog::new(CHECKS_KEPT),
            out: Simulated {
                steps: Vec::new(),
                // The skeleton's bound, and the caller's coarser sample.
                recorded_every: record_every(s.iters, default_records(n)).max(s.record_every),
                iteration_seconds: Vec::with_capacity(s.iters.min(RECORDED_ITERATIONS) as usize),
                iteration_seconds_every: record_every(s.iters, RECORDED_ITERATIONS),
                mean_iteration_seconds: 0.0,
                overhead_per_iteration: 0.0,
                loop_seconds: 0.0,
                moves: Vec::new(),
                checks: Vec::new(),
                checks_dropped: 0,
                failures: Vec::new(),
                halo_messages: 0,
                exchanges: 0,
            },
            overhead: 0.0,
            wall: 0.0,
            low,
            high,
            compute: vec![0.0; n],
            border_share: vec![0.0; n],
            cells: vec![0.0; n],
            sent_at: vec![0.0; n],
            arrive: vec![0.0; n],
            began: vec![0.0; n],
            host_out: vec![0.0; hosts],
        })
    }

    /// The latest clock of the live devices.
    fn now(&self) -> f64 {
        self.live.iter().map(|&d| self.clock[d]).fold(0.0, f64::max)
    }

    /// Devices failing in `period` (their launch in it fails) are dropped; the
    /// others share their rows and start again together.
    fn fail_devices(&mut self, period: &Range<u64>) -> Result<(), SimError> {
        let s = self.s;
        let it = period.start;
        let failing: Vec<usize> = self
            .live
            .iter()
            .copied()
            .filter(|&d| s.devices[d].fail_at.is_some_and(|f| period.contains(&f)))
            .collect();
        if failing.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let share: Vec<f64> = self
            .live
            .iter()
            .zip(&self.geo.rows)
            .filter(|(d, _)| !failing.contains(d))
            .map(|(_, &r)| r as f64)
            .collect();
        // Dropped devices (no rows) stay out, unless no other is left.
        let share = if share.iter().all(|&r| r == 0.0) {
            vec![1.0; share.len()]
        } else {
            share
        };
        let kept: Vec<bool> = self.live.iter().map(|d| !failing.contains(d)).collect();
        self.live.retain(|d| !failing.contains(d));
        if self.live.is_empty() {
            return Err(SimError::NoDevices);
        }
        for &d in &failing {
            self.out.failures.push(Failure {
                device: d,
                iter: it,
                at_seconds: now,
                devices_left: self.live.len(),
            });
        }
        let layout = Layout::new(&s.domain, s.partition, self.live.len(), Some(&share))?;
        layout.check_width(&self.low, &self.high)?;
        self.geo = Geometry::deep(layout, &s.footprint, s.cell_bytes, s.halo_depth)?;
        self.cycle = Cycle::new(self.live.len(), s.window, it, s.iters);
        self.roster.retain(&kept);
        self.recent.clear();
        for &d in &self.live {
            self.clock[d] = now;
        }
        Ok(())
    }

    /// In trace mode, the rows must be the real run's.
    fn check_trace(&self, period: &Range<u64>) -> Result<(), SimError> {
        let Kernels::Trace { rows, .. } = &self.s.kernels else {
            return Ok(());
        };
        for it in period.clone() {
            for (i, &r) in self.geo.rows.iter().enumerate() {
                let real = rows[it as usize][self.live[i]];
                if real != r {
                    return Err(SimError::TraceDiverged {
                        iter: it,
                        device: self.live[i],
                        real,
                        simulated: r,
                    });
                }
            }
        }
        Ok(())
    }

    /// Each device's kernel seconds over the period and the border
    /// strips' share of them.
    fn kernel_times(&mut self, period: &Range<u64>) {
        let s = self.s;
        let len = (period.end - period.start) as f64;
        let (all_cells, all_border) = self.geo.period_cells(len as usize);
        for (i, &d) in self.live.iter().enumerate() {
            let (cells, border) = (all_cells[i], all_border[i]);
            self.cells[i] = cells;
            let by_cells = if cells > 0.0 { border / cells } else { 0.0 };
            (self.compute[i], self.border_share[i]) = match &s.kernels {
                Kernels::Trace { compute, .. } => (
                    period.clone().map(|it| compute[it as usize][d]).sum(),
                    by_cells,
                ),
                Kernels::Modelled { .. } => {
                    let dev = &s.devices[d];
                    let mut seconds = 0.0;
                    for it in period.clone() {
                        // Drawn for an empty block too: a seed's stream of
                        // draws does not depend on the partition.
                        let eps = self.noise.draw(d, it);
                        if cells > 0.0 {
                            seconds += dev.line_time(cells / len) * dev.factor(it) * eps;
                        }
                    }
                    if cells > 0.0 {
                        // The fixed part is paid at every step.
                        let fixed = dev.fixed_seconds * len;
                        let line = fixed + dev.seconds_per_cell * cells;
                        let share = (fixed + dev.seconds_per_cell * border) / line;
                        (seconds, share)
                    } else {
                        (0.0, 0.0)
                    }
                }
            };
        }
    }

    /// Borders, halos out, inner rows, halos in, overhead: every live
    /// clock moves on by one iteration. Returns the devices' records (when
    /// this iteration is recorded) and the slowest kernel time.
    fn iterate(&mut self, period: &Range<u64>) -> (Option<Vec<DeviceStep>>, f64) {
        let s = self.s;
        let (live, geo) = (&self.live, &self.geo);
        let m = live.len();
        // Each host's interface carries the bytes its devices send to
        // other hosts.
        self.host_out.iter_mut().for_each(|x| *x = 0.0);
        for (i, &d) in live.iter().enumerate() {
            let border = self.compute[i] * self.border_share[i];
            self.sent_at[i] = self.clock[d] + border;
            let h = s.devices[d].host;
            for &(q, bytes) in &geo.sends[i] {
                if s.devices[live[q]].host != h {
                    self.host_out[h] += bytes;
                }
            }
        }
        self.arrive[..m].iter_mut().for_each(|x| *x = 0.0);
        for (i, &d) in live.iter().enumerate() {
            let (dev, h) = (&s.devices[d], s.devices[d].host);
            // A device's messages leave one after another (bytes), while
            // their latencies overlap. A device with memory of its own reads
            // each halo out first, one after another; the receiver writes it
            // in after it arrives.
            let mut queued = 0.0;
            let mut read_out = 0.0;
            for &(q, bytes) in &geo.sends[i] {
                let to = &s.devices[live[q]];
                let staged = !dev.shares_memory_with(to);
                if staged {
                    read_out += dev.host_link.map_or(0.0, |l| l.time(bytes));
                }
                let write_in = if staged {
                    to.host_link.map_or(0.0, |l| l.time(bytes))
                } else {
                    0.0
                };
                let hq = to.host;
                let t = link_time(&s.links, h, hq, bytes, self.host_out[h]);
                let latency = if h == hq {
                    s.links.intra.alpha
                } else {
                    s.links.inter.alpha
                };
                queued += t - latency;
                self.arrive[q] =
                    self.arrive[q].max(self.sent_at[i] + read_out + queued + latency + write_in);
                self.out.halo_messages += 1;
            }
        }
        // With ALB every device posts its kernel time: to every other, or
        // a round of the tree's gather (`heuristics::gather`).
        let alb_posts = if self.heuristic.is_some() {
            s.links.post * Gather::of(m, s.direct_times_up_to).posts(m, self.recent.len()) as f64
        } else {
            0.0
        };
        self.out.exchanges += 1;
        let len = (period.end - period.start) as f64;
        let record = period
            .clone()
            .any(|it| is_recorded(it, self.out.recorded_every));
        let mut step = record.then(|| vec![DeviceStep::default(); s.devices.len()]);
        let mut slowest: f64 = 0.0;
        for (i, &d) in live.iter().enumerate() {
            let start = self.clock[d];
            self.began[i] = start;
            let posts = s.links.post * geo.sends[i].len() as f64;
            let inner_done = start + self.compute[i] + posts + alb_posts;
            let waited = inner_done.max(self.arrive[i]);
            // The skeleton's own time comes after the halos are in: it is
            // neither kernel nor message time in the report.
            self.clock[d] = waited + s.iteration_overhead;
            slowest = slowest.max(self.compute[i]);
            if let Some(st) = step.as_mut() {
                st[d] = DeviceStep {
                    compute: self.compute[i] / len,
                    comm: (waited - start - self.compute[i]) / len,
                    rows: geo.rows[i],
                    cells: self.cells[i] / len,
                };
            }
        }
        (step, slowest)
    }

    /// Iterations from a kernel time to the ALB decision that first sees
    /// it, as the skeleton gathers times over this many devices.
    fn lag(&self) -> usize {
        let n = self.live.len();
        Gather::of(n, self.s.direct_times_up_to).lag(n)
    }

    /// ALB after `period`, on the times of the period `lag` before: the
    /// cycle says whether to ask, the heuristic decides, `relayout` gives
    /// the new layout.
    fn balance(&mut self, period: &Range<u64>) -> Result<(), SimError> {
        let s = self.s;
        let lag = self.lag();
        let it = period.end - 1;
        let Some(h) = self.heuristic.as_mut() else {
            return Ok(());
        };
        // The times of the period `lag` periods back, once the gather
        // delivers them.
        let arrived = (self.recent.len() == lag)
            .then(|| self.recent.front())
            .flatten()
            .map(|(range, row)| (range.clone(), row.as_slice()));
        if !self.cycle.after_period(period.clone(), arrived) {
            return Ok(());
        }
        let windows = self.cycle.snapshot(&self.geo.rows);
        let holding = Roster::holding(&windows);
        let dec = self.roster.decide(
            &windows,
            h.check(&Snapshot {
                iter: it,
                rebalances: self.out.moves.len(),
                remaining: s.iters - 1 - it,
                devices: &holding,
            }),
        );
        let mut outcome = if dec.rebalance {
            Outcome::Rebalance
        } else {
            Outcome::Keep
        };
        if dec.rebalance {
            let proposed = self.roster.weights(&windows, dec.weights.as_deref())?;
            match relayout(&self.geo.layout, &proposed, &self.low, &self.high)? {
                None => outcome = Outcome::SkippedTooThin,
                Some((weights, layout)) => self.rebalance(it, &holding, weights, layout)?,
            }
        }
        self.checks.push(
            Check {
                iter: it,
                outcome,
                values: dec
                    .values
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
            },
            outcome == Outcome::Rebalance,
        );
        Ok(())
    }

    /// Moves to `layout`: the barrier (every clock to the latest), then the
    /// rebalance's cost (replayed in trace mode, else calibrated or
    /// modelled).
    fn rebalance(
        &mut self,
        it: u64,
        windows: &[heuristics::DeviceWindow],
        weights: Vec<f64>,
        layout: Layout,
    ) -> Result<(), SimError> {
        let s = self.s;
        let plan = RedistributionPlan::new(&self.geo.layout, &layout)?;
        let next = Geometry::deep(layout, &s.footprint, s.cell_bytes, s.halo_depth)?;
        // The report counts the cells moved once; kernels reading the
        // level before move both levels, which the link model pays for.
        let cells_bytes = plan.cells_moved() as f64 * s.cell_bytes;
        let seconds = match (&s.kernels, s.rebalance) {
            (
                Kernels::Trace {
                    redistribution_seconds,
                    ..
                },
                _,
            ) => redistribution_seconds
                .get(self.out.moves.len())
                .copied()
                .unwrap_or(0.0),
            // Calibrated against the report's bytes_moved: the same measure.
            (Kernels::Modelled { .. }, Some(h)) => h.time(cells_bytes),
            (Kernels::Modelled { .. }, None) => {
                move_seconds(s, &self.live, &plan, &next, s.cell_bytes)
            }
        };
        let along = self.geo.layout.cut_dims().first().copied().unwrap_or(0);
        let total: f64 = self.geo.rows.iter().map(|&r| r as f64).sum();
        self.out.moves.push(Move {
            iter: it,
            seconds,
            rows_moved: plan
                .moves()
                .iter()
                .map(|mv| mv.region.sig(along).card())
                .sum(),
            bytes_moved: cells_bytes,
            weights_before: self.geo.rows.iter().map(|&r| r as f64 / total).collect(),
            weights_after: weights,
        });
        if let Some(h) = self.heuristic.as_mut() {
            h.on_redistribute(&Rebalanced {
                iter: it,
                rebalances: self.out.moves.len(),
                devices: windows,
                seconds,
                rows_moved: self.out.moves.last().map_or(0, |m| m.rows_moved),
            });
        }
        self.cycle.rebalanced(it);
        let done = self.now() + seconds;
        for &d in &self.live {
            self.clock[d] = done;
        }
        self.geo = next;
        Ok(())
    }

    /// The iteration's wall time (a rebalance's barrier and move
    /// included) and, when recorded, its devices.
    fn record(&mut self, period: &Range<u64>, step: Option<Vec<DeviceStep>>, slowest: f64) {
        let wall = self
            .live
            .iter()
            .enumerate()
            .map(|(i, &d)| self.clock[d] - self.began[i])
            .fold(0.0, f64::max);
        self.overhead += wall - slowest;
        self.wall += wall;
        // Each iteration of a period its share, as the skeleton records.
        let len = (period.end - period.start) as f64;
        let end = self.now();
        for (j, it) in period.clone().enumerate() {
            if is_recorded(it, self.out.iteration_seconds_every) {
                self.out.iteration_seconds.push(wall / len);
            }
            if let Some(devices) = step
                .as_ref()
                .filter(|_| is_recorded(it, self.out.recorded_every))
            {
                self.out.steps.push(Step {
                    iter: it,
                    seconds: wall / len,
                    elapsed: end - wall * (len - 1.0 - j as f64) / len,
                    devices: devices.clone(),
                });
            }
        }
    }

    fn finish(mut self) -> Simulated {
        if let Some(h) = self.heuristic.as_mut() {
            h.end();
        }
        self.out.loop_seconds = self.clock.iter().copied().fold(0.0, f64::max);
        self.out.overhead_per_iteration = self.overhead / self.s.iters.max(1) as f64;
        self.out.mean_iteration_seconds = self.wall / self.s.iters.max(1) as f64;
        (self.out.checks, self.out.checks_dropped) = self.checks.finish();
        self.out
    }
}

impl Ordered for Check {
    fn order(&self) -> u64 {
        self.iter
    }
}

/// A rebalance's modelled time: each live device sends and receives its
/// moves one after another, then refreshes its halos; the slowest decides.
fn move_seconds(
    s: &Scenario,
    live: &[usize],
    plan: &RedistributionPlan,
    next: &Geometry,
    cell_bytes: f64,
) -> f64 {
    let mut busy = vec![0.0f64; live.len()];
    for mv in plan.moves() {
        let bytes = mv.region.card() as f64 * cell_bytes * s.levels as f64;
        let (a, b) = (s.devices[live[mv.from]].host, s.devices[live[mv.to]].host);
        let t = link_time(&s.links, a, b, bytes, bytes);
        busy[mv.from] += t;
        busy[mv.to] += t;
    }
    for (i, sends) in next.sends.iter().enumerate() {
        for &(q, bytes) in sends {
            let (a, b) = (s.devices[live[i]].host, s.devices[live[q]].host);
            busy[q] += link_time(&s.links, a, b, bytes, bytes);
        }
    }
    busy.into_iter().fold(0.0, f64::max)
}

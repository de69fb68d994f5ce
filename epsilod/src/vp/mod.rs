//! One virtual process: a device, its two buffers, its part of the halo
//! plan, and (with ALB) its copy of the heuristic. Its loop is here; the
//! parts it calls each have a module: `halo` (a period's launches and its
//! halo exchange, and the halo depth), `balance` (ALB's side of the
//! process, rebalances included), `persist` (snapshots and checkpoints),
//! `geometry` (where the process stands in a layout) and `result` (what it
//! hands back).

use crate::checkpoint::{self, Committing, PendingBlock};
use crate::depth_trials::Trials;
use crate::devices::DeviceSpec;
use crate::error::{RunError, VpError};
use crate::peer_mail::PeerMail;
use crate::plan::RunPlan;
use crate::times::GatherError;
use balance::{AlbState, Check};
use controllers::{BufferId, Controller, DeviceError, DeviceMessage, KernelId};
use geometry::{geometry, spare_rows, Geometry};
use hitmap::{Layout, Shape, Transport, TransportError};
use kernels::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

mod balance;
mod geometry;
mod halo;
mod persist;

use crate::results::{is_recorded, record_every, IterStats, VpResult};

/// Sets `region` of both buffers from the run's init: on the device where
/// it launches the init's device kernel, else the first from the host and
/// the second a copy of it, in device memory (the init function is the
/// costly part of a CPU run's setup).
fn fill_init<T: Cell>(
    device: &mut dyn Controller<T>,
    run: &RunPlan<T>,
    [first, second]: [BufferId; 2],
    region: &Shape,
) -> Result<(), DeviceError> {
    if let Some(k) = &run.problem.device_init {
        if device.fill_device(first, region, k)? && device.fill_device(second, region, k)? {
            return Ok(());
        }
    }
    device.fill(first, region, run.problem.init.as_ref())?;
    device.copy_region(first, second, region)
}

/// Whether `r` is a box with no stride: what device messages carry.
fn dense(r: &Shape) -> bool {
    r.sigs().iter().all(|s| s.stride() == 1)
}

struct Vp<'a, T> {
    run: &'a RunPlan<T>,
    progress: &'a AtomicU64,
    /// This process's number.
    p: usize,
    device_name: String,
    device: Box<dyn Controller<T>>,
    transport: Box<dyn Transport<T>>,
    kernel: KernelId,
    cur: BufferId,
    next: BufferId,
    /// The kernel's auxiliary fields, over the tile's extent.
    aux: Vec<BufferId>,
    geometry: Geometry,
    reach_low: Vec<i64>,
    reach_high: Vec<i64>,
    global: Shape,
    interior: Shape,
    /// Received halo messages, reused for sends.
    recycled: Vec<Vec<T>>,
    /// This process's block of the last checkpoint, being written.
    pending: Option<PendingBlock<T>>,
    /// Process 0: the last checkpoint's commit, waiting for its blocks.
    committing: Option<Committing>,
    /// Snapshot buffers, touched at setup and reused: fresh pages cost
    /// more than the copy.
    snapshots: Vec<Vec<T>>,
    /// Halo messages sent.
    messages: u64,
    /// Of those, the ones that stayed in device memory.
    device_messages: u64,
    /// The mailbox of halos in device memory, shared with the virtual
    /// processes here.
    mail: &'a PeerMail,
    /// Received device messages, reused for sends (after the `wait` that
    /// completes the copies out of them).
    recycled_dev: Vec<DeviceMessage>,
    /// Iterations between halo exchanges now (ghost cells that many
    /// reaches deep).
    depth: usize,
    /// How long receives poll before blocking while the device holds rows
    /// (the process's policy, `job::WaitPolicy`).
    spin: std::time::Duration,
    /// Whether the device computes on a pool of its own, idle while it
    /// holds no rows (set by [`run`]; false until then).
    pooled: bool,
}

/// Runs virtual process `p` of `run` on the device `spec` describes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<T: Cell>(
    run: &RunPlan<T>,
    progress: &AtomicU64,
    mail: &PeerMail,
    spec: &DeviceSpec,
    cores: &[usize],
    p: usize,
    transport: Box<dyn Transport<T>>,
) -> Result<VpResult<T>, RunError> {
    let fail = |cause: VpError| RunError::Vp {
        vp: p,
        device: spec.to_string(),
        cause,
    };
    let mut device = spec.build_pinned::<T>(cores).map_err(|e| fail(e.into()))?;
    mail.register(p, device.peer_domain());
    let mut vp = Vp::new(run, progress, mail, p, spec.to_string(), device, transport)?;
    vp.pooled = crate::cores::pooled(spec);
    vp.wait_by_rows();
    vp.run()
}

impl<'a, T: Cell> Vp<'a, T> {
    /// Receives of a device on a pool of its own poll while it holds no
    /// rows, whatever the process's policy, so the process whose times it
    /// waits for every period never pays the wake-up of a blocked thread,
    /// which shows beside a GPU's short iterations: where that pool made
    /// the threads outnumber the cores, the pool is idle now and the poll
    /// (a spin of [`hitmap::SPIN`], then a block) takes no core from
    /// anyone. A device without a pool follows the policy: its spin would
    /// take a core from a working device where threads outnumber cores.
    fn wait_by_rows(&mut self) {
        let idle = self.geometry.block.is_empty();
        self.transport
            .set_spin(idle_spin(self.spin, idle, self.pooled));
    }

    fn fail(&self, cause: VpError) -> RunError {
        RunError::Vp {
            vp: self.p,
            device: self.device_name.clone(),
            cause,
        }
    }

    fn dev_err(&self, e: DeviceError) -> RunError {
        self.fail(VpError::Device(e))
    }

    fn net_err(&self, e: TransportError) -> RunError {
        self.fail(VpError::Transport(e))
    }

    fn gather_err(&self, e: GatherError) -> RunError {
        match e {
            GatherError::Net(e) => self.net_err(e),
            GatherError::Protocol(why) => self.fail(VpError::Protocol(why)),
        }
    }

    fn new(
        run: &'a RunPlan<T>,
        progress: &'a AtomicU64,
        mail: &'a PeerMail,
        p: usize,
        device_name: String,
        mut device: Box<dyn Controller<T>>,
        transport: Box<dyn Transport<T>>,
    ) -> Result<Vp<'a, T>, RunError> {
        let fail = |cause: VpError| RunError::Vp {
            vp: p,
            device: device_name.clone(),
            cause,
        };
        let fp = run.problem.stencil.kernel.footprint();
        let reach_low: Vec<i64> = fp.low().iter().map(|&x| x as i64).collect();
        let reach_high: Vec<i64> = fp.high().iter().map(|&x| x as i64).collect();
        let global = Shape::from_sizes(&run.problem.size);
        let interior = run.layout.domain().clone();
        let transport_spin = transport.spin();
        let geo = geometry(
            run.layout.clone(),
            fp,
            p,
            &reach_low,
            &reach_high,
            &global,
            run.depth,
        )
        .map_err(|e| fail(e.into()))?;
        let err = |e: DeviceError| fail(e.into());
        let spare = spare_rows(run.options.alb.as_ref(), &geo);
        let capacity = geo.extent.expand(&spare, &spare).intersect(&global);
        // Before any buffer: the kernel decides how a GPU lays its cells
        // out (components in planes where it can read them so).
        let kernel = device
            .load(run.problem.stencil.kernel.clone())
            .map_err(err)?;
        let cur = device.alloc(&geo.extent, &capacity).map_err(err)?;
        let next = device.alloc(&geo.extent, &capacity).map_err(err)?;
        fill_init(device.as_mut(), run, [cur, next], &geo.extent).map_err(err)?;
        if let Some(prev) = &run.problem.init_previous {
            // Boundary cells are the init's in both buffers: after a swap
            // they are read as neighbours.
            device
                .fill(next, &geo.extent.intersect(&interior), prev.as_ref())
                .map_err(err)?;
        }
        if let Some(r) = &run.restart {
            // The interior from the checkpoint, whatever layout wrote it;
            // boundary cells stay the init's.
            let region = geo.extent.intersect(&interior);
            let levels = [cur, next];
            let levels = &levels[..r.manifest.levels.min(2)];
            for (l, &b) in levels.iter().enumerate() {
                let parts = r.parts::<T>(l, &region).map_err(|e| fail(e.into()))?;
                for (part, data) in parts {
                    device.write(b, &part, &data).map_err(err)?;
                }
            }
        }
        // Read-only fields are computed where they are read, halo cells
        // included: no messages, now or after a rebalance.
        let mut aux = Vec::new();
        for f in run.problem.stencil.kernel.aux_fields() {
            let b = device.alloc(&geo.extent, &capacity).map_err(err)?;
            device.fill(b, &geo.extent, f.as_ref()).map_err(err)?;
            aux.push(b);
        }
        if !aux.is_empty() {
            device.bind_aux(kernel, &aux).map_err(err)?;
        }
        // Only where a checkpoint falls before the end.
        let snapshots = match &run.options.checkpoint {
            Some(c) if c.every < run.options.iters => {
                let levels = if run.problem.stencil.kernel.reads_previous() {
                    2
                } else {
                    1
                };
                checkpoint::prefaulted(levels, geo.block.card())
            }
            _ => Vec::new(),
        };
        let mut vp = Vp {
            run,
            progress,
            p,
            device_name,
            device,
            transport,
            kernel,
            cur,
            next,
            aux,
            geometry: geo,
            reach_low,
            reach_high,
            global,
            interior,
            recycled: Vec::new(),
            pending: None,
            committing: None,
            snapshots,
            messages: 0,
            device_messages: 0,
            mail,
            recycled_dev: Vec::new(),
            depth: run.depth.max(1),
            spin: transport_spin,
            pooled: false,
        };
        vp.wait_by_rows();
        Ok(vp)
    }

    fn run(&mut self) -> Result<VpResult<T>, RunError> {
        let (start, iters) = (self.run.start, self.run.options.iters);
        let every = record_every(iters.saturating_sub(start), self.run.records());
        let mut stats =
            Vec::with_capacity(iters.saturating_sub(start).div_ceil(every).min(1 << 20) as usize);
        let mut checkpoints = Vec::new();
        let mut alb = self
            .run
            .options
            .alb
            .as_ref()
            .map(|a| AlbState::new(a, self.p, self.geometry.layout.procs(), start, iters));
        if let (Some(a), Some(r)) = (alb.as_mut(), self.run.restart.as_ref()) {
            // The same heuristic goes on where the checkpoint left it.
            if r.manifest.heuristic.as_deref() == Some(a.heuristic.name()) {
                a.heuristic.restore(&r.manifest.heuristic_state);
                a.rebalances = r.manifest.rebalances;
            }
            a.roster.restore(&r.manifest.roster_state);
        }
        let mut trials =
            (self.run.auto_depth && iters - start >= Trials::MIN_ITERS).then(Trials::new);
        self.prepare_periods(start, trials.is_some())?;
        // Start together: a peer still creating its device context or
        // compiling its kernel (seconds on a GPU) is setup, not the first
        // iteration's exchange.
        self.transport.barrier().map_err(|e| self.net_err(e))?;
        let mut depth_trials = Vec::new();
        let started = Instant::now();
        let mut it = start;
        while it < iters {
            if let Some(t) = trials.as_ref() {
                self.set_depth(t.depth(it - start), it)?;
            }
            let t0 = Instant::now();
            let rows = self.rows_of(self.p);
            let mut len = self.period_len(it);
            if let Some(t) = trials.as_ref() {
                len = len.min(t.left(it - start));
            }
            let (compute, mut comm) = self.period(it, len)?;
            let charged = controllers::cpu_time::take_charged();
            if let Some(a) = alb.as_mut() {
                comm += self.balance(a, it, len, compute)?;
            }
            // Each iteration of a period counts its share: heuristics, the
            // report and the plots see per-iteration figures whatever the
            // period.
            let (wall, end, n) = (
                t0.elapsed().as_secs_f64(),
                started.elapsed().as_secs_f64(),
                len as f64,
            );
            let recorded = (0..len).filter(|&i| is_recorded(it - start + i as u64, every));
            stats.extend(recorded.map(|i| IterStats {
                wall: wall / n,
                elapsed: end - wall * (len - 1 - i) as f64 / n,
                compute: compute / n,
                comm: comm / n,
                cpu: charged.map(|c| c.seconds / n),
                instructions: charged.and_then(|c| c.instructions).map(|i| i as f64 / n),
                rows,
            }));
            if let Some(t) = trials.as_mut() {
                t.record(it - start, len, wall);
                if t.finished(it + len as u64 - start) {
                    let (tried, depth) = self.decide_depth(t)?;
                    self.set_depth(depth, it + len as u64)?;
                    depth_trials = tried;
                    trials = None;
                }
            }
            it += len as u64;
            if let Some(every) = self.run.problem.snapshot.as_ref().map(|s| s.0) {
                if it % every == 0 {
                    self.snapshot(it)?;
                }
            }
            if let Some(every) = self.run.options.checkpoint.as_ref().map(|c| c.every) {
                if it % every == 0 && it < iters {
                    checkpoints.push(self.checkpoint(it, alb.as_ref())?);
                }
            }
            self.progress.fetch_max(it, Ordering::Relaxed);
        }
        // The last checkpoint is on disk and visible before the run ends.
        self.finish_checkpoint()?;
        let (redistributions, (decisions, decisions_dropped)) = match alb {
            Some(mut a) => {
                // Collect the last times, so no message is left behind.
                a.times
                    .finish(&mut *self.transport)
                    .map_err(|e| self.gather_err(e))?;
                a.heuristic.end();
                (a.redistributions, a.checks.finish())
            }
            None => (Vec::new(), (Vec::new(), 0)),
        };
        let loop_seconds = started.elapsed().as_secs_f64();
        // The report's form, named values, built once the loop is timed.
        let decisions = decisions.into_iter().map(Check::into_record).collect();
        // The other buffer is done with: freed before the block is copied
        // out, so the run's peak is one tile and its copy, not two tiles and
        // a copy (`RunPlan::check_memory` counts on it).
        self.device.free(self.next).map_err(|e| self.dev_err(e))?;
        let mut data = Vec::with_capacity(self.geometry.block.card());
        self.device
            .read(self.cur, &self.geometry.block, &mut data)
            .map_err(|e| self.dev_err(e))?;
        Ok(VpResult {
            block: self.geometry.block.clone(),
            data,
            stats,
            loop_seconds,
            redistributions,
            decisions,
            decisions_dropped,
            checkpoints,
            messages: self.messages,
            device_messages: self.device_messages,
            planes: self.device.cell_layout() == kernels::CellLayout::Planes,
            depth: self.depth,
            depth_trials,
        })
    }

    /// The process's geometry in `layout` with ghost cells `depth`
    /// iterations deep, and both buffers resized to its extent (the cells
    /// both hold kept in place), with the spare rows ALB wants.
    fn resize_to(
        &mut self,
        layout: Layout,
        depth: usize,
    ) -> Result<(Geometry, Vec<i64>), RunError> {
        let geo = geometry(
            layout,
            self.run.problem.stencil.kernel.footprint(),
            self.p,
            &self.reach_low,
            &self.reach_high,
            &self.global,
            depth,
        )
        .map_err(|e| self.fail(e.into()))?;
        let spare = spare_rows(self.run.options.alb.as_ref(), &geo);
        for b in [self.cur, self.next] {
            self.device
                .resize(b, &geo.extent, &spare)
                .map_err(|e| self.dev_err(e))?;
        }
        Ok((geo, spare))
    }

    /// Rows of process `q` along the balanced (or first cut) dimension.
    fn rows_of(&self, q: usize) -> usize {
        let d = self
            .geometry
            .layout
            .cut_dims()
            .first()
            .copied()
            .unwrap_or(0);
        self.geometry.layout.block(q).sig(d).card()
    }
}

impl<T> Drop for Vp<'_, T> {
    /// A run that failed must leave no checkpoint thread behind: its writes
    /// finish, and a commit still waiting for blocks is abandoned, so a
    /// recovery restarting from the checkpoint directory meets no stray
    /// rename or prune.
    fn drop(&mut self) {
        if let Some(w) = self.pending.take() {
            let _ = w.finish();
        }
        if let Some(c) = self.committing.take() {
            c.cancel();
        }
    }
}

/// How long receives poll before blocking: the process's `spin`, or at
/// least the transport's default for an `idle` device whose own pool is
/// idle with it (`pooled`).
fn idle_spin(spin: std::time::Duration, idle: bool, pooled: bool) -> std::time::Duration {
    if idle && pooled {
        spin.max(hitmap::SPIN)
    } else {
        spin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_idle_device_on_its_own_pool_polls_whatever_the_policy() {
        // Blocking at once (threads outnumber cores): polls while idle.
        assert_eq!(idle_spin(Duration::ZERO, true, true), hitmap::SPIN);
        assert_eq!(idle_spin(Duration::ZERO, false, true), Duration::ZERO);
        // A device without a pool keeps the policy: its spin would take a
        // core from a working device.
        assert_eq!(idle_spin(Duration::ZERO, true, false), Duration::ZERO);
        assert_eq!(idle_spin(hitmap::SPIN, true, false), hitmap::SPIN);
        // A longer poll asked for stays.
        let long = hitmap::SPIN * 3;
        assert_eq!(idle_spin(long, true, true), long);
        assert_eq!(idle_spin(long, false, true), long);
    }
}

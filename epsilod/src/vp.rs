//! One virtual process: a device, its two buffers, its part of the halo
//! plan, and (with ALB) its copy of the heuristic.

use crate::alb::Alb;
use crate::checkpoint::{self, BlockEntry, Committing, Manifest, PendingBlock};
use crate::depth_trials::Trials;
use crate::devices::DeviceSpec;
use crate::error::{RunError, VpError};
use crate::peer_mail::PeerMail;
use crate::plan::RunPlan;
use crate::report::{
    CheckpointRecord, DecisionOutcome, DecisionRecord, DepthTrial, Redistribution,
};
use crate::tag::Tag;
use crate::times::{GatherError, TimesGather};
use controllers::{BufferId, Controller, DeviceError, DeviceMessage, KernelId};
use heuristics::{relayout, Cycle, Heuristic, Rebalanced, Roster, Snapshot};
use hitmap::{
    split_border, HaloPlan, Layout, Partition, RedistributionPlan, Shape, Transport, TransportError,
};
use kernels::Cell;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One iteration of one virtual process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct IterStats {
    pub wall: f64,
    /// Seconds since the loop started, at the end of this iteration.
    pub elapsed: f64,
    pub compute: f64,
    pub comm: f64,
    /// Kernel thread CPU seconds, where the device measures them.
    pub cpu: Option<f64>,
    /// Instructions its kernels retired, where counted
    /// (`controllers::cpu_time::count_instructions`).
    #[serde(default)]
    pub instructions: Option<f64>,
    pub rows: usize,
}

/// What a virtual process hands back: its block of the result and its
/// measurements.
pub(crate) struct VpResult<T> {
    pub block: Shape,
    pub data: Vec<T>,
    pub stats: Vec<IterStats>,
    pub loop_seconds: f64,
    /// Every process records the same rebalances and decisions (all decide
    /// on the same numbers), so the report may take them from any.
    pub redistributions: Vec<Redistribution>,
    pub decisions: Vec<DecisionRecord>,
    /// The checkpoints this process took part in, with its own time.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Halo messages it sent.
    pub messages: u64,
    /// Of those, the ones that stayed in device memory.
    pub device_messages: u64,
    /// Its device held cells with components in planes.
    pub planes: bool,
    /// The halo depth it ended at.
    pub depth: usize,
    /// `--halo-depth auto`'s measurements (every process has the same).
    pub depth_trials: Vec<DepthTrial>,
}

/// A result's place and measurements as they travel between ranks (its
/// cells travel apart, as bytes). Only the MPI job and the executor's
/// simulated ranks send results across a wire.
#[cfg(any(feature = "mpi", test))]
#[derive(Serialize, Deserialize)]
pub(crate) struct VpMeta {
    vp: usize,
    /// `(begin, end, stride)` per dimension.
    block: Vec<(i64, i64, i64)>,
    stats: Vec<IterStats>,
    loop_seconds: f64,
    redistributions: Vec<Redistribution>,
    decisions: Vec<DecisionRecord>,
    checkpoints: Vec<CheckpointRecord>,
    messages: u64,
    #[serde(default)]
    device_messages: u64,
    #[serde(default)]
    planes: bool,
    depth: usize,
    depth_trials: Vec<DepthTrial>,
}

#[cfg(any(feature = "mpi", test))]
impl VpMeta {
    pub(crate) fn of<T>(vp: usize, r: &VpResult<T>) -> VpMeta {
        VpMeta {
            vp,
            block: r
                .block
                .sigs()
                .iter()
                .map(|s| (s.begin(), s.end(), s.stride()))
                .collect(),
            stats: r.stats.clone(),
            loop_seconds: r.loop_seconds,
            redistributions: r.redistributions.clone(),
            decisions: r.decisions.clone(),
            checkpoints: r.checkpoints.clone(),
            messages: r.messages,
            device_messages: r.device_messages,
            planes: r.planes,
            depth: r.depth,
            depth_trials: r.depth_trials.clone(),
        }
    }

    pub(crate) fn into_result<T>(self) -> (usize, VpResult<T>) {
        let block = Shape::new(
            self.block
                .iter()
                .map(|&(b, e, s)| hitmap::Sig::new(b, e, s))
                .collect(),
        );
        (
            self.vp,
            VpResult {
                block,
                data: Vec::new(),
                stats: self.stats,
                loop_seconds: self.loop_seconds,
                redistributions: self.redistributions,
                decisions: self.decisions,
                checkpoints: self.checkpoints,
                messages: self.messages,
                device_messages: self.device_messages,
                planes: self.planes,
                depth: self.depth,
                depth_trials: self.depth_trials,
            },
        )
    }
}

/// Sets `region` of `buf` from the run's init: on the device where it
/// launches the init's device kernel, else from the host.
fn fill_init<T: Cell>(
    device: &mut dyn Controller<T>,
    run: &RunPlan<T>,
    buf: BufferId,
    region: &Shape,
) -> Result<(), DeviceError> {
    if let Some(k) = &run.device_init {
        if device.fill_device(buf, region, k)? {
            return Ok(());
        }
    }
    device.fill(buf, region, run.init.as_ref())
}

/// Whether `r` is a box with no stride: what device messages carry.
fn dense(r: &Shape) -> bool {
    r.sigs().iter().all(|s| s.stride() == 1)
}

/// Where this process stands in the current layout.
struct Geometry {
    layout: Layout,
    plan: HaloPlan,
    block: Shape,
    extent: Shape,
    strips: Vec<Shape>,
    inner: Shape,
}

struct Vp<'a, T, X> {
    run: &'a RunPlan<T>,
    progress: &'a AtomicU64,
    /// This process's number.
    p: usize,
    device_name: String,
    device: Box<dyn Controller<T>>,
    transport: X,
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
    /// Snapshot buffers, touched at setup and reused (fresh pages cost
    /// more than the copy: 48 ms of 64 MB).
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
    /// (the process's policy, `cores::Wait`).
    spin: std::time::Duration,
}

/// Runs virtual process `p` of `run` on the device `spec` describes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<T: Cell, X: Transport<T>>(
    run: &RunPlan<T>,
    progress: &AtomicU64,
    mail: &PeerMail,
    spec: &DeviceSpec,
    cores: &[usize],
    p: usize,
    transport: X,
) -> Result<VpResult<T>, RunError> {
    let fail = |cause: VpError| RunError::Vp {
        vp: p,
        device: spec.to_string(),
        cause,
    };
    let device = spec.build_pinned::<T>(cores).map_err(|e| fail(e.into()))?;
    mail.register(p, device.peer_domain());
    let mut vp = Vp::new(run, progress, mail, p, spec.to_string(), device, transport)?;
    vp.run()
}

impl<'a, T: Cell, X: Transport<T>> Vp<'a, T, X> {
    /// Receives poll while this device holds no rows, whatever the
    /// process's policy, so the process whose times it waits for every
    /// period never pays the wake-up of a blocked thread (measured on an
    /// H200 beside a dropped 15-thread CPU device, blocking as 17 threads on
    /// 16 cores: 5 us of a GPU's 0.17 ms iteration). Where that device's
    /// own pool made the threads outnumber the cores, the pool is idle now
    /// and the poll takes no core from anyone; elsewhere it yields the core
    /// at every poll after the first 50 us.
    fn wait_by_rows(&mut self) {
        let idle = self.geometry.block.is_empty();
        self.transport.set_spin(idle_spin(self.spin, idle));
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
        transport: X,
    ) -> Result<Vp<'a, T, X>, RunError> {
        let fail = |cause: VpError| RunError::Vp {
            vp: p,
            device: device_name.clone(),
            cause,
        };
        let fp = run.stencil.kernel.footprint();
        let reach_low: Vec<i64> = fp.low().iter().map(|&x| x as i64).collect();
        let reach_high: Vec<i64> = fp.high().iter().map(|&x| x as i64).collect();
        let global = Shape::from_sizes(&run.size);
        let interior = run.layout.domain().clone();
        let transport_spin = transport.spin();
        let geo = geometry(
            run.layout.clone(),
            fp,
            p,
            &reach_low,
            &reach_high,
            &global,
            run.halo_depth,
        )
        .map_err(|e| fail(e.into()))?;
        let err = |e: DeviceError| fail(e.into());
        let spare = spare_rows(run.alb.as_ref(), &geo);
        let capacity = geo.extent.expand(&spare, &spare).intersect(&global);
        // Before any buffer: the kernel decides how a GPU lays its cells
        // out (components in planes where it can read them so).
        let kernel = device.load(run.stencil.kernel.clone()).map_err(err)?;
        let cur = device.alloc(&geo.extent, &capacity).map_err(err)?;
        let next = device.alloc(&geo.extent, &capacity).map_err(err)?;
        for b in [cur, next] {
            fill_init(device.as_mut(), run, b, &geo.extent).map_err(err)?;
        }
        if let Some(prev) = &run.init_previous {
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
        for f in run.stencil.kernel.aux_fields() {
            let b = device.alloc(&geo.extent, &capacity).map_err(err)?;
            device.fill(b, &geo.extent, f.as_ref()).map_err(err)?;
            aux.push(b);
        }
        if !aux.is_empty() {
            device.bind_aux(kernel, &aux).map_err(err)?;
        }
        // Only where a checkpoint falls before the end.
        let snapshots = match &run.checkpoint {
            Some(c) if c.every < run.iters => {
                let levels = if run.stencil.kernel.reads_previous() {
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
            depth: run.halo_depth.max(1),
            spin: transport_spin,
        };
        vp.wait_by_rows();
        Ok(vp)
    }

    fn run(&mut self) -> Result<VpResult<T>, RunError> {
        let (start, iters) = (self.run.start, self.run.iters);
        let mut stats = Vec::with_capacity(iters.saturating_sub(start) as usize);
        let mut checkpoints = Vec::new();
        let mut alb = self
            .run
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
            stats.extend((0..len).map(|i| IterStats {
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
            if let Some(every) = self.run.snapshot.as_ref().map(|s| s.0) {
                if it % every == 0 {
                    self.snapshot(it)?;
                }
            }
            if let Some(every) = self.run.checkpoint.as_ref().map(|c| c.every) {
                if it % every == 0 && it < iters {
                    checkpoints.push(self.checkpoint(it, alb.as_ref())?);
                }
            }
            self.progress.fetch_max(it, Ordering::Relaxed);
        }
        // The last checkpoint is on disk and visible before the run ends.
        self.finish_checkpoint()?;
        let (redistributions, decisions) = match alb {
            Some(mut a) => {
                // Collect the last times, so no message is left behind.
                a.times
                    .finish(&mut self.transport)
                    .map_err(|e| self.gather_err(e))?;
                a.heuristic.end();
                (a.redistributions, a.checks)
            }
            None => (Vec::new(), Vec::new()),
        };
        let loop_seconds = started.elapsed().as_secs_f64();
        // The report's form, named values, built once the loop is timed.
        let decisions = decisions.into_iter().map(Check::into_record).collect();
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
            checkpoints,
            messages: self.messages,
            device_messages: self.device_messages,
            planes: self.device.cell_layout() == kernels::CellLayout::Planes,
            depth: self.depth,
            depth_trials,
        })
    }

    /// Runs at `depth` from iteration `it` (the end of a period): both
    /// buffers over the deeper or shallower extent, boundary cells new to it
    /// from the init function, and the ghost cells of the new depth from
    /// the neighbours.
    fn set_depth(&mut self, depth: usize, it: u64) -> Result<(), RunError> {
        if depth == self.depth {
            return Ok(());
        }
        let fp = self.run.stencil.kernel.footprint();
        let geo = geometry(
            self.geometry.layout.clone(),
            fp,
            self.p,
            &self.reach_low,
            &self.reach_high,
            &self.global,
            depth,
        )
        .map_err(|e| self.fail(e.into()))?;
        let spare = spare_rows(self.run.alb.as_ref(), &geo);
        for b in [self.cur, self.next] {
            self.device
                .resize(b, &geo.extent, &spare)
                .map_err(|e| self.dev_err(e))?;
            for part in geo.extent.difference(&self.interior) {
                fill_init(self.device.as_mut(), self.run, b, &part).map_err(|e| self.dev_err(e))?;
            }
        }
        self.fit_aux(&geo.extent, &spare)?;
        self.geometry = geo;
        self.wait_by_rows();
        self.depth = depth;
        let cur = self.cur;
        let tag = Tag::Deepen(it).encode();
        self.post_sends(cur, tag)?;
        self.complete_recvs(cur, tag)
    }

    /// Moves the auxiliary fields to the tile's new `extent` (before
    /// `self.geometry` changes): the cells kept stay, the new ones are
    /// computed. Cheaper than receiving them, and the same values.
    fn fit_aux(&mut self, extent: &Shape, spare: &[i64]) -> Result<(), RunError> {
        let held = self.geometry.extent.clone();
        let fields = self.run.stencil.kernel.aux_fields();
        for (&b, f) in self.aux.iter().zip(fields) {
            self.device
                .resize(b, extent, spare)
                .map_err(|e| self.dev_err(e))?;
            for fresh in extent.difference(&held) {
                self.device
                    .fill(b, &fresh, f.as_ref())
                    .map_err(|e| self.dev_err(e))?;
            }
        }
        Ok(())
    }

    /// The depth the trials' times choose, the same on every process: each
    /// process's fastest per depth, the slowest process's per depth (the
    /// run goes at its pace), the cost model's best.
    fn decide_depth(&mut self, t: &Trials) -> Result<(Vec<DepthTrial>, usize), RunError> {
        let mine = t.fastest();
        let all = self
            .transport
            .all_gather(&mine)
            .map_err(|e| self.net_err(e))?;
        let trials: Vec<DepthTrial> = crate::depth_trials::CANDIDATES
            .iter()
            .enumerate()
            .map(|(i, &depth)| DepthTrial {
                depth,
                seconds: all.iter().map(|v| v[i]).fold(0.0, f64::max),
            })
            .collect();
        let samples: Vec<(usize, f64)> = trials.iter().map(|t| (t.depth, t.seconds)).collect();
        let depth = heuristics::depth::choose_depth(&samples);
        if self.p == 0 {
            tracing::info!(
                "halo depth auto: seconds per iteration {:?}, running at depth {depth}",
                samples
            );
        }
        Ok((trials, depth))
    }

    /// Sends this process's block to process 0, which assembles the field
    /// and hands it to the snapshot function.
    fn snapshot(&mut self, iter: u64) -> Result<(), RunError> {
        let block = self.geometry.block.clone();
        let mut data = Vec::with_capacity(block.card());
        self.device
            .read(self.cur, &block, &mut data)
            .map_err(|e| self.dev_err(e))?;
        let tag = Tag::Snapshot(iter).encode();
        if self.p != 0 {
            return self
                .transport
                .send(0, tag, data)
                .map_err(|e| self.net_err(e));
        }
        let layout = self.geometry.layout.clone();
        let mut parts = vec![data];
        for q in 1..layout.procs() {
            let v = self.transport.recv(q, tag).map_err(|e| self.net_err(e))?;
            if v.len() != layout.block(q).card() {
                return Err(self.fail(VpError::Protocol(format!(
                    "snapshot block from {q} has {} cells, expected {}",
                    v.len(),
                    layout.block(q).card()
                ))));
            }
            parts.push(v);
        }
        let grid = self
            .run
            .assemble_blocks((0..layout.procs()).map(|q| (layout.block(q), parts[q].as_slice())));
        if let Some((_, f)) = &self.run.snapshot {
            f(iter, grid.view()).map_err(|why| self.fail(VpError::Snapshot { iter, why }))?;
        }
        Ok(())
    }

    /// Waits for the last checkpoint's block write and (process 0) its
    /// commit, keeping the snapshot buffers for the next one.
    fn finish_checkpoint(&mut self) -> Result<(), RunError> {
        if let Some(w) = self.pending.take() {
            self.snapshots = w.finish().map_err(|e| self.fail(e.into()))?;
        }
        if let Some(c) = self.committing.take() {
            c.finish().map_err(|e| self.fail(e.into()))?;
        }
        Ok(())
    }

    /// The checkpoint after `iter` iterations: this process's block copied
    /// to the host here, checksummed, written and synced by a thread of its
    /// own while the run goes on; process 0 gathers every block's length
    /// and leaves the commit (checksums, manifest, rename) to a thread that
    /// waits for every block file. Returns the time the run stood still for
    /// it here.
    fn checkpoint(
        &mut self,
        iter: u64,
        alb: Option<&AlbState>,
    ) -> Result<CheckpointRecord, RunError> {
        let t0 = Instant::now();
        self.finish_checkpoint()?;
        let Some(c) = self.run.checkpoint.clone() else {
            return Err(self.fail(VpError::Protocol("no checkpoint configured".into())));
        };
        let block = self.geometry.block.clone();
        let levels = if self.run.stencil.kernel.reads_previous() {
            vec![self.cur, self.next]
        } else {
            vec![self.cur]
        };
        let mut data = std::mem::take(&mut self.snapshots);
        data.resize_with(levels.len(), Vec::new);
        for (b, v) in levels.into_iter().zip(data.iter_mut()) {
            checkpoint::align_start(v, block.card());
            self.device
                .read(b, &block, v)
                .map_err(|e| self.dev_err(e))?;
        }
        let nlevels = data.len();
        let bytes = checkpoint::length::<T>(nlevels, block.card());
        self.pending = Some(
            checkpoint::write_block(&c, iter, self.p, block.card(), data)
                .map_err(|e| self.fail(e.into()))?,
        );
        let tag = Tag::Checkpoint(iter).encode();
        if self.p != 0 {
            // Exact in an f64: lengths below 2^53.
            self.transport
                .send_values(0, tag, vec![bytes as f64])
                .map_err(|e| self.net_err(e))?;
        } else {
            let procs = self.geometry.layout.procs();
            let mut blocks = Vec::with_capacity(procs);
            for q in 0..procs {
                let bytes = if q == 0 {
                    bytes
                } else {
                    let v = self
                        .transport
                        .recv_values(q, tag)
                        .map_err(|e| self.net_err(e))?;
                    match v[..] {
                        [b] => b as u64,
                        _ => {
                            return Err(self.fail(VpError::Protocol(format!(
                                "checkpoint report from {q} has {} values",
                                v.len()
                            ))))
                        }
                    }
                };
                blocks.push(BlockEntry {
                    vp: q,
                    file: checkpoint::block_name(q),
                    region: checkpoint::ranges(self.geometry.layout.block(q)),
                    bytes,
                    // The writer's, filled in by the commit.
                    crc32: 0,
                });
            }
            let m = Manifest {
                format: checkpoint::FORMAT,
                stencil: self.run.stencil.name.clone(),
                cell: std::any::type_name::<T>().to_string(),
                size: self.run.size.clone(),
                iteration: iter,
                levels: nlevels,
                devices: self.run.devices.iter().map(|d| d.to_string()).collect(),
                partition: self.run.partition.to_string(),
                weights: (0..procs).map(|q| self.rows_of(q) as f64).collect(),
                heuristic: alb.map(|a| a.heuristic.name().to_string()),
                rebalances: alb.map_or(0, |a| a.rebalances),
                heuristic_state: alb.map_or_else(Vec::new, |a| a.heuristic.state()),
                roster_state: alb.map_or_else(Vec::new, |a| a.roster.state()),
                blocks,
            };
            self.committing =
                Some(checkpoint::spawn_commit(&c, m).map_err(|e| self.fail(e.into()))?);
        }
        Ok(CheckpointRecord {
            iter,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }

    /// ALB after the period of `len` iterations from `first` (kernel
    /// seconds `compute`): share the time, read the others' of the period
    /// the gather delivers now (`times.rs`), and, once the windows are full, ask the heuristic and maybe
    /// rebalance (so rebalances fall between periods, where every ghost
    /// cell has just been exchanged). Returns the seconds spent exchanging
    /// times.
    fn balance(
        &mut self,
        a: &mut AlbState,
        first: u64,
        len: usize,
        compute: f64,
    ) -> Result<f64, RunError> {
        // Kernel times travel point to point and are read one period later
        // (`lag` periods along the tree), when they have long arrived: no
        // process waits on the gather, and all decide on the same numbers
        // at the same iteration.
        let tg = Instant::now();
        let period = first..first + len as u64;
        let last = period.end - 1;
        let mine = compute / len as f64;
        let peers = self.geometry.layout.procs();
        let previous = a
            .times
            .advance(&mut self.transport, period.clone(), mine)
            .map_err(|e| self.gather_err(e))?;
        let comm = tg.elapsed().as_secs_f64();
        let previous = previous
            .as_ref()
            .map(|(r, row)| (r.clone(), row.as_slice()));
        if !a.cycle.after_period(period, previous) {
            return Ok(comm);
        }
        let it = last;
        let rows: Vec<usize> = (0..peers).map(|q| self.rows_of(q)).collect();
        let windows = a.cycle.snapshot(&rows);
        // Heuristics see the devices that hold rows (a dropped one has none).
        let holding = Roster::holding(&windows);
        let snap = Snapshot {
            iter: it,
            rebalances: a.rebalances,
            remaining: self.run.iters - 1 - it,
            devices: &holding,
        };
        // A dropped device that would now come back asks for a rebalance
        // the heuristic, seeing only the devices holding rows, cannot.
        let d = a.roster.decide(&windows, a.heuristic.check(&snap));
        let mut outcome = if d.rebalance {
            DecisionOutcome::Rebalance
        } else {
            DecisionOutcome::Keep
        };
        if self.p == 0 {
            tracing::trace!(iter = it, decision = %outcome, values = ?d.values, "heuristic check");
        }
        if d.rebalance {
            let proposed = a
                .roster
                .weights(&windows, d.weights.as_deref())
                .map_err(|e| self.fail(VpError::Protocol(e.to_string())))?;
            match self.rebalance(it, a, &windows, &holding, proposed)? {
                Some(r) => {
                    if self.p == 0 {
                        tracing::info!(
                            iter = it,
                            rows_moved = r.rows_moved,
                            seconds = r.seconds,
                            "rebalanced to weights {:?}",
                            r.weights_after
                        );
                    }
                    a.redistributions.push(r);
                }
                None => outcome = DecisionOutcome::SkippedTooThin,
            }
        }
        a.checks.push(Check {
            iter: it,
            decision: outcome,
            values: d.values,
        });
        Ok(comm)
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

    /// Has the device prepare the fused launches of the periods ahead
    /// (a GPU compiles a fused kernel at its first launch: about 0.25 s
    /// with NVRTC on an H200, which fell inside the timed loop): every
    /// period length of a run from `start` at the halo depth, or each
    /// depth `--halo-depth auto` tries (the lengths after its choice,
    /// short ones at the end of the run, compile at their first launch).
    fn prepare_periods(&mut self, start: u64, trials: bool) -> Result<(), RunError> {
        if !self.aux.is_empty() {
            // Such kernels go step by step (`Vp::period`).
            return Ok(());
        }
        let mut lengths = std::collections::BTreeSet::new();
        if trials {
            lengths.extend(crate::depth_trials::CANDIDATES);
        } else if self.depth > 1 {
            let mut it = start;
            while it < self.run.iters {
                let len = self.period_len(it);
                lengths.insert(len);
                it += len as u64;
            }
        }
        let most = self.device.fused_steps();
        for len in lengths.into_iter().filter(|&l| l > 1 && l <= most) {
            self.device
                .prepare_steps(self.kernel, len)
                .map_err(|e| self.dev_err(e))?;
        }
        Ok(())
    }

    /// Iterations in the period starting at `it`: the halo depth, cut
    /// short by the end of the run and by the next snapshot or checkpoint
    /// (which need every block at their iteration).
    fn period_len(&self, it: u64) -> usize {
        let mut end = (it + self.depth as u64).min(self.run.iters);
        let cuts = [
            self.run.snapshot.as_ref().map(|s| s.0),
            self.run.checkpoint.as_ref().map(|c| c.every),
        ];
        for every in cuts.into_iter().flatten().filter(|&e| e > 0) {
            end = end.min((it / every + 1) * every);
        }
        (end - it) as usize
    }

    /// What each of `len` iterations computes so that the last gives
    /// `region`: step `j` the region widened by the reach of the steps after
    /// it, within the interior (a cone). Ghost cells `len` reaches deep hold
    /// everything the first step reads.
    fn cones(&self, region: &Shape, len: usize) -> Vec<Shape> {
        (0..len)
            .map(|j| {
                let n = (len - 1 - j) as i64;
                let lo: Vec<i64> = self.reach_low.iter().map(|r| r * n).collect();
                let hi: Vec<i64> = self.reach_high.iter().map(|r| r * n).collect();
                region.expand(&lo, &hi).intersect(&self.interior)
            })
            .collect()
    }

    /// The `len` iterations from `it`, ending with a halo exchange (the
    /// ghost cells `len` reaches deep are then valid again). A device that
    /// fuses iterations runs them as one [`Vp::exchange`] of `len` steps: a
    /// pass over memory for each border strip's cone and one for the inner
    /// region's. Others compute the block and the ring of ghost cells still
    /// valid step by step, then the last iteration as an exchange of one
    /// step. Returns (kernel seconds, exchange seconds).
    fn period(&mut self, it: u64, len: usize) -> Result<(f64, f64), RunError> {
        let last = it + len as u64 - 1;
        // Fused launches compute in windows an auxiliary field's buffer
        // does not follow: such kernels go step by step.
        if len > 1 && self.device.fused_steps() >= len && self.aux.is_empty() {
            return self.exchange(last, len);
        }
        let rings = self.cones(&self.geometry.block, len);
        for (j, ring) in rings[..len - 1].iter().enumerate() {
            self.device.set_iteration(it + j as u64);
            self.device
                .launch(self.kernel, self.cur, self.next, ring)
                .map_err(|e| self.dev_err(e))?;
            self.device.wait().map_err(|e| self.dev_err(e))?;
            std::mem::swap(&mut self.cur, &mut self.next);
        }
        let compute = self.device.take_kernel_seconds();
        let (kernel, comm) = self.exchange(last, 1)?;
        Ok((compute + kernel, comm))
    }

    /// The `steps` iterations of the block ending with iteration `it`, each
    /// launch a cone of that many steps (one step: the region itself):
    /// border strips, their halos sent, the inner region launched to
    /// overlap the halos received (on a device's second queue, however
    /// many steps: they write only halo cells of `next`, which the inner
    /// region neither reads nor writes). Returns (kernel seconds, exchange
    /// seconds).
    fn exchange(&mut self, it: u64, steps: usize) -> Result<(f64, f64), RunError> {
        let (k, cur, next) = (self.kernel, self.cur, self.next);
        // A device slowed or failing from an iteration on is so for a
        // period that reaches it.
        self.device.set_iteration(it);
        for i in 0..self.geometry.strips.len() {
            let cones = self.cones(&self.geometry.strips[i], steps);
            self.device
                .launch_steps(k, cur, next, &cones)
                .map_err(|e| self.dev_err(e))?;
        }
        // Without strips nothing is sent (`VpHalo::send_widths`), so nothing
        // waits to be read.
        if !self.geometry.strips.is_empty() {
            self.device.wait().map_err(|e| self.dev_err(e))?;
        }
        let t1 = Instant::now();
        self.post_sends(next, Tag::Halo(it).encode())?;
        let mut comm = t1.elapsed().as_secs_f64();
        let cones = self.cones(&self.geometry.inner, steps);
        match &cones[..] {
            [inner] => self.device.launch_overlapped(k, cur, next, inner),
            _ => self.device.launch_steps_overlapped(k, cur, next, &cones),
        }
        .map_err(|e| self.dev_err(e))?;
        let t2 = Instant::now();
        self.complete_recvs(next, Tag::Halo(it).encode())?;
        // The exchange ends with the halos written (or, device to device,
        // their copies queued). What `wait` waits for beyond them is the
        // inner region's kernel, which on a GPU runs on after the halos:
        // kernel time, not exchange.
        comm += t2.elapsed().as_secs_f64();
        self.device.wait().map_err(|e| self.dev_err(e))?;
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok((self.device.take_kernel_seconds(), comm))
    }

    /// Sends every neighbour its halo cells from `buf`: in device memory to
    /// a neighbour here whose device shares it (an empty message through
    /// the transport says so), else through the host.
    fn post_sends(&mut self, buf: BufferId, tag: u64) -> Result<(), RunError> {
        // Received buffers wait here for a send; a process that receives
        // more than it sends (a one-sided stencil's) keeps no more than its
        // sends can use, or they would pile up every exchange.
        let sends = self.geometry.plan.vp(self.p).sends.len();
        self.recycled.truncate(sends);
        if self.recycled_dev.len() > sends {
            // Copies out of them may still be queued on this device.
            self.device.wait().map_err(|e| self.dev_err(e))?;
            self.recycled_dev.truncate(sends);
        }
        let size = std::mem::size_of::<T>();
        for i in 0..sends {
            let mut msg = self.recycled.pop().unwrap_or_default();
            msg.clear();
            let x = &self.geometry.plan.vp(self.p).sends[i];
            if x.card() > 0 && x.regions.iter().all(dense) && self.mail.shared(self.p, x.peer) {
                let (peer, regions) = (x.peer, x.regions.clone());
                // A received message of this send's sizes (a neighbour's
                // halo to this process is the size of this one's to it).
                let lens: Vec<usize> = regions.iter().map(|r| r.card() * size).collect();
                let reuse = self
                    .recycled_dev
                    .iter()
                    .position(|m| m.lens() == lens)
                    .map(|k| self.recycled_dev.swap_remove(k));
                let cells = self
                    .device
                    .pack_peer(buf, &regions, reuse)
                    .map_err(|e| self.dev_err(e))?;
                self.mail.post(self.p, peer, tag, cells);
                self.transport
                    .send(peer, tag, msg)
                    .map_err(|e| self.net_err(e))?;
                self.messages += 1;
                self.device_messages += 1;
                continue;
            }
            for r in &x.regions {
                self.device
                    .read(buf, r, &mut msg)
                    .map_err(|e| self.dev_err(e))?;
            }
            let peer = x.peer;
            self.transport
                .send(peer, tag, msg)
                .map_err(|e| self.net_err(e))?;
            self.messages += 1;
        }
        Ok(())
    }

    /// Receives every neighbour's cells into the halo of `buf`.
    fn complete_recvs(&mut self, buf: BufferId, tag: u64) -> Result<(), RunError> {
        for i in 0..self.geometry.plan.vp(self.p).recvs.len() {
            let (peer, card) = {
                let x = &self.geometry.plan.vp(self.p).recvs[i];
                (x.peer, x.card())
            };
            let msg = self
                .transport
                .recv(peer, tag)
                .map_err(|e| self.net_err(e))?;
            if msg.is_empty() && card > 0 {
                let Some(cells) = self.mail.take(peer, self.p, tag) else {
                    return Err(self.fail(VpError::Protocol(format!(
                        "halo from {peer} said to be in device memory, but is not"
                    ))));
                };
                let regions = self.geometry.plan.vp(self.p).recvs[i].regions.clone();
                // Kept for a send after the copies are done (the exchange's
                // wait, or the main lane's order before any later copy);
                // held before they start, so that an error dropping the
                // process drops it after the device, which finishes them.
                self.recycled_dev.push(cells);
                let cells = &self.recycled_dev[self.recycled_dev.len() - 1];
                self.device
                    .unpack_peer(buf, &regions, cells)
                    .map_err(|e| self.dev_err(e))?;
                self.recycled.push(msg);
                continue;
            }
            if msg.len() != card {
                return Err(self.fail(VpError::Protocol(format!(
                    "halo from {peer} has {} cells, expected {card}",
                    msg.len()
                ))));
            }
            let mut off = 0;
            let x = &self.geometry.plan.vp(self.p).recvs[i];
            for r in &x.regions {
                self.device
                    .write(buf, r, &msg[off..off + r.card()])
                    .map_err(|e| self.dev_err(e))?;
                off += r.card();
            }
            self.recycled.push(msg);
        }
        Ok(())
    }

    /// Moves to the `proposed` weights (one per device; `windows` every
    /// device's, `holding` those the heuristic saw): only the rows that
    /// change owner travel, into buffers that keep the rest in place; then
    /// boundary cells new to the extent are set and halos refreshed.
    /// `None` when the new blocks would be too thin (nothing changes).
    fn rebalance(
        &mut self,
        it: u64,
        a: &mut AlbState,
        windows: &[heuristics::DeviceWindow],
        holding: &[heuristics::DeviceWindow],
        proposed: Vec<f64>,
    ) -> Result<Option<Redistribution>, RunError> {
        // Start together, so the time measured is the redistribution's, not
        // the slow device finishing its last unbalanced iteration.
        self.transport.barrier().map_err(|e| self.net_err(e))?;
        let t0 = Instant::now();
        let old = self.geometry.layout.clone();
        let Partition::Weighted(d) = old.partition() else {
            return Err(self.fail(VpError::Protocol(
                "load balancing needs a weighted partition (w<d>)".into(),
            )));
        };
        let fp = self.run.stencil.kernel.footprint();
        let Some((weights, new)) =
            relayout(&old, &proposed, &fp.low(), &fp.high()).map_err(|e| self.fail(e.into()))?
        else {
            return Ok(None);
        };
        let plan = RedistributionPlan::new(&old, &new).map_err(|e| self.fail(e.into()))?;
        let tag = Tag::Move(a.rebalances).encode();
        // 1. Rows leaving this process, from the current state (and the
        // level before, for kernels that read it).
        let levels: &[BufferId] = if self.run.stencil.kernel.reads_previous() {
            &[self.cur, self.next]
        } else {
            &[self.cur]
        };
        let levels = levels.to_vec();
        // Moved rows go as slabs (`Alb::slab_bytes`): the sender packs the
        // next while the receiver unpacks the last, and no buffer of a
        // whole region is faulted in page by page.
        let slab_cells = self
            .run
            .alb
            .as_ref()
            .map_or(crate::alb::SLAB_BYTES, |a| a.slab_bytes)
            .div_ceil(std::mem::size_of::<T>().max(1));
        let mut moves_on_device = 0;
        let mut messages = 0;
        for m in plan.sends_of(self.p) {
            if m.region.card() > 0 && dense(&m.region) && self.mail.shared(self.p, m.to) {
                moves_on_device += 1;
                // In device memory, a message per level, announced by an
                // empty one (as halos are).
                for &b in &levels {
                    let cells = self
                        .device
                        .pack_peer(b, std::slice::from_ref(&m.region), None)
                        .map_err(|e| self.dev_err(e))?;
                    self.mail.post(self.p, m.to, tag, cells);
                    messages += 1;
                }
                self.transport
                    .send(m.to, tag, Vec::new())
                    .map_err(|e| self.net_err(e))?;
                continue;
            }
            for slab in m.region.slabs(slab_cells) {
                let mut msg = Vec::with_capacity(slab.card() * levels.len());
                for &b in &levels {
                    self.device
                        .read(b, &slab, &mut msg)
                        .map_err(|e| self.dev_err(e))?;
                }
                self.transport
                    .send(m.to, tag, msg)
                    .map_err(|e| self.net_err(e))?;
                messages += 1;
            }
        }
        // Each phase's end, for the debug log: where a slow rebalance's
        // time went.
        let sent = t0.elapsed();
        // 2. Both buffers to the new extent, kept rows in place.
        let geo = geometry(
            new.clone(),
            fp,
            self.p,
            &self.reach_low,
            &self.reach_high,
            &self.global,
            self.depth,
        )
        .map_err(|e| self.fail(e.into()))?;
        let spare = spare_rows(self.run.alb.as_ref(), &geo);
        for b in [self.cur, self.next] {
            self.device
                .resize(b, &geo.extent, &spare)
                .map_err(|e| self.dev_err(e))?;
        }
        let resized = t0.elapsed();
        // 3. Rows arriving. Those in device memory wait among the received
        // messages until the copies out of them are done: a field, so that
        // an error on the way drops them only after the device, which
        // finishes its copies as it goes.
        let held = self.recycled_dev.len();
        for m in plan.recvs_of(self.p) {
            let slabs = m.region.slabs(slab_cells);
            if slabs.is_empty() {
                continue;
            }
            let first = self
                .transport
                .recv(m.from, tag)
                .map_err(|e| self.net_err(e))?;
            if first.is_empty() {
                for &b in &levels {
                    let Some(rows) = self.mail.take(m.from, self.p, tag) else {
                        return Err(self.fail(VpError::Protocol(format!(
                            "moved rows from {} said to be in device memory, but are not",
                            m.from
                        ))));
                    };
                    self.recycled_dev.push(rows);
                    let rows = &self.recycled_dev[self.recycled_dev.len() - 1];
                    self.device
                        .unpack_peer(b, std::slice::from_ref(&m.region), rows)
                        .map_err(|e| self.dev_err(e))?;
                }
                continue;
            }
            let mut first = Some(first);
            for slab in &slabs {
                let msg = match first.take() {
                    Some(msg) => msg,
                    None => self
                        .transport
                        .recv(m.from, tag)
                        .map_err(|e| self.net_err(e))?,
                };
                let cells = slab.card();
                if msg.len() != cells * levels.len() {
                    return Err(self.fail(VpError::Protocol(format!(
                        "moved rows {slab} from {} have {} cells, expected {}",
                        m.from,
                        msg.len(),
                        cells * levels.len()
                    ))));
                }
                for (&b, part) in levels.iter().zip(msg.chunks(cells)) {
                    self.device
                        .write(b, slab, part)
                        .map_err(|e| self.dev_err(e))?;
                }
            }
        }
        if self.recycled_dev.len() > held {
            // The copies out of them are done before they go.
            self.device.wait().map_err(|e| self.dev_err(e))?;
            self.recycled_dev.truncate(held);
        }
        let received = t0.elapsed();
        // 4. Boundary cells are never computed: set them from init where
        // the tile did not hold them already (the kept rows keep theirs).
        // Filling the whole boundary again cost a GPU milliseconds per
        // rebalance, however few rows moved: two columns of thousands of
        // single-cell rows.
        let held = self.geometry.extent.clone();
        for part in geo.extent.difference(&self.interior) {
            for fresh in part.difference(&held) {
                for b in [self.cur, self.next] {
                    fill_init(self.device.as_mut(), self.run, b, &fresh)
                        .map_err(|e| self.dev_err(e))?;
                }
            }
        }
        self.fit_aux(&geo.extent, &spare)?;
        self.geometry = geo;
        self.wait_by_rows();
        let filled = t0.elapsed();
        // 5. Halos of the current state under the new plan, as deep as
        // they go, as at the end of any period.
        let cur = self.cur;
        let refresh = Tag::Refresh(a.rebalances).encode();
        self.post_sends(cur, refresh)?;
        self.complete_recvs(cur, refresh)?;
        let mine = t0.elapsed().as_secs_f64();
        tracing::debug!(
            vp = self.p,
            iter = it,
            ?sent,
            ?resized,
            ?received,
            ?filled,
            done = ?t0.elapsed(),
            "rebalance phases, each as the time from the start to its end"
        );
        let all = self
            .transport
            .all_gather(&[mine, moves_on_device as f64, messages as f64])
            .map_err(|e| self.net_err(e))?;
        let seconds = all.iter().map(|v| v[0]).fold(0.0, f64::max);
        // Exact in an f64: counts far below 2^53.
        let moves_on_device = all.iter().map(|v| v[1] as usize).sum();
        let messages = all.iter().map(|v| v[2] as usize).sum();
        a.rebalances += 1;
        let rows_moved = plan.moves().iter().map(|m| m.region.sig(d).card()).sum();
        a.heuristic.on_redistribute(&Rebalanced {
            iter: it,
            rebalances: a.rebalances,
            devices: holding,
            seconds,
            rows_moved,
        });
        a.cycle.rebalanced(it);
        let total: f64 = windows.iter().map(|w| w.rows as f64).sum();
        let cells = plan.cells_moved();
        Ok(Some(Redistribution {
            iter: it,
            seconds,
            rows_moved,
            bytes_moved: cells * std::mem::size_of::<T>(),
            moves_on_device,
            messages,
            weights_before: windows.iter().map(|w| w.rows as f64 / total).collect(),
            weights_after: weights,
        }))
    }
}

impl<T, X> Drop for Vp<'_, T, X> {
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

/// One process's side of load balancing.
struct AlbState {
    heuristic: Box<dyn Heuristic>,
    cycle: Cycle,
    /// Which devices hold rows (`heuristics::roster`).
    roster: Roster,
    rebalances: usize,
    /// Every process's kernel times, on their way.
    times: TimesGather,
    redistributions: Vec<Redistribution>,
    checks: Vec<Check>,
}

/// A heuristic check as the loop records it: the values keep their static
/// names, so a check allocates no strings and no map;
/// [`Check::into_record`] gives the report's form after the loop. (ALB's
/// cost an iteration, one device beside an idle one on 130², 50000
/// iterations: 1.0-1.1 us against 1.4-3.2 us with the report's form built
/// at every check.)
struct Check {
    iter: u64,
    decision: DecisionOutcome,
    values: Vec<(&'static str, f64)>,
}

impl Check {
    fn into_record(self) -> DecisionRecord {
        DecisionRecord {
            iter: self.iter,
            decision: self.decision,
            values: self
                .values
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }
}

impl AlbState {
    /// For a run of iterations `start..iters`.
    fn new(alb: &Alb, me: usize, procs: usize, start: u64, iters: u64) -> AlbState {
        let mut heuristic = (alb.factory)();
        heuristic.init(iters);
        AlbState {
            heuristic,
            cycle: Cycle::new(procs, alb.window, start, iters),
            roster: Roster::new(procs, alb.drop_below),
            rebalances: 0,
            times: TimesGather::new(me, procs, alb.direct_times_up_to),
            redistributions: Vec::new(),
            checks: Vec::new(),
        }
    }
}

/// How long receives poll before blocking: the process's `spin`, or at
/// least the transport's default for a process whose device is idle.
fn idle_spin(spin: std::time::Duration, idle: bool) -> std::time::Duration {
    if idle {
        spin.max(hitmap::SPIN)
    } else {
        spin
    }
}

/// A footprint reaching `depth` times as far as `fp` in every direction,
/// corners included (what `depth` steps of `fp` can read): the halo a
/// process needs to compute `depth` iterations between exchanges.
fn deep_footprint(fp: &hitmap::Footprint, depth: usize) -> hitmap::Footprint {
    if depth <= 1 {
        return fp.clone();
    }
    let (low, high) = (fp.low(), fp.high());
    let nd = fp.ndims();
    let corners = (0..1usize << nd)
        .map(|mask| {
            (0..nd)
                .map(|d| {
                    if mask & (1 << d) != 0 {
                        (high[d] * depth) as i64
                    } else {
                        -((low[d] * depth) as i64)
                    }
                })
                .collect()
        })
        .collect();
    hitmap::Footprint::new(nd, corners)
}

fn geometry(
    layout: Layout,
    fp: &hitmap::Footprint,
    p: usize,
    reach_low: &[i64],
    reach_high: &[i64],
    global: &Shape,
    depth: usize,
) -> Result<Geometry, hitmap::HitmapError> {
    let plan = HaloPlan::new(&layout, &deep_footprint(fp, depth))?;
    let block = layout.block(p).clone();
    let k = depth.max(1) as i64;
    let deep_low: Vec<i64> = reach_low.iter().map(|r| r * k).collect();
    let deep_high: Vec<i64> = reach_high.iter().map(|r| r * k).collect();
    let extent = if block.is_empty() {
        Shape::empty(block.ndims())
    } else {
        block.expand(&deep_low, &deep_high).intersect(global)
    };
    // Border strips only along axes with neighbours: elsewhere they would
    // split the work into thin launches for nothing.
    let topo = layout.topology().dims();
    let cut: Vec<bool> = (0..block.ndims())
        .map(|d| {
            layout
                .cut_dims()
                .iter()
                .position(|&c| c == d)
                .is_some_and(|axis| topo[axis] > 1)
        })
        .collect();
    // Neighbours below read up to `high` rows (K times that with deep
    // halos) into this block, those above `low`; a side where no cell is
    // sent (the domain's edge, a neighbour dropped by ALB) needs no strip.
    let (low, high) = plan.vp(p).send_widths(&block, &deep_high, &deep_low);
    let (strips, inner) = split_border(&block, &low, &high, &cut);
    Ok(Geometry {
        layout,
        plan,
        block,
        extent,
        strips,
        inner,
    })
}

/// Spare rows each side along the balanced dimension (none without ALB).
fn spare_rows(alb: Option<&Alb>, geo: &Geometry) -> Vec<i64> {
    let mut spare = vec![0i64; geo.block.ndims()];
    if let (Some(a), Partition::Weighted(d)) = (alb, geo.layout.partition()) {
        spare[d] = ((geo.block.sig(d).card() as f64 * a.spare).ceil() as i64).max(4);
    }
    spare
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_idle_device_polls_whatever_the_policy() {
        // Blocking at once (threads outnumber cores): polls while idle.
        assert_eq!(idle_spin(Duration::ZERO, true), hitmap::SPIN);
        assert_eq!(idle_spin(Duration::ZERO, false), Duration::ZERO);
        // A longer poll asked for stays.
        let long = hitmap::SPIN * 3;
        assert_eq!(idle_spin(long, true), long);
        assert_eq!(idle_spin(long, false), long);
    }
}

//! One virtual process: a device, its two buffers, its part of the halo
//! plan, and (with ALB) its copy of the heuristic.

use crate::alb::{floor_weights, Alb, Windows};
use crate::devices::DeviceSpec;
use crate::error::ConfigError;
use crate::report::Redistribution;
use crate::skeleton::{InitFn, Stencil};
use controllers::{BufferId, Controller, DeviceError, KernelId};
use heuristics::{throughput_weights, Heuristic, Rebalanced, Snapshot};
use hitmap::{
    split_border, HaloPlan, Layout, Partition, RedistributionPlan, Shape, Transport, TransportError,
};
use kernels::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Tags above every iteration number: redistribution traffic.
const REDISTRIBUTE_TAG: u64 = 1 << 62;
/// Tags of the per-iteration kernel times.
const TIMES_TAG: u64 = 1 << 61;

/// What every virtual process reads.
pub(crate) struct Shared<'a, T> {
    pub size: &'a [usize],
    pub stencil: &'a Stencil<T>,
    pub iters: u64,
    pub init: &'a InitFn<T>,
    pub layout: &'a Layout,
    pub alb: Option<&'a Alb>,
    pub progress: &'a AtomicU64,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct IterStats {
    pub wall: f64,
    /// Seconds since the loop started, at the end of this iteration.
    pub elapsed: f64,
    pub compute: f64,
    pub comm: f64,
    pub rows: usize,
}

pub(crate) struct VpResult<T> {
    pub block: Shape,
    pub data: Vec<T>,
    pub stats: Vec<IterStats>,
    pub loop_seconds: f64,
    /// Filled by virtual process 0 only (every process sees the same).
    pub redistributions: Vec<Redistribution>,
    pub decisions: Vec<DecisionRecord>,
}

/// One heuristic check, as the report lists it.
pub(crate) struct DecisionRecord {
    pub iter: u64,
    pub outcome: &'static str,
    pub values: Vec<(&'static str, f64)>,
}

impl DecisionRecord {
    pub fn to_json(&self) -> serde_json::Value {
        let mut e = serde_json::json!({ "iter": self.iter, "decision": self.outcome });
        for (k, v) in &self.values {
            e[*k] = serde_json::json!(v);
        }
        e
    }
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
    sh: &'a Shared<'a, T>,
    p: usize,
    device: String,
    dev: Box<dyn Controller<T>>,
    ep: X,
    kernel: KernelId,
    cur: BufferId,
    next: BufferId,
    geo: Geometry,
    reach_low: Vec<i64>,
    reach_high: Vec<i64>,
    global: Shape,
    interior: Shape,
    /// Received halo buffers, reused for sends.
    spare_bufs: Vec<Vec<T>>,
}

pub(crate) fn run<T: Cell, X: Transport<T>>(
    sh: &Shared<'_, T>,
    spec: &DeviceSpec,
    p: usize,
    ep: X,
) -> Result<VpResult<T>, ConfigError> {
    let dev = spec.build::<T>()?;
    let mut vp = Vp::new(sh, p, spec.to_string(), dev, ep)?;
    vp.run()
}

impl<'a, T: Cell, X: Transport<T>> Vp<'a, T, X> {
    fn fail(&self, why: String) -> ConfigError {
        ConfigError::Run {
            vp: self.p,
            device: self.device.clone(),
            why,
        }
    }
    fn dev_err(&self, e: DeviceError) -> ConfigError {
        self.fail(e.to_string())
    }
    fn net_err(&self, e: TransportError) -> ConfigError {
        self.fail(e.to_string())
    }

    fn new(
        sh: &'a Shared<'a, T>,
        p: usize,
        device: String,
        mut dev: Box<dyn Controller<T>>,
        ep: X,
    ) -> Result<Vp<'a, T, X>, ConfigError> {
        let fp = sh.stencil.kernel.footprint();
        let reach_low: Vec<i64> = fp.low().iter().map(|&x| x as i64).collect();
        let reach_high: Vec<i64> = fp.high().iter().map(|&x| x as i64).collect();
        let global = Shape::from_sizes(sh.size);
        let geo = geometry(sh.layout.clone(), fp, p, &reach_low, &reach_high, &global)?;
        let err = |e: DeviceError| ConfigError::Run {
            vp: p,
            device: device.clone(),
            why: e.to_string(),
        };
        let spare = spare_rows(sh.alb, &geo);
        let capacity = geo.extent.expand(&spare, &spare).intersect(&global);
        let cur = dev.alloc(&geo.extent, &capacity).map_err(err)?;
        let next = dev.alloc(&geo.extent, &capacity).map_err(err)?;
        dev.fill(cur, &geo.extent, sh.init.as_ref()).map_err(err)?;
        dev.fill(next, &geo.extent, sh.init.as_ref()).map_err(err)?;
        let kernel = dev.load(sh.stencil.kernel.clone()).map_err(err)?;
        let interior = sh.layout.domain().clone();
        Ok(Vp {
            sh,
            p,
            device,
            dev,
            ep,
            kernel,
            cur,
            next,
            geo,
            reach_low,
            reach_high,
            global,
            interior,
            spare_bufs: Vec::new(),
        })
    }

    fn run(&mut self) -> Result<VpResult<T>, ConfigError> {
        let sh = self.sh;
        let mut stats = Vec::with_capacity(sh.iters as usize);
        let mut alb = sh.alb.map(|a| AlbState {
            heuristic: (a.factory)(),
            windows: Windows::new(self.geo.layout.procs(), a.window),
            rebalances: 0,
            last_compute: 0.0,
            fresh_from: 0,
        });
        if let Some(a) = alb.as_mut() {
            a.heuristic.init(sh.iters);
        }
        let mut redistributions = Vec::new();
        let mut decisions = Vec::new();
        let started = Instant::now();
        for it in 0..sh.iters {
            let t0 = Instant::now();
            let rows = self.rows_of(self.p);
            let (compute, mut comm) = self.step(it)?;
            if let Some(a) = alb.as_mut() {
                // Kernel times travel point to point and are read one iteration
                // later, when they have long arrived: no process waits on the
                // gather, and all decide on the same numbers at the same iteration.
                let tg = Instant::now();
                let peers = self.geo.layout.procs();
                for q in (0..peers).filter(|&q| q != self.p) {
                    self.ep
                        .send_values(q, TIMES_TAG + it, vec![compute])
                        .map_err(|e| self.net_err(e))?;
                }
                if it >= 1 {
                    let row = self.gather_times(it - 1, a.last_compute)?;
                    if it > a.fresh_from {
                        a.windows.push(&row);
                    }
                }
                a.last_compute = compute;
                comm += tg.elapsed().as_secs_f64();
                if a.windows.full() && it + 1 < sh.iters {
                    let rows: Vec<usize> = (0..peers).map(|q| self.rows_of(q)).collect();
                    let windows = a.windows.snapshot(&rows);
                    let snap = Snapshot {
                        iter: it,
                        rebalances: a.rebalances,
                        remaining: sh.iters - 1 - it,
                        devices: &windows,
                    };
                    let d = a.heuristic.check(&snap);
                    let mut outcome = if d.rebalance { "rebalance" } else { "keep" };
                    if self.p == 0 {
                        tracing::trace!(iter = it, decision = outcome, values = ?d.values, "heuristic check");
                    }
                    if d.rebalance {
                        match self.rebalance(it, a, &windows, d.weights.clone())? {
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
                                // This iteration's times predate the new layout.
                                a.fresh_from = it + 1;
                                redistributions.push(r);
                            }
                            None => outcome = "skipped: blocks would be thinner than the stencil",
                        }
                    }
                    // Every process decides; process 0 keeps the record (as
                    // plain data: JSON is built once, at the end).
                    if self.p == 0 {
                        decisions.push(DecisionRecord {
                            iter: it,
                            outcome,
                            values: d.values,
                        });
                    }
                }
            }
            stats.push(IterStats {
                wall: t0.elapsed().as_secs_f64(),
                elapsed: started.elapsed().as_secs_f64(),
                compute,
                comm,
                rows,
            });
            sh.progress.fetch_max(it + 1, Ordering::Relaxed);
        }
        if let Some(a) = alb.as_mut() {
            if sh.iters > 0 {
                // Collect the last times, so no message is left behind.
                self.gather_times(sh.iters - 1, a.last_compute)?;
            }
            a.heuristic.end();
        }
        let loop_seconds = started.elapsed().as_secs_f64();
        let mut data = Vec::with_capacity(self.geo.block.card());
        self.dev
            .read(self.cur, &self.geo.block, &mut data)
            .map_err(|e| self.dev_err(e))?;
        Ok(VpResult {
            block: self.geo.block.clone(),
            data,
            stats,
            loop_seconds,
            redistributions: if self.p == 0 {
                redistributions
            } else {
                Vec::new()
            },
            decisions,
        })
    }

    /// Every process's kernel time of iteration `it` (this one's is `mine`).
    fn gather_times(&mut self, it: u64, mine: f64) -> Result<Vec<f64>, ConfigError> {
        (0..self.geo.layout.procs())
            .map(|q| {
                if q == self.p {
                    Ok(mine)
                } else {
                    let v = self
                        .ep
                        .recv_values(q, TIMES_TAG + it)
                        .map_err(|e| self.net_err(e))?;
                    Ok(v.first().copied().unwrap_or(0.0))
                }
            })
            .collect()
    }

    /// Rows of process `q` along the balanced (or first cut) dimension.
    fn rows_of(&self, q: usize) -> usize {
        let d = self.geo.layout.cut_dims().first().copied().unwrap_or(0);
        self.geo.layout.block(q).sig(d).card()
    }

    /// One iteration: border strips, their halos sent while the inner region
    /// computes, halos received. Returns (kernel seconds, exchange seconds).
    fn step(&mut self, it: u64) -> Result<(f64, f64), ConfigError> {
        let (k, cur, next) = (self.kernel, self.cur, self.next);
        self.dev.set_iteration(it);
        for i in 0..self.geo.strips.len() {
            let s = &self.geo.strips[i];
            self.dev
                .launch(k, cur, next, s)
                .map_err(|e| self.dev_err(e))?;
        }
        self.dev.wait().map_err(|e| self.dev_err(e))?;
        let t1 = Instant::now();
        self.post_sends(next, it)?;
        let mut comm = t1.elapsed().as_secs_f64();
        let inner = self.geo.inner.clone();
        self.dev
            .launch(k, cur, next, &inner)
            .map_err(|e| self.dev_err(e))?;
        let t2 = Instant::now();
        self.complete_recvs(next, it)?;
        self.dev.wait().map_err(|e| self.dev_err(e))?;
        comm += t2.elapsed().as_secs_f64();
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok((self.dev.take_kernel_seconds(), comm))
    }

    /// Sends every neighbour its halo cells from `buf`.
    fn post_sends(&mut self, buf: BufferId, tag: u64) -> Result<(), ConfigError> {
        for i in 0..self.geo.plan.vp(self.p).sends.len() {
            let mut msg = self.spare_bufs.pop().unwrap_or_default();
            msg.clear();
            let x = &self.geo.plan.vp(self.p).sends[i];
            for r in &x.regions {
                self.dev
                    .read(buf, r, &mut msg)
                    .map_err(|e| self.dev_err(e))?;
            }
            let peer = x.peer;
            self.ep.send(peer, tag, msg).map_err(|e| self.net_err(e))?;
        }
        Ok(())
    }

    /// Receives every neighbour's cells into the halo of `buf`.
    fn complete_recvs(&mut self, buf: BufferId, tag: u64) -> Result<(), ConfigError> {
        for i in 0..self.geo.plan.vp(self.p).recvs.len() {
            let (peer, card) = {
                let x = &self.geo.plan.vp(self.p).recvs[i];
                (x.peer, x.card())
            };
            let msg = self.ep.recv(peer, tag).map_err(|e| self.net_err(e))?;
            if msg.len() != card {
                return Err(self.fail(format!(
                    "halo from {peer} has {} cells, expected {card}",
                    msg.len()
                )));
            }
            let mut off = 0;
            let x = &self.geo.plan.vp(self.p).recvs[i];
            for r in &x.regions {
                self.dev
                    .write(buf, r, &msg[off..off + r.card()])
                    .map_err(|e| self.dev_err(e))?;
                off += r.card();
            }
            self.spare_bufs.push(msg);
        }
        Ok(())
    }

    /// Moves to weights proportional to measured throughput: only the rows
    /// that change owner travel, into buffers that keep the rest in place;
    /// then boundary cells new to the extent are set and halos refreshed.
    /// `None` when the new blocks would be too thin (nothing changes).
    fn rebalance(
        &mut self,
        it: u64,
        a: &mut AlbState,
        windows: &[heuristics::DeviceWindow],
        chosen: Option<Vec<f64>>,
    ) -> Result<Option<Redistribution>, ConfigError> {
        // Start together, so the time measured is the redistribution's, not
        // the slow device finishing its last unbalanced iteration.
        self.ep.barrier().map_err(|e| self.net_err(e))?;
        let t0 = Instant::now();
        let old = self.geo.layout.clone();
        let Partition::Weighted(d) = old.partition() else {
            return Err(self.fail("load balancing needs a weighted partition (w<d>)".into()));
        };
        let rows = old.domain().sig(d).card();
        let fp = self.sh.stencil.kernel.footprint();
        let min_rows = fp.low()[d].max(fp.high()[d]).max(1);
        let proposed = chosen.unwrap_or_else(|| throughput_weights(windows));
        if proposed.len() != old.procs() || proposed.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(self.fail(format!(
                "the heuristic proposed invalid weights {proposed:?}"
            )));
        }
        let Some(weights) = floor_weights(&proposed, rows, min_rows) else {
            return Ok(None);
        };
        let new = Layout::new(old.domain(), old.partition(), old.procs(), Some(&weights))?;
        if new.check_width(&fp.low(), &fp.high()).is_err() {
            return Ok(None);
        }
        let plan = RedistributionPlan::new(&old, &new)?;
        let tag = REDISTRIBUTE_TAG + 2 * a.rebalances as u64;
        // 1. Rows leaving this process, from the current state.
        for m in plan.sends_of(self.p) {
            let mut msg = Vec::with_capacity(m.region.card());
            self.dev
                .read(self.cur, &m.region, &mut msg)
                .map_err(|e| self.dev_err(e))?;
            self.ep.send(m.to, tag, msg).map_err(|e| self.net_err(e))?;
        }
        // 2. Both buffers to the new extent, kept rows in place.
        let geo = geometry(
            new.clone(),
            fp,
            self.p,
            &self.reach_low,
            &self.reach_high,
            &self.global,
        )?;
        let spare = spare_rows(self.sh.alb, &geo);
        for b in [self.cur, self.next] {
            self.dev
                .resize(b, &geo.extent, &spare)
                .map_err(|e| self.dev_err(e))?;
        }
        // 3. Rows arriving.
        for m in plan.recvs_of(self.p) {
            let msg = self.ep.recv(m.from, tag).map_err(|e| self.net_err(e))?;
            self.dev
                .write(self.cur, &m.region, &msg)
                .map_err(|e| self.dev_err(e))?;
        }
        // 4. Boundary cells are never computed: set them from init.
        for part in geo.extent.difference(&self.interior) {
            for b in [self.cur, self.next] {
                self.dev
                    .fill(b, &part, self.sh.init.as_ref())
                    .map_err(|e| self.dev_err(e))?;
            }
        }
        self.geo = geo;
        // 5. Halos of the current state under the new plan.
        let cur = self.cur;
        self.post_sends(cur, tag + 1)?;
        self.complete_recvs(cur, tag + 1)?;
        let mine = t0.elapsed().as_secs_f64();
        let seconds = self
            .ep
            .all_gather(&[mine])
            .map_err(|e| self.net_err(e))?
            .iter()
            .map(|v| v[0])
            .fold(0.0, f64::max);
        a.rebalances += 1;
        a.heuristic.on_redistribute(&Rebalanced {
            iter: it,
            rebalances: a.rebalances,
            devices: windows,
            seconds,
        });
        a.windows.clear();
        let total: f64 = windows.iter().map(|w| w.rows as f64).sum();
        let cells = plan.cells_moved();
        Ok(Some(Redistribution {
            iter: it,
            seconds,
            rows_moved: plan.moves().iter().map(|m| m.region.sig(d).card()).sum(),
            bytes_moved: cells * std::mem::size_of::<T>(),
            weights_before: windows.iter().map(|w| w.rows as f64 / total).collect(),
            weights_after: weights,
        }))
    }
}

struct AlbState {
    heuristic: Box<dyn Heuristic>,
    windows: Windows,
    rebalances: usize,
    /// This process's kernel time of the previous iteration.
    last_compute: f64,
    /// First iteration whose times describe the current layout.
    fresh_from: u64,
}

fn geometry(
    layout: Layout,
    fp: &hitmap::Footprint,
    p: usize,
    reach_low: &[i64],
    reach_high: &[i64],
    global: &Shape,
) -> Result<Geometry, ConfigError> {
    let plan = HaloPlan::new(&layout, fp)?;
    let block = layout.block(p).clone();
    let extent = if block.is_empty() {
        Shape::empty(block.ndims())
    } else {
        block.expand(reach_low, reach_high).intersect(global)
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
    // Neighbours below read up to `high` rows into this block, those above `low`.
    let (strips, inner) = split_border(&block, reach_high, reach_low, &cut);
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

//! A virtual process's side of load balancing: its kernel time shared,
//! the heuristic asked once the windows are full, and a rebalance's five
//! phases when it says so.

use super::geometry::Geometry;
use super::{dense, fill_init, Vp};
use crate::alb::Alb;
use crate::error::{ProtocolError, RunError, VpError};
use crate::report::{DecisionOutcome, DecisionRecord, Redistribution};
use crate::tag::Tag;
use crate::times::TimesGather;
use controllers::BufferId;
use heuristics::{relayout, CheckLog, Cycle, Heuristic, Ordered, Rebalanced, Roster, Snapshot};
use hitmap::{Partition, RedistributionPlan};
use kernels::Cell;
use std::time::Instant;

impl<T: Cell> Vp<'_, T> {
    /// ALB after the period of `len` iterations from `first` (kernel
    /// seconds `compute`): share the time, read the others' of the period
    /// the gather delivers now (`crate::times`), and, once the windows are
    /// full, ask the heuristic and maybe rebalance (so rebalances fall
    /// between periods, where every ghost cell has just been exchanged).
    /// Returns the seconds spent exchanging times.
    pub(super) fn balance(
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
            .advance(&mut *self.transport, period.clone(), mine)
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
            remaining: self.run.options.iters - 1 - it,
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
                .map_err(|e| self.fail(VpError::Weights(e)))?;
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
        let moved = outcome == DecisionOutcome::Rebalance;
        a.checks.push(
            Check {
                iter: it,
                decision: outcome,
                values: d.values,
            },
            moved,
        );
        Ok(comm)
    }

    /// Moves to the `proposed` weights (one per device; `windows` every
    /// device's window, `holding` those of the devices holding rows), in
    /// five phases: the rows leaving this process are sent, both buffers
    /// take the new extent (kept rows in place), the arriving rows are
    /// received, the boundary cells the tile did not hold are set from the
    /// init, and the halos are exchanged under the new plan. `None` when
    /// the new layout would leave a block thinner than the stencil needs.
    pub(super) fn rebalance(
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
            return Err(self.fail(VpError::Protocol(ProtocolError::NotWeighted)));
        };
        let fp = self.run.problem.stencil.kernel.footprint();
        let Some((weights, new)) =
            relayout(&old, &proposed, fp.low(), fp.high()).map_err(|e| self.fail(e.into()))?
        else {
            return Ok(None);
        };
        let plan = RedistributionPlan::new(&old, &new).map_err(|e| self.fail(e.into()))?;
        let moving = Moving {
            tag: Tag::Move(a.rebalances).encode(),
            levels: self.levels(),
            slab_cells: self
                .run
                .options
                .alb
                .as_ref()
                .map_or(crate::alb::SLAB_BYTES, |a| a.slab_bytes)
                .div_ceil(std::mem::size_of::<T>().max(1)),
        };
        // Each phase's end, for the debug log: where a slow rebalance's
        // time went.
        let (moves_on_device, messages) = self.send_moved(&plan, &moving)?;
        let sent = t0.elapsed();
        // Phase 2, both buffers to the new extent, kept rows in place.
        let depth = self.depth;
        let (geo, spare) = self.resize_to(new, depth)?;
        let resized = t0.elapsed();
        self.receive_moved(&plan, &moving)?;
        let received = t0.elapsed();
        self.settle(geo, &spare)?;
        let filled = t0.elapsed();
        // Phase 5, the halos of the current state under the new plan, as deep as
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

    /// The time levels a rebalance moves: the current state, and the level
    /// before for kernels that read it.
    fn levels(&self) -> Vec<BufferId> {
        if self.run.problem.stencil.kernel.reads_previous() {
            vec![self.cur, self.next]
        } else {
            vec![self.cur]
        }
    }

    /// Phase 1, the rows leaving this process. Moved rows go as slabs
    /// (`Alb::slab_bytes`): the sender packs the next while the receiver
    /// unpacks the last, and no buffer of a whole region is faulted in
    /// page by page. Returns the moves that stayed in device memory and
    /// the messages sent.
    fn send_moved(
        &mut self,
        plan: &RedistributionPlan,
        moving: &Moving,
    ) -> Result<(usize, usize), RunError> {
        let (mut moves_on_device, mut messages) = (0, 0);
        let tag = moving.tag;
        for m in plan.sends_of(self.p) {
            if m.region.card() > 0 && dense(&m.region) && self.mail.shared(self.p, m.to) {
                moves_on_device += 1;
                // In device memory, a message per level, announced by an
                // empty one (as halos are).
                for &b in &moving.levels {
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
            for slab in m.region.slabs(moving.slab_cells) {
                let mut msg = Vec::with_capacity(slab.card() * moving.levels.len());
                for &b in &moving.levels {
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
        Ok((moves_on_device, messages))
    }

    /// Phase 3, the rows arriving. Those in device memory wait among the received
    /// messages until the copies out of them are done: a field, so that an
    /// error on the way drops them only after the device, which finishes
    /// its copies as it goes.
    fn receive_moved(
        &mut self,
        plan: &RedistributionPlan,
        moving: &Moving,
    ) -> Result<(), RunError> {
        let (tag, levels) = (moving.tag, &moving.levels);
        let held = self.recycled_dev.len();
        for m in plan.recvs_of(self.p) {
            let slabs = m.region.slabs(moving.slab_cells);
            if slabs.is_empty() {
                continue;
            }
            let first = self
                .transport
                .recv(m.from, tag)
                .map_err(|e| self.net_err(e))?;
            if first.is_empty() {
                for &b in levels {
                    let Some(rows) = self.mail.take(m.from, self.p, tag) else {
                        return Err(self.fail(VpError::Protocol(
                            ProtocolError::MovedNotOnDevice { peer: m.from },
                        )));
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
                    return Err(self.fail(VpError::Protocol(ProtocolError::MovedCells {
                        rows: slab.clone(),
                        peer: m.from,
                        got: msg.len(),
                        expected: cells * levels.len(),
                    })));
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
        Ok(())
    }

    /// Phase 4, the process takes its new geometry. Boundary cells are never
    /// computed: they are set from init where the tile did not hold them
    /// already (the kept rows keep theirs). Filling the whole boundary
    /// again cost a GPU milliseconds per rebalance, however few rows
    /// moved: two columns of thousands of single-cell rows.
    fn settle(&mut self, geo: Geometry, spare: &[i64]) -> Result<(), RunError> {
        let held = self.geometry.extent.clone();
        for part in geo.extent.difference(&self.interior) {
            for fresh in part.difference(&held) {
                fill_init(
                    self.device.as_mut(),
                    self.run,
                    [self.cur, self.next],
                    &fresh,
                )
                .map_err(|e| self.dev_err(e))?;
            }
        }
        self.fit_aux(&geo.extent, spare)?;
        self.geometry = geo;
        self.wait_by_rows();
        Ok(())
    }
}

/// What a rebalance moves, and how: its message tag, the time levels, and
/// the cells of a slab.
struct Moving {
    tag: u64,
    levels: Vec<BufferId>,
    slab_cells: usize,
}

/// One process's side of load balancing.
pub(super) struct AlbState {
    pub(super) heuristic: Box<dyn Heuristic>,
    pub(super) cycle: Cycle,
    /// Which devices hold rows (`heuristics::roster`).
    pub(super) roster: Roster,
    pub(super) rebalances: usize,
    /// Every process's kernel times, on their way.
    pub(super) times: TimesGather,
    pub(super) redistributions: Vec<Redistribution>,
    /// Every check that rebalanced, the latest others (`heuristics::CheckLog`).
    pub(super) checks: CheckLog<Check>,
}

/// A heuristic check as the loop records it: the values keep their static
/// names, so a check allocates no strings and no map;
/// [`Check::into_record`] gives the report's form after the loop, since
/// building it at every check was most of ALB's cost an iteration.
pub(super) struct Check {
    iter: u64,
    decision: DecisionOutcome,
    values: Vec<(&'static str, f64)>,
}

impl Ordered for Check {
    fn order(&self) -> u64 {
        self.iter
    }
}

impl Check {
    pub(super) fn into_record(self) -> DecisionRecord {
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
    pub(super) fn new(alb: &Alb, me: usize, procs: usize, start: u64, iters: u64) -> AlbState {
        let mut heuristic = (alb.factory)();
        heuristic.init(iters);
        AlbState {
            heuristic,
            cycle: Cycle::new(procs, alb.window, start, iters),
            roster: Roster::new(procs, alb.drop_below),
            rebalances: 0,
            times: TimesGather::new(me, procs, alb.direct_times_up_to),
            redistributions: Vec::new(),
            checks: CheckLog::new(alb.checks_kept),
        }
    }
}

//! A virtual process's periods: the iterations between halo exchanges
//! (one, or the halo depth), computed border strips first so the
//! exchange overlaps the inner region; the exchange itself; and changing
//! the depth (`--halo-depth auto`'s trials and choice).

use super::{dense, fill_init, Vp};
use crate::depth_trials::Trials;
use crate::error::{ProtocolError, RunError, VpError};
use crate::report::DepthTrial;
use crate::tag::Tag;
use controllers::BufferId;
use hitmap::Shape;
use kernels::Cell;
use std::time::Instant;

impl<T: Cell> Vp<'_, T> {
    /// Has the device prepare the fused launches of the periods ahead
    /// (a GPU compiles a fused kernel at its first launch: about 0.25 s
    /// with NVRTC on an H200, which fell inside the timed loop): every
    /// period length of a run from `start` at the halo depth, or each
    /// depth `--halo-depth auto` tries (the lengths after its choice,
    /// short ones at the end of the run, compile at their first launch).
    pub(super) fn prepare_periods(&mut self, start: u64, trials: bool) -> Result<(), RunError> {
        if !self.aux.is_empty() {
            // Such kernels go step by step (`Vp::period`).
            return Ok(());
        }
        let mut lengths = std::collections::BTreeSet::new();
        if trials {
            lengths.extend(crate::depth_trials::CANDIDATES);
        } else if self.depth > 1 {
            let mut it = start;
            while it < self.run.options.iters {
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
    pub(super) fn period_len(&self, it: u64) -> usize {
        let mut end = (it + self.depth as u64).min(self.run.options.iters);
        let cuts = [
            self.run.problem.snapshot.as_ref().map(|s| s.0),
            self.run.options.checkpoint.as_ref().map(|c| c.every),
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
    pub(super) fn cones(&self, region: &Shape, len: usize) -> Vec<Shape> {
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
    pub(super) fn period(&mut self, it: u64, len: usize) -> Result<(f64, f64), RunError> {
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
    pub(super) fn exchange(&mut self, it: u64, steps: usize) -> Result<(f64, f64), RunError> {
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
    pub(super) fn post_sends(&mut self, buf: BufferId, tag: u64) -> Result<(), RunError> {
        // Received buffers wait here for a send; a process that receives
        // more than it sends (a one-sided stencil's) keeps no more than its
        // sends can use, or they would pile up every exchange.
        let sends = self.geometry.halo.sends.len();
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
            let x = &self.geometry.halo.sends[i];
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
    pub(super) fn complete_recvs(&mut self, buf: BufferId, tag: u64) -> Result<(), RunError> {
        for i in 0..self.geometry.halo.recvs.len() {
            let (peer, card) = {
                let x = &self.geometry.halo.recvs[i];
                (x.peer, x.card())
            };
            let msg = self
                .transport
                .recv(peer, tag)
                .map_err(|e| self.net_err(e))?;
            if msg.is_empty() && card > 0 {
                let Some(cells) = self.mail.take(peer, self.p, tag) else {
                    return Err(
                        self.fail(VpError::Protocol(ProtocolError::HaloNotOnDevice { peer }))
                    );
                };
                let regions = self.geometry.halo.recvs[i].regions.clone();
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
                return Err(self.fail(VpError::Protocol(ProtocolError::HaloCells {
                    peer,
                    got: msg.len(),
                    expected: card,
                })));
            }
            let mut off = 0;
            let x = &self.geometry.halo.recvs[i];
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

    /// Runs at `depth` from iteration `it` (the end of a period): both
    /// buffers over the deeper or shallower extent, boundary cells new to it
    /// from the init function, and the ghost cells of the new depth from
    /// the neighbours.
    pub(super) fn set_depth(&mut self, depth: usize, it: u64) -> Result<(), RunError> {
        if depth == self.depth {
            return Ok(());
        }
        let (geo, spare) = self.resize_to(self.geometry.layout.clone(), depth)?;
        for part in geo.extent.difference(&self.interior) {
            fill_init(self.device.as_mut(), self.run, [self.cur, self.next], &part)
                .map_err(|e| self.dev_err(e))?;
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
    pub(super) fn fit_aux(&mut self, extent: &Shape, spare: &[i64]) -> Result<(), RunError> {
        let held = self.geometry.extent.clone();
        let fields = self.run.problem.stencil.kernel.aux_fields();
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
    pub(super) fn decide_depth(
        &mut self,
        t: &Trials,
    ) -> Result<(Vec<DepthTrial>, usize), RunError> {
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
}

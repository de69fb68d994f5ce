//! Snapshots and checkpoints: a virtual process's block written while the
//! run goes on.

use super::balance::AlbState;
use super::Vp;
use crate::checkpoint::{self, BlockEntry, Manifest};
use crate::error::{ProtocolError, RunError, VpError};
use crate::report::CheckpointRecord;
use crate::tag::Tag;
use kernels::Cell;
use std::time::Instant;

impl<T: Cell> Vp<'_, T> {
    /// Sends this process's block to process 0, which assembles the field
    /// and hands it to the snapshot function.
    pub(super) fn snapshot(&mut self, iter: u64) -> Result<(), RunError> {
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
                return Err(self.fail(VpError::Protocol(ProtocolError::SnapshotBlock {
                    peer: q,
                    got: v.len(),
                    expected: layout.block(q).card(),
                })));
            }
            parts.push(v);
        }
        let grid = self
            .run
            .assemble_blocks((0..layout.procs()).map(|q| (layout.block(q), parts[q].as_slice())));
        if let Some((_, f)) = &self.run.problem.snapshot {
            f(iter, grid.view()).map_err(|e| self.fail(VpError::Snapshot { iter, why: e }))?;
        }
        Ok(())
    }

    /// Waits for the last checkpoint's block write and (process 0) its
    /// commit, keeping the snapshot buffers for the next one.
    pub(super) fn finish_checkpoint(&mut self) -> Result<(), RunError> {
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
    pub(super) fn checkpoint(
        &mut self,
        iter: u64,
        alb: Option<&AlbState>,
    ) -> Result<CheckpointRecord, RunError> {
        let t0 = Instant::now();
        self.finish_checkpoint()?;
        let Some(c) = self.run.options.checkpoint.clone() else {
            return Err(self.fail(VpError::Protocol(ProtocolError::NoCheckpoint)));
        };
        let block = self.geometry.block.clone();
        let levels = if self.run.problem.stencil.kernel.reads_previous() {
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
            checkpoint::write_block(&c, &self.run.claim, iter, self.p, block.card(), data)
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
                            return Err(self.fail(VpError::Protocol(
                                ProtocolError::CheckpointReport {
                                    peer: q,
                                    got: v.len(),
                                },
                            )))
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
                stencil: self.run.problem.stencil.name.clone(),
                kernel: self.run.problem.stencil.kind.to_string(),
                identity: self.run.options.identity.clone(),
                run: self.run.claim.run.clone(),
                cell: std::any::type_name::<T>().to_string(),
                size: self.run.problem.size.clone(),
                iteration: iter,
                levels: nlevels,
                devices: self
                    .run
                    .options
                    .devices
                    .iter()
                    .map(|d| d.to_string())
                    .collect(),
                partition: self.run.options.partition.to_string(),
                weights: (0..procs).map(|q| self.rows_of(q) as f64).collect(),
                heuristic: alb.map(|a| a.heuristic.name().to_string()),
                rebalances: alb.map_or(0, |a| a.rebalances),
                heuristic_state: alb.map_or_else(Vec::new, |a| a.heuristic.state()),
                roster_state: alb.map_or_else(Vec::new, |a| a.roster.state()),
                blocks,
                // Sealed by the commit.
                checksum: 0,
            };
            self.committing = Some(
                checkpoint::spawn_commit(&c, &self.run.claim, m)
                    .map_err(|e| self.fail(e.into()))?,
            );
        }
        Ok(CheckpointRecord {
            iter,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }
}

//! A run spread over MPI ranks (feature `mpi`): the [`Job`] whose virtual
//! processes talk over `MpiTransport`, and whose rank 0 gathers the blocks
//! and statistics into the grid and report a single process would make.
//!
//! Control messages (agreement, gathering) use `MPI_COMM_WORLD` from the
//! thread that started the run, only while no virtual process runs, with
//! tags above the transport's.

use super::print_error;
use crate::error::{chain, ControlError, ProtocolError, RunError, VpError};
use crate::job::{Job, JobInfo, Readiness, WaitPolicy};
use crate::options::PEER_TIMEOUT;
use crate::report::Report;
use crate::results::{VpMeta, VpResult};
use hitmap::{MpiTransport, Placement, Transport, MAX_TAG};
use kernels::Cell;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const META_TAG: i32 = MAX_TAG + 1;
const DATA_TAG: i32 = MAX_TAG + 2;

/// This rank's part of an MPI job.
pub(crate) struct MpiJob<'a> {
    info: &'a JobInfo,
    placement: OnceLock<Arc<Placement>>,
    /// How long a receive waits for a silent peer.
    patience: Option<Duration>,
}

impl<'a> MpiJob<'a> {
    pub(crate) fn new(info: &'a JobInfo) -> MpiJob<'a> {
        MpiJob {
            info,
            placement: OnceLock::new(),
            patience: Some(PEER_TIMEOUT),
        }
    }

    /// Receives wait at most `limit` for a silent peer (`None`: for ever).
    pub(crate) fn patience(mut self, limit: Option<Duration>) -> MpiJob<'a> {
        self.patience = limit;
        self
    }
}

impl<T: Cell> Job<T> for MpiJob<'_> {
    fn info(&self) -> &JobInfo {
        self.info
    }

    fn agree(&self, mine: Readiness) -> Result<(), RunError> {
        super::agree(self.info, mine)
    }

    fn place(&self, owners: &[usize]) -> Result<(), RunError> {
        let placement = Placement::new(owners.to_vec())
            .map_err(|e| RunError::Mpi(ControlError::Placement(e)))?;
        let _ = self.placement.set(Arc::new(placement));
        Ok(())
    }

    // A receive with a patience probes, hot for the spin, then yielding
    // (MPI cannot block with a time limit); where threads outnumber cores
    // a hot probe would take the core of the thread it waits for.
    fn endpoint(&self, p: usize, wait: WaitPolicy) -> Result<Box<dyn Transport<T>>, VpError> {
        let placement = self
            .placement
            .get()
            .ok_or(VpError::Protocol(ProtocolError::BeforePlacement))?;
        let mut ep = MpiTransport::<T>::new(p, placement.clone())?.patience(self.patience);
        ep.set_spin(match wait {
            WaitPolicy::PollThenBlock => hitmap::SPIN,
            WaitPolicy::Block => Duration::ZERO,
        });
        Ok(Box::new(ep))
    }

    fn fails_fast(&self) -> bool {
        true
    }

    fn on_failure(&self, error: &RunError) {
        // The others wait for messages this rank will never send: only
        // ending the whole job stops them. A silent peer is the news, not
        // this rank's process that waited for it.
        let line = match error.silent_peer(&self.info.hosts, self.info.rank) {
            Some(silent) => silent.to_string(),
            None => format!("rank {}: {}", self.info.rank, chain(error)),
        };
        print_error(&line);
        SimpleCommunicator::world().abort(1)
    }

    fn gather(
        &self,
        owners: &[usize],
        mine: Vec<(usize, VpResult<T>)>,
    ) -> Result<Option<Vec<VpResult<T>>>, RunError> {
        let world = SimpleCommunicator::world();
        if self.info.rank != 0 {
            let root = world.process_at_rank(0);
            for (p, r) in &mine {
                let meta = serde_json::to_vec(&VpMeta::of(*p, r)).expect("metadata serialises");
                root.send_with_tag(&meta[..], META_TAG);
                root.send_with_tag(bytemuck::cast_slice::<T, u8>(&r.data), DATA_TAG);
            }
            return Ok(None);
        }
        let mut all: Vec<Option<VpResult<T>>> = (0..owners.len()).map(|_| None).collect();
        for (p, r) in mine {
            all[p] = Some(r);
        }
        for p in (0..owners.len()).filter(|&p| owners[p] != 0) {
            let from = world.process_at_rank(owners[p] as i32);
            let (meta, _) = from.receive_vec_with_tag::<u8>(META_TAG);
            let meta: VpMeta = serde_json::from_slice(&meta)
                .map_err(|source| RunError::Mpi(ControlError::Description { vp: p, source }))?;
            let (q, mut r) = meta.into_result::<T>();
            if q != p {
                return Err(RunError::Mpi(ControlError::WrongProcess {
                    rank: owners[p],
                    sent: q,
                    due: p,
                }));
            }
            let (msg, status) = from.matched_probe_with_tag(DATA_TAG);
            let bytes = status.count(u8::equivalent_datatype()) as usize;
            if bytes != r.block.card() * std::mem::size_of::<T>() {
                return Err(RunError::Mpi(ControlError::BlockBytes {
                    vp: p,
                    bytes,
                    cells: r.block.card(),
                }));
            }
            r.data = vec![T::zeroed(); r.block.card()];
            msg.matched_receive_into(bytemuck::cast_slice_mut::<T, u8>(&mut r.data));
            all[p] = Some(r);
        }
        Ok(Some(all.into_iter().flatten().collect()))
    }

    fn share(&self, report: Option<Report>) -> Result<Report, RunError> {
        if let Some(r) = report {
            broadcast_from_root(Some(serde_json::to_vec(&r).expect("reports serialise")));
            return Ok(r);
        }
        serde_json::from_slice(&broadcast_from_root(None))
            .map_err(|e| RunError::Mpi(ControlError::Report(e)))
    }
}

/// Every rank's bytes, in rank order.
pub(crate) fn all_gather_bytes(mine: &[u8]) -> Vec<Vec<u8>> {
    let world = SimpleCommunicator::world();
    let n = world.size() as usize;
    let mut counts = vec![0i32; n];
    world.all_gather_into(&(mine.len() as i32), &mut counts[..]);
    let displs: Vec<i32> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut all = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
    {
        let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        world.all_gather_varcount_into(mine, &mut part);
    }
    counts
        .iter()
        .zip(&displs)
        .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
        .collect()
}

/// Rank 0's bytes on every rank (rank 0 passes them, the others `None`).
fn broadcast_from_root(data: Option<Vec<u8>>) -> Vec<u8> {
    let world = SimpleCommunicator::world();
    let root = world.process_at_rank(0);
    let mut len = data.as_ref().map_or(0u64, |d| d.len() as u64);
    root.broadcast_into(&mut len);
    let mut buf = data.unwrap_or_else(|| vec![0u8; len as usize]);
    root.broadcast_into(&mut buf[..]);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{
        CheckpointRecord, DecisionOutcome, DecisionRecord, DepthTrial, Redistribution,
    };
    use crate::results::IterStats;
    use hitmap::{Shape, Sig};

    #[test]
    fn block_descriptions_round_trip_with_rebalances_and_decisions() {
        let r = VpResult::<f32> {
            block: Shape::new(vec![Sig::new(3, 9, 1), Sig::new(0, 10, 2)]),
            data: Vec::new(),
            stats: vec![
                IterStats {
                    wall: 0.5,
                    elapsed: 1.0,
                    compute: 0.25,
                    comm: 0.125,
                    cpu: Some(0.1875),
                    instructions: Some(1e6),
                    rows: 6,
                };
                3
            ],
            loop_seconds: 2.0,
            redistributions: vec![Redistribution {
                iter: 1,
                seconds: 0.5,
                rows_moved: 3,
                bytes_moved: 12,
                moves_on_device: 0,
                messages: 2,
                weights_before: vec![0.5, 0.5],
                weights_after: vec![0.25, 0.75],
            }],
            decisions: vec![DecisionRecord {
                iter: 1,
                decision: DecisionOutcome::Rebalance,
                values: [("x".to_string(), 1.5)].into(),
            }],
            decisions_dropped: 5,
            checkpoints: vec![CheckpointRecord {
                iter: 2,
                seconds: 0.75,
            }],
            messages: 9,
            device_messages: 4,
            planes: true,
            depth: 4,
            depth_trials: vec![DepthTrial {
                depth: 2,
                seconds: 0.25,
            }],
        };
        let bytes = serde_json::to_vec(&VpMeta::of(7, &r)).unwrap();
        let (p, back) = serde_json::from_slice::<VpMeta>(&bytes)
            .unwrap()
            .into_result::<f32>();
        assert_eq!(p, 7);
        assert_eq!(back.block, r.block);
        assert_eq!(back.loop_seconds, 2.0);
        assert_eq!(back.stats, r.stats);
        assert_eq!(back.redistributions, r.redistributions);
        assert_eq!(back.decisions, r.decisions);
        assert_eq!(back.decisions_dropped, 5);
        assert_eq!(back.checkpoints, r.checkpoints);
        assert_eq!(back.messages, 9);
        assert_eq!(back.device_messages, 4);
        assert_eq!((back.depth, back.depth_trials), (4, r.depth_trials));
        assert!(serde_json::from_slice::<VpMeta>(&bytes[..bytes.len() / 2]).is_err());
    }
}

//! A run spread over MPI ranks (feature `mpi`): every rank checks that it
//! was given the same run, runs the virtual processes it hosts (they talk
//! over `MpiTransport`), and rank 0 gathers the blocks and the per-iteration
//! statistics into the same grid and report a single process would make.
//!
//! Control messages (agreement, gathering) use `MPI_COMM_WORLD` from the
//! main thread, only while no virtual process runs, with tags above the
//! transport's.

use crate::cluster::{agree, JobInfo};
use crate::error::ConfigError;
use crate::report::Report;
use crate::skeleton::{Outcome, Skeleton};
use crate::vp::{IterStats, VpResult};
use hitmap::{MpiTransport, Placement, Shape, Sig, MAX_TAG};
use kernels::Cell;
use mpi::datatype::PartitionMut;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use ndarray::{ArrayD, IxDyn};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

const META_TAG: i32 = MAX_TAG + 1;
const DATA_TAG: i32 = MAX_TAG + 2;

pub(crate) fn run<T: Cell>(sk: &Skeleton<T>, job: &JobInfo) -> Result<Outcome<T>, ConfigError> {
    let started = Instant::now();
    // Everything that can fail on one rank alone is settled before any rank
    // starts: a rank that bailed out early would leave the others waiting.
    let prepared = sk.layout().and_then(|layout| {
        let owners = sk.owners(&job.hosts)?;
        // A rank whose blocks are all empty would only wait on the others.
        if let Some(r) = (0..job.size).find(|&r| {
            (0..owners.len()).all(|p| owners[p] != r || layout.block(p).is_empty())
        }) {
            return Err(ConfigError::IdleRank {
                rank: r,
                cells: layout.domain().card(),
                ranks: job.size,
            });
        }
        let here = owners.iter().filter(|&&r| r == job.rank).count();
        if here > 1 && !job.threads_multiple {
            return Err(ConfigError::Mpi(format!(
                "rank {} hosts {here} devices, which needs MPI_THREAD_MULTIPLE, and this MPI library does not provide it: give each rank one device",
                job.rank
            )));
        }
        let placement =
            Placement::new(owners.clone()).map_err(|e| ConfigError::Mpi(e.to_string()))?;
        Ok((layout, owners, placement))
    });
    agree(
        job,
        prepared
            .as_ref()
            .map(|_| sk.fingerprint())
            .map_err(|e| e.to_string()),
    )?;
    let (layout, owners, placement) = prepared?;
    let placement = Arc::new(placement);
    let local: Vec<usize> = (0..owners.len())
        .filter(|&p| owners[p] == job.rank)
        .collect();
    let progress = AtomicU64::new(0);
    let shared = sk.shared(&layout, &progress);
    let rank = job.rank;
    let abort = move |e: &ConfigError| {
        // The others wait for messages this rank will never send: only
        // ending the whole job stops them.
        crate::cluster::print_error(&format!("rank {rank}: {e}"));
        SimpleCommunicator::world().abort(1)
    };
    let results = sk.run_vps(
        &shared,
        &local,
        |p| {
            MpiTransport::<T>::new(p, placement.clone()).map_err(|e| ConfigError::Run {
                vp: p,
                device: String::new(),
                why: e.to_string(),
            })
        },
        Some(&abort),
        sk.shows_progress() && job.rank == 0,
        started,
    );
    let mut mine = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(v) => mine.push(v),
            Err(e) => abort(&e),
        }
    }
    let world = SimpleCommunicator::world();
    if job.rank != 0 {
        for (p, r) in local.iter().zip(&mine) {
            let root = world.process_at_rank(0);
            root.send_with_tag(&encode_meta(*p, r)[..], META_TAG);
            root.send_with_tag(bytemuck::cast_slice::<T, u8>(&r.data), DATA_TAG);
        }
        let report: Report = serde_json::from_slice(&broadcast_from_root(None))
            .map_err(|e| ConfigError::Mpi(format!("the report from rank 0 is unreadable: {e}")))?;
        return Ok(Outcome {
            grid: ArrayD::from_shape_vec(IxDyn(&vec![0; sk.ndims()]), Vec::new())
                .expect("an empty array"),
            report,
            root: false,
        });
    }
    let mut all: Vec<Option<VpResult<T>>> = (0..owners.len()).map(|_| None).collect();
    for (p, r) in local.iter().zip(mine) {
        all[*p] = Some(r);
    }
    for p in (0..owners.len()).filter(|&p| owners[p] != 0) {
        let from = world.process_at_rank(owners[p] as i32);
        let (meta, _) = from.receive_vec_with_tag::<f64>(META_TAG);
        let (q, mut r) = decode_meta::<T>(&meta)?;
        if q != p {
            return Err(ConfigError::Mpi(format!(
                "rank {} sent virtual process {q} where {p} was due",
                owners[p]
            )));
        }
        let (msg, status) = from.matched_probe_with_tag(DATA_TAG);
        let bytes = status.count(u8::equivalent_datatype()) as usize;
        if bytes != r.block.card() * std::mem::size_of::<T>() {
            return Err(ConfigError::Mpi(format!(
                "virtual process {p} sent {bytes} bytes for a block of {} cells",
                r.block.card()
            )));
        }
        r.data = vec![T::zeroed(); r.block.card()];
        msg.matched_receive_into(bytemuck::cast_slice_mut::<T, u8>(&mut r.data));
        all[p] = Some(r);
    }
    let all: Vec<VpResult<T>> = all.into_iter().flatten().collect();
    let grid = sk.assemble(&all);
    let report = sk.report(&layout, &all, started.elapsed().as_secs_f64());
    let json = serde_json::to_vec(&report).expect("reports serialise");
    broadcast_from_root(Some(json));
    Ok(Outcome {
        grid,
        report,
        root: true,
    })
}

/// A block's place and statistics as numbers (its cells travel apart).
fn encode_meta<T>(p: usize, r: &VpResult<T>) -> Vec<f64> {
    let mut m = vec![p as f64, r.loop_seconds, r.block.ndims() as f64];
    for s in r.block.sigs() {
        m.extend([s.begin() as f64, s.end() as f64, s.stride() as f64]);
    }
    m.push(r.stats.len() as f64);
    for s in &r.stats {
        m.extend([s.wall, s.elapsed, s.compute, s.comm, s.rows as f64]);
    }
    m
}

fn decode_meta<T>(m: &[f64]) -> Result<(usize, VpResult<T>), ConfigError> {
    let bad = || ConfigError::Mpi("a block's description arrived damaged".into());
    let mut it = m.iter().copied();
    let mut next = || it.next().ok_or_else(bad);
    let p = next()? as usize;
    let loop_seconds = next()?;
    let nd = next()? as usize;
    let mut sigs = Vec::with_capacity(nd);
    for _ in 0..nd {
        let (b, e, s) = (next()? as i64, next()? as i64, next()? as i64);
        sigs.push(Sig::new(b, e, s));
    }
    let n = next()? as usize;
    let mut stats = Vec::with_capacity(n);
    for _ in 0..n {
        stats.push(IterStats {
            wall: next()?,
            elapsed: next()?,
            compute: next()?,
            comm: next()?,
            rows: next()? as usize,
        });
    }
    Ok((
        p,
        VpResult {
            block: Shape::new(sigs),
            data: Vec::new(),
            stats,
            loop_seconds,
            redistributions: Vec::new(),
            decisions: Vec::new(),
        },
    ))
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
    use crate::{DeviceSpec, Stencil};
    use kernels::{KernelChoice, Library};

    #[test]
    fn devices_are_dealt_to_ranks_and_every_rank_needs_one() {
        let hosts = |n: usize| (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>();
        let sk = Skeleton::new(
            &[10, 10],
            Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
        )
        .devices(vec![DeviceSpec::cpu(1); 5]);
        assert_eq!(sk.owners(&hosts(2)).unwrap(), vec![0, 1, 0, 1, 0]);
        let e = sk.owners(&hosts(6)).unwrap_err().to_string();
        assert!(e.starts_with("6 MPI ranks but only 5 device(s)"), "{e}");
        let placed = sk.placement(vec![0, 0, 2, 2, 0]);
        let e = placed.owners(&hosts(3)).unwrap_err().to_string();
        assert!(e.starts_with("rank 1 (host n1) has no device"), "{e}");
        let e = placed.owners(&hosts(2)).unwrap_err().to_string();
        assert!(e.contains("placed on rank 2, but there are 2 ranks"), "{e}");
    }

    #[test]
    fn block_descriptions_round_trip() {
        let r = VpResult::<f32> {
            block: Shape::new(vec![Sig::new(3, 9, 1), Sig::new(0, 10, 2)]),
            data: Vec::new(),
            stats: vec![
                IterStats {
                    wall: 0.5,
                    elapsed: 1.0,
                    compute: 0.25,
                    comm: 0.125,
                    rows: 6,
                };
                3
            ],
            loop_seconds: 2.0,
            redistributions: Vec::new(),
            decisions: Vec::new(),
        };
        let (p, back) = decode_meta::<f32>(&encode_meta(7, &r)).unwrap();
        assert_eq!(p, 7);
        assert_eq!(back.block, r.block);
        assert_eq!(back.loop_seconds, 2.0);
        assert_eq!(back.stats.len(), 3);
        assert_eq!(back.stats[2].rows, 6);
        assert_eq!(back.stats[1].comm, 0.125);
        assert!(decode_meta::<f32>(&encode_meta(7, &r)[..5]).is_err());
    }
}

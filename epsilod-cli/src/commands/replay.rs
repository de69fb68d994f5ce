//! `epsilod replay`: a predicted phase run one range of processes at a time
//! (P3S's Synthetic Signature), its time summed over the phase's weight.

use super::scale::load_json;
use crate::args::ReplayArgs;
use crate::error::CliError;
use epsilod::report::median;
use epsilod::spmd::run_vps;
use epsilod::Cluster;
use hitmap::{Transport, TransportError};
use models::replay::{noise_legs, plan_range, ranges, slots_needed, Leg, Role};
use models::scaling::{ScaledTrace, Signature};
use std::time::{Duration, Instant};

pub fn replay(args: &ReplayArgs, cluster: &Cluster) -> Result<(), CliError> {
    let trace: ScaledTrace = load_json(&args.trace, "a trace (epsilod scale --out)")?;
    trace.check()?;
    let against: Option<Signature> = args
        .against
        .as_deref()
        .map(|p| load_json(p, "a signature"))
        .transpose()?;
    if let Some(sig) = &against {
        if sig.count() != trace.count {
            return Err(CliError::Replay(format!(
                "--against: the signature is of {} devices, the trace of {}: give a signature \
                 taken at the trace's count",
                sig.count(),
                trace.count
            )));
        }
    }
    let size = if args.range_size == 0 {
        trace.count
    } else {
        args.range_size
    };
    let all = ranges(trace.count, size);
    let slots = all
        .iter()
        .map(|r| slots_needed(&trace, r.clone(), args.noise))
        .max()
        .unwrap_or(1);
    let per_rank = args
        .per_rank
        .unwrap_or_else(|| slots.div_ceil(cluster.size()))
        .max(1);
    let mut phase: f64 = 0.0;
    let mut measured = 0;
    for r in all {
        let noise: u64 = noise_legs(&trace, r.clone()).iter().map(|l| l.2).sum();
        let roles = plan_range(&trace, r.clone(), per_rank * cluster.size(), args.noise);
        if roles.len() > per_rank * cluster.size() {
            return Err(CliError::Replay(format!(
                "range {}-{} needs {} processes, the job has {}: raise --per-rank or lower \
                 --range-size",
                r.start,
                r.end - 1,
                roles.len(),
                per_rank * cluster.size()
            )));
        }
        let body = |t: &mut dyn Transport<f32>| {
            let me = t.rank();
            run_role(t, &roles[me], args.iters)
        };
        let results = run_vps(cluster, per_rank, &body)?;
        let (mut slowest, mut who) = (0.0, 0);
        for v in results.iter().filter(|v| v.len() == 2) {
            measured += 1;
            if v[1] > slowest {
                (slowest, who) = (v[1], v[0] as usize);
            }
        }
        if cluster.is_root() {
            println!(
                "range {}-{}: phase {:.3} ms (slowest: process {who}){}",
                r.start,
                r.end - 1,
                slowest * 1e3,
                if args.noise && noise > 0 {
                    format!(", noise {noise} bytes per phase")
                } else {
                    String::new()
                }
            );
        }
        phase = phase.max(slowest);
    }
    if cluster.is_root() {
        let total = phase * trace.weight as f64;
        println!(
            "{measured} of {} processes measured: phase {:.3} ms x {} iterations = {:.3} s",
            trace.count,
            phase * 1e3,
            trace.weight,
            total
        );
        if let Some(sig) = against {
            let real = sig.iteration_seconds;
            println!(
                "against the signature at {} devices: phase {:.3} ms, error {:.1}%",
                sig.count(),
                real * 1e3,
                (phase - real).abs() / real * 100.0
            );
        }
    }
    Ok(())
}

/// One local process's part: a measured process times each phase (the
/// first, without compute, untimed), a black hole answers for the outside,
/// the noise pair carries the outside's own traffic; neither is timed.
fn run_role(
    t: &mut dyn Transport<f32>,
    role: &Role,
    iters: u64,
) -> Result<Vec<f64>, TransportError> {
    let payload = |l: &Leg| vec![0.0f32; (l.bytes as usize).div_ceil(4).max(1)];
    t.barrier()?;
    match role {
        Role::Measured {
            global,
            compute_seconds,
            sends,
            recvs,
        } => {
            let mut times = Vec::new();
            for i in 0..=iters {
                let started = Instant::now();
                if i > 0 {
                    std::thread::sleep(Duration::from_secs_f64(*compute_seconds));
                }
                for l in sends {
                    t.send(l.local, l.tag, payload(l))?;
                }
                for l in recvs {
                    t.recv(l.local, l.tag)?;
                }
                if i > 0 {
                    times.push(started.elapsed().as_secs_f64());
                }
            }
            Ok(vec![*global as f64, median(&times)])
        }
        Role::Hole { sends, recvs } | Role::Noise { sends, recvs } => {
            for _ in 0..=iters {
                for l in sends {
                    t.send(l.local, l.tag, payload(l))?;
                }
                for l in recvs {
                    t.recv(l.local, l.tag)?;
                }
            }
            Ok(Vec::new())
        }
        Role::Idle => Ok(Vec::new()),
    }
}

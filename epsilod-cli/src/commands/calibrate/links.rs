//! The link measurements: ping-pong between virtual processes (in-process
//! and across MPI ranks) and transfers between each GPU's memory and the
//! host's, each fitted into a link class.

use crate::error::CliError;
use epsilod::spmd::run_vps;
use epsilod::{Cluster, DeviceKind, DeviceSpec};
use hitmap::{Shape, Transport, TransportError};
use models::calibrate::{link, PingPong};
use models::link::Overheads;
use models::predict::LinkClass;
use std::time::{Duration, Instant};

/// Repetitions of each overhead measurement.
const OVERHEAD_REPS: usize = 16;

/// 0, then 4 B doubling up to `max`, and the halo sizes, sorted.
pub(super) fn sizes(max: u64, halos: &[u64]) -> Vec<u64> {
    let mut s: Vec<u64> = std::iter::once(0)
        .chain(std::iter::successors(Some(4u64), |&b| Some(b * 2)).take_while(|&b| b <= max))
        .chain(halos.iter().copied().filter(|&b| b <= max))
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Ping-pong between virtual processes 0 and 1 with `per_rank` processes
/// per rank (2: both in rank 0's process; 1: across ranks 0 and 1), then
/// the overheads on process 0, fitted into a link class.
pub(super) fn measure_link(
    name: &str,
    cluster: &Cluster,
    per_rank: usize,
    sizes: &[u64],
    reps: u64,
) -> Result<LinkClass, CliError> {
    let body = |t: &mut dyn Transport<f32>| -> Result<Vec<f64>, TransportError> {
        let me = t.rank();
        if me > 1 {
            // Idle, but in every collective the two measuring ones call.
            t.barrier()?;
            return Ok(Vec::new());
        }
        let peer = 1 - me;
        let mut out = Vec::new();
        for &bytes in sizes {
            let cells = (bytes / 4) as usize;
            // One untimed round first.
            for r in 0..=reps {
                if me == 0 {
                    let t0 = Instant::now();
                    t.send(peer, 1, vec![0.0; cells])?;
                    t.recv(peer, 1)?;
                    if r > 0 {
                        out.push(t0.elapsed().as_secs_f64() / 2.0);
                    }
                } else {
                    let m = t.recv(peer, 1)?;
                    t.send(peer, 1, m)?;
                }
            }
        }
        // Doerfler & Brightwell's overheads, the simple way: the time in a
        // small send; the time in a receive whose message has long arrived;
        // the gap as the rate of back-to-back small sends.
        let (mut o_s, mut o_r) = (Vec::new(), Vec::new());
        for _ in 0..OVERHEAD_REPS {
            if me == 0 {
                let t0 = Instant::now();
                t.send(peer, 2, vec![0.0])?;
                o_s.push(t0.elapsed().as_secs_f64());
            } else {
                t.recv(peer, 2)?;
                t.send(peer, 3, vec![0.0])?;
            }
        }
        let mut gap = 0.0;
        if me == 0 {
            for _ in 0..OVERHEAD_REPS {
                std::thread::sleep(Duration::from_millis(1));
                let t0 = Instant::now();
                t.recv(peer, 3)?;
                o_r.push(t0.elapsed().as_secs_f64());
            }
            let t0 = Instant::now();
            for _ in 0..64 {
                t.send(peer, 4, vec![0.0])?;
            }
            gap = t0.elapsed().as_secs_f64() / 64.0;
        } else {
            for _ in 0..64 {
                t.recv(peer, 4)?;
            }
        }
        t.barrier()?;
        out.push(heuristics::median(&o_s));
        out.push(heuristics::median(&o_r));
        out.push(gap);
        Ok(out)
    };
    let all = run_vps(cluster, per_rank, &body)?;
    let v = &all[0];
    let per = reps as usize;
    if v.len() != sizes.len() * per + 3 {
        return Err(CliError::Calibrate(format!(
            "the {name} ping-pong returned {} values, expected {}",
            v.len(),
            sizes.len() * per + 3
        )));
    }
    let pings: Vec<PingPong> = sizes
        .iter()
        .enumerate()
        .map(|(k, &b)| PingPong {
            bytes: b as f64,
            seconds: v[k * per..(k + 1) * per].to_vec(),
        })
        .collect();
    let tail = &v[sizes.len() * per..];
    let overheads = Overheads {
        o_s: tail[0],
        o_r: tail[1],
        g: tail[2],
    };
    Ok(link(name, &pings, overheads)?)
}

/// The link between each GPU device's memory and the host's, as its halos
/// cross it when they go through the host: for every size, a write of that
/// many bytes into a device buffer and a read back, each waited for, half
/// the pair as the one-way time; the overheads from 4-byte transfers. Each
/// with its device's index and its peer group (devices whose buffers one
/// another can copy, numbered in order of appearance), all built at once
/// so that those of one context find each other.
pub(super) fn measure_host_links(
    names: &[String],
    sizes: &[u64],
    reps: u64,
) -> Result<Vec<(usize, Option<usize>, LinkClass)>, CliError> {
    let mut gpus = Vec::new();
    for (d, name) in names.iter().enumerate() {
        let spec = DeviceSpec::parse(name)?;
        if matches!(spec.kind, DeviceKind::Cpu { .. }) {
            continue;
        }
        let device = crate::knobs::tune_one(spec)?
            .build::<f32>()
            .map_err(|e| CliError::Calibrate(format!("device {d} ({name}): {e}")))?;
        gpus.push((d, name, device));
    }
    let mut domains = Vec::new();
    let mut out = Vec::with_capacity(gpus.len());
    for (d, name, mut device) in gpus {
        let group = device.peer_domain().map(|dom| {
            domains.iter().position(|x| *x == dom).unwrap_or_else(|| {
                domains.push(dom);
                domains.len() - 1
            })
        });
        let failed =
            |e: controllers::DeviceError| CliError::Calibrate(format!("device {d} ({name}): {e}"));
        let most = sizes.iter().copied().max().unwrap_or(4).div_ceil(4) as usize;
        let buf = device
            .alloc(&Shape::from_sizes(&[most]), &Shape::from_sizes(&[most]))
            .map_err(failed)?;
        let mut back = Vec::with_capacity(most);
        let mut transfer = |cells: usize| -> Result<(f64, f64), controllers::DeviceError> {
            let region = Shape::from_sizes(&[cells]);
            let data = vec![1.0f32; cells];
            let t0 = Instant::now();
            device.write(buf, &region, &data)?;
            device.wait()?;
            let written = t0.elapsed().as_secs_f64();
            back.clear();
            let t0 = Instant::now();
            device.read(buf, &region, &mut back)?;
            device.wait()?;
            Ok((written, t0.elapsed().as_secs_f64()))
        };
        let mut pings = Vec::with_capacity(sizes.len());
        for &bytes in sizes {
            let cells = (bytes / 4) as usize;
            transfer(cells).map_err(failed)?; // untimed: first touches
            let mut seconds = Vec::with_capacity(reps as usize);
            for _ in 0..reps {
                let (w, r) = transfer(cells).map_err(failed)?;
                seconds.push((w + r) / 2.0);
            }
            pings.push(PingPong {
                bytes: bytes as f64,
                seconds,
            });
        }
        let (mut o_s, mut o_r) = (Vec::new(), Vec::new());
        for _ in 0..OVERHEAD_REPS {
            let (w, r) = transfer(1).map_err(failed)?;
            o_s.push(w);
            o_r.push(r);
        }
        let one = Shape::from_sizes(&[1]);
        let t0 = Instant::now();
        for _ in 0..64 {
            device.write(buf, &one, &[0.0]).map_err(failed)?;
        }
        device.wait().map_err(failed)?;
        let g = t0.elapsed().as_secs_f64() / 64.0;
        device.free(buf).map_err(failed)?;
        let overheads = Overheads {
            o_s: heuristics::median(&o_s),
            o_r: heuristics::median(&o_r),
            g,
        };
        out.push((
            d,
            group,
            link(&format!("host-device:{d}"), &pings, overheads)?,
        ));
    }
    Ok(out)
}

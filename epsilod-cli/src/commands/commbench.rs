//! `epsilod commbench`: the random-pairs exchange benchmark of the
//! communication-modelling study (modelling.md §3, Alg. 3.1) on the job's
//! own virtual processes and transports, each configuration the median of
//! `--sweeps` sweeps over them all.

use crate::args::CommbenchArgs;
use crate::error::CliError;
use epsilod::report::median;
use epsilod::spmd::run_vps;
use epsilod::Cluster;
use hitmap::{Transport, TransportError};
use models::learned::{random_pairs, Features, Sample, FEATURES};
use std::time::Instant;

/// Untimed exchanges before the timed ones.
const WARM_UP: u64 = 2;

pub fn commbench(args: &CommbenchArgs, cluster: &Cluster) -> Result<(), CliError> {
    super::once_each("--per-rank", &args.per_rank, "count")?;
    super::once_each("--sizes", &args.sizes, "size")?;
    super::once_each("--pm", &args.pm, "count")?;
    if cluster.is_root() {
        super::check_file_path("CSV", &args.csv)?;
    }
    // Every configuration first, so that each sweep times them all in the
    // same order on every rank.
    let mut configs = Vec::new();
    for &per_rank in &args.per_rank {
        let procs = cluster.size() * per_rank as usize;
        for &l in &args.sizes {
            for &pm in &args.pm {
                for rep in 0..args.reps {
                    let pairs = random_pairs(procs, pm as usize, args.seed ^ (rep << 32) ^ l);
                    configs.push((per_rank as usize, l, pairs));
                }
            }
        }
    }
    let mut times = vec![Vec::with_capacity(args.sweeps as usize); configs.len()];
    for _ in 0..args.sweeps {
        for ((per_rank, l, pairs), t) in configs.iter().zip(&mut times) {
            t.push(exchange(cluster, *per_rank, pairs, *l, args.iters)?);
        }
    }
    let samples: Vec<Sample> = configs
        .iter()
        .zip(&times)
        .map(|((per_rank, l, pairs), t)| {
            let owners: Vec<usize> = (0..pairs.len()).map(|p| p / per_rank).collect();
            let sends: Vec<Vec<(usize, u64)>> = pairs
                .iter()
                .map(|mine| mine.iter().map(|&(q, _)| (q, *l)).collect())
                .collect();
            Sample {
                features: Features::of(&sends, &owners),
                seconds: median(t),
            }
        })
        .collect();
    if cluster.is_root() {
        super::write_file("CSV", &args.csv, to_csv(&samples))?;
        println!(
            "{} configurations timed, written to {}",
            samples.len(),
            args.csv.display()
        );
    }
    Ok(())
}

/// Every process exchanges `bytes` with each partner in `pairs`, `iters`
/// times; the phase's time is the largest of the processes' third
/// quartiles (the study's statistic).
fn exchange(
    cluster: &Cluster,
    per_rank: usize,
    pairs: &[Vec<(usize, u64)>],
    bytes: u64,
    iters: u64,
) -> Result<f64, CliError> {
    let cells = (bytes as usize).div_ceil(4).max(1);
    let body = |t: &mut dyn Transport<f32>| -> Result<Vec<f64>, TransportError> {
        let mine = &pairs[t.rank()];
        t.barrier()?;
        let mut times = Vec::with_capacity(iters.min(1 << 20) as usize);
        for i in 0..WARM_UP.saturating_add(iters) {
            let started = Instant::now();
            for &(q, round) in mine {
                t.send(q, round, vec![0.0; cells])?;
            }
            for &(q, round) in mine {
                t.recv(q, round)?;
            }
            if i >= WARM_UP {
                times.push(started.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(vec![times[(times.len() * 3) / 4]])
    };
    let all = run_vps(cluster, per_rank, &body)?;
    Ok(all.iter().map(|v| v[0]).fold(0.0, f64::max))
}

fn to_csv(samples: &[Sample]) -> String {
    let mut text = FEATURES.join(",") + ",seconds\n";
    for s in samples {
        let values: Vec<String> = s.features.values().iter().map(|v| v.to_string()).collect();
        text += &format!("{},{:e}\n", values.join(","), s.seconds);
    }
    text
}

/// Samples from commbench's CSV.
pub fn read_csv(path: &std::path::Path) -> Result<Vec<Sample>, CliError> {
    let bad = |why: String| CliError::Input {
        path: path.display().to_string(),
        why,
    };
    let text = kernels::input_file::read_text(path).map_err(|e| bad(e.to_string()))?;
    let mut lines = text.lines();
    let header = FEATURES.join(",") + ",seconds";
    if lines.next() != Some(header.as_str()) {
        return Err(bad(format!(
            "not commbench output: the first line must be '{header}'"
        )));
    }
    lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let values: Vec<f64> = line
                .split(',')
                .map(|v| v.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|e| bad(format!("line {}: {e}", i + 2)))?;
            let features: [f64; 15] = values
                .get(..15)
                .and_then(|v| v.try_into().ok())
                .filter(|_| values.len() == 16)
                .ok_or_else(|| {
                    bad(format!(
                        "line {}: {} values, expected 16",
                        i + 2,
                        values.len()
                    ))
                })?;
            Ok(Sample {
                features: Features::from_values(features),
                seconds: values[15],
            })
        })
        .collect()
}

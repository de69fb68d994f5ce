//! The cost of splitting the same cores over several CPU
//! devices in one process. Runs 2d4 f32 through the public `Skeleton` with
//! configurations `D x T` (D devices of T threads each, split by rows) and
//! prints each one's median loop time and its ratio to `1 x (D*T)`: the
//! split's efficiency (1.0 = nothing lost, above 1 = the split is faster).
//!
//! Configurations are interleaved within each repetition so drift on a
//! shared machine hits all of them alike; medians over repetitions. On a
//! machine shared with other work, loop times are noisy, so each run's CPU
//! time (all threads, setup included, from `/proc/self/stat` on Linux) is
//! printed too: threads that spin while they wait show there whatever the
//! load beside them.
//!
//! ```text
//! cargo run --release -p benches --example split -- [--size 2050,4098] [--iters 50]
//!     [--reps 5] [--configs 1x2,2x1,1x4,2x2,4x1] [--pin]
//! ```

use epsilod::{DeviceSpec, KernelChoice, Library, Partition, Skeleton, Stencil};
use std::collections::BTreeMap;

/// `D x T`: devices and threads per device.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Config {
    devices: usize,
    threads: usize,
}

impl Config {
    fn parse(s: &str) -> Result<Config, String> {
        let (d, t) = s
            .split_once('x')
            .ok_or_else(|| format!("'{s}': expected DxT, e.g. 2x1"))?;
        let num = |v: &str| match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("'{s}': {v} is not a whole number > 0")),
        };
        Ok(Config {
            devices: num(d)?,
            threads: num(t)?,
        })
    }

    fn cores(self) -> usize {
        self.devices * self.threads
    }
}

struct Args {
    sizes: Vec<usize>,
    iters: u64,
    reps: usize,
    configs: Vec<Config>,
    pin: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        sizes: vec![2050, 4098],
        iters: 50,
        reps: 5,
        configs: ["1x2", "2x1", "1x4", "2x2", "4x1"]
            .iter()
            .map(|c| Config::parse(c))
            .collect::<Result<_, _>>()?,
        pin: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        if k == "--pin" {
            a.pin = true;
            continue;
        }
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let list = |v: &str| v.split(',').map(str::to_string).collect::<Vec<_>>();
        match k.as_str() {
            "--size" => {
                a.sizes = list(&v)
                    .iter()
                    .map(|s| s.parse().map_err(|_| format!("--size {s}")))
                    .collect::<Result<_, _>>()?
            }
            "--iters" => a.iters = v.parse().map_err(|_| format!("--iters {v}"))?,
            "--reps" => a.reps = v.parse().map_err(|_| format!("--reps {v}"))?,
            "--configs" => {
                a.configs = list(&v)
                    .iter()
                    .map(|c| Config::parse(c))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown option {k}")),
        }
    }
    Ok(a)
}

/// One run's loop seconds (setup and result assembly excluded) and CPU
/// seconds (everything).
fn loop_seconds(
    n: usize,
    iters: u64,
    c: Config,
    pin: bool,
) -> Result<(f64, f64), epsilod::RunError> {
    let cpu0 = benches::process_cpu_seconds().unwrap_or(f64::NAN);
    let out = Skeleton::new(
        &[n, n],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(|i| if i[0] == 0 { 1.0 } else { 0.0 })
    .devices(vec![DeviceSpec::cpu(c.threads); c.devices])
    .partition(Partition::Single(0))
    .pin(pin)
    .run()?;
    let cpu = benches::process_cpu_seconds().unwrap_or(f64::NAN) - cpu0;
    Ok((out.report.summary.loop_seconds, cpu))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse_args()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "2d4 f32, {} iterations, {} repetitions (interleaved), {cores} core(s) here{}",
        a.iters,
        a.reps,
        if a.pin { ", pinned" } else { "" }
    );
    for &n in &a.sizes {
        let mut times: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
        let mut cpu: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
        for _ in 0..a.reps {
            for &c in &a.configs {
                let (t, u) = loop_seconds(n, a.iters, c, a.pin)?;
                times.entry(c).or_default().push(t);
                cpu.entry(c).or_default().push(u);
            }
        }
        let medians: BTreeMap<Config, f64> =
            times.into_iter().map(|(c, t)| (c, median(t))).collect();
        let cpu: BTreeMap<Config, f64> = cpu.into_iter().map(|(c, t)| (c, median(t))).collect();
        let cells = ((n - 2) * (n - 2)) as f64 * a.iters as f64;
        println!("\n{n}x{n}");
        println!(
            "{:>6} {:>10} {:>8} {:>12} {:>10}",
            "DxT", "loop ms", "G/s", "vs 1x(D*T)", "cpu s/run"
        );
        for (&c, &t) in &medians {
            let one = Config {
                devices: 1,
                threads: c.cores(),
            };
            let ratio = medians
                .get(&one)
                .map_or("-".to_string(), |&t1| format!("{:.3}", t1 / t));
            println!(
                "{:>6} {:>10.1} {:>8.3} {:>12} {:>10.2}",
                format!("{}x{}", c.devices, c.threads),
                t * 1e3,
                cells / t / 1e9,
                ratio,
                cpu[&c]
            );
        }
    }
    Ok(())
}

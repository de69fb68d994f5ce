//! `epsilod scale`: a strong-scaling model from signatures, validated on
//! held-back ones, and its prediction for a larger device count.

use crate::args::{BandwidthArg, ComputeArg, ScaleArgs};
use crate::error::CliError;
use models::scaling::{Bandwidth, ComputeClock, Node, ScalingModel, Signature};
use std::path::Path;

pub fn scale(args: &ScaleArgs) -> Result<(), CliError> {
    let load_all = |paths: &[std::path::PathBuf]| -> Result<Vec<Signature>, CliError> {
        paths.iter().map(|p| load(p)).collect()
    };
    let (sigs, far, held) = (
        load_all(&args.signatures)?,
        load_all(&args.far)?,
        load_all(&args.validate)?,
    );
    if let Some(out) = &args.out {
        super::check_report_path(out)?;
    }
    // Cores turn CPU time into wall time, or pick the signature whose
    // devices fill them; anywhere else they would be silently ignored.
    if args.cores.is_some()
        && args.compute == ComputeArg::Wall
        && args.node_bandwidth != Some(BandwidthArg::Signatures)
    {
        return Err(CliError::Usage(
            "--cores is used by --compute cpu or --node-bandwidth signatures: add one, or leave \
             --cores out"
                .into(),
        ));
    }
    let clock = match args.compute {
        ComputeArg::Wall => ComputeClock::Wall,
        ComputeArg::Cpu => ComputeClock::Cpu,
    };
    let bandwidth = match args.node_bandwidth {
        None => None,
        Some(b) => Some(Bandwidth {
            bytes_per_second: match b {
                BandwidthArg::Given(v) => v,
                BandwidthArg::Measure => copy_bandwidth(),
                BandwidthArg::Signatures => {
                    // The cores the signatures shared: --cores, else theirs.
                    let cores = args
                        .cores
                        .map(|c| c.floor() as usize)
                        .or_else(|| sigs.iter().find_map(|s| s.cores))
                        .unwrap_or(1);
                    Bandwidth::from_signatures(&sigs, args.bytes_per_cell, clock, cores)?
                }
            },
            bytes_per_cell: args.bytes_per_cell,
            devices_per_node: args
                .devices_per_node
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        }),
    };
    let node = Node {
        cores: args.cores,
        bandwidth,
    };
    let model = ScalingModel::fit_on(&sigs, &far, clock, node)?;
    print!("{}", describe(&model));
    for h in &held {
        let v = model.validate(h)?;
        println!(
            "validation at {} devices: pattern {}, weight {}, volume error {:.1}%, compute error \
             {:.1}%, iteration time error {:.1}%: {}",
            v.count,
            if v.pattern_exact { "exact" } else { "WRONG" },
            if v.weight_exact { "exact" } else { "WRONG" },
            v.volume_error * 100.0,
            v.compute_error * 100.0,
            v.time_error * 100.0,
            if v.accepted() {
                "accepted"
            } else {
                "REJECTED (outside P3S's rule: do not trust the prediction)"
            }
        );
    }
    let count = usize::try_from(args.target).unwrap_or(usize::MAX);
    let trace = model.predict(count)?;
    let messages: Vec<usize> = trace.processes.iter().map(|p| p.sends.len()).collect();
    let bytes: Vec<u64> = trace
        .processes
        .iter()
        .map(|p| p.sends.iter().map(|m| m.bytes).sum())
        .collect();
    println!(
        "prediction at {} devices: {}-{} messages and {}-{} bytes per device per iteration, \
         compute {:.3} ms, iteration {:.3} ms, loop {:.3} s ({} iterations)",
        trace.count,
        messages.iter().min().unwrap_or(&0),
        messages.iter().max().unwrap_or(&0),
        bytes.iter().min().unwrap_or(&0),
        bytes.iter().max().unwrap_or(&0),
        trace.processes.first().map_or(0.0, |p| p.compute_seconds) * 1e3,
        trace.iteration_seconds * 1e3,
        trace.loop_seconds,
        trace.weight
    );
    if let Some(out) = &args.out {
        let text = serde_json::to_string_pretty(&trace).expect("traces serialise");
        super::write_report(out, text)?;
    }
    Ok(())
}

fn load(path: &Path) -> Result<Signature, CliError> {
    load_json(path, "a signature")
}

/// `path`'s JSON as a `T` (`what`, for the message when it is not one).
pub fn load_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, CliError> {
    let bad = |why: String| CliError::Input {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| bad(format!("not {what}: {e}")))
}

/// The copy rate between two 128 MiB buffers with a thread on every core
/// here: what a node's devices share when they stream cells. The buffers
/// are beyond a core's own caches but about the size of the shared L3 of
/// this project's machines (260-300 MiB), so the rate lies between L3's
/// and memory's, as a stencil's grids of that size do.
fn copy_bandwidth() -> f64 {
    super::memory::copy_rate(128 << 20)
}

/// What the model inferred, one fact per line.
fn describe(model: &ScalingModel) -> String {
    let counts: Vec<String> = model.counts.iter().map(|c| c.to_string()).collect();
    let law = |l: &models::fit::PowerLaw| format!("{:.4e} * P^{:.3}", l.coefficient, l.exponent);
    let mut text = format!(
        "signatures at {} devices\npattern: {}\nweight: {} iterations\ncompute (critical {} \
         s/iteration): {} ({} before far points)\nexchange: {:.3e} s per message + {:.3e} s per \
         byte\n",
        counts.join(", "),
        model.pattern().equations(),
        model.weight,
        match model.clock {
            ComputeClock::Wall => "wall",
            ComputeClock::Cpu => "CPU",
        },
        law(&model.compute),
        law(&model.compute_initial),
        model.exchange.alpha,
        model.exchange.beta
    );
    if let (ComputeClock::Cpu, Some(cores)) = (model.clock, model.node.cores) {
        text += &format!(
            "compute (mean CPU s/iteration, where devices take turns on the cores): {}\n\
             wall compute: max(critical CPU, mean CPU x P x {:.2} threads / {cores} cores where \
             that is above the cores)\n",
            law(&model.compute_mean),
            model.threads_per_device
        );
    }
    if let Some(b) = model.node.bandwidth {
        text += &format!(
            "bandwidth floor: cells per device x {} B / ({:.2} GB/s / devices on a node{})\n",
            b.bytes_per_cell,
            b.bytes_per_second / 1e9,
            b.devices_per_node
                .map_or(String::new(), |n| format!(", at most {n}"))
        );
    }
    text
}

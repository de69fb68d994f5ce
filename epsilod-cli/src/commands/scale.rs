//! `epsilod scale`: a strong-scaling model from signatures, validated on
//! held-back ones, and its prediction for larger device counts.

use crate::args::{BandwidthArg, ComputeArg, ScaleArgs};
use crate::error::CliError;
use crate::json::JsonOut;
use models::fit::PowerLaw;
use models::scaling::{
    Bandwidth, ComputeClock, ExchangeCost, Node, ScaledTrace, ScalingModel, Signature, Validation,
};
use serde::Serialize;
use std::path::Path;

pub fn scale(args: &ScaleArgs) -> Result<(), CliError> {
    super::once_each("--targets", &args.targets, "device count")?;
    let load_all = |paths: &[std::path::PathBuf]| -> Result<Vec<Signature>, CliError> {
        paths.iter().map(|p| load(p)).collect()
    };
    let (sigs, far, held) = (
        load_all(&args.signatures)?,
        load_all(&args.far)?,
        load_all(&args.validate)?,
    );
    // One halo depth over every file, each named: the model's own check
    // could only say where a signature stands.
    let files = args
        .signatures
        .iter()
        .chain(&args.far)
        .chain(&args.validate);
    models::scaling::one_halo_depth(
        files
            .zip(sigs.iter().chain(&far).chain(&held))
            .map(|(path, s)| (path.display().to_string(), s)),
    )?;
    let json = JsonOut::of(args.json.as_ref());
    // Each output apart from the other and from every signature read.
    let inputs = args
        .signatures
        .iter()
        .chain(&args.far)
        .chain(&args.validate);
    for input in inputs.map(Some).chain([None]) {
        super::distinct_files::distinct_files(&[
            ("--out", args.out.as_deref()),
            ("--json", json.file()),
            ("a signature", input.map(|p| p.as_path())),
        ])?;
    }
    json.check()?;
    if let Some(out) = &args.out {
        super::check_file_path("trace", out)?;
    }
    // Cores and devices per node turn CPU time into wall time, or pick
    // the signature whose devices fill them and share the bandwidth;
    // anywhere else they would be silently ignored.
    let uses_the_node = args.compute == ComputeArg::Cpu || args.node_bandwidth.is_some();
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
    if args.devices_per_node.is_some() && !uses_the_node {
        return Err(CliError::Usage(
            "--devices-per-node is used by --compute cpu or --node-bandwidth: add one, or leave \
             --devices-per-node out"
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
        }),
    };
    let node = Node {
        cores: args.cores,
        devices_per_node: args
            .devices_per_node
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        bandwidth,
    };
    let model = ScalingModel::fit_on(&sigs, &far, clock, node)?;
    let validations = held
        .iter()
        .map(|h| model.validate(h).map(Checked::of))
        .collect::<Result<Vec<_>, _>>()?;
    let targets: Vec<usize> = args
        .target
        .iter()
        .chain(&args.targets)
        .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
        .collect();
    if let Some(warning) = beyond_validated(&model.counts, &targets) {
        eprintln!("warning: {warning}");
    }
    let mut predictions = Vec::with_capacity(targets.len());
    for &count in &targets {
        let trace = model.predict(count)?;
        if let Some(out) = &args.out {
            let text = serde_json::to_string_pretty(&trace).expect("traces serialise");
            super::write_file("trace", out, text)?;
        }
        predictions.push(Prediction::of(&trace));
    }
    let doc = Figures {
        model: ModelFigures::of(&model),
        validations,
        predictions,
    };
    // The files first: a reader that stops early (`| head`) ends the
    // command at its first line it cannot print.
    json.write(&doc)?;
    if json.prints_text() {
        print!("{}", doc.text());
    }
    Ok(())
}

/// How far P3S's predictions are validated: 8 times the largest count
/// fitted.
const VALIDATED_REACH: usize = 8;

/// A warning when a target lies beyond [`VALIDATED_REACH`] times the
/// signatures' largest device count.
fn beyond_validated(counts: &[usize], targets: &[usize]) -> Option<String> {
    let largest = counts.iter().copied().max()?;
    let reach = largest.saturating_mul(VALIDATED_REACH);
    let far: Vec<String> = targets
        .iter()
        .filter(|&&t| t > reach)
        .map(|t| t.to_string())
        .collect();
    let (target, is, prediction) = match far.len() {
        0 => return None,
        1 => ("target", "is", "prediction"),
        _ => ("targets", "are", "predictions"),
    };
    Some(format!(
        "{target} {} {is} more than {VALIDATED_REACH}x the signatures' largest device count \
         ({largest}), beyond what P3S validated: take signatures at more devices, or trust the \
         {prediction} less",
        far.join(", ")
    ))
}

/// What `scale` prints, as `--json` writes it (docs/json.md).
#[derive(Serialize)]
struct Figures {
    model: ModelFigures,
    validations: Vec<Checked>,
    predictions: Vec<Prediction>,
}

impl Figures {
    /// The text for people: the model, one fact per line, then a line per
    /// validation and per prediction.
    fn text(&self) -> String {
        let mut text = self.model.text();
        for v in &self.validations {
            text += &v.text();
        }
        for p in &self.predictions {
            text += &p.text();
        }
        text
    }
}

/// The fitted model.
#[derive(Serialize)]
struct ModelFigures {
    /// Device counts of the signatures.
    counts: Vec<usize>,
    /// The pattern as equations of P.
    pattern: String,
    /// Iterations of the phase.
    weight: u64,
    /// The signatures' halo depth.
    halo_depth: usize,
    /// `wall` or `cpu`.
    clock: &'static str,
    /// Critical compute, far points included.
    compute: PowerLaw,
    /// Critical compute before far points.
    compute_initial: PowerLaw,
    /// The mean device's compute, where it counts (CPU time on known cores).
    compute_mean: Option<PowerLaw>,
    threads_per_device: f64,
    cores: Option<f64>,
    devices_per_node: Option<usize>,
    exchange: ExchangeCost,
    bandwidth: Option<Bandwidth>,
}

impl ModelFigures {
    fn of(model: &ScalingModel) -> ModelFigures {
        let on_cores = model.clock == ComputeClock::Cpu && model.node.cores.is_some();
        ModelFigures {
            counts: model.counts.clone(),
            pattern: model.pattern().equations(),
            weight: model.weight,
            halo_depth: model.halo_depth,
            clock: match model.clock {
                ComputeClock::Wall => "wall",
                ComputeClock::Cpu => "cpu",
            },
            compute: model.compute,
            compute_initial: model.compute_initial,
            compute_mean: on_cores.then_some(model.compute_mean),
            threads_per_device: model.threads_per_device,
            cores: model.node.cores,
            devices_per_node: model.node.devices_per_node,
            exchange: model.exchange,
            bandwidth: model.node.bandwidth,
        }
    }

    /// What the model inferred, one fact per line.
    fn text(&self) -> String {
        let counts: Vec<String> = self.counts.iter().map(|c| c.to_string()).collect();
        let law = |l: &PowerLaw| format!("{:.4e} * P^{:.3}", l.coefficient, l.exponent);
        let mut text = format!(
            "signatures at {} devices\npattern: {}\nweight: {} iterations\ncompute (critical {} \
             s/iteration): {} ({} before far points)\nexchange: {:.3e} s per message + {:.3e} s \
             per byte\n",
            counts.join(", "),
            self.pattern,
            self.weight,
            match self.clock {
                "cpu" => "CPU",
                other => other,
            },
            law(&self.compute),
            law(&self.compute_initial),
            self.exchange.alpha,
            self.exchange.beta
        );
        if self.halo_depth > 1 {
            text += &format!(
                "halo depth: {k}: an iteration's figures are 1/{k} of a period of {k} fused \
                 steps and one {k}-deep exchange; its messages are one step's (docs/scaling.md)\n",
                k = self.halo_depth
            );
        }
        if let (Some(mean), Some(cores)) = (&self.compute_mean, self.cores) {
            let devices = self.devices_per_node.map_or("P".to_string(), |n| {
                format!("min(P, {n}) devices on a node")
            });
            text += &format!(
                "compute (mean CPU s/iteration, where devices take turns on the cores): {}\n\
                 wall compute: max(critical CPU, mean CPU x {devices} x {:.2} threads / {cores} \
                 cores where that is above the cores)\n",
                law(mean),
                self.threads_per_device
            );
        }
        if let Some(b) = self.bandwidth {
            text += &format!(
                "bandwidth floor: cells per device x {} B / ({:.2} GB/s / devices on a node{})\n",
                b.bytes_per_cell,
                b.bytes_per_second / 1e9,
                self.devices_per_node
                    .map_or(String::new(), |n| format!(", at most {n}"))
            );
        }
        text
    }
}

/// A validation on a held-back signature, and whether P3S's rule accepts it.
#[derive(Serialize)]
struct Checked {
    #[serde(flatten)]
    validation: Validation,
    accepted: bool,
}

impl Checked {
    fn of(validation: Validation) -> Checked {
        Checked {
            accepted: validation.accepted(),
            validation,
        }
    }

    fn text(&self) -> String {
        let v = &self.validation;
        format!(
            "validation at {} devices: pattern {}, weight {}, volume error {:.1}%, compute error \
             {:.1}%, iteration time error {:.1}%: {}\n",
            v.count,
            if v.pattern_exact { "exact" } else { "WRONG" },
            if v.weight_exact { "exact" } else { "WRONG" },
            v.volume_error * 100.0,
            v.compute_error * 100.0,
            v.time_error * 100.0,
            if self.accepted {
                "accepted"
            } else {
                "REJECTED (outside P3S's rule: do not trust the prediction)"
            }
        )
    }
}

/// The prediction at one device count, per device and iteration.
#[derive(Serialize)]
struct Prediction {
    devices: usize,
    messages_min: usize,
    messages_max: usize,
    bytes_min: u64,
    bytes_max: u64,
    compute_seconds: f64,
    iteration_seconds: f64,
    loop_seconds: f64,
    iterations: u64,
}

impl Prediction {
    fn of(trace: &ScaledTrace) -> Prediction {
        let messages = trace.processes.iter().map(|p| p.sends.len());
        let bytes = trace
            .processes
            .iter()
            .map(|p| p.sends.iter().map(|m| m.bytes).sum::<u64>());
        Prediction {
            devices: trace.count,
            messages_min: messages.clone().min().unwrap_or(0),
            messages_max: messages.max().unwrap_or(0),
            bytes_min: bytes.clone().min().unwrap_or(0),
            bytes_max: bytes.max().unwrap_or(0),
            compute_seconds: trace.processes.first().map_or(0.0, |p| p.compute_seconds),
            iteration_seconds: trace.iteration_seconds,
            loop_seconds: trace.loop_seconds,
            iterations: trace.weight,
        }
    }

    fn text(&self) -> String {
        format!(
            "prediction at {} devices: {}-{} messages and {}-{} bytes per device per iteration, \
             compute {:.3} ms, iteration {:.3} ms, loop {:.3} s ({} iterations)\n",
            self.devices,
            self.messages_min,
            self.messages_max,
            self.bytes_min,
            self.bytes_max,
            self.compute_seconds * 1e3,
            self.iteration_seconds * 1e3,
            self.loop_seconds,
            self.iterations
        )
    }
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
    let text = kernels::input_file::read_text(path).map_err(|e| bad(e.to_string()))?;
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

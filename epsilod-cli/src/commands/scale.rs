//! `epsilod scale`: a strong-scaling model from signatures, validated on
//! held-back ones, and its prediction for a larger device count.

use crate::args::ScaleArgs;
use crate::error::CliError;
use models::scaling::{ScalingModel, Signature};
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
    let model = ScalingModel::fit(&sigs, &far)?;
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

/// What the model inferred, one fact per line.
fn describe(model: &ScalingModel) -> String {
    let counts: Vec<String> = model.counts.iter().map(|c| c.to_string()).collect();
    let law = |l: &models::fit::PowerLaw| format!("{:.4e} * P^{:.3}", l.coefficient, l.exponent);
    format!(
        "signatures at {} devices\npattern: {}\nweight: {} iterations\ncompute (critical, \
         s/iteration): {} ({} before far points)\nexchange: {:.3e} s per message + {:.3e} s per \
         byte\n",
        counts.join(", "),
        model.pattern().equations(),
        model.weight,
        law(&model.compute),
        law(&model.compute_initial),
        model.exchange.alpha,
        model.exchange.beta
    )
}

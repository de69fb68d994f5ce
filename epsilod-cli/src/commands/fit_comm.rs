//! `epsilod fit-comm`: a learned model of exchange time from commbench
//! data, scored on held-out data and on real runs' halo exchanges beside
//! the study's two baselines, alpha-beta and semi-empirical, fitted to the
//! same training data and relative error.

use super::commbench::read_csv;
use super::run_exchanges::run_sample;
use crate::args::FitCommArgs;
use crate::error::CliError;
use crate::json::JsonOut;
use models::forest::ForestOptions;
use models::learned::{score, BaselineScores, Baselines, CommModel, Method, TreeOptions};
use models::metrics::Scores;
use serde::Serialize;

/// The figures of `fit-comm --json` (docs/json.md).
#[derive(Serialize)]
struct FitReport {
    method: String,
    samples: usize,
    model: String,
    baselines: Baselines,
    training: Scores,
    sets: Vec<SetReport>,
    runs: Vec<RunReport>,
}

/// A scored set: the model's and the baselines' metrics.
#[derive(Serialize)]
struct SetReport {
    set: &'static str,
    samples: usize,
    outside_training_range: usize,
    model: Scores,
    #[serde(flatten)]
    baselines: BaselineScores,
}

/// One real run's exchange, measured and predicted.
#[derive(Serialize)]
struct RunReport {
    report: String,
    messages: f64,
    largest_bytes: f64,
    measured_seconds: f64,
    model_seconds: f64,
    alpha_beta_seconds: f64,
    semi_empirical_seconds: f64,
}

pub fn fit_comm(args: &FitCommArgs) -> Result<(), CliError> {
    let method: Method = args.method.parse()?;
    let json = JsonOut::of(args.json.as_ref());
    let mut inputs = vec![
        ("the training data", Some(args.train.as_path())),
        ("--test", args.test.as_deref()),
    ];
    inputs.extend(args.runs.iter().map(|r| ("--runs", Some(r.as_path()))));
    super::distinct_files::outputs_apart(
        &[("--out", args.out.as_deref()), ("--json", json.file())],
        &inputs,
    )?;
    let train = read_csv(&args.train)?;
    let test = args.test.as_deref().map(read_csv).transpose()?;
    let runs = args
        .runs
        .iter()
        .map(|p| run_sample(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(out) = &args.out {
        super::check_file_path("model", out)?;
    }
    json.check()?;
    let text = json.prints_text();
    let options = TreeOptions {
        forest: ForestOptions {
            seed: args.seed,
            ..ForestOptions::default()
        },
        ..TreeOptions::default()
    };
    let model = CommModel::fit(method, &train, options)?;
    let baselines = Baselines::fit(&train)?;
    let training = score(&train, |f| model.predict(f))?;
    // The text for people, printed once the files are written: a reader
    // that goes away (`| head -1`) ends the process at the first print.
    let mut lines = Vec::new();
    if text {
        lines.push(format!(
            "{} on {} samples: {}",
            method,
            train.len(),
            model.describe()
        ));
        lines.push(format!(
            "semi-empirical baseline: {}",
            baselines.semi_empirical.describe()
        ));
        lines.push(scores_line("training", &training));
    }
    let mut sets = Vec::new();
    for (label, set) in [
        ("held out", test.as_deref()),
        ("real runs", Some(&runs[..])),
    ] {
        let Some(set) = set.filter(|s| !s.is_empty()) else {
            continue;
        };
        // R² and the rank measures need two points; one run is still
        // listed with its times below.
        if set.len() < 2 {
            if text {
                lines.push(format!("{label}: 1 sample, too few to score (2 at least)"));
            }
            continue;
        }
        let scored = SetReport {
            set: label,
            samples: set.len(),
            outside_training_range: set
                .iter()
                .filter(|s| !model.out_of_range(&s.features).is_empty())
                .count(),
            model: score(set, |f| model.predict(f))?,
            baselines: baselines.score(set)?,
        };
        if text {
            lines.push(scores_line(&format!("{label} ({method})"), &scored.model));
            lines.push(scores_line(
                &format!("{label} (alpha-beta)"),
                &scored.baselines.alpha_beta,
            ));
            // The model's own line is the baseline's when it is the method.
            if method != Method::SemiEmpirical {
                lines.push(scores_line(
                    &format!("{label} (semi-empirical)"),
                    &scored.baselines.semi_empirical,
                ));
            }
        }
        if scored.outside_training_range > 0 {
            let warning = format!(
                "warning: {} of {} {label} samples lie outside the training range \
                 (trees cannot extrapolate)",
                scored.outside_training_range,
                set.len()
            );
            // Beside the text as it always was; off stdout under `--json -`.
            if text {
                lines.push(warning);
            } else {
                eprintln!("{warning}");
            }
        }
        sets.push(scored);
    }
    let runs: Vec<RunReport> = args
        .runs
        .iter()
        .zip(&runs)
        .map(|(path, s)| RunReport {
            report: path.display().to_string(),
            messages: s.features.tm,
            largest_bytes: s.features.l,
            measured_seconds: s.seconds,
            model_seconds: model.predict(&s.features),
            alpha_beta_seconds: baselines.alpha_beta.predict(&s.features),
            semi_empirical_seconds: baselines.semi_empirical.predict(&s.features.load()),
        })
        .collect();
    if text {
        for r in &runs {
            lines.push(format!(
                "{}: {} messages, largest {} B: measured {:.3e} s, {method} {:.3e} s, \
                 alpha-beta {:.3e} s",
                r.report,
                r.messages,
                r.largest_bytes,
                r.measured_seconds,
                r.model_seconds,
                r.alpha_beta_seconds
            ));
        }
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string(&model).expect("models serialise");
        super::write_file("model", out, text)?;
    }
    json.write(&FitReport {
        method: method.to_string(),
        samples: train.len(),
        model: model.describe(),
        baselines,
        training,
        sets,
        runs,
    })?;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// The modelling theses' metrics as a line: the rank correlation is
/// Spearman's, RCC the study's fraction of concordant pairs.
fn scores_line(label: &str, s: &Scores) -> String {
    format!(
        "{label}: MMRE {:.1}%, Pred25 {:.1}%, R² {:.3}, rank correlation {:.3}, RCC {:.3}",
        s.mmre * 100.0,
        s.pred25 * 100.0,
        s.r_squared,
        s.spearman,
        s.rcc
    )
}

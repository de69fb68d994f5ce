//! `epsilod fit-comm`: a learned model of exchange time from commbench
//! data, scored on held-out data and on real runs' halo exchanges beside
//! an alpha-beta baseline fitted to the same training data and relative
//! error.

use super::commbench::read_csv;
use super::run_exchanges::run_sample;
use crate::args::FitCommArgs;
use crate::error::CliError;
use models::forest::ForestOptions;
use models::learned::{AlphaBeta, CommModel, Method, Sample, TreeOptions};
use models::metrics::{mmre, pred, r_squared, rcc, spearman};

pub fn fit_comm(args: &FitCommArgs) -> Result<(), CliError> {
    let method: Method = args.method.parse()?;
    let train = read_csv(&args.train)?;
    let test = args.test.as_deref().map(read_csv).transpose()?;
    let runs = args
        .runs
        .iter()
        .map(|p| run_sample(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(out) = &args.out {
        super::check_report_path(out)?;
    }
    let options = TreeOptions {
        forest: ForestOptions {
            seed: args.seed,
            ..ForestOptions::default()
        },
        ..TreeOptions::default()
    };
    let model = CommModel::fit(method, &train, options)?;
    println!(
        "{} on {} samples: {}",
        method,
        train.len(),
        model.describe()
    );
    let baseline = AlphaBeta::fit(&train);
    let alpha_beta = |s: &Sample| baseline.predict(&s.features);
    score("training", &train, |s| model.predict(&s.features))?;
    for (label, set) in [
        ("held out", test.as_deref()),
        ("real runs", Some(&runs[..])),
    ] {
        let Some(set) = set.filter(|s| !s.is_empty()) else {
            continue;
        };
        score(&format!("{label} ({method})"), set, |s| {
            model.predict(&s.features)
        })?;
        score(&format!("{label} (alpha-beta)"), set, alpha_beta)?;
        let outside = set
            .iter()
            .filter(|s| !model.out_of_range(&s.features).is_empty())
            .count();
        if outside > 0 {
            println!(
                "warning: {outside} of {} {label} samples lie outside the training range \
                 (trees cannot extrapolate)",
                set.len()
            );
        }
    }
    for (path, s) in args.runs.iter().zip(&runs) {
        println!(
            "{}: {} messages, largest {} B: measured {:.3e} s, {method} {:.3e} s, \
             alpha-beta {:.3e} s",
            path.display(),
            s.features.tm,
            s.features.l,
            s.seconds,
            model.predict(&s.features),
            alpha_beta(s)
        );
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string(&model).expect("models serialise");
        super::write_report(out, text)?;
    }
    Ok(())
}

/// Prints the modelling theses' metrics of `predict` on `samples`: the
/// rank correlation is Spearman's, RCC the study's fraction of concordant
/// pairs.
fn score(
    label: &str,
    samples: &[Sample],
    predict: impl Fn(&Sample) -> f64,
) -> Result<(), CliError> {
    let est: Vec<f64> = samples.iter().map(&predict).collect();
    let real: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
    println!(
        "{label}: MMRE {:.1}%, Pred25 {:.1}%, R² {:.3}, rank correlation {:.3}, RCC {:.3}",
        mmre(&est, &real)? * 100.0,
        pred(&est, &real, 0.25)? * 100.0,
        r_squared(&est, &real)?,
        spearman(&est, &real)?,
        rcc(&est, &real)?
    );
    Ok(())
}

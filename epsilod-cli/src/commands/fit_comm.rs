//! `epsilod fit-comm`: a learned model of exchange time from commbench
//! data, scored on held-out data beside an alpha-beta baseline fitted to
//! the same training data and relative error.

use super::commbench::read_csv;
use crate::args::FitCommArgs;
use crate::error::CliError;
use models::learned::{AlphaBeta, CommModel, GbrtOptions, Method, Sample};
use models::metrics::{mmre, pred, r_squared, spearman};

pub fn fit_comm(args: &FitCommArgs) -> Result<(), CliError> {
    let method: Method = args.method.parse()?;
    let train = read_csv(&args.train)?;
    let test = args.test.as_deref().map(read_csv).transpose()?;
    if let Some(out) = &args.out {
        super::check_report_path(out)?;
    }
    let model = CommModel::fit(method, &train, GbrtOptions::default())?;
    println!(
        "{} on {} samples: {}",
        method,
        train.len(),
        model.describe()
    );
    let baseline = AlphaBeta::fit(&train);
    let alpha_beta = |s: &Sample| baseline.predict(&s.features);
    score("training", &train, |s| model.predict(&s.features))?;
    if let Some(test) = &test {
        score(&format!("held out ({method})"), test, |s| {
            model.predict(&s.features)
        })?;
        score("held out (alpha-beta)", test, alpha_beta)?;
        let outside = test
            .iter()
            .filter(|s| !model.out_of_range(&s.features).is_empty())
            .count();
        if outside > 0 {
            println!(
                "warning: {outside} of {} held-out samples lie outside the training range \
                 (trees cannot extrapolate)",
                test.len()
            );
        }
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string(&model).expect("models serialise");
        super::write_report(out, text)?;
    }
    Ok(())
}

/// Prints the modelling theses' metrics of `predict` on `samples`.
fn score(
    label: &str,
    samples: &[Sample],
    predict: impl Fn(&Sample) -> f64,
) -> Result<(), CliError> {
    let est: Vec<f64> = samples.iter().map(&predict).collect();
    let real: Vec<f64> = samples.iter().map(|s| s.seconds).collect();
    println!(
        "{label}: MMRE {:.1}%, Pred25 {:.1}%, R² {:.3}, rank correlation {:.3}",
        mmre(&est, &real)? * 100.0,
        pred(&est, &real, 0.25)? * 100.0,
        r_squared(&est, &real)?,
        spearman(&est, &real)?
    );
    Ok(())
}

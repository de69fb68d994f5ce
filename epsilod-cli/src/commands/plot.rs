//! `epsilod plot`: each report labelled by its heuristic (or file name if
//! two share one).

use crate::args::PlotArgs;
use crate::error::CliError;

pub fn plot(args: &PlotArgs) -> Result<(), CliError> {
    let mut runs = Vec::new();
    for p in &args.reports {
        let mut r = crate::plot::load_report(p)?;
        // Found again, so that reports from before spells were recorded
        // name theirs too.
        r.find_slow_spells();
        runs.push((r.config.alb.clone(), r));
    }
    let names: Vec<String> = runs.iter().map(|(n, _)| n.clone()).collect();
    for (i, p) in args.reports.iter().enumerate() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            runs[i].0 = format!(
                "{} ({})",
                names[i],
                p.file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into())
            );
        }
    }
    crate::plot::plot(&runs, &args.output)?;
    for (label, r) in &runs {
        for s in &r.summary.slow_spells {
            println!("{label}: {}", s.line());
        }
    }
    Ok(())
}

//! `epsilod plan`: a thin front over `models::plan`.

use super::{check_report_path, write_report};
use crate::args::PlanArgs;
use crate::error::CliError;
use crate::sizes::parse_size;
use models::plan::{branch_and_bound, pareto, sweep, Choice, Inventory, Problem};

pub fn plan(args: &PlanArgs) -> Result<(), CliError> {
    if let Some(p) = &args.json {
        check_report_path(p)?;
    }
    let path = args.inventory.display().to_string();
    let text = std::fs::read_to_string(&args.inventory).map_err(|e| CliError::Input {
        path: path.clone(),
        why: e.to_string(),
    })?;
    let inv: Inventory = toml::from_str(&text).map_err(|e| CliError::Input {
        path: path.clone(),
        why: format!(
            "not a device inventory (see docs/modelling.md): {}",
            kernels::TomlError::new(&text, e)
        ),
    })?;
    let global = parse_size(&args.size, args.size.split('x').count())?;
    // The kernels compute the interior, as run and calibrate count cells:
    // the boundary is the halo's depth on each side of every extent.
    let boundary = 2 * args.halo_rows as usize;
    if let Some(d) = global.iter().position(|&n| n <= boundary) {
        return Err(CliError::Plan(format!(
            "--size {}: dimension {d} needs more than {boundary} cells (--halo-rows {} each side) \
             to leave an interior",
            args.size, args.halo_rows
        )));
    }
    let size: Vec<usize> = global.iter().map(|&n| n - boundary).collect();
    let cells_per_row: f64 = size[1..].iter().map(|&n| n as f64).product();
    let problem = Problem {
        rows: size[0] as f64,
        cells_per_row,
        halo_rows: args.halo_rows as f64,
        bytes_per_row: cells_per_row * args.cell_bytes as f64,
        iterations: args.iters as f64,
        estimate: args.estimate,
    };
    let perr = |e: models::plan::PlanError| CliError::Plan(format!("{path}: {e}"));
    let best = branch_and_bound(&inv, &problem).map_err(perr)?;
    let front = pareto(&inv, &problem).map_err(perr)?;
    let table = sweep(&inv, &problem, &best, &size);
    let describe = |c: &Choice| -> String {
        let devices: Vec<String> = inv
            .devices
            .iter()
            .zip(&c.counts)
            .filter(|(_, &n)| n > 0)
            .map(|(d, n)| format!("{n} x {}@{}", d.name, d.host))
            .collect();
        format!(
            "{:.4} s  {} device(s): {}; network {}",
            c.seconds,
            c.devices,
            devices.join(", "),
            c.network.as_deref().unwrap_or("none (one host)")
        )
    };
    println!("best: {}", describe(&best));
    println!("pareto front (devices, time):");
    for c in &front {
        println!("  {}", describe(c));
    }
    println!("layouts of the best, fastest first:");
    for c in &table {
        println!(
            "  {:.4} s  partition {}, weights {:?}, {} device(s) per rank",
            c.seconds, c.partition, c.weights, c.per_rank
        );
    }
    if let Some(p) = &args.json {
        let doc = serde_json::json!({ "best": best, "pareto": front, "sweep": table });
        write_report(
            p,
            serde_json::to_string_pretty(&doc).expect("plans serialise"),
        )?;
    }
    Ok(())
}

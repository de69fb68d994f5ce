//! `epsilod plan`: a thin front over `models::plan`.

use crate::args::PlanArgs;
use crate::error::CliError;
use crate::json::JsonOut;
use crate::sizes::parse_size;
use models::plan::{
    branch_and_bound, front, per_count, ranked, runner_up, sweep, Choice, Inventory, Problem,
};

pub fn plan(args: &PlanArgs) -> Result<(), CliError> {
    let json = JsonOut::of(args.json.as_ref());
    super::distinct_files::distinct_files(&[
        ("--json", json.file()),
        ("--inventory", Some(&args.inventory)),
    ])?;
    json.check()?;
    let path = args.inventory.display().to_string();
    let text = kernels::input_file::read_text(&args.inventory).map_err(|e| CliError::Input {
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
    let counts = per_count(&inv, &problem).map_err(perr)?;
    let front = front(&counts);
    let table = sweep(&inv, &problem, &best, &size);
    let candidates = ranked(&table, &counts);
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
    // The inventory's devices, which each choice's `counts` index.
    let devices: Vec<serde_json::Value> = inv
        .devices
        .iter()
        .map(|d| serde_json::json!({ "name": d.name, "host": d.host }))
        .collect();
    let doc = serde_json::json!({
        "devices": devices, "best": best, "pareto": front, "sweep": table,
        "ranked": candidates, "runner_up": runner_up(&candidates),
    });
    json.write(&doc)?;
    if json.prints_text() {
        let mut text = format!("best: {}\npareto front (devices, time):\n", describe(&best));
        for c in &front {
            text += &format!("  {}\n", describe(c));
        }
        text += "layouts of the best, fastest first:\n";
        for line in sweep_lines(&table) {
            text += &format!("  {line}\n");
        }
        print!("{text}");
    }
    Ok(())
}

/// The sweep's lines, each layout and time once: the devices per rank
/// that give a layout the same time (at the printed precision) share a
/// line, `1-8 device(s) per rank` (where the exchange hides behind the
/// compute, every grouping does).
fn sweep_lines(table: &[Choice]) -> Vec<String> {
    let mut lines: Vec<(String, Vec<usize>)> = Vec::new();
    for c in table {
        let layout = format!(
            "{:.4} s  partition {}, weights {:?}",
            c.seconds, c.partition, c.weights
        );
        match lines.iter_mut().find(|(l, _)| *l == layout) {
            Some((_, per_rank)) => per_rank.push(c.per_rank),
            None => lines.push((layout, vec![c.per_rank])),
        }
    }
    lines
        .into_iter()
        .map(|(layout, per_rank)| format!("{layout}, {} device(s) per rank", ranges(per_rank)))
        .collect()
}

/// `1,2,3,5` as `1-3, 5`.
fn ranges(mut values: Vec<usize>) -> String {
    values.sort_unstable();
    values.dedup();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for v in values {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == v => *end = v,
            _ => runs.push((v, v)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn devices_per_rank_read_as_ranges() {
        assert_eq!(ranges(vec![3, 1, 2, 5, 7, 8]), "1-3, 5, 7-8");
        assert_eq!(ranges(vec![4]), "4");
    }
}

//! `epsilod predict`: a thin front over `models::Machine::predict`.
//!
//! The partition is `--weights` when given, else the report's
//! first-iteration rows when `--against` gives one (so the prediction
//! scores the run that happened), else the model-seeded rows
//! (`Machine::seeded_weights_for`, as `--weights-from`).

use crate::args::PredictArgs;
use crate::error::CliError;
use crate::json::JsonOut;
use crate::machine_file::load_machine;
use crate::plot::load_report;
use crate::sizes::{parse_size, size_text};
use models::halo_features::halo_features;
use models::learned::CommModel;
use models::metrics;
use models::predict::{ExchangeTime, Method, Run};
use serde::Serialize;

pub fn predict(args: &PredictArgs) -> Result<(), CliError> {
    let json = JsonOut::of(args.json.as_ref());
    super::distinct_files::distinct_files(&[
        ("--json", json.file()),
        ("--model", Some(&args.model)),
        ("--against", args.against.as_deref()),
        ("--comm", args.comm.as_deref()),
    ])?;
    json.check()?;
    let machine = load_machine(&args.model)?;
    let names: Vec<&str> = args.method.split(',').map(str::trim).collect();
    if let Some(e) = super::empty_item(
        "--method",
        &args.method,
        &names,
        "method",
        "hockney,overlap",
    ) {
        return Err(e);
    }
    let methods = names
        .iter()
        .map(|m| m.parse::<Method>().map_err(perr))
        .collect::<Result<Vec<_>, _>>()?;
    super::once_each("--method", &methods, "method")?;
    let report = match &args.against {
        Some(p) => Some(load_report(p).map_err(|e| match e {
            CliError::Plot(m) => CliError::Predict(m),
            other => other,
        })?),
        None => None,
    };
    let size = match (&args.size, &report) {
        (Some(s), _) => parse_size(s, s.split('x').count())?,
        (None, Some(r)) => r.config.size.clone(),
        (None, None) => return Err(CliError::Predict("give --size or --against".into())),
    };
    let iters = match (args.iters, &report) {
        (Some(n), _) => n,
        (None, Some(r)) => r.config.iters,
        (None, None) => return Err(CliError::Predict("give --iters or --against".into())),
    };
    let link = match &args.link {
        Some(l) => l.clone(),
        None => machine
            .links
            .first()
            .map(|l| l.name.clone())
            .ok_or_else(|| {
                CliError::Predict(
                    "the machine has no link class (calibrated with --no-links?): calibrate \
                     without --no-links, or add one under \"links\""
                        .into(),
                )
            })?,
    };
    let named = match (&args.stencil, &report) {
        (Some(s), _) => Some(stencil_shape(s)?),
        // A library stencil's run says which; a spec run's name is not its file.
        (None, Some(r)) => kernels::Library::by_name(&r.config.stencil)
            .map(|_| stencil_shape(&r.config.stencil))
            .transpose()?,
        (None, None) => None,
    };
    // As run checks it (epsilod::plan::interior): every extent wider than
    // the stencil's boundary; where no stencil is named, --halo-rows cells
    // each side (1 by default), as plan takes it.
    let borders = match &named {
        Some((shape, borders)) => {
            if shape.ndims != size.len() {
                return Err(CliError::Predict(format!(
                    "the size {size:?} has {} dimension(s), the stencil {}: give a size of {}",
                    size.len(),
                    shape.ndims,
                    shape.ndims
                )));
            }
            borders.clone()
        }
        None => vec![2 * args.halo_rows.unwrap_or(1) as usize; size.len()],
    };
    if let Some((d, border)) = size
        .iter()
        .zip(&borders)
        .enumerate()
        .find_map(|(d, (&n, &b))| (n <= b).then_some((d, b)))
    {
        return Err(CliError::Predict(format!(
            "size {size:?}: dimension {d} needs more than {border} cells (the stencil's \
             boundary) to leave an interior"
        )));
    }
    // The cells the kernels compute, as calibration counts them (each
    // device's block of the interior): the boundary is never updated.
    let interior: Vec<u64> = size
        .iter()
        .zip(&borders)
        .map(|(&n, &b)| (n - b) as u64)
        .collect();
    let named = named.map(|(shape, _)| shape);
    let halo_rows = args.halo_rows.or(named.map(|n| n.reach)).unwrap_or(1);
    let cell_bytes = args.cell_bytes.or(named.map(|n| n.cell_bytes)).unwrap_or(8);
    // Counted in u64 (hitmap's rows in i64): a size past them would wrap
    // into a small, wrong prediction.
    let cells_per_row = interior[1..]
        .iter()
        .try_fold(1u64, |a, &n| a.checked_mul(n))
        .filter(|&c| {
            i64::try_from(interior[0]).is_ok()
                && interior[0].checked_mul(c).is_some()
                && c.checked_mul(cell_bytes).is_some()
        })
        .ok_or_else(|| CliError::Size {
            size: args.size.clone().unwrap_or_else(|| size_text(&size)),
            why: "its interior has more cells, or a row more bytes, than a 64-bit count holds"
                .into(),
        })?;
    let weights: Vec<f64> = match (
        &args.weights,
        report.as_ref().and_then(|r| r.iterations.first()),
    ) {
        (Some(w), _) => {
            if w.len() != machine.devices.len() {
                return Err(CliError::Predict(format!(
                    "--weights gives {} shares, the machine describes {} devices: one share each",
                    w.len(),
                    machine.devices.len()
                )));
            }
            if let Some(bad) = w.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
                return Err(CliError::Predict(format!(
                    "--weights: {bad} is not a positive share of the rows"
                )));
            }
            w.clone()
        }
        (None, Some(it)) => it.devices.iter().map(|d| d.rows as f64).collect(),
        (None, None) => {
            machine.seeded_weights_for(interior[0], cells_per_row, halo_rows, cell_bytes as f64)
        }
    };
    if weights.len() != machine.devices.len() {
        return Err(CliError::Predict(format!(
            "the report ran {} devices, the machine describes {}: calibrate this device set",
            weights.len(),
            machine.devices.len()
        )));
    }
    let run = Run::from_weights(
        interior[0],
        cells_per_row,
        halo_rows,
        (cells_per_row * cell_bytes) as f64,
        iters,
        &weights,
        &link,
    )
    .map_err(perr)?;
    let learned = match &args.comm {
        Some(path) => Some(learned_exchange(path, &run, args.per_rank)?),
        None => None,
    };
    let exchange = learned
        .as_ref()
        .map_or(ExchangeTime::Links, |l| ExchangeTime::Phase(l.seconds));
    let measured = report.as_ref().map(|r| r.summary.loop_seconds);
    let mut predictions = Vec::new();
    for m in methods {
        let p = machine.predict_with(&run, m, exchange).map_err(perr)?;
        let interval = machine.interval(&run, m, exchange).map_err(perr)?;
        predictions.push(MethodFigures {
            method: m.name(),
            iteration_seconds: p.iteration,
            loop_seconds: p.loop_time,
            balanced_loop_seconds: p.balanced_loop,
            median_loop_seconds: interval.median,
            interval_loop_seconds: [interval.low, interval.high],
            interval_contains_measured: measured
                .map(|r| (interval.low..=interval.high).contains(&r)),
            relative_error: measured
                .map(|r| metrics::relative_error(p.loop_time, r))
                .transpose()
                .map_err(perr)?,
            devices: p
                .devices
                .iter()
                .zip(&run.rows)
                .map(|(t, &rows)| DeviceFigures {
                    rows,
                    compute_seconds: t.compute,
                    exchange_seconds: t.exchange,
                })
                .collect(),
        });
    }
    let doc = Figures {
        learned_exchange: learned,
        predictions,
        measured_loop_seconds: measured,
    };
    json.write(&doc)?;
    if json.prints_text() {
        print!("{}", doc.text());
    }
    Ok(())
}

/// What `predict` prints, as `--json` writes it (docs/json.md).
#[derive(Serialize)]
struct Figures {
    /// The exchange time of `--comm`'s model, every method's.
    learned_exchange: Option<LearnedExchange>,
    /// One per `--method`, in its order.
    predictions: Vec<MethodFigures>,
    /// `--against`'s loop time.
    measured_loop_seconds: Option<f64>,
}

/// One method's prediction.
#[derive(Serialize)]
struct MethodFigures {
    method: &'static str,
    iteration_seconds: f64,
    loop_seconds: f64,
    balanced_loop_seconds: f64,
    /// The loop time's median under the calibrated noise.
    median_loop_seconds: f64,
    /// Its 90% interval: the 5th and 95th percentiles.
    interval_loop_seconds: [f64; 2],
    /// Whether `--against`'s loop time lies in the interval.
    interval_contains_measured: Option<bool>,
    /// Against `--against`'s loop time.
    relative_error: Option<f64>,
    devices: Vec<DeviceFigures>,
}

/// A device's part of an iteration.
#[derive(Serialize)]
struct DeviceFigures {
    rows: u64,
    compute_seconds: f64,
    exchange_seconds: f64,
}

/// The halo exchange by a learned model (`--comm`).
#[derive(Serialize)]
struct LearnedExchange {
    /// The model's method (`fit-comm --method`).
    method: String,
    /// Messages of the iteration's halo plan.
    messages: f64,
    /// Its largest message in bytes.
    largest_bytes: f64,
    /// Seconds per iteration.
    seconds: f64,
}

impl Figures {
    /// The table for people.
    fn text(&self) -> String {
        let mut text = String::new();
        if let Some(l) = &self.learned_exchange {
            text += &format!(
                "exchange by {} ({} messages, largest {} B): {:.6e} s per iteration\n",
                l.method, l.messages, l.largest_bytes, l.seconds
            );
        }
        text += "method   iteration_s   loop_s   balanced_loop_s   rel_error\n";
        for p in &self.predictions {
            let err = p
                .relative_error
                .map_or_else(|| "-".to_string(), |e| format!("{e:.3}"));
            text += &format!(
                "{:<8} {:>12.6e} {:>8.4} {:>17.4} {:>11}\n",
                p.method, p.iteration_seconds, p.loop_seconds, p.balanced_loop_seconds, err
            );
            for (d, t) in p.devices.iter().enumerate() {
                text += &format!(
                    "  device {d}: rows {} compute {:.6e} s exchange {:.6e} s\n",
                    t.rows, t.compute_seconds, t.exchange_seconds
                );
            }
            let [lo, hi] = p.interval_loop_seconds;
            let inside = match p.interval_contains_measured {
                Some(true) => ", measured inside",
                Some(false) => ", measured outside",
                None => "",
            };
            text += &format!(
                "  loop median {:.4} s, 90% interval {lo:.4} to {hi:.4} s{inside}\n",
                p.median_loop_seconds
            );
        }
        if let Some(r) = self.measured_loop_seconds {
            text += &format!("measured loop_s {r:.4}\n");
        }
        text
    }
}

/// What predict needs of a stencil: what `--halo-rows` and `--cell-bytes`
/// say by hand, and the boundary run checks a size against.
#[derive(Clone, Copy)]
pub(crate) struct StencilShape {
    /// Its reach along the partitioned axis: the halo rows.
    pub(crate) reach: u64,
    /// Bytes of one cell.
    pub(crate) cell_bytes: u64,
    /// Its dimensions.
    pub(crate) ndims: usize,
}

/// The [`StencilShape`] of a library name or a spec file, and its boundary
/// cells per dimension (low + high reach).
pub(crate) fn stencil_shape(name: &str) -> Result<(StencilShape, Vec<usize>), CliError> {
    let (low, high, components): (Vec<usize>, Vec<usize>, usize) =
        match kernels::Library::by_name(name) {
            Some(lib) => {
                let s = lib.spec();
                (s.low, s.high, 1)
            }
            None if name.ends_with(".toml") || std::path::Path::new(name).exists() => {
                match kernels::AnySpec::load(std::path::Path::new(name))? {
                    kernels::AnySpec::Weighted(s) => (s.low, s.high, 1),
                    kernels::AnySpec::Expr(e) => (e.low, e.high, e.components.unwrap_or(1)),
                }
            }
            None => {
                return Err(CliError::Predict(format!(
                    "--stencil {name}: not a library stencil or a spec file (see 'epsilod list')"
                )))
            }
        };
    let shape = StencilShape {
        reach: low[0].max(high[0]) as u64,
        cell_bytes: 4 * components as u64,
        ndims: low.len(),
    };
    Ok((shape, low.iter().zip(&high).map(|(l, h)| l + h).collect()))
}

/// The halo exchange's time by the learned model at `path`, from the
/// features of the run's halo plan; one warning line when a feature lies
/// outside what the model was trained on.
fn learned_exchange(
    path: &std::path::Path,
    run: &Run,
    per_rank: Option<u64>,
) -> Result<LearnedExchange, CliError> {
    let bad = |why: String| CliError::Input {
        path: path.display().to_string(),
        why,
    };
    let text = kernels::input_file::read_text(path).map_err(|e| bad(e.to_string()))?;
    let model: CommModel = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a model of `epsilod fit-comm --out`: {e}")))?;
    let per_rank = per_rank.map_or(run.rows.len(), |n| n as usize);
    let features = halo_features(run, per_rank).map_err(perr)?;
    let outside = model.out_of_range(&features);
    if !outside.is_empty() {
        eprintln!(
            "warning: the halo exchange's {} lie outside the comm model's training range: \
             its time is extrapolated",
            outside.join(", ")
        );
    }
    Ok(LearnedExchange {
        method: model.method.to_string(),
        messages: features.tm,
        largest_bytes: features.l,
        seconds: model.predict(&features),
    })
}

fn perr<E: std::fmt::Display>(e: E) -> CliError {
    CliError::Predict(e.to_string())
}

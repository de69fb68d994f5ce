//! `epsilod plot`: per-iteration time of one or more runs on one truncated
//! y-range with their mean lines, and, for the balanced run, each device's
//! compute time and row share over time. PNG or SVG.

use crate::error::CliError;
use epsilod::Report;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const FONT_CANDIDATES: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers a TrueType font for the labels, once: `EPSILOD_FONT` if set,
/// else the first common system font found.
pub(crate) fn ensure_font() -> Result<(), CliError> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let given = std::env::var("EPSILOD_FONT").ok();
        let candidates: Vec<String> = match &given {
            Some(p) => vec![p.clone()],
            None => FONT_CANDIDATES.iter().map(|s| s.to_string()).collect(),
        };
        let path = candidates.iter().find(|p| Path::new(p).is_file()).ok_or_else(|| match &given {
            // Named, so that a typo in it is not read as a missing package.
            Some(p) => format!("EPSILOD_FONT={p} is not a file: set it to a TrueType font's path, or unset it for a system font"),
            None => "no TrueType font for the labels: install fonts-dejavu-core, or set EPSILOD_FONT=/path/to/font.ttf".to_string(),
        })?;
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read font {path}: {e}"))?;
        // Registered fonts live for the whole process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{path} is not a usable TrueType font"))
    })
    .clone()
    .map_err(CliError::Font)
}

/// Reads a run report written by `epsilod run --report`.
pub fn load_report(path: &Path) -> Result<Report, CliError> {
    use kernels::input_file::{read_text_within, REPORT_LIMIT};
    let text = read_text_within(path, REPORT_LIMIT)
        .map_err(|e| CliError::Plot(format!("cannot read report {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| CliError::Plot(format!("{} is not an epsilod report: {e}", path.display())))
}

fn perr<E: std::error::Error + Send + Sync + 'static>(e: DrawingAreaErrorKind<E>) -> CliError {
    CliError::Plot(drawing_error(&e))
}

/// A drawing error as a line: what failed, by its cause (the bitmap
/// backend's own Display is its Debug, `ImageError(IoError(Custom {..}))`).
pub(crate) fn drawing_error<E: std::error::Error + Send + Sync + 'static>(
    e: &DrawingAreaErrorKind<E>,
) -> String {
    use plotters_backend::DrawingErrorKind;
    match e {
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::DrawingError(inner)) => {
            backend_error(inner)
        }
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::FontError(f)) => {
            format!("cannot draw the labels' text: {f}")
        }
        other => other.to_string(),
    }
}

/// A backend's error by its cause: the I/O error for a file that cannot
/// be written.
pub(crate) fn backend_error(e: &(dyn std::error::Error + 'static)) -> String {
    use plotters_bitmap::BitMapBackendError as Bitmap;
    match e.downcast_ref::<Bitmap>() {
        Some(Bitmap::IOError(io)) => io.to_string(),
        Some(Bitmap::InvalidBuffer) => "the picture's buffer does not fit its size".into(),
        None => e.to_string(),
    }
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A captioned panel over iterations `0..xmax` and `0..ymax`, its mesh drawn.
fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: impl AsRef<str>,
    xmax: f64,
    ymax: f64,
    ydesc: &str,
) -> Result<Chart<'a, DB>, CliError>
where
    DB::ErrorType: 'static,
{
    let mut chart = ChartBuilder::on(area)
        .caption(caption.as_ref(), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc(ydesc)
        .draw()
        .map_err(perr)?;
    Ok(chart)
}

fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>) -> Result<(), CliError>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(perr)
}

/// A failed write of the figure `out`, by its cause.
fn written<E: std::error::Error + Send + Sync + 'static>(
    out: &Path,
    e: &DrawingAreaErrorKind<E>,
) -> CliError {
    unwritable(out, drawing_error(e))
}

/// The figure `out` cannot be written, for `why`.
fn unwritable(out: &Path, why: impl std::fmt::Display) -> CliError {
    CliError::Write {
        what: "plot",
        path: out.display().to_string(),
        why: why.to_string(),
    }
}

/// Draws `runs` (label, report) into `out` (.png or .svg).
pub fn plot(runs: &[(String, Report)], out: &Path) -> Result<(), CliError> {
    if runs.is_empty() {
        return Err(CliError::Plot("give at least one report".into()));
    }
    let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext != "png" && ext != "svg" {
        return Err(CliError::Plot(format!(
            "unknown figure format '{}': use a file name ending in .png or .svg",
            out.display()
        )));
    }
    epsilod::output::check_creatable(out).map_err(|why| unwritable(out, why))?;
    for (label, r) in runs {
        check_times(label, r)?;
    }
    ensure_font()?;
    let size = (1200, 1100);
    match ext {
        "png" => {
            let mut rgb = vec![0; crate::bitmap::rgb_bytes(size)];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                draw(&root, runs)?;
                root.present().map_err(|e| written(out, &e))?;
            }
            crate::bitmap::write_png(out, size, &rgb).map_err(|why| unwritable(out, why))
        }
        _ => {
            let root = SVGBackend::new(out, size).into_drawing_area();
            draw(&root, runs)?;
            root.present().map_err(|e| written(out, &e))
        }
    }
}

/// The longest time a plotted iteration may take (about 30 years): past it
/// a report's times are not a run's, and the axes' ranges overflow.
const MAX_SECONDS: f64 = 1e9;

/// Errors unless every time the figure draws is a number from 0 to
/// [`MAX_SECONDS`].
fn check_times(label: &str, r: &Report) -> Result<(), CliError> {
    let times = r.iterations.iter().flat_map(|i| {
        std::iter::once(i.seconds).chain(i.devices.iter().map(|d| d.compute_seconds))
    });
    let times = times.chain([r.summary.mean_iteration_seconds]);
    match times.into_iter().find(|t| !(0.0..=MAX_SECONDS).contains(t)) {
        None => Ok(()),
        Some(t) => Err(CliError::Plot(format!(
            "the report of {label} has a time of {t:e} s, not one a run measures (0 to \
             {MAX_SECONDS:e} s)"
        ))),
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[(String, Report)],
) -> Result<(), CliError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(perr)?;
    let panels = root.split_evenly((3, 1));
    let ms = |s: f64| s * 1e3;

    // 1. Iteration time, every run, one y-range cut at 1.2 x the largest p99
    //    so a few spikes (rebalances, page faults) do not flatten the rest.
    let mut p99s = Vec::new();
    for (_, r) in runs {
        let mut v: Vec<f64> = r.iterations.iter().map(|i| ms(i.seconds)).collect();
        v.sort_by(f64::total_cmp);
        p99s.push(
            v.get(((v.len() as f64 * 0.99) as usize).min(v.len().saturating_sub(1)))
                .copied()
                .unwrap_or(1.0),
        );
    }
    let ymax = p99s.iter().cloned().fold(0.0, f64::max).max(1e-6) * 1.2;
    let xmax = runs
        .iter()
        .filter_map(|(_, r)| r.iterations.last().map(|i| i.iter + 1))
        .max()
        .unwrap_or(1) as f64;
    let mut chart = panel(
        &panels[0],
        "Iteration time (y cut at 1.2 x the largest p99; dashed: means)",
        xmax,
        ymax,
        "ms",
    )?;
    for (k, (label, r)) in runs.iter().enumerate() {
        let colour = Palette99::pick(k).to_rgba();
        let pts = r
            .iterations
            .iter()
            .map(|i| (i.iter as f64, ms(i.seconds).min(ymax)));
        chart
            .draw_series(LineSeries::new(pts, colour.stroke_width(1)))
            .map_err(perr)?
            .label(label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        let mean = ms(r.summary.mean_iteration_seconds);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, mean), (xmax, mean)],
                8,
                4,
                colour.stroke_width(2),
            ))
            .map_err(perr)?;
    }
    legend(&mut chart)?;

    // 2 and 3: the devices of the first run that rebalanced (else the first).
    let (label, r) = runs
        .iter()
        .find(|(_, r)| r.summary.rebalances > 0)
        .unwrap_or(&runs[0]);
    let ndev = r.iterations.first().map_or(0, |i| i.devices.len());
    let cmax = r
        .iterations
        .iter()
        .flat_map(|i| i.devices.iter().map(|d| ms(d.compute_seconds)))
        .fold(0.0, f64::max)
        .max(1e-6);
    let xmax = r.iterations.last().map_or(1, |i| i.iter + 1) as f64;
    let mut chart = panel(
        &panels[1],
        format!("Kernel time per device ({label})"),
        xmax,
        cmax * 1.05,
        "ms",
    )?;
    // Slow spells shaded in their device's colour, under its line.
    chart
        .draw_series(r.summary.slow_spells.iter().map(|s| {
            Rectangle::new(
                [
                    (s.from_iter as f64, 0.0),
                    (s.to_iter as f64 + 1.0, cmax * 1.05),
                ],
                Palette99::pick(s.device).mix(0.15).filled(),
            )
        }))
        .map_err(perr)?;
    for k in 0..ndev {
        let colour = Palette99::pick(k).to_rgba();
        let pts = r
            .iterations
            .iter()
            .map(move |i| (i.iter as f64, ms(i.devices[k].compute_seconds)));
        chart
            .draw_series(LineSeries::new(pts, colour.stroke_width(1)))
            .map_err(perr)?
            .label(format!(
                "device {k}: {}",
                r.config.devices.get(k).map_or("", String::as_str)
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    legend(&mut chart)?;

    let mut chart = panel(
        &panels[2],
        format!("Row share per device ({label})"),
        xmax,
        1.0,
        "share of rows",
    )?;
    for k in 0..ndev {
        let colour = Palette99::pick(k).to_rgba();
        let pts = r.iterations.iter().map(move |i| {
            let total: usize = i.devices.iter().map(|d| d.rows).sum();
            (
                i.iter as f64,
                i.devices[k].rows as f64 / total.max(1) as f64,
            )
        });
        chart
            .draw_series(LineSeries::new(pts, colour.stroke_width(2)))
            .map_err(perr)?
            .label(format!("device {k}"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
    }
    legend(&mut chart)?;
    Ok(())
}

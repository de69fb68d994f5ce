//! `epsilod view`: a field (`.npy` from `--output` or `--snapshot`) as a
//! heat map with a colour bar; a 3-d field as one slice; gas-sim's D3Q19
//! cells as density or speed; several files as an animated GIF on one
//! colour scale.

use crate::bitmap::{rgb_bytes, write_png, Gif};
use crate::error::CliError;
use ndarray::{ArrayD, Axis, Ix2, IxDyn};
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use std::path::Path;

/// What to draw of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// The value (scalar fields), or a D3Q19 cell's density.
    Value,
    /// A D3Q19 cell's speed |u| = |sum f_i e_i| / density.
    Speed,
}

/// A plane to draw: `z=K` (the last of three axes) or `axis=K`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The axis cut (0, 1 or 2).
    pub axis: usize,
    /// The index along it.
    pub index: usize,
}

/// Parses `x=K`, `y=K`, `z=K` (axes 0, 1, 2) or `0=K` .. `2=K`.
pub fn parse_slice(s: &str) -> Result<Slice, String> {
    let (a, k) = s
        .split_once('=')
        .ok_or_else(|| format!("slice '{s}' is not AXIS=INDEX (e.g. z=10)"))?;
    let axis = match a {
        "x" | "0" => 0,
        "y" | "1" => 1,
        "z" | "2" => 2,
        _ => return Err(format!("slice axis '{a}': use x, y or z")),
    };
    let index = k
        .parse()
        .map_err(|_| format!("slice index '{k}': expected a whole number >= 0"))?;
    Ok(Slice { axis, index })
}

/// A failed write of the picture `out`.
fn written(out: &Path, why: &str) -> CliError {
    CliError::Write {
        what: "picture",
        path: out.display().to_string(),
        why: why.to_string(),
    }
}

/// Draws one picture of `size` into `rgb` with `paint`.
fn picture(
    rgb: &mut [u8],
    size: (u32, u32),
    out: &Path,
    paint: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let root = BitMapBackend::with_buffer(rgb, size).into_drawing_area();
    paint(&root)?;
    root.present()
        .map_err(|e| written(out, &crate::plot::drawing_error(&e)))
}

fn err(path: &Path, why: impl std::fmt::Display) -> CliError {
    CliError::View {
        path: path.display().to_string(),
        why: why.to_string(),
    }
}

/// A field file as f64 values, whatever its element type.
fn read_npy(path: &Path) -> Result<ArrayD<f64>, CliError> {
    epsilod::npy::read_as_f64(path).map_err(|e| err(path, e))
}

/// The 2-d plane to draw from a field of 1 to 3 dimensions (plus a
/// trailing 19 for D3Q19 cells).
pub fn plane(
    path: &Path,
    slice: Option<Slice>,
    quantity: Quantity,
) -> Result<ndarray::Array2<f64>, CliError> {
    let a = read_npy(path)?;
    let shape = a.shape().to_vec();
    let cells = if shape.last() == Some(&19) && shape.len() == 4 {
        d3q19(&a, quantity)
    } else {
        if quantity == Quantity::Speed {
            return Err(err(
                path,
                "speed needs gas-sim's D3Q19 cells (a trailing axis of 19)",
            ));
        }
        a
    };
    if let (Some(s), 1 | 2) = (slice, cells.ndim()) {
        return Err(err(
            path,
            format!(
                "--slice {}={} needs a 3-d field; this one is {}-d (leave --slice out)",
                ["x", "y", "z"][s.axis],
                s.index,
                cells.ndim()
            ),
        ));
    }
    let cells = match cells.ndim() {
        1 => cells.insert_axis(Axis(0)),
        2 => cells,
        3 => {
            let s = slice.unwrap_or(Slice {
                axis: 2,
                index: cells.shape()[2] / 2,
            });
            let n = cells.shape()[s.axis];
            if s.index >= n {
                return Err(err(
                    path,
                    format!(
                        "slice index {} is outside axis {} of {n} cells",
                        s.index, s.axis
                    ),
                ));
            }
            cells.index_axis(Axis(s.axis), s.index).to_owned()
        }
        n => {
            return Err(err(
                path,
                format!("a {n}-d field: view draws 1-, 2- and 3-d fields"),
            ))
        }
    };
    cells.into_dimensionality::<Ix2>().map_err(|e| err(path, e))
}

/// Density or speed of each D3Q19 cell (trailing axis of 19).
fn d3q19(a: &ArrayD<f64>, q: Quantity) -> ArrayD<f64> {
    let shape = &a.shape()[..a.ndim() - 1];
    let mut out = ArrayD::zeros(IxDyn(shape));
    for (o, f) in out.iter_mut().zip(a.lanes(Axis(a.ndim() - 1))) {
        let rho: f64 = f.sum();
        *o = match q {
            Quantity::Value => rho,
            Quantity::Speed => {
                let mut u = [0.0f64; 3];
                for (i, e) in epsilod_apps::gas::E.iter().enumerate() {
                    for d in 0..3 {
                        u[d] += f[i] * e[d] as f64;
                    }
                }
                let m = (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
                if rho != 0.0 {
                    m / rho
                } else {
                    0.0
                }
            }
        };
    }
    out
}

/// The finite minimum and maximum over `planes` (0..1 when none).
fn range(planes: &[ndarray::Array2<f64>]) -> (f64, f64) {
    let (lo, hi) = planes
        .iter()
        .flat_map(|p| p.iter())
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

const BAR: u32 = 110;
const TITLE: u32 = 30;

/// Pixels per cell: fields up to 800 pixels a side, at least 1.
fn scale(rows: usize, cols: usize) -> (u32, u32) {
    let big = rows.max(cols).max(1);
    let s = (800 / big).max(1) as u32;
    let (h, w) = (rows as u32 * s, cols as u32 * s);
    // Large fields are sampled down to 800 pixels.
    let f = 800.0 / (h.max(w) as f64);
    if f < 1.0 {
        (((h as f64) * f) as u32, ((w as f64) * f) as u32)
    } else {
        (h, w)
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    p: &ndarray::Array2<f64>,
    (lo, hi): (f64, f64),
    title: &str,
    (h, w): (u32, u32),
) -> Result<(), CliError>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| CliError::Draw(crate::plot::drawing_error(&e));
    root.fill(&WHITE).map_err(e)?;
    root.draw_text(title, &("sans-serif", 16).into_text_style(root), (8, 6))
        .map_err(e)?;
    let (rows, cols) = p.dim();
    // Row 0 at the top, as the array prints.
    for py in 0..h {
        let r = (py as usize * rows / h as usize).min(rows - 1);
        for px in 0..w {
            let c = (px as usize * cols / w as usize).min(cols - 1);
            let v = p[[r, c]];
            let colour = if v.is_finite() {
                ViridisRGB.get_color_normalized(v, lo, hi)
            } else {
                RGBColor(255, 0, 255)
            };
            root.draw_pixel((px as i32 + 8, (py + TITLE) as i32), &colour)
                .map_err(e)?;
        }
    }
    // The colour bar, high at the top, with its ends labelled.
    let x0 = w as i32 + 24;
    for py in 0..h {
        let v = hi - (hi - lo) * py as f64 / (h.max(2) - 1) as f64;
        let c = ViridisRGB.get_color_normalized(v, lo, hi);
        root.draw(&Rectangle::new(
            [
                (x0, (py + TITLE) as i32),
                (x0 + 20, (py + TITLE) as i32 + 1),
            ],
            c.filled(),
        ))
        .map_err(e)?;
    }
    let label = ("sans-serif", 13).into_text_style(root);
    root.draw_text(&format!("{hi:.4e}"), &label, (x0 + 24, TITLE as i32))
        .map_err(e)?;
    root.draw_text(
        &format!("{lo:.4e}"),
        &label,
        (x0 + 24, (TITLE + h) as i32 - 14),
    )
    .map_err(e)?;
    Ok(())
}

/// Draws `files` into `out`: one file as a PNG, several as the frames of
/// an animated GIF (`.gif`), all on one colour scale.
pub fn view(
    files: &[&Path],
    out: &Path,
    slice: Option<Slice>,
    quantity: Quantity,
    delay_ms: u32,
) -> Result<(), CliError> {
    epsilod::output::check_creatable(out).map_err(|why| written(out, &why.to_string()))?;
    crate::plot::ensure_font()?;
    let planes = files
        .iter()
        .map(|f| plane(f, slice, quantity))
        .collect::<Result<Vec<_>, _>>()?;
    let (rows, cols) = planes[0].dim();
    if rows == 0 || cols == 0 {
        return Err(err(files[0], "the field has no cells to draw"));
    }
    if let Some((f, p)) = files
        .iter()
        .zip(&planes)
        .find(|(_, p)| p.dim() != (rows, cols))
    {
        return Err(err(
            f,
            format!(
                "its plane is {:?}, the first file's {:?}",
                p.dim(),
                (rows, cols)
            ),
        ));
    }
    let (h, w) = scale(rows, cols);
    let size = (w + BAR + 16, h + TITLE + 8);
    let range = range(&planes);
    let title = |f: &Path| {
        f.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into())
    };
    let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "gif" => {
            let mut gif = Gif::create(out, size, delay_ms).map_err(|why| written(out, &why))?;
            let mut rgb = vec![0; rgb_bytes(size)];
            for (f, p) in files.iter().zip(&planes) {
                picture(&mut rgb, size, out, |root| {
                    draw(root, p, range, &title(f), (h, w))
                })?;
                gif.frame(&rgb).map_err(|why| written(out, &why))?;
            }
            gif.finish().map_err(|why| written(out, &why))
        }
        "png" if planes.len() == 1 => {
            let mut rgb = vec![0; rgb_bytes(size)];
            picture(&mut rgb, size, out, |root| {
                draw(root, &planes[0], range, &title(files[0]), (h, w))
            })?;
            write_png(out, size, &rgb).map_err(|why| written(out, &why))
        }
        // The picture's kind, not a field file's: said as its write.
        "png" => Err(written(
            out,
            &format!("{} files make an animation: write a .gif", planes.len()),
        )),
        _ => Err(written(
            out,
            "write a .png (one file) or a .gif (one or more)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_parse_or_say_why() {
        assert_eq!(parse_slice("z=4"), Ok(Slice { axis: 2, index: 4 }));
        assert_eq!(parse_slice("0=1"), Ok(Slice { axis: 0, index: 1 }));
        assert!(parse_slice("w=1").unwrap_err().contains("use x, y or z"));
        assert!(parse_slice("z").unwrap_err().contains("AXIS=INDEX"));
        assert!(parse_slice("z=-1").unwrap_err().contains("whole number"));
    }

    #[test]
    fn a_resting_d3q19_cell_has_its_weight_sum_as_density_and_no_speed() {
        let mut a = ArrayD::zeros(IxDyn(&[1, 1, 1, 19]));
        for i in 0..19 {
            a[[0, 0, 0, i]] = 0.5;
        }
        assert_eq!(d3q19(&a, Quantity::Value)[[0, 0, 0]], 9.5);
        assert_eq!(d3q19(&a, Quantity::Speed)[[0, 0, 0]], 0.0);
        // All mass moving along +x (direction 1 in gas::E is some e with x=1).
        let i = epsilod_apps::gas::E
            .iter()
            .position(|e| *e == [1, 0, 0])
            .unwrap();
        let mut b = ArrayD::zeros(IxDyn(&[1, 1, 1, 19]));
        b[[0, 0, 0, i]] = 2.0;
        assert_eq!(d3q19(&b, Quantity::Speed)[[0, 0, 0]], 1.0);
    }

    #[test]
    fn ranges_skip_non_finite_values_and_widen_flat_fields() {
        let p = ndarray::arr2(&[[1.0, f64::NAN], [3.0, 2.0]]);
        assert_eq!(range(&[p]), (1.0, 3.0));
        let flat = ndarray::arr2(&[[2.0, 2.0]]);
        assert_eq!(range(&[flat]), (1.5, 2.5));
    }
}

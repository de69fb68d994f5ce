//! Piecewise power laws through measured points: the shape both the host
//! memory's rate against working set and a kernel's speed against tile
//! size take, since each falls (or rises) by a power as the data leaves a
//! cache level and is flat within one.

use crate::{check_finite, ModelError};

/// `points` as a curve: at least one, every coordinate finite and
/// positive, sorted by `x`. The errors name the curve and the coordinates.
pub(crate) fn checked(
    mut points: Vec<(f64, f64)>,
    curve: &'static str,
    what: (&'static str, &'static str),
) -> Result<Vec<(f64, f64)>, ModelError> {
    if points.is_empty() {
        return Err(ModelError::TooFewPoints {
            what: curve,
            needed: 1,
            got: 0,
        });
    }
    for &(x, y) in &points {
        for (what, v) in [(what.0, x), (what.1, y)] {
            if check_finite(what, v)? <= 0.0 {
                return Err(ModelError::InvalidValue { what, value: v });
            }
        }
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some(w) = points.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(ModelError::Repeated {
            what: what.0,
            value: w[0].0,
        });
    }
    Ok(points)
}

/// What is wrong with a tile curve, if anything, as (what, the bound it
/// breaks, the value): cells must be positive and increasing, factors
/// positive and never falling as tiles grow, so that a device's time rises
/// with its cells (the balanced split depends on it). Calibration writes
/// no other; a hand-written machine may.
pub(crate) fn tile_curve_fault(points: &[(f64, f64)]) -> Option<(&'static str, &'static str, f64)> {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let mut last = (0.0, 0.0);
    for &(cells, factor) in points {
        if !(positive(cells) && cells > last.0) {
            return Some(("tile curve cells", "> 0 and increasing", cells));
        }
        if !(positive(factor) && factor >= last.1) {
            return Some(("tile curve factor", "> 0 and not falling", factor));
        }
        last = (cells, factor);
    }
    None
}

/// Kernel seconds over `cells` cells of a device whose line is `a + b ·
/// cells`, times its tile curve's factor there ([`factor_at`]).
pub(crate) fn kernel_time(a: f64, b: f64, tile_curve: &[(f64, f64)], cells: f64) -> f64 {
    (a + b * cells) * factor_at(tile_curve, cells)
}

/// A tile curve's factor at `cells`: [`log_log`] through its points, 1
/// without any.
pub(crate) fn factor_at(points: &[(f64, f64)], cells: f64) -> f64 {
    if points.is_empty() {
        1.0
    } else {
        log_log(points, cells)
    }
}

/// The curve through `points` (`x` increasing, as [`checked`] leaves them)
/// at `x`: between two points the straight line in log-log coordinates,
/// beyond either end that end's value.
pub(crate) fn log_log(points: &[(f64, f64)], x: f64) -> f64 {
    let (first, last) = (points[0], points[points.len() - 1]);
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        return last.1;
    }
    let k = points.partition_point(|p| p.0 <= x);
    let ((x0, y0), (x1, y1)) = (points[k - 1], points[k]);
    if x0 == x {
        return y0;
    }
    let t = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
    (y0.ln() + t * (y1.ln() - y0.ln())).exp()
}

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
    Ok(points)
}

/// The curve through `points` (sorted by `x`, as [`checked`] leaves them)
/// at `x`: between two points the straight line in log-log coordinates,
/// beyond either end that end's value. Of points at one `x`, the last.
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

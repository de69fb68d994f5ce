//! One-step launches on grids of three or more dimensions, walked in bands
//! of dimension 1. A task walks its planes in order; where the planes one
//! stencil plane reads do not fit the core's second-level cache, each cell
//! is fetched from the third level (or memory) once per plane that reads
//! it. A band of dimension-1 rows, walked over all the task's planes before
//! the next band, keeps those planes' rows in the cache instead, at the
//! cost of re-reading the rows a band shares with its neighbours.

use super::even_split;
use std::ops::Range;

/// How a one-step launch's planes are banded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bands {
    /// Bands for a core whose second-level cache holds this many bytes:
    /// where the planes a stencil plane reads take more than half of it,
    /// bands whose rows of those planes take a quarter. Where they take
    /// less, the destination's plane fits beside them, and bands would
    /// only add the rows a band shares with its neighbours.
    Cache(usize),
    /// Bands of this many rows (at least one) on every grid of three or
    /// more dimensions: tests exercise every path with them.
    Rows(usize),
}

impl Bands {
    /// The bands of dimension 1 that a launch over `local` (local ranges,
    /// one a dimension) of a kernel reaching `low` below and `high` above
    /// each cell walks in turn, in order, covering `local[1]`; `None` where
    /// it walks whole planes: grids of fewer than three dimensions, empty
    /// regions, and planes that fit.
    pub(super) fn of(
        self,
        local: &[Range<usize>],
        low: &[usize],
        high: &[usize],
        cell_bytes: usize,
    ) -> Option<Vec<Range<usize>>> {
        if local.len() < 3 || local.iter().any(|r| r.is_empty()) {
            return None;
        }
        let rows = local[1].len();
        let height = match self {
            Bands::Rows(h) => h.max(1),
            Bands::Cache(bytes) => band_height(local, low, high, cell_bytes, bytes)?,
        };
        let mut start = local[1].start;
        let bands = even_split(rows, rows.div_ceil(height))
            .into_iter()
            .map(|n| {
                start += n;
                start - n..start
            })
            .collect();
        Some(bands)
    }
}

/// The most dimension-1 rows a band may have so that the planes one
/// stencil plane reads (`low[0] + 1 + high[0]` of them), each the band's
/// rows and the rows it reaches beyond them, fit a quarter of `cache`
/// bytes (at least one row); `None` where whole planes take at most half.
fn band_height(
    local: &[Range<usize>],
    low: &[usize],
    high: &[usize],
    cell_bytes: usize,
    cache: usize,
) -> Option<usize> {
    let reach = |d: usize| low.get(d).copied().unwrap_or(0) + high.get(d).copied().unwrap_or(0);
    let row_bytes: usize = (2..local.len())
        .map(|d| local[d].len() + reach(d))
        .product::<usize>()
        * cell_bytes;
    let planes = reach(0) + 1;
    let rows = local[1].len();
    let halo = reach(1);
    if planes * (rows + halo) * row_bytes <= cache / 2 {
        return None;
    }
    let budget = cache / 4;
    let height = (budget / (planes * row_bytes).max(1))
        .saturating_sub(halo)
        .max(1);
    (height < rows).then_some(height)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 514^3 level of f32 (the 7-point star): its planes, 1 MiB each,
    /// take more than half of a 4 MiB cache; bands of rows fit a quarter,
    /// the bands within a row of each other, covering every row once, in
    /// order, as few as fit.
    #[test]
    fn bands_keep_the_planes_a_plane_reads_in_a_quarter_of_the_cache() {
        let local = [1..513, 1..513, 1..513];
        let (low, high) = ([1, 1, 1], [1, 1, 1]);
        let cache = 4 << 20;
        let budget = cache / 4;
        let b = Bands::Cache(cache)
            .of(&local, &low, &high, 4)
            .expect("banded");
        assert!(b.len() > 1, "{b:?}");
        assert_eq!(b.first().unwrap().start, 1);
        assert_eq!(b.last().unwrap().end, 513);
        for w in b.windows(2) {
            assert_eq!(w[0].end, w[1].start, "{b:?}");
        }
        let (lo, hi) = (
            b.iter().map(|r| r.len()).min().unwrap(),
            b.iter().map(|r| r.len()).max().unwrap(),
        );
        assert!(hi - lo <= 1, "{b:?}");
        // Three planes of the band's rows and the two rows beyond it.
        assert!(3 * (hi + 2) * 514 * 4 <= budget, "{b:?}");
        // Fewer bands would not fit.
        let fewer = 512usize.div_ceil(b.len() - 1);
        assert!(3 * (fewer + 2) * 514 * 4 > budget, "{b:?}");
        // A deeper reach: more planes and rows a band, so thinner bands.
        let deep = Bands::Cache(cache).of(&local, &[2; 3], &[2; 3], 4);
        assert!(deep.expect("banded").len() > b.len());
    }

    /// Whole planes where they take at most half the cache, where the
    /// grid has fewer than three dimensions, and for empty regions; bands
    /// of one row where not even one fits.
    #[test]
    fn whole_planes_where_bands_gain_nothing() {
        let star = ([1, 1, 1], [1, 1, 1]);
        // 3 planes of 130^2 f32: 200 KiB.
        let small = [1..129, 1..129, 1..129];
        assert_eq!(Bands::Cache(1 << 20).of(&small, &star.0, &star.1, 4), None);
        // 3 planes of 258^2: 780 KiB, above a quarter of 2 MiB, under half.
        let mid = [1..257, 1..257, 1..257];
        assert_eq!(Bands::Cache(2 << 20).of(&mid, &star.0, &star.1, 4), None);
        assert!(Bands::Cache(1 << 20)
            .of(&mid, &star.0, &star.1, 4)
            .is_some());
        let flat = [1..8193, 1..8193];
        assert_eq!(Bands::Cache(1).of(&flat, &[1, 1], &[1, 1], 4), None);
        assert_eq!(Bands::Rows(1).of(&flat, &[1, 1], &[1, 1], 4), None);
        let line = [1..99, 0..0];
        let line = &line[..1];
        assert_eq!(Bands::Rows(1).of(line, &[1], &[1], 4), None);
        let empty = [1..513, 4..4, 1..513];
        assert_eq!(Bands::Rows(1).of(&empty, &star.0, &star.1, 4), None);
        let b = Bands::Cache(1).of(&small, &star.0, &star.1, 4);
        assert_eq!(b.expect("banded").len(), 128);
    }

    /// Fixed band heights: bands that do not divide the rows are within a
    /// row of each other, the last ending at the region's end; a height
    /// of zero is one row.
    #[test]
    fn fixed_bands_cover_the_rows_once() {
        let local = [0..3, 2..9, 0..4, 0..5];
        let (low, high) = ([0; 4], [0; 4]);
        let of = |rows| Bands::Rows(rows).of(&local, &low, &high, 4).unwrap();
        assert_eq!(of(3), [2..5, 5..7, 7..9]);
        assert_eq!(of(0), of(1));
        assert_eq!(of(1).len(), 7);
        assert_eq!(of(7), of(100));
        assert_eq!(of(100).len(), 1);
        assert_eq!(of(100)[0], 2..9);
    }
}

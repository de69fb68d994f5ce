//! Launch shapes for kernels whose threads compute runs of rows
//! (`Dialect::row_runs`): the block shape and the run length, chosen per
//! kernel and launch by timing candidates on the device. Device-free: the
//! runtime times, this module proposes and picks.
//!
//! Every shape computes the same cells with the same expression, so the
//! choice changes speed, never results, and a kernel (reads `src`, writes
//! only `dst`) can be launched once per candidate to time them.

use std::collections::HashMap;
use thiserror::Error;

/// A launch shape that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShapeError {
    /// Not three numbers.
    #[error("'{0}' is not three whole numbers bx,by,rows")]
    NotThree(String),
    /// A zero, or a block over 1024 threads.
    #[error("'{0}': bx, by and rows must be positive and bx * by at most 1024")]
    OutOfRange(String),
}

/// Threads per block along x and y, and rows per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunShape {
    /// Threads per block along the row (x) and across rows (y).
    pub block: [usize; 2],
    /// Consecutive rows one thread computes.
    pub rows: usize,
}

impl RunShape {
    /// One cell per thread in blocks of 256 along the row: the shape of a
    /// straightforward kernel, and the one for launches too small to time.
    pub const ONE_CELL: RunShape = RunShape::new(256, 1, 1);

    /// Blocks of `bx` x `by` threads, each computing `rows` rows.
    pub const fn new(bx: usize, by: usize, rows: usize) -> RunShape {
        RunShape {
            block: [bx, by],
            rows,
        }
    }

    /// Threads in one block.
    pub fn threads(&self) -> usize {
        self.block[0] * self.block[1]
    }

    /// Blocks along x, y, z for a launch of `grid` cells (x along the row,
    /// y across rows, z the outer dimensions), `z_block` threads deep.
    pub fn blocks(&self, grid: [usize; 3], z_block: usize) -> [usize; 3] {
        let rows = grid[1].div_ceil(self.rows.max(1));
        [
            grid[0].div_ceil(self.block[0].max(1)),
            rows.div_ceil(self.block[1].max(1)),
            grid[2].div_ceil(z_block.max(1)),
        ]
    }

    /// Parses `bx,by,rows` (as `EPSILOD_CUDA_LAUNCH` takes it).
    pub fn parse(s: &str) -> Result<RunShape, ShapeError> {
        let v: Vec<usize> = s
            .split(',')
            .map(|p| p.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| ShapeError::NotThree(s.to_string()))?;
        match v[..] {
            [bx, by, rows] if bx > 0 && by > 0 && rows > 0 && bx * by <= 1024 => Ok(RunShape {
                block: [bx, by],
                rows,
            }),
            [_, _, _] => Err(ShapeError::OutOfRange(s.to_string())),
            _ => Err(ShapeError::NotThree(s.to_string())),
        }
    }
}

/// The shapes timed for a large launch: whole warps along the row, runs of
/// 1 to 16 rows. The one-cell shape is among them, so tuning never ends
/// slower than the straightforward kernel.
pub const CANDIDATES: &[RunShape] = &[
    RunShape::ONE_CELL,
    RunShape::new(128, 1, 2),
    RunShape::new(128, 1, 4),
    RunShape::new(128, 1, 8),
    RunShape::new(256, 1, 4),
    RunShape::new(64, 2, 4),
    RunShape::new(32, 4, 8),
    RunShape::new(128, 1, 16),
];

/// Launches of fewer cells than this run in [`RunShape::ONE_CELL`]
/// untimed: their time is launch overhead, and timing would cost more than
/// any shape saves.
pub const TUNE_CELLS: usize = 1 << 20;

/// The candidates a kernel limited to `max_threads` per block may launch
/// with, for a launch of `grid`: runs no longer than the rows there are.
pub fn candidates(grid: [usize; 3], max_threads: usize) -> Vec<RunShape> {
    CANDIDATES
        .iter()
        .copied()
        .filter(|c| c.threads() <= max_threads.max(32) && c.rows <= grid[1].max(1))
        .collect()
}

/// The fastest candidate by its best time; ties go to the earlier one.
pub fn fastest(timed: &[(RunShape, f64)]) -> Option<RunShape> {
    timed
        .iter()
        .fold(None::<(RunShape, f64)>, |best, &(shape, t)| match best {
            Some((_, bt)) if bt <= t => best,
            _ => Some((shape, t)),
        })
        .map(|(s, _)| s)
}

/// Launches each candidate shape takes before the choice; the best counts
/// (a kernel's first launch also pays for loading it).
pub const TRIALS: usize = 2;

/// A kernel's launches over one grid: a run launches the same few regions
/// (inner region, border strips) every iteration.
type Key = (usize, [usize; 3]);

/// Whether a choice made over `a` serves `b`: the same row length, and rows
/// times planes within a factor of 2. A rebalance changes a region's rows
/// a little, and trying every candidate again would cost more than it finds.
fn similar(a: [usize; 3], b: [usize; 3]) -> bool {
    let (x, y) = (a[1] * a[2], b[1] * b[2]);
    a[0] == b[0] && x.max(y) <= 2 * x.min(y)
}

/// A choice: the grid, and each candidate with its best seconds.
pub type Decision = ([usize; 3], Vec<(RunShape, f64)>);

/// Chooses shapes while the run goes on: the first launches of a kernel over
/// a grid try the candidates in turn (each a real launch, so trying costs
/// only the slower candidates' extra time), and the next launch after the
/// last trial reads their timings (`E`, e.g. a pair of device events) and
/// keeps the fastest for good.
pub struct Tuner<E> {
    chosen: HashMap<Key, RunShape>,
    trials: HashMap<Key, Vec<(RunShape, E)>>,
    /// The last choice's grid and every candidate's best seconds, until
    /// taken (for a log).
    decided: Option<Decision>,
}

impl<E> Default for Tuner<E> {
    fn default() -> Self {
        Tuner {
            chosen: HashMap::new(),
            trials: HashMap::new(),
            decided: None,
        }
    }
}

impl<E> Tuner<E> {
    /// The shape for the next launch of `kernel` (any key the runtime gives
    /// its kernels, up to `max_threads` per block) over `grid`, and whether
    /// it is a trial, whose timing goes to [`Tuner::record`]. Once every
    /// candidate has had its trials, `seconds` reads their timings.
    pub fn next<X>(
        &mut self,
        kernel: usize,
        grid: [usize; 3],
        max_threads: usize,
        mut seconds: impl FnMut(&E) -> Result<f64, X>,
    ) -> Result<(RunShape, bool), X> {
        let key = (kernel, grid);
        if let Some(&shape) = self.chosen.get(&key) {
            return Ok((shape, false));
        }
        let near = self
            .chosen
            .iter()
            .find(|((k, g), _)| *k == kernel && similar(*g, grid))
            .map(|(_, &shape)| shape);
        if let Some(shape) = near {
            self.chosen.insert(key, shape);
            return Ok((shape, false));
        }
        let shapes = candidates(grid, max_threads);
        let done = self.trials.get(&key).map_or(0, Vec::len);
        if done < shapes.len() * TRIALS {
            return Ok((shapes[done % shapes.len()], true));
        }
        let mut timed: Vec<(RunShape, f64)> = Vec::new();
        for (shape, e) in self.trials.remove(&key).unwrap_or_default() {
            let t = seconds(&e)?;
            match timed.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, best)) => *best = best.min(t),
                None => timed.push((shape, t)),
            }
        }
        let chosen = fastest(&timed).unwrap_or(RunShape::ONE_CELL);
        self.chosen.insert(key, chosen);
        self.decided = Some((grid, timed));
        Ok((chosen, false))
    }

    /// The grid and the candidates' best seconds of the choice made since
    /// the last call, if one was.
    pub fn take_decided(&mut self) -> Option<Decision> {
        self.decided.take()
    }

    /// The timing of a trial launch [`Tuner::next`] asked for.
    pub fn record(&mut self, kernel: usize, grid: [usize; 3], shape: RunShape, timing: E) {
        self.trials
            .entry((kernel, grid))
            .or_default()
            .push((shape, timing));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_grid_in_runs() {
        let s = RunShape {
            block: [128, 2],
            rows: 4,
        };
        // 1000 rows in runs of 4 are 250 threads across, 125 blocks of 2.
        assert_eq!(s.blocks([16384, 1000, 1], 1), [128, 125, 1]);
        assert_eq!(s.blocks([1, 1, 770], 1), [1, 1, 770]);
        assert_eq!(RunShape::ONE_CELL.blocks([257, 3, 5], 2), [2, 3, 3]);
    }

    #[test]
    fn every_candidate_covers_every_row_once() {
        // The kernel's run length is ceil(n2 / threads across rows), so the
        // runs of consecutive threads tile 0..n2 whatever the shape.
        for n2 in 1..300usize {
            for c in candidates([64, n2, 1], 1024) {
                let across = c.blocks([64, n2, 1], 1)[1] * c.block[1];
                let rows = n2.div_ceil(across);
                assert!(rows <= c.rows && across * rows >= n2, "{c:?} over {n2}");
            }
        }
    }

    #[test]
    fn candidates_respect_the_kernel_and_the_rows() {
        assert_eq!(candidates([4096, 4096, 1], 1024).len(), CANDIDATES.len());
        assert!(candidates([4096, 4096, 1], 128)
            .iter()
            .all(|c| c.threads() <= 128));
        assert_eq!(candidates([4096, 1, 1], 1024), vec![RunShape::ONE_CELL]);
        assert!(candidates([4096, 4096, 1], 128).contains(&RunShape {
            block: [128, 1],
            rows: 8
        }));
    }

    #[test]
    fn the_fastest_wins_and_ties_keep_the_first() {
        let a = RunShape::ONE_CELL;
        let b = CANDIDATES[2];
        assert_eq!(fastest(&[(a, 2.0), (b, 1.0)]), Some(b));
        assert_eq!(fastest(&[(a, 1.0), (b, 1.0)]), Some(a));
        assert_eq!(fastest(&[]), None);
    }

    #[test]
    fn the_tuner_tries_each_candidate_then_keeps_the_fastest() {
        let grid = [4096, 4096, 1];
        let n = candidates(grid, 1024).len();
        let mut t = Tuner::<f64>::default();
        let mut tried = Vec::new();
        // Candidate 3 is fastest; the other kernel's grid is tuned apart.
        for _ in 0..n * TRIALS {
            let (shape, trial) = t.next(7, grid, 1024, |_| Ok::<_, ()>(0.0)).unwrap();
            assert!(trial);
            let fast = shape == CANDIDATES[3];
            t.record(7, grid, shape, if fast { 1.0 } else { 2.0 });
            tried.push(shape);
        }
        for c in candidates(grid, 1024) {
            assert_eq!(tried.iter().filter(|&&s| s == c).count(), TRIALS, "{c:?}");
        }
        let mut read = 0;
        let decided = t.next(7, grid, 1024, |&e| {
            read += 1;
            Ok::<_, ()>(e)
        });
        assert_eq!(decided, Ok((CANDIDATES[3], false)));
        assert_eq!(read, n * TRIALS);
        let (g, timed) = t.take_decided().expect("a decision");
        assert_eq!((g, timed.len()), (grid, n));
        assert!(t.take_decided().is_none());
        assert_eq!(
            t.next(7, grid, 1024, |_| Err(())),
            Ok((CANDIDATES[3], false))
        );
        assert_eq!(
            t.next(8, grid, 1024, |_| Err(())),
            Ok((CANDIDATES[0], true))
        );
        // A few rows more or less (a rebalance) keep the choice; another
        // row length or over twice (under half) the rows is tuned apart.
        for near in [[4096, 4000, 1], [4096, 4500, 1]] {
            assert_eq!(
                t.next(7, near, 1024, |_| Err(())),
                Ok((CANDIDATES[3], false))
            );
        }
        for far in [[4095, 4096, 1], [4096, 9100, 1], [4096, 1900, 1]] {
            assert_eq!(
                t.next(7, far, 1024, |_| Err(())),
                Ok((CANDIDATES[0], true)),
                "{far:?}"
            );
        }
    }

    #[test]
    fn a_timing_that_cannot_be_read_is_an_error_and_retried() {
        let grid = [2048, 2048, 1];
        let mut t = Tuner::<u8>::default();
        for _ in 0..candidates(grid, 1024).len() * TRIALS {
            let (shape, _) = t.next(1, grid, 1024, |_| Ok::<_, ()>(0.0)).unwrap();
            t.record(1, grid, shape, 0);
        }
        assert_eq!(
            t.next(1, grid, 1024, |_| Err::<f64, _>("lost")),
            Err("lost")
        );
        // The trials went with the error: tuning starts over.
        assert_eq!(
            t.next(1, grid, 1024, |_| Ok::<_, ()>(0.0)),
            Ok((CANDIDATES[0], true))
        );
    }

    #[test]
    fn shapes_parse_with_clear_errors() {
        assert_eq!(
            RunShape::parse("128, 1,8"),
            Ok(RunShape {
                block: [128, 1],
                rows: 8
            })
        );
        for bad in ["", "128,1", "a,b,c", "0,1,1", "64,32,1", "1,1,1,1"] {
            let e = RunShape::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}

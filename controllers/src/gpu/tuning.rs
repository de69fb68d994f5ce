//! Launch-shape tuning: the run shape a launch takes, forced, from the caller's group, or timed.

use super::runs::{Decision, RunShape, Tuner, TUNE_CELLS};

/// The shape one launch takes.
#[derive(Debug, PartialEq)]
pub struct Choice {
    /// The run shape.
    pub shape: RunShape,
    /// The block's depth along z.
    pub z_block: usize,
    /// A trial: its timing goes to [`Tuner::record`].
    pub trial: bool,
    /// The choice the tuner made for good at this launch, if it did (for a
    /// log).
    pub decided: Option<Decision>,
}

/// The shape of a launch of `kernel` (any key the runtime gives it, up to
/// `max_threads` per block) over `grid`: `forced` where given; the caller's
/// `group` (else one cell per thread) for grids too small or flat to time;
/// else the tuner's, whose trials' timings `seconds` reads.
pub fn choose<E, X>(
    tuner: &mut Tuner<E>,
    forced: Option<RunShape>,
    group: Option<[usize; 3]>,
    (kernel, max_threads): (usize, usize),
    grid: [usize; 3],
    seconds: impl FnMut(&E) -> Result<f64, X>,
) -> Result<Choice, X> {
    let fixed = |shape, z_block| Choice {
        shape,
        z_block,
        trial: false,
        decided: None,
    };
    Ok(match (forced, group) {
        (Some(forced), _) => fixed(forced, 1),
        _ if grid.iter().product::<usize>() < TUNE_CELLS || grid[1] < 2 => match group {
            Some([x, y, z]) => fixed(
                RunShape {
                    block: [x, y],
                    rows: 1,
                },
                z,
            ),
            None => fixed(RunShape::ONE_CELL, 1),
        },
        _ => {
            let (shape, trial) = tuner.next(kernel, grid, max_threads, seconds)?;
            Choice {
                shape,
                z_block: 1,
                trial,
                decided: tuner.take_decided(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{choose, RunShape, Tuner};

    fn no_timing(_: &()) -> Result<f64, ()> {
        Ok(1.0)
    }

    #[test]
    fn forced_then_group_for_small_grids_then_trials() {
        let mut tuner = Tuner::default();
        let forced = RunShape::new(32, 4, 2);
        let big = [1024, 1024, 1];
        let c = choose(&mut tuner, Some(forced), None, (0, 1024), big, no_timing).unwrap();
        assert_eq!((c.shape, c.z_block, c.trial), (forced, 1, false));
        let c = choose(
            &mut tuner,
            None,
            Some([8, 4, 2]),
            (0, 1024),
            [64, 64, 4],
            no_timing,
        );
        let c = c.unwrap();
        assert_eq!(
            (c.shape, c.z_block, c.trial),
            (RunShape::new(8, 4, 1), 2, false)
        );
        let c = choose(&mut tuner, None, None, (0, 1024), [64, 64, 1], no_timing).unwrap();
        assert_eq!(c.shape, RunShape::ONE_CELL);
        let c = choose(&mut tuner, None, None, (0, 1024), big, no_timing).unwrap();
        assert!(c.trial);
        assert_eq!(c.decided, None);
    }
}

//! Progress of a run: a bar on a terminal, shown only for runs that last
//! (so short ones print nothing); elsewhere (a batch job's log) a plain
//! line every so often, since a bar is not drawn there and a long job
//! would otherwise say nothing until it ends.

use epsilod::Observer;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Progress of a run of `iters` iterations, on stderr.
pub struct Bar {
    bar: Arc<Mutex<Option<indicatif::ProgressBar>>>,
    iters: u64,
    /// Lines every this long instead of a bar.
    lines: Option<Duration>,
}

impl Bar {
    /// A bar, drawn once the run has lasted a second.
    pub fn new(iters: u64) -> Bar {
        Bar {
            bar: Arc::new(Mutex::new(None)),
            iters,
            lines: None,
        }
    }

    /// A line every `every`, the first after `every`.
    pub fn lines(iters: u64, every: Duration) -> Bar {
        Bar {
            bar: Arc::new(Mutex::new(None)),
            iters,
            lines: Some(every),
        }
    }

    /// The observer to give the run.
    pub fn observer(&self) -> Observer {
        let (slot, iters) = (self.bar.clone(), self.iters);
        let started = Instant::now();
        if let Some(every) = self.lines {
            // The rate from the first count seen: a resumed run starts
            // counting at its checkpoint, and setup is not iterating.
            let state = Mutex::new((started, None::<(u64, Instant)>));
            return Arc::new(move |done| {
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                let (last, first) = &mut *st;
                let (from, since) = *first.get_or_insert((done, Instant::now()));
                if last.elapsed() >= every {
                    *last = Instant::now();
                    let rate = (done - from) as f64 / since.elapsed().as_secs_f64();
                    let left = (rate > 0.0).then(|| (iters - done.min(iters)) as f64 / rate);
                    eprintln!("{}", line(done, iters, started.elapsed(), left));
                }
            });
        }
        Arc::new(move |done| {
            if started.elapsed() < Duration::from_secs(1) {
                return;
            }
            let mut b = slot.lock().unwrap_or_else(|e| e.into_inner());
            b.get_or_insert_with(|| new_bar(iters)).set_position(done);
        })
    }
}

/// `progress: iteration 1200 of 10000 (12.0%), 33 s elapsed, about 4 min
/// left`, `left` in seconds where known.
fn line(done: u64, iters: u64, elapsed: Duration, left: Option<f64>) -> String {
    let left = match left {
        Some(s) => format!("about {} left", duration(s)),
        None => "time left unknown".to_string(),
    };
    format!(
        "progress: iteration {done} of {iters} ({:.1}%), {} elapsed, {left}",
        done as f64 / iters.max(1) as f64 * 100.0,
        duration(elapsed.as_secs_f64())
    )
}

/// Seconds as `42 s`, `17 min`, `3.2 h`.
fn duration(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
        }
    }
}

fn new_bar(iters: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(iters),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} iterations ({eta} left)",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_where_the_run_is_and_what_is_left() {
        assert_eq!(
            line(1200, 10000, Duration::from_secs(33), Some(242.0)),
            "progress: iteration 1200 of 10000 (12.0%), 33 s elapsed, about 4 min left"
        );
        assert_eq!(
            line(0, 10, Duration::from_secs(61), None),
            "progress: iteration 0 of 10 (0.0%), 61 s elapsed, time left unknown"
        );
        assert_eq!(
            line(1, 4, Duration::from_secs(3600), Some(10800.0)),
            "progress: iteration 1 of 4 (25.0%), 60 min elapsed, about 3.0 h left"
        );
    }
}

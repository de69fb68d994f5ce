//! The progress bar: an observer of the run, shown only for runs that last
//! (so short ones print nothing) and only on a terminal.

use epsilod::Observer;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A bar for a run of `iters` iterations, drawn on stderr.
pub struct Bar {
    bar: Arc<Mutex<Option<indicatif::ProgressBar>>>,
    iters: u64,
}

impl Bar {
    pub fn new(iters: u64) -> Bar {
        Bar {
            bar: Arc::new(Mutex::new(None)),
            iters,
        }
    }

    /// The observer to give the run.
    pub fn observer(&self) -> Observer {
        let (slot, iters) = (self.bar.clone(), self.iters);
        let started = Instant::now();
        Arc::new(move |done| {
            if started.elapsed() < Duration::from_secs(1) {
                return;
            }
            let mut b = slot.lock().unwrap_or_else(|e| e.into_inner());
            b.get_or_insert_with(|| new_bar(iters)).set_position(done);
        })
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

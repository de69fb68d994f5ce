//! The host's copy bandwidth, measured here: for `scale`'s floor (one rate
//! beyond the caches) and `calibrate`'s curve (a rate per working set).

use models::memory::HostMemory;
use models::ModelError;
use std::time::Instant;

/// Bytes a measurement moves at least, however small the buffers: many
/// copies of a small buffer, so thread start-up is amortised.
const MOVED: usize = 256 << 20;

/// Bytes per second a copy between two buffers of `bytes` moves (read plus
/// written) with a thread on every core here, each copying its share of the
/// buffers over and over; the best of five.
pub fn copy_rate(bytes: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let cores = epsilod::job::all_cores().max(1);
    let chunk = bytes.div_ceil(cores);
    let repeats = MOVED.div_ceil(bytes).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        std::thread::scope(|s| {
            for (d, x) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                s.spawn(move || {
                    for _ in 0..repeats {
                        d.copy_from_slice(std::hint::black_box(x));
                    }
                });
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&dst);
    2.0 * (bytes * repeats) as f64 / best
}

/// The copy rate at working sets (both buffers) of 2 MiB to 512 MiB,
/// doubling: from inside a core's caches to beyond the last level's.
pub fn host_curve() -> Result<HostMemory, ModelError> {
    HostMemory::new(
        (0..9)
            .map(|k| {
                let buffer = 1usize << (20 + k);
                ((2 * buffer) as f64, copy_rate(buffer))
            })
            .collect(),
    )
}

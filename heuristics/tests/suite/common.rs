//! Synthetic timing windows shared by the tests.

use heuristics::DeviceWindow;

/// One window of 30 samples per device: device `i` takes `times[i]` seconds
/// give or take `noise / 2` of it (a fixed LCG from `seed`), over `rows[i]`.
pub fn windows(times: &[f64], rows: &[usize], noise: f64, seed: u64) -> Vec<DeviceWindow> {
    let mut s = seed;
    times
        .iter()
        .zip(rows)
        .map(|(&t, &r)| DeviceWindow {
            rows: r,
            samples: (0..30)
                .map(|_| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    t * (1.0 + noise * (((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5))
                })
                .collect(),
        })
        .collect()
}

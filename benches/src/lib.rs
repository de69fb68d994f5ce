//! Baselines the benches compare the framework against: what a programmer
//! would write by hand with rayon, and a plain parallel copy (the
//! memory-bandwidth roofline for a stencil that reads and writes each cell once).

use rayon::prelude::*;

/// Parallel copy, one row per task.
pub fn copy(src: &[f32], dst: &mut [f32], row: usize) {
    dst.par_chunks_mut(row)
        .zip(src.par_chunks(row))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// A straightforward 2d4 Jacobi step on an `n0 x n1` grid (boundary rows and
/// columns untouched), parallel over rows.
pub fn hand_2d4(src: &[f32], dst: &mut [f32], n0: usize, n1: usize) {
    dst.par_chunks_mut(n1).enumerate().for_each(|(i, out)| {
        if i == 0 || i + 1 == n0 {
            return;
        }
        for j in 1..n1 - 1 {
            out[j] = (src[(i - 1) * n1 + j]
                + src[(i + 1) * n1 + j]
                + src[i * n1 + j - 1]
                + src[i * n1 + j + 1])
                / 4.0;
        }
    });
}

/// A straightforward 3d27 step on an `n^3` grid, parallel over planes.
pub fn hand_3d27(src: &[f32], dst: &mut [f32], n: usize) {
    let plane = n * n;
    dst.par_chunks_mut(plane).enumerate().for_each(|(i, out)| {
        if i == 0 || i + 1 == n {
            return;
        }
        for j in 1..n - 1 {
            for k in 1..n - 1 {
                let mut s = 0.0f32;
                for a in 0..3 {
                    for b in 0..3 {
                        for c in 0..3 {
                            s += src[(i + a - 1) * plane + (j + b - 1) * n + (k + c - 1)];
                        }
                    }
                }
                out[j * n + k] = s / 27.0;
            }
        }
    });
}

/// `iters` Jacobi (2d4) steps on an `n x n` grid, ping-ponging two buffers on
/// the current rayon pool: the hand-written program the skeleton competes with.
pub fn hand_2d4_iterations(a: &mut Vec<f32>, b: &mut Vec<f32>, n: usize, iters: usize) {
    for _ in 0..iters {
        hand_2d4(a, b, n, n);
        std::mem::swap(a, b);
    }
}

/// CPU seconds this process has used, all threads, in ticks of 1/100 s
/// (Linux; `None` elsewhere): what a run costs whatever else holds the
/// cores.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold
    // spaces: utime and stime are the 14th and 15th fields of the line.
    let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // The kernel's USER_HZ is 100 on every Linux ABI Rust supports.
    Some(ticks / 100.0)
}

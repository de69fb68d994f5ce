//! The wavesim app: the same bits as an independent serial loop written
//! from wavesim_kernels.c, on every layout and device mix, and through
//! rebalances, which move both time levels.

use crate::common::{devices, layouts};
use epsilod::{Alb, Partition, Skeleton};
use epsilod_apps::wavesim;
use heuristics::testing::Scripted;

/// EPSILOD's wavesim, serially: u0 everywhere, u0 + 0.5 lap(u0) (in f64)
/// as the level before, then `new = ((2 c) - old) + lap` into the older
/// buffer and a swap, `iters` times.
fn serial(size: [usize; 2], iters: usize, dt: f32) -> Vec<u32> {
    let [n0, n1] = size;
    let (sy, sx) = ((n0 - 2) as i64, (n1 - 2) as i64);
    let (cx, cy) = (sx as f32 / 4.0, sy as f32 / 4.0);
    let (gx, gy) = (sx as f32 / 8.0, sy as f32 / 8.0);
    let u0 = |i: usize, j: usize| {
        let dx = (j as i64 - 1) as f32 - cx;
        let dy = (i as i64 - 1) as f32 - cy;
        1.0f32 * (-((dx * dx) / ((2.0 * gx) * gx) + (dy * dy) / ((2.0 * gy) * gy))).exp()
    };
    let lap = |a: &[f32], i: usize, j: usize| {
        let (y, x) = (i as i64 - 1, j as i64 - 1);
        let c = a[i * n1 + j];
        let up = if y < sy - 1 { a[(i + 1) * n1 + j] } else { c };
        let um = if y > 0 { a[(i - 1) * n1 + j] } else { c };
        let rp = if x < sx - 1 { a[i * n1 + j + 1] } else { c };
        let rm = if x > 0 { a[i * n1 + j - 1] } else { c };
        ((dt / 1.0) * (dt / 1.0)) * ((up - c) - (c - um))
            + ((dt / 1.0) * (dt / 1.0)) * ((rp - c) - (c - rm))
    };
    let mut a: Vec<f32> = (0..n0 * n1).map(|k| u0(k / n1, k % n1)).collect();
    let mut b = a.clone();
    for i in 1..n0 - 1 {
        for j in 1..n1 - 1 {
            b[i * n1 + j] = (f64::from(a[i * n1 + j]) + 0.5 * f64::from(lap(&a, i, j))) as f32;
        }
    }
    for _ in 0..iters {
        for i in 1..n0 - 1 {
            for j in 1..n1 - 1 {
                let k = i * n1 + j;
                b[k] = ((2.0 * a[k]) - b[k]) + lap(&a, i, j);
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    a.iter().map(|v| v.to_bits()).collect()
}

fn skeleton(size: [usize; 2], iters: u64, devs: &[&str], part: Partition) -> Skeleton<f32> {
    Skeleton::new(&size, wavesim::stencil(&size, wavesim::DT))
        .iterations(iters)
        .init(wavesim::init(&size))
        .init_previous(wavesim::init_previous(&size, wavesim::DT))
        .devices(devices(devs))
        .partition(part)
}

fn bits(s: &Skeleton<f32>) -> Vec<u32> {
    s.run().unwrap().grid.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn same_bits_as_the_serial_loop_on_every_layout() {
    let (size, iters) = ([34, 28], 30);
    let want = serial(size, iters, wavesim::DT);
    // The wave moves: the first level alone would not pass.
    assert_ne!(want, serial(size, 0, wavesim::DT));
    for (devs, part) in layouts() {
        assert_eq!(
            bits(&skeleton(size, iters as u64, &devs, part)),
            want,
            "{devs:?} {part}"
        );
    }
}

/// Moved rows carry both levels, in one message or in slabs of a few rows
/// (each slab both levels of its rows).
#[test]
fn rebalances_keep_both_levels() {
    let (size, iters) = ([40, 24], 60);
    let want = serial(size, iters, wavesim::DT);
    // 96 bytes a row: one message, slabs of two rows, of one row.
    for slab in [epsilod::alb::SLAB_BYTES, 200, 1] {
        let alb = Alb::custom("scripted", || {
            Box::new(Scripted::new(&[(12, &[1.0, 3.0]), (33, &[4.0, 1.0])]))
        })
        .window(4)
        .slab_bytes(slab);
        let s = skeleton(
            size,
            iters as u64,
            &["cpu:threads=1"; 2],
            Partition::Weighted(0),
        )
        .alb(alb);
        let out = s.run().unwrap();
        assert_eq!(
            out.report.redistributions.len(),
            2,
            "both scripted rebalances ran"
        );
        assert!(out.report.redistributions.iter().all(|r| r.rows_moved > 2));
        let got: Vec<u32> = out.grid.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "slabs of {slab} bytes");
    }
}

/// A checkpoint holds both time levels: a restart on other devices goes on
/// as if never stopped.
#[test]
fn restarts_keep_both_levels() {
    let (size, iters) = ([36, 30], 40);
    let want = serial(size, iters, wavesim::DT);
    let dir = tempfile::tempdir().unwrap();
    skeleton(size, 25, &["cpu:threads=1"; 2], Partition::Single(0))
        .checkpoint(6, dir.path())
        .run()
        .unwrap();
    let out = skeleton(size, iters as u64, &["cpu:threads=1"; 3], Partition::Multi)
        .restart(dir.path())
        .run()
        .unwrap();
    assert_eq!(out.report.config.resumed_from, Some(24));
    let got: Vec<u32> = out.grid.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want);
}

#[cfg(feature = "opencl")]
#[test]
fn same_bits_on_opencl_devices_and_through_a_rebalance() {
    let (size, iters) = ([34, 28], 30);
    let want = serial(size, iters, wavesim::DT);
    for (devs, part) in [
        (vec!["opencl"], Partition::Multi),
        (vec!["opencl", "cpu:threads=1", "opencl"], Partition::Multi),
    ] {
        assert_eq!(
            bits(&skeleton(size, iters as u64, &devs, part)),
            want,
            "{devs:?} {part}"
        );
    }
    // Slabs of two rows of 28 cells (224 bytes a level, both levels in one
    // message), to and from the device.
    let alb = Alb::custom("scripted", || Box::new(Scripted::new(&[(10, &[1.0, 2.0])])))
        .window(4)
        .slab_bytes(224);
    let s = skeleton(
        size,
        iters as u64,
        &["opencl", "cpu:threads=1"],
        Partition::Weighted(0),
    )
    .alb(alb);
    assert_eq!(bits(&s), want);
}

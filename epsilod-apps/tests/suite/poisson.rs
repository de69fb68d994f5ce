//! The poisson app: the same bits as an independent serial loop written
//! from poisson_kernels.c, on every layout and device mix.

use crate::common::{bits_on, layouts};
use epsilod::{Partition, Skeleton};
use epsilod_apps::poisson;

/// EPSILOD's poisson, serially, in f32 and the original's order.
fn serial(nx: usize, ny: usize, iters: usize) -> Vec<u32> {
    let dx = (2.0f32 - 0.0) / (nx - 1) as f32;
    let dy = (1.0f32 - 0.0) / (ny - 1) as f32;
    let (dx2, dy2) = (dx * dx, dy * dy);
    let mut u = vec![0.0f32; nx * ny];
    // Boundaries in the original's order: columns, then rows.
    for i in 0..nx {
        u[i * ny] = 0.0;
        u[i * ny + ny - 1] = i as f32 / (nx - 1) as f32;
    }
    for j in 0..ny {
        u[j] = 0.0;
        u[(nx - 1) * ny + j] = j as f32 / (ny - 1) as f32;
    }
    for _ in 0..iters {
        let old = u.clone();
        for i in 1..nx - 1 {
            for j in 1..ny - 1 {
                let b = if i == nx / 4 && j == ny / 4 {
                    2500.0f32
                } else if i == 3 * nx / 4 && j == 3 * ny / 4 {
                    -2500.0
                } else {
                    0.0
                };
                let x = |a: usize, c: usize| old[a * ny + c];
                u[i * ny + j] = ((dy2 * (x(i - 1, j) + x(i + 1, j))
                    + dx2 * (x(i, j - 1) + x(i, j + 1)))
                    - (b * dx2) * dy2)
                    / (2.0f32 * (dx2 + dy2));
            }
        }
    }
    u.iter().map(|v| v.to_bits()).collect()
}

fn run(size: [usize; 2], iters: u64, devices: &[&str], part: Partition) -> Vec<u32> {
    let s = Skeleton::new(&size, poisson::stencil(&size))
        .iterations(iters)
        .init(poisson::init(&size));
    bits_on(s, devices, part)
}

#[test]
fn same_bits_as_the_serial_loop_on_every_layout() {
    let (size, iters) = ([30, 26], 40);
    let want = serial(size[0], size[1], iters);
    // The sources move the field: a run that misplaced them would differ.
    assert_ne!(want, serial(size[0], size[1], 0));
    for (devs, part) in layouts() {
        assert_eq!(
            run(size, iters as u64, &devs, part),
            want,
            "{devs:?} {part}"
        );
    }
}

#[cfg(feature = "opencl")]
#[test]
fn same_bits_on_opencl_devices() {
    let (size, iters) = ([30, 26], 40);
    let want = serial(size[0], size[1], iters);
    for (devs, part) in [
        (vec!["opencl"], Partition::Multi),
        (vec!["opencl", "cpu:threads=1", "opencl"], Partition::Multi),
    ] {
        assert_eq!(
            run(size, iters as u64, &devs, part),
            want,
            "{devs:?} {part}"
        );
    }
}

//! The laplace app: the same bits as an independent serial loop written
//! from laplace_kernels.c, on every layout and device mix.

use crate::common::devices;
use epsilod::{Partition, Skeleton};
use epsilod_apps::laplace;
use ndarray::{ArrayD, IxDyn};

use epsilod_testkit::bits;

/// EPSILOD's laplace, serially: coefficients in f32 from the size, the
/// j/k faces initialised, the update in Devito's order.
fn serial(size: [usize; 3], iters: usize) -> ArrayD<f32> {
    let [s0, s1, s2] = size;
    let hi = 1.0f32 / (s0 - 1) as f32;
    let hj = 1.0f32 / (s1 - 1) as f32;
    let hk = 1.0f32 / (s2 - 1) as f32;
    let (r1, r2, r3) = (hi * hi, hj * hj, hk * hk);
    let r0 = 1.0f32 / (((r1 * r2) + (r1 * r3)) + (r2 * r3));
    let mut u = ArrayD::from_shape_fn(IxDyn(&size), |ix| {
        let (j, k) = (ix[1], ix[2]);
        if j == 0 {
            3.0
        } else if j == s1 - 1 {
            4.0
        } else if k == 0 {
            5.0
        } else if k == s2 - 1 {
            6.0
        } else {
            0.0
        }
    });
    for _ in 0..iters {
        let old = u.clone();
        for i in 1..s0 - 1 {
            for j in 1..s1 - 1 {
                for k in 1..s2 - 1 {
                    let x = |a: usize, b: usize, c: usize| old[[a, b, c].as_slice()];
                    u[[i, j, k].as_slice()] = (0.5f32 * r0)
                        * (r2 * ((r3 * x(i - 1, j, k)) + (r3 * x(i + 1, j, k)))
                            + r1 * ((((r2 * x(i, j, k - 1)) + (r2 * x(i, j, k + 1)))
                                + (r3 * x(i, j - 1, k)))
                                + (r3 * x(i, j + 1, k))));
                }
            }
        }
    }
    u
}

fn run(size: [usize; 3], iters: u64, devs: &[&str], part: Partition) -> ArrayD<f32> {
    Skeleton::new(&size, laplace::stencil(&size))
        .iterations(iters)
        .init(laplace::init(&size))
        .devices(devices(devs))
        .partition(part)
        .run()
        .unwrap()
        .grid
}

#[test]
fn same_bits_as_the_serial_loop_on_every_layout() {
    let size = [14, 12, 10];
    let want = bits(&serial(size, 15));
    for (devs, part) in [
        (vec!["cpu:threads=1"], Partition::Multi),
        (vec!["cpu:threads=1"; 3], Partition::Multi),
        (
            vec!["cpu:threads=2", "cpu:threads=1,weight=2"],
            Partition::Weighted(0),
        ),
        (vec!["cpu:threads=1"; 2], Partition::Single(2)),
    ] {
        assert_eq!(bits(&run(size, 15, &devs, part)), want, "{devs:?} {part}");
    }
}

#[cfg(feature = "opencl")]
#[test]
fn same_bits_on_opencl_devices() {
    let size = [14, 12, 10];
    let want = bits(&serial(size, 15));
    for (devs, part) in [
        (vec!["opencl"], Partition::Multi),
        (vec!["cpu:threads=1", "opencl"], Partition::Single(1)),
    ] {
        assert_eq!(bits(&run(size, 15, &devs, part)), want, "{devs:?} {part}");
    }
}

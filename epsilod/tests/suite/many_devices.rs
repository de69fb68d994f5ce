//! Hundreds of devices in one process: halo and redistribution plans
//! found from each block's neighbours give one device's bits, corners,
//! deep halos, weights and a rebalance included.

use epsilod::{Alb, DeviceSpec, HaloDepth, Partition, Skeleton, Stencil};
use epsilod_testkit::{bits, irregular_init};
use heuristics::testing::Scripted;
use kernels::{KernelChoice, Library};

/// `lib` on `sizes` for `iters` iterations over `devices`, from an init
/// that differs at every cell.
fn skeleton(lib: Library, sizes: &[usize], iters: u64, devices: Vec<DeviceSpec>) -> Skeleton<f32> {
    let spec = lib.spec();
    let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 5);
    Skeleton::new(
        sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(init)
    .devices(devices)
}

/// The bits of the same run on one device.
fn one_device(lib: Library, sizes: &[usize], iters: u64) -> Vec<u32> {
    let out = skeleton(lib, sizes, iters, vec![DeviceSpec::cpu(1)])
        .run()
        .unwrap();
    bits(&out.grid)
}

/// 300 devices on a 30x10 grid of blocks, a stencil that reads corners,
/// halos two iterations deep.
#[test]
fn three_hundred_devices_give_one_devices_bits() {
    let (lib, sizes, iters) = (Library::S2d8, [124usize, 104], 12);
    let many = skeleton(lib, &sizes, iters, vec![DeviceSpec::cpu(1); 300])
        .partition(Partition::Multi)
        .halo_depth(HaloDepth::Depth(2))
        .run()
        .unwrap();
    assert_eq!(many.report.iterations[0].devices.len(), 300);
    assert_eq!(bits(&many.grid), one_device(lib, &sizes, iters));
}

/// 250 weighted slabs, a quarter of the devices without rows, on a 3-d
/// stencil with corners; then a scripted rebalance gives every device rows.
#[test]
fn hundreds_of_weighted_devices_rebalanced_give_one_devices_bits() {
    let (lib, sizes, iters) = (Library::S3d27, [522usize, 6, 5], 30);
    let devices: Vec<DeviceSpec> = (0..250)
        .map(|i| {
            let mut d = DeviceSpec::cpu(1);
            d.weight = [1.0, 2.5, 0.0, 1.5][i % 4];
            d
        })
        .collect();
    let want = one_device(lib, &sizes, iters);
    let weighted =
        || skeleton(lib, &sizes, iters, devices.clone()).partition(Partition::Weighted(0));
    assert_eq!(bits(&weighted().run().unwrap().grid), want);
    let moved: Vec<f64> = (0..250).map(|i| [2.0, 1.0, 1.0, 3.0][i % 4]).collect();
    let rebalanced = weighted()
        .alb(
            Alb::custom("scripted", move || {
                Box::new(Scripted::new(&[(4, moved.as_slice())]))
            })
            .window(2),
        )
        .run()
        .unwrap();
    assert_eq!(rebalanced.report.summary.rebalances, 1);
    assert_eq!(bits(&rebalanced.grid), want);
}

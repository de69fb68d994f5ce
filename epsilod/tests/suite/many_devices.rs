//! Hundreds of devices in one process: halo and redistribution plans
//! found from each block's neighbours give one device's bits, corners,
//! deep halos, weights and a rebalance included.

use epsilod::{Alb, DeviceSpec, HaloDepth, Partition, Skeleton, Stencil};
use epsilod_testkit::{bits, irregular_init};
use heuristics::testing::Scripted;
use kernels::{KernelChoice, Library};

fn run(
    lib: Library,
    sizes: &[usize],
    iters: u64,
    devices: Vec<DeviceSpec>,
    part: Partition,
    depth: usize,
) -> epsilod::Outcome<f32> {
    let spec = lib.spec();
    let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 5);
    Skeleton::new(
        sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(init)
    .devices(devices)
    .partition(part)
    .halo_depth(HaloDepth::Depth(depth))
    .run()
    .unwrap()
}

/// 300 devices on a 30x10 grid of blocks, a stencil that reads corners,
/// halos two iterations deep.
#[test]
fn three_hundred_devices_give_one_devices_bits() {
    let (lib, sizes, iters) = (Library::S2d8, [124usize, 104], 12);
    let one = run(
        lib,
        &sizes,
        iters,
        vec![DeviceSpec::cpu(1)],
        Partition::Multi,
        1,
    );
    let many = run(
        lib,
        &sizes,
        iters,
        vec![DeviceSpec::cpu(1); 300],
        Partition::Multi,
        2,
    );
    assert_eq!(many.report.iterations[0].devices.len(), 300);
    assert_eq!(bits(&many.grid), bits(&one.grid));
}

/// 250 weighted slabs, some devices without rows, on a 3-d stencil with
/// corners; then a scripted rebalance moves rows between many neighbours.
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
    let one = run(
        lib,
        &sizes,
        iters,
        vec![DeviceSpec::cpu(1)],
        Partition::Multi,
        1,
    );
    let many = run(
        lib,
        &sizes,
        iters,
        devices.clone(),
        Partition::Weighted(0),
        1,
    );
    assert_eq!(bits(&many.grid), bits(&one.grid));
    let moved: Vec<f64> = (0..250).map(|i| [2.0, 1.0, 1.0, 3.0][i % 4]).collect();
    let spec = lib.spec();
    let rebalanced = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(irregular_init(
        sizes.to_vec(),
        spec.low.clone(),
        spec.high.clone(),
        5,
    ))
    .devices(devices)
    .partition(Partition::Weighted(0))
    .alb(
        Alb::custom("scripted", move || {
            Box::new(Scripted::new(&[(4, moved.as_slice())]))
        })
        .window(2),
    )
    .run()
    .unwrap();
    assert_eq!(rebalanced.report.summary.rebalances, 1);
    assert_eq!(bits(&rebalanced.grid), bits(&one.grid));
}

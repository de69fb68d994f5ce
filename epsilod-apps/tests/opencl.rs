//! gas-sim on OpenCL (PoCL in CI): bit-identical to the CPU.
#![cfg(feature = "opencl")]

use epsilod::{DeviceSpec, Partition, Skeleton};

fn devices(specs: &[&str]) -> Vec<DeviceSpec> {
    specs
        .iter()
        .map(|s| DeviceSpec::parse(s).unwrap())
        .collect()
}

#[test]
fn gas_sim_on_opencl_matches_the_cpu_bit_for_bit() {
    use epsilod_apps::gas;
    let user = [60, 58, 20];
    let run = |devs: &[&str], part| {
        Skeleton::new(&gas::global_size(user), gas::stencil())
            .iterations(15)
            .init(gas::init(user))
            .devices(devices(devs))
            .partition(part)
            .run()
            .unwrap()
            .grid
    };
    let cells = |g: &ndarray::ArrayD<gas::GasCell>| -> Vec<u32> {
        g.iter().flat_map(|c| c.map(f32::to_bits)).collect()
    };
    let cpu = cells(&run(&["cpu:threads=1"], Partition::Multi));
    assert_eq!(
        cells(&run(&["opencl"], Partition::Multi)),
        cpu,
        "opencl alone"
    );
    assert_eq!(
        cells(&run(&["cpu:threads=1", "opencl"], Partition::Single(0))),
        cpu,
        "mixed"
    );
}

//! What the app suites share: devices from their command-line text, the
//! layouts each app's serial comparison runs on, and a run's bits.

// Each test file uses a part.
#![allow(dead_code)]

use epsilod::{DeviceSpec, Partition, Skeleton, Stencil};
use epsilod_apps::gas::{self, GasCell};
use ndarray::ArrayD;

/// `specs` parsed as `--devices` parses them.
pub fn devices(specs: &[&str]) -> Vec<DeviceSpec> {
    specs
        .iter()
        .map(|s| DeviceSpec::parse(s).unwrap())
        .collect()
}

/// The layouts a 2-D app is compared with its serial loop on: one device,
/// four, two of unequal power by weight, three cut along dimension 1.
pub fn layouts() -> [(Vec<&'static str>, Partition); 4] {
    [
        (vec!["cpu:threads=1"], Partition::Multi),
        (vec!["cpu:threads=1"; 4], Partition::Multi),
        (
            vec!["cpu:threads=2", "cpu:threads=1,weight=3"],
            Partition::Weighted(0),
        ),
        (vec!["cpu:threads=1"; 3], Partition::Single(1)),
    ]
}

/// The bits of the grid `s` computes on `specs` under `part`.
pub fn bits_on(s: Skeleton<f32>, specs: &[&str], part: Partition) -> Vec<u32> {
    let grid = s
        .devices(devices(specs))
        .partition(part)
        .run()
        .unwrap()
        .grid;
    grid.iter().map(|v| v.to_bits()).collect()
}

/// gas-sim's cells for the gassim spec's comparisons: large enough for the
/// obstacle sphere (centre x = y = 50, z = 8).
pub const GAS_USER: [usize; 3] = [56, 54, 14];

/// 9 iterations of `stencil` on gas-sim's grid of [`GAS_USER`] cells from
/// the app's init, on `specs` under `part`.
pub fn gas_on(stencil: Stencil<GasCell>, specs: &[&str], part: Partition) -> ArrayD<GasCell> {
    Skeleton::new(&gas::global_size(GAS_USER), stencil)
        .iterations(9)
        .init(gas::init(GAS_USER))
        .devices(devices(specs))
        .partition(part)
        .run()
        .unwrap()
        .grid
}

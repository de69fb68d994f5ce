//! EPSILOD's DSL examples written as spec files (examples/specs/) give the
//! Rust apps' output byte for byte: the spec's update with the app's
//! initial levels, written as the app's output, on several layouts.

use crate::common::{devices, gas_on, GAS_USER};
use epsilod::{output, AnySpec, ExprSpec, Partition, Skeleton, Stencil};
use epsilod_apps::wavesim;
use std::path::Path;

fn spec(name: &str) -> ExprSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/specs")
        .join(name);
    match AnySpec::load(&path).unwrap() {
        AnySpec::Expr(e) => e,
        AnySpec::Weighted(_) => panic!("{name} is an update expression"),
    }
}

/// The bytes of `grid`'s user domain as a .npy file.
fn npy_bytes(grid: &ndarray::ArrayD<f32>, size: &[usize]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.npy");
    let r = wavesim::user_domain(size);
    let view = grid.slice_each_axis(|ax| {
        let s = r.sig(ax.axis.index());
        ndarray::Slice::from(s.begin() as isize..s.end() as isize)
    });
    output::write(&path, view).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn the_wavesim_spec_is_the_wavesim_app() {
    let wave = spec("wavesim.toml");
    assert!(wave.uses_domain() && wave.reads_previous());
    // Non-square, so a swap of the sizes would show.
    let size = [30usize, 22];
    let run = |stencil: Stencil<f32>, devs: &[&str], part: Partition| {
        Skeleton::new(&size, stencil)
            .iterations(25)
            .init(wavesim::init(&size))
            .init_previous(wavesim::init_previous(&size, wavesim::DT))
            .devices(devices(devs))
            .partition(part)
            .run()
            .unwrap()
            .grid
    };
    let app = npy_bytes(
        &run(
            wavesim::stencil(&size, wavesim::DT),
            &["cpu:threads=1"],
            Partition::Multi,
        ),
        &size,
    );
    let bound = wave.for_domain(&size).unwrap();
    for (devs, part) in [
        (vec!["cpu:threads=1"], Partition::Multi),
        (vec!["cpu:threads=1"; 3], Partition::Single(1)),
        (vec!["cpu:threads=1"; 2], Partition::Single(0)),
    ] {
        let got = npy_bytes(&run(Stencil::from_expr(&bound), &devs, part), &size);
        assert!(got == app, "{devs:?} {part}: the spec differs from the app");
    }
    // The wave moved: an update that did nothing would not pass.
    let still = npy_bytes(
        &run(
            wavesim::stencil(&size, 0.0),
            &["cpu:threads=1"],
            Partition::Multi,
        ),
        &size,
    );
    assert!(still != app);
}

/// gas-sim's 19-float cells as a spec (`cell = 19`, one update per
/// population): the app's bits, whole grid, on one device and on several
/// with block and slab partitions.
#[test]
fn the_gassim_spec_is_the_gas_sim_app() {
    use epsilod_apps::gas::{self, GasCell};
    use epsilod_testkit::bits;
    let spec = spec("gassim.toml");
    assert_eq!(spec.components, Some(19));
    let user = GAS_USER;
    let run = gas_on;
    let app = bits(&run(gas::stencil(), &["cpu:threads=1"], Partition::Multi));
    for (devs, part) in [
        (vec!["cpu:threads=1"], Partition::Multi),
        (vec!["cpu:threads=1"; 3], Partition::Multi),
        (vec!["cpu:threads=1"; 2], Partition::Single(2)),
    ] {
        let got = bits(&run(Stencil::from_expr(&spec), &devs, part));
        assert!(got == app, "{devs:?} {part}: the spec differs from the app");
    }
    // The flow moved: a spec that kept every cell would not pass.
    let g = gas::init(user);
    let size = gas::global_size(user);
    let start: Vec<GasCell> = ndarray::indices(size)
        .into_iter()
        .map(|(i, j, k)| g(&[i as i64, j as i64, k as i64]))
        .collect();
    let start = ndarray::ArrayD::from_shape_vec(size.to_vec(), start).unwrap();
    assert!(bits(&start) != app);
}

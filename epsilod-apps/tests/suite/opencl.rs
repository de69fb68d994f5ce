//! gas-sim on OpenCL (PoCL in CI): bit-identical to the CPU.
#![cfg(feature = "opencl")]

use crate::common::{bits_on, devices, gas_on};
use epsilod::{Partition, Skeleton};

#[test]
fn gas_sim_on_opencl_matches_the_cpu_bit_for_bit() {
    use epsilod_apps::gas;
    let user = [60, 58, 20];
    let run = |devs: &[&str], part| {
        let out = Skeleton::new(&gas::global_size(user), gas::stencil())
            .iterations(15)
            .init(gas::init(user))
            .devices(devices(devs))
            .partition(part)
            .run()
            .unwrap();
        // PoCL, a CPU implementation, keeps the cells whole.
        assert_eq!(out.report.summary.devices_in_planes, 0);
        out.grid
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

/// gas-sim's cells in planes on OpenCL devices (its device body reads them
/// through the accessors; GPUs hold them so, and PoCL when asked): halos
/// between two such devices in device memory, deep halos, halos through
/// the host to a device holding whole cells, rows moved by rebalances in
/// slabs of a few rows, to and from a CPU and between the two devices, all
/// keep the CPU's bits.
#[test]
fn gas_sim_in_planes_across_devices_and_rebalances() {
    use epsilod::Alb;
    use epsilod_apps::gas;
    use heuristics::testing::Scripted;
    let user = [46, 30, 10];
    let size = gas::global_size(user);
    let cells = |g: &ndarray::ArrayD<gas::GasCell>| -> Vec<u32> {
        g.iter().flat_map(|c| c.map(f32::to_bits)).collect()
    };
    let base = || {
        Skeleton::new(&size, gas::stencil())
            .iterations(16)
            .init(gas::init(user))
    };
    let cpu = cells(
        &base()
            .devices(devices(&["cpu:threads=1"]))
            .run()
            .unwrap()
            .grid,
    );
    let two = base()
        .devices(devices(&["opencl:layout=planes", "opencl:layout=planes"]))
        .partition(Partition::Single(0))
        .run()
        .unwrap();
    assert!(cells(&two.grid) == cpu, "two opencl devices");
    let s = &two.report.summary;
    assert_eq!(s.devices_in_planes, 2, "{s:?}");
    assert!(
        s.halo_messages > 0 && s.halo_messages_on_device == s.halo_messages,
        "{s:?}"
    );
    // Deep halos: periods of two steps, one launch a step in planes.
    let deep = base()
        .devices(devices(&["opencl:layout=planes", "opencl:layout=planes"]))
        .partition(Partition::Single(0))
        .halo_depth(epsilod::HaloDepth::Depth(2))
        .run()
        .unwrap();
    assert!(cells(&deep.grid) == cpu, "depth 2");
    assert_eq!(deep.report.summary.devices_in_planes, 2);
    // One device in planes, one whole: their halos go through the host.
    let mixed = base()
        .devices(devices(&["opencl:layout=planes", "opencl:layout=cells"]))
        .partition(Partition::Single(0))
        .run()
        .unwrap();
    assert!(cells(&mixed.grid) == cpu, "planes beside whole cells");
    let s = &mixed.report.summary;
    assert!(
        s.devices_in_planes == 1 && s.halo_messages > 0 && s.halo_messages_on_device == 0,
        "{s:?}"
    );
    let script: [(u64, &[f64]); 4] = [
        (2, &[1.0, 3.0, 1.0]),
        (5, &[1.0, 1.0, 4.0]),
        (8, &[3.0, 1.0, 1.0]),
        (11, &[1.0, 3.0, 1.0]),
    ];
    let alb = Alb::custom("scripted", move || Box::new(Scripted::new(&script)))
        .window(2)
        .slab_bytes(3 * size[1] * size[2] * std::mem::size_of::<gas::GasCell>());
    let out = base()
        .devices(devices(&[
            "cpu:threads=1",
            "opencl:layout=planes",
            "opencl:layout=planes",
        ]))
        .partition(Partition::Weighted(0))
        .alb(alb)
        .run()
        .unwrap();
    assert!(cells(&out.grid) == cpu, "rebalanced");
    assert_eq!(out.report.summary.devices_in_planes, 2);
    let r = &out.report.redistributions;
    assert!(r.len() >= 3, "too few rebalances: {r:?}");
    assert!(r.iter().any(|x| x.moves_on_device == 1), "{r:?}");
}

/// The gas-sim spec (examples/specs/gassim.toml, `cell = 19`) compiled to
/// OpenCL C over the `cell` struct: the app's bits on the CPU, alone (cells
/// whole and in planes) and mixed with a CPU device.
#[test]
fn the_gassim_spec_on_opencl_matches_the_app_on_the_cpu() {
    use epsilod::AnySpec;
    use epsilod_apps::gas;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/specs/gassim.toml");
    let AnySpec::Expr(spec) = AnySpec::load(&path).unwrap() else {
        panic!("gassim.toml is an update expression")
    };
    let run = gas_on;
    let cells = |g: &ndarray::ArrayD<gas::GasCell>| -> Vec<u32> {
        g.iter().flat_map(|c| c.map(f32::to_bits)).collect()
    };
    let app = cells(&run(gas::stencil(), &["cpu:threads=1"], Partition::Multi));
    let spec = || epsilod::Stencil::from_expr(&spec);
    assert!(
        cells(&run(spec(), &["opencl"], Partition::Multi)) == app,
        "opencl alone"
    );
    assert!(
        cells(&run(spec(), &["opencl:layout=planes"], Partition::Multi)) == app,
        "opencl, cells in planes"
    );
    assert!(
        cells(&run(
            spec(),
            &["cpu:threads=1", "opencl"],
            Partition::Single(0)
        )) == app,
        "mixed"
    );
}

/// The device body computes in double where the Rust kernel does, and
/// truncates alike: odd and even widths, negative pixels, mixed with CPUs.
#[test]
fn gaussian_on_opencl_matches_the_cpu_bit_for_bit() {
    use epsilod_apps::gaussian;
    for (rows, cols, kw, sigma) in [(37, 29, 5, 1.0f32), (22, 26, 4, 1.7)] {
        let img: Vec<f32> = (0..rows * cols)
            .map(|k| {
                // Large values too: f32 steps where f64 ones belong would
                // show above the truncation.
                let v = ((k * 7919 + 13) % 256) as f32;
                match k % 7 {
                    0 => -v / 300.0,
                    1 | 4 => v * 65537.0,
                    _ => v,
                }
            })
            .collect();
        let run = |devs: &[&str], part| -> Vec<u32> {
            let s = Skeleton::new(
                &gaussian::global_size(rows, cols, kw),
                gaussian::stencil(kw, sigma),
            )
            .iterations(5)
            .init(gaussian::init(img.clone(), rows, cols, kw));
            bits_on(s, devs, part)
        };
        let cpu = run(&["cpu:threads=1"], Partition::Multi);
        assert_eq!(
            run(&["opencl"], Partition::Multi),
            cpu,
            "kw {kw}: opencl alone"
        );
        assert_eq!(
            run(&["cpu:threads=1", "opencl", "opencl"], Partition::Single(0)),
            cpu,
            "kw {kw}: mixed"
        );
    }
}

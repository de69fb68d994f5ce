//! Device backends alone and mixed with CPU devices, one suite per kind
//! compiled in (`device_suite!` below): results bit-identical to the serial
//! reference, load balancing across them, and clear errors for kernels that
//! exist only in Rust or fail to build. OpenCL runs on PoCL in CI; a backend
//! that needs hardware CI lacks is listed with `#[ignore = "why"]` and run
//! with `--ignored` where the hardware exists.

use crate::common::library_serial;
use epsilod::{Alb, DeviceSpec, Partition, Skeleton, Stencil};
use kernels::reference;
use kernels::{random_value, KernelChoice, Library};

use epsilod_testkit::{bits, irregular_init};

fn devices(specs: &[&str]) -> Vec<DeviceSpec> {
    specs
        .iter()
        .map(|s| DeviceSpec::parse(s).unwrap())
        .collect()
}

/// One module of tests per device kind: `device_suite!(module, "kind",
/// attributes...; test attributes...)`; the kind is what `--device` takes
/// (`opencl`, and `opencl:slowdown=3` is built from it). The module's
/// attributes gate it on a feature; the test attributes go on each test (an
/// `#[ignore]` for hardware CI does not have). A kind that cannot run some
/// tests names those it runs after `=>`.
macro_rules! device_suite {
    ($m:ident, $kind:literal $(, #[$attr:meta])* $(; #[$test_attr:meta])*) => {
        device_suite!($m, $kind $(, #[$attr])* $(; #[$test_attr])* =>
            every_library_stencil_alone_and_mixed
            launches_large_enough_to_tune
            load_balancing_with_a_cpu
            rebalancing_every_few_iterations
            deep_halos
            initial_cells_computed_on_the_device
            halos_in_device_memory
            recovering_from_a_failed_device
            rust_only_kernels_say_they_need_a_cpu_device
            expression_kernels_agree_everywhere
            global_index_in_expressions
            auxiliary_fields
            a_kernel_that_fails_to_compile_shows_the_build_log);
    };
    ($m:ident, $kind:literal $(, #[$attr:meta])* $(; #[$test_attr:meta])* => $($test:ident)*) => {
        $(#[$attr])*
        mod $m {
            #[allow(unused_imports)]
            use super::*;

            device_suite!(@each $kind [$(#[$test_attr])*] $($test)*);
        }
    };
    (@each $kind:literal [$($attrs:tt)*]) => {};
    (@each $kind:literal [$($attrs:tt)*] $test:ident $($rest:ident)*) => {
        #[test]
        $($attrs)*
        fn $test() {
            super::$test($kind);
        }
        device_suite!(@each $kind [$($attrs)*] $($rest)*);
    };
}

device_suite!(opencl, "opencl", #[cfg(feature = "opencl")]);
device_suite!(cuda, "cuda", #[cfg(feature = "cuda")]; #[ignore = "needs an NVIDIA GPU"]);
// The mock (host memory posing as a GPU) runs kernels' Rust code and
// compiles no C: init kernels, which have no Rust code, and build logs are
// OpenCL's and CUDA's to test.
device_suite!(mock, "mock", #[cfg(feature = "mock")] =>
    every_library_stencil_alone_and_mixed
    launches_large_enough_to_tune
    load_balancing_with_a_cpu
    rebalancing_every_few_iterations
    deep_halos
    halos_in_device_memory
    recovering_from_a_failed_device
    rust_only_kernels_say_they_need_a_cpu_device
    expression_kernels_agree_everywhere
    global_index_in_expressions
    auxiliary_fields);

#[allow(dead_code)]
fn every_library_stencil_alone_and_mixed(kind: &str) {
    for lib in Library::ALL {
        for choice in [KernelChoice::Specialized, KernelChoice::Generic] {
            let spec = lib.spec();
            let size = if lib.ndims() >= 3 { 10 } else { 32 };
            let sizes = vec![size; lib.ndims()];
            let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 3);
            let want = match choice {
                KernelChoice::Specialized => library_serial(lib, &sizes, 20, &init),
                KernelChoice::Generic => reference::run(
                    &sizes,
                    &spec.low,
                    &spec.high,
                    20,
                    &init,
                    reference::generic_formula::<f32>(&spec),
                ),
            };
            for (devs, part) in [
                (vec![kind], Partition::Multi),
                (vec!["cpu:threads=1", kind], Partition::Single(0)),
                (vec![kind, "cpu:threads=1", kind], Partition::Multi),
            ] {
                let out = Skeleton::new(&sizes, Stencil::<f32>::library(lib, choice))
                    .iterations(20)
                    .init(init.clone())
                    .devices(devices(&devs))
                    .partition(part)
                    .run()
                    .unwrap_or_else(|e| panic!("{lib} {choice:?} {devs:?}: {e}"));
                assert_eq!(
                    bits(&out.grid),
                    bits(&want),
                    "{lib} {choice:?} on {devs:?} {part}"
                );
            }
        }
    }
}

/// Regions of a million cells and more (also on each of two devices), for
/// enough iterations that a backend which times launch shapes on the first
/// launches (CUDA: every candidate twice, then the fastest) runs each shape
/// for real and then its choice: every one must compute the same bits as a
/// CPU device. A backend that does not time shapes (OpenCL, the mock)
/// needs the large regions, not the iterations: three cover a whole-grid
/// launch, the border strips and the inner region after an exchange.
#[allow(dead_code)]
fn launches_large_enough_to_tune(kind: &str) {
    let iters = if kind.starts_with("cuda") { 24 } else { 3 };
    for (lib, sizes) in [
        (Library::S2d4, vec![2054usize, 1030]),
        (Library::S3d27, vec![210, 106, 106]),
    ] {
        let init = |i: &[i64]| random_value(i, 11);
        let run = |devs: &[&str], part: Partition| {
            Skeleton::new(
                &sizes,
                Stencil::<f32>::library(lib, KernelChoice::Specialized),
            )
            .iterations(iters)
            .init(init)
            .devices(devices(devs))
            .partition(part)
            .run()
            .unwrap_or_else(|e| panic!("{lib} {devs:?}: {e}"))
        };
        let want = bits(&run(&["cpu"], Partition::Multi).grid);
        for (devs, part) in [
            (vec![kind], Partition::Multi),
            (vec![kind, kind], Partition::Single(0)),
        ] {
            assert_eq!(bits(&run(&devs, part).grid), want, "{lib} {devs:?} {part}");
        }
    }
}

/// A spec expression with lets, a parameter, a condition, division and
/// the functions: the same bits on one CPU thread and on `kind` alone,
/// mixed with CPU devices, cut by rows and in blocks.
fn expression_kernels_agree_everywhere(kind: &str) {
    let spec = kernels::ExprSpec::from_toml(
        r#"
name = "expr-mix"
low = [1, 1]
high = [1, 1]
params = { k = 0.3 }
let = ["s = u[-1,0] + u[1,0] + u[0,-1] + u[0,1]", "hot = s > 2 * u[0,0] || u[1,1] < 0.1"]
update = "select(hot, sqrt(abs(s)) / 2.5, max(min(s * k, u[0,0]), u[-1,-1] / 3))"
"#,
        "expr-mix.toml",
    )
    .unwrap();
    let sizes = [40usize, 36];
    let init = |i: &[i64]| random_value(i, 5);
    let run = |devs: &[&str], part: Partition| {
        Skeleton::new(&sizes, Stencil::<f32>::from_expr(&spec))
            .iterations(12)
            .init(init)
            .devices(devices(devs))
            .partition(part)
            .run()
            .unwrap_or_else(|e| panic!("{devs:?}: {e}"))
    };
    let want = bits(&run(&["cpu:threads=1"], Partition::Multi).grid);
    for (devs, part) in [
        (vec![kind], Partition::Multi),
        (vec!["cpu:threads=1", kind], Partition::Single(0)),
        (vec![kind, "cpu:threads=1", kind], Partition::Multi),
    ] {
        assert_eq!(bits(&run(&devs, part).grid), want, "{devs:?} {part}");
    }
    // The 2d4 expression is the library stencil, bit for bit.
    let e2d4 = kernels::ExprSpec::from_toml(
        "name = \"e2d4\"\nlow = [1, 1]\nhigh = [1, 1]\nupdate = \"(u[-1,0] + u[1,0] + u[0,-1] + u[0,1]) / 4\"\n",
        "e2d4.toml",
    )
    .unwrap();
    let lib = Library::S2d4.spec();
    let reference = reference::run(
        &sizes,
        &lib.low,
        &lib.high,
        12,
        init,
        reference::library_formula(Library::S2d4),
    );
    let out = Skeleton::new(&sizes, Stencil::<f32>::from_expr(&e2d4))
        .iterations(12)
        .init(init)
        .devices(devices(&[kind, "cpu:threads=1"]))
        .run()
        .unwrap();
    assert_eq!(bits(&out.grid), bits(&reference));
}

/// An expression reading the global index and the domain size (a point
/// source in the middle row, a term that grows along dimension 1 and one
/// that shrinks towards the last row): the same bits as a serial loop on
/// every device mix, so every device and partition knows where its cells
/// are and how large the domain is.
#[allow(dead_code)]
fn global_index_in_expressions(kind: &str) {
    let (rows, cols, iters) = (40usize, 36usize, 9);
    let spec = kernels::ExprSpec::from_toml(
        "name = \"source\"\nlow = [1, 1]\nhigh = [1, 1]\nupdate = \"select(g[0] == n[0] / 2 && g[1] == 7, 1, (u[-1,0] + u[1,0] + u[0,-1] + u[0,1]) / 4 + g[1] * 0.001 - (n[0] - g[0]) * 0.002)\"\n",
        "source.toml",
    )
    .unwrap()
    .for_domain(&[rows, cols])
    .unwrap();
    let init = |i: &[i64]| random_value(i, 9);
    let want = serial_2d(rows, cols, iters, init, |r, q, x| {
        if r == 20 && q == 7 {
            1.0
        } else {
            (x(-1, 0) + x(1, 0) + x(0, -1) + x(0, 1)) / 4.0 + q as f32 * 0.001
                - (rows as f32 - r as f32) * 0.002
        }
    });
    for (devs, part) in [
        (vec!["cpu:threads=1"], Partition::Multi),
        (vec![kind], Partition::Multi),
        (vec!["cpu:threads=1", kind], Partition::Single(0)),
        (vec![kind, "cpu:threads=1", kind], Partition::Multi),
        (vec![kind, "cpu:threads=1"], Partition::Single(1)),
    ] {
        // Depth 3 fuses iterations where the device can: the fused kernel's
        // tiles must still see each cell's global index.
        for depth in [1, 3] {
            let out = Skeleton::new(&[rows, cols], Stencil::<f32>::from_expr(&spec))
                .iterations(iters as u64)
                .init(init)
                .devices(devices(&devs))
                .partition(part)
                .halo_depth(epsilod::HaloDepth::Depth(depth))
                .run()
                .unwrap_or_else(|e| panic!("{devs:?} depth {depth}: {e}"));
            let got: Vec<u32> = out.grid.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{devs:?} {part} depth {depth}");
        }
    }
}

#[test]
fn global_index_in_expressions_on_cpu_devices() {
    global_index_in_expressions("cpu:threads=2");
}

#[test]
fn expression_kernels_agree_on_cpu_devices() {
    expression_kernels_agree_everywhere("cpu:threads=2");
}

/// A variable-coefficient diffusion: the coefficient is an auxiliary field
/// of the global index, read at the cell and at its neighbours along
/// dimension 0 (so across device boundaries).
const AUX_SPEC: &str = "name = \"varcoef\"\nlow = [1, 1]\nhigh = [1, 1]\n\
    aux = { k = \"select(g[0] < n[0] / 2, 0.25, 0.125) + g[1] / (n[1] * 16)\" }\n\
    update = \"u[0,0] + k[-1,0] * (u[-1,0] - u[0,0]) + k[1,0] * (u[1,0] - u[0,0]) + k[0,0] * (u[0,-1] + u[0,1] - 2 * u[0,0])\"\n";

fn aux_spec(rows: usize, cols: usize) -> kernels::ExprSpec {
    kernels::ExprSpec::from_toml(AUX_SPEC, "varcoef.toml")
        .unwrap()
        .for_domain(&[rows, cols])
        .unwrap()
}

/// [`AUX_SPEC`] written out in Rust, serially.
fn aux_reference(rows: usize, cols: usize, iters: usize, init: impl Fn(&[i64]) -> f32) -> Vec<u32> {
    let k = |r: usize, q: usize| {
        let base: f32 = if (r as f32) < rows as f32 / 2.0 {
            0.25
        } else {
            0.125
        };
        base + q as f32 / (cols as f32 * 16.0)
    };
    serial_2d(rows, cols, iters, init, |r, q, x| {
        let u = x(0, 0);
        u + k(r - 1, q) * (x(-1, 0) - u)
            + k(r + 1, q) * (x(1, 0) - u)
            + k(r, q) * (x(0, -1) + x(0, 1) - 2.0 * u)
    })
}

/// A 2-d grid from `init`, `iters` steps of `cell(row, column, x)` over
/// its interior (`x(dr, dq)` reads the old grid), serially: the bits.
fn serial_2d(
    rows: usize,
    cols: usize,
    iters: usize,
    init: impl Fn(&[i64]) -> f32,
    cell: impl Fn(usize, usize, &dyn Fn(isize, isize) -> f32) -> f32,
) -> Vec<u32> {
    let mut want: Vec<f32> = (0..rows * cols)
        .map(|k| init(&[(k / cols) as i64, (k % cols) as i64]))
        .collect();
    for _ in 0..iters {
        let old = want.clone();
        for r in 1..rows - 1 {
            for q in 1..cols - 1 {
                let x = |dr: isize, dq: isize| {
                    old[(r as isize + dr) as usize * cols + (q as isize + dq) as usize]
                };
                want[r * cols + q] = cell(r, q, &x);
            }
        }
    }
    want.iter().map(|v| v.to_bits()).collect()
}

/// Auxiliary fields on `kind` devices, alone and beside CPU devices, split
/// every way, rebalanced every few iterations and with deep halos: the
/// reference's bits.
#[allow(dead_code)]
fn auxiliary_fields(kind: &str) {
    let (rows, cols, iters) = (46usize, 30usize, 24u64);
    let spec = aux_spec(rows, cols);
    let init = |i: &[i64]| random_value(i, 4);
    let want = aux_reference(rows, cols, iters as usize, init);
    let plan = vec![
        vec![1.0, 4.0, 1.0],
        vec![5.0, 1.0, 1.0],
        vec![1.0, 1.0, 7.0],
    ];
    for (devs, part, alb, depth) in [
        (vec![kind], Partition::Multi, false, 1),
        (vec!["cpu:threads=1", kind], Partition::Single(0), false, 1),
        (
            vec![kind, "cpu:threads=1", kind],
            Partition::Multi,
            false,
            1,
        ),
        (vec![kind, "cpu:threads=1"], Partition::Single(1), false, 3),
        (
            vec!["cpu:threads=1", kind, kind],
            Partition::Weighted(0),
            true,
            1,
        ),
        (
            vec!["cpu:threads=1", kind, kind],
            Partition::Weighted(0),
            true,
            2,
        ),
    ] {
        let mut s = Skeleton::new(&[rows, cols], Stencil::<f32>::from_expr(&spec))
            .iterations(iters)
            .init(init)
            .devices(devices(&devs))
            .partition(part)
            .halo_depth(epsilod::HaloDepth::Depth(depth));
        if alb {
            let p = plan.clone();
            // Moved rows in slabs of two rows, to and from the devices.
            s = s.alb(
                Alb::custom("every-third", move || Box::new(EveryThird(p.clone())))
                    .window(2)
                    .slab_bytes(2 * cols * 4),
            );
        }
        let out = s.run().unwrap_or_else(|e| panic!("{devs:?}: {e:?}"));
        let got: Vec<u32> = out.grid.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{devs:?} {part} depth {depth}");
        if alb {
            assert!(
                out.report.redistributions.len() >= 3,
                "{devs:?}: {} rebalances",
                out.report.redistributions.len()
            );
        }
    }
}

#[test]
fn auxiliary_fields_on_cpu_devices() {
    auxiliary_fields("cpu:threads=2");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Auxiliary fields over random sizes, device counts, partitions,
    /// depths and scripted rebalances: the reference's bits.
    #[test]
    fn auxiliary_fields_on_any_layout(
        rows in 8usize..40,
        cols in 4usize..30,
        iters in 1u64..20,
        devices in 1usize..5,
        part in 0usize..4,
        depth in 1usize..5,
        events in proptest::collection::vec((1u64..19, proptest::collection::vec(0.2f64..5.0, 4)), 0..4),
    ) {
        let spec = aux_spec(rows, cols);
        let init = |i: &[i64]| random_value(i, 8);
        let part = [Partition::Multi, Partition::Single(0), Partition::Weighted(0), Partition::Single(1)][part];
        let mut s = Skeleton::new(&[rows, cols], Stencil::<f32>::from_expr(&spec))
            .iterations(iters)
            .init(init)
            .devices(vec![epsilod::DeviceSpec::cpu(1); devices])
            .partition(part)
            .halo_depth(epsilod::HaloDepth::Depth(depth));
        if matches!(part, Partition::Weighted(_)) {
            let script: Vec<(u64, Vec<f64>)> =
                events.iter().map(|(at, w)| (*at, w[..devices].to_vec())).collect();
            s = s.alb(
                Alb::custom("scripted", move || {
                    let steps: Vec<(u64, &[f64])> =
                        script.iter().map(|(at, w)| (*at, w.as_slice())).collect();
                    Box::new(heuristics::testing::Scripted::new(&steps))
                })
                .window(2),
            );
        }
        let out = match s.run() {
            Ok(o) => o,
            Err(epsilod::RunError::Setup(epsilod::SetupError::Layout(_))) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let got: Vec<u32> = out.grid.iter().map(|v| v.to_bits()).collect();
        proptest::prop_assert_eq!(got, aux_reference(rows, cols, iters as usize, init));
    }
}

#[allow(dead_code)]
fn load_balancing_with_a_cpu(kind: &str) {
    let lib = Library::S2d4;
    let sizes = [130usize, 130];
    let init = |i: &[i64]| random_value(i, 3);
    let want = library_serial(lib, &sizes, 80, init);
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(80)
    .init(init)
    .devices(devices(&["cpu:threads=1", &format!("{kind}:slowdown=3")]))
    .partition(Partition::Weighted(0))
    .alb(Alb::parse("next-alb").unwrap())
    .run()
    .unwrap();
    assert_eq!(bits(&out.grid), bits(&want));
    // next-alb rebalances at the first full window, whatever the timings.
    assert_eq!(out.report.redistributions.first().map(|r| r.iter), Some(30));
    let rows: Vec<usize> = out
        .report
        .iterations
        .last()
        .unwrap()
        .devices
        .iter()
        .map(|d| d.rows)
        .collect();
    assert_eq!(rows.iter().sum::<usize>(), 128);
    assert!(out
        .report
        .iterations
        .iter()
        .all(|i| i.devices[1].compute_seconds > 0.0));
}

/// Rebalances every three iterations.
struct EveryThird(Vec<Vec<f64>>);

impl heuristics::Heuristic for EveryThird {
    fn name(&self) -> &str {
        "every-third"
    }
    fn check(&mut self, s: &heuristics::Snapshot<'_>) -> heuristics::Decision {
        if s.iter % 3 != 2 {
            return heuristics::Decision::no();
        }
        let w = &self.0[(s.iter / 3) as usize % self.0.len()];
        heuristics::Decision {
            weights: Some(w.clone()),
            ..heuristics::Decision::yes()
        }
    }
}

/// A stress test of moving rows to and from devices: a CPU and two `kind`
/// devices rebalanced every three iterations, with large moves, one-row
/// moves and moves between two `kind` devices, stay bit-identical to the
/// serial reference.
#[allow(dead_code)]
fn rebalancing_every_few_iterations(kind: &str) {
    let plan = vec![
        vec![1.0, 1.0, 1.0],
        vec![1.0, 3.0, 1.0],
        vec![1.0, 3.0, 1.02],
        vec![6.0, 1.0, 1.0],
        vec![1.0, 1.0, 9.0],
        vec![1.0, 1.01, 9.0],
        vec![2.0, 1.0, 2.0],
    ];
    for (lib, sizes, iters) in [
        (Library::S2d4, vec![98usize, 40], 60u64),
        (Library::S3d27, vec![34usize, 10, 12], 30),
    ] {
        let spec = lib.spec();
        let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 5);
        let want = library_serial(lib, &sizes, iters as usize, &init);
        let p = plan.clone();
        let alb = Alb::custom("every-third", move || Box::new(EveryThird(p.clone()))).window(2);
        let out = Skeleton::new(
            &sizes,
            Stencil::<f32>::library(lib, KernelChoice::Specialized),
        )
        .iterations(iters)
        .init(init.clone())
        .devices(devices(&["cpu:threads=1", kind, kind]))
        .partition(Partition::Weighted(0))
        .alb(alb)
        .run()
        .unwrap_or_else(|e| panic!("{lib}: {e}"));
        assert_eq!(bits(&out.grid), bits(&want), "{lib}");
        let moves = out.report.redistributions.len() as u64;
        assert!(moves >= iters / 3 - 2, "{lib}: only {moves} rebalances");
    }
}

/// Deep halos on `kind` devices beside a CPU: the rings computed between
/// exchanges reach into the ghost cells, bit-identical to the reference.
#[allow(dead_code)]
fn deep_halos(kind: &str) {
    for (lib, sizes, part) in [
        (Library::S2d4, vec![40usize, 36], Partition::Multi),
        (Library::S3d27, vec![20usize, 12, 10], Partition::Single(0)),
    ] {
        let spec = lib.spec();
        let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 4);
        let want = library_serial(lib, &sizes, 23, &init);
        for depth in [2, 3] {
            let out = Skeleton::new(
                &sizes,
                Stencil::<f32>::library(lib, KernelChoice::Specialized),
            )
            .iterations(23)
            .init(init.clone())
            .devices(devices(&[kind, "cpu:threads=1", kind]))
            .partition(part)
            .halo_depth(epsilod::HaloDepth::Depth(depth))
            .run()
            .unwrap_or_else(|e| panic!("{lib} depth {depth}: {e}"));
            assert_eq!(bits(&out.grid), bits(&want), "{lib} depth {depth}");
        }
    }
}

/// `Skeleton::init_on_device`: `kind` devices compute their tiles' initial
/// cells with the kernel (given a kernel of another seed than the host
/// function, the result is the kernel's), and beside a CPU device, through
/// rebalances that fill new boundary cells, kernel and host function give
/// one field, bit-identical to the reference; f32 and f64.
#[allow(dead_code)]
fn initial_cells_computed_on_the_device(kind: &str) {
    use kernels::InitSpec;
    fn case<T: kernels::Real + kernels::DeviceScalar>(kind: &str) {
        let lib = Library::S2d4;
        let sizes = vec![46usize, 30];
        let spec = lib.spec();
        let init = |seed: u64| InitSpec {
            sizes: sizes.clone(),
            low: spec.low.clone(),
            high: spec.high.clone(),
            random: Some(seed),
        };
        let reference = |seed: u64, iters: usize| {
            let i = init(seed);
            reference::run(
                &sizes,
                &spec.low,
                &spec.high,
                iters,
                move |x: &[i64]| T::from_f64(i.value(x) as f64),
                reference::generic_formula::<T>(&spec),
            )
        };
        let host = init(1);
        let out = Skeleton::new(&sizes, Stencil::<T>::library(lib, KernelChoice::Generic))
            .iterations(5)
            .init(move |x| T::from_f64(host.value(x) as f64))
            .init_on_device(init(2).device_kernel::<T>().unwrap())
            .devices(devices(&[kind, kind]))
            .run()
            .unwrap();
        assert_eq!(bits(&out.grid), bits(&reference(2, 5)), "the kernel's seed");
        let plan = vec![
            vec![1.0, 3.0, 1.0],
            vec![4.0, 1.0, 1.0],
            vec![1.0, 1.0, 5.0],
        ];
        let alb = Alb::custom("every-third", move || Box::new(EveryThird(plan.clone()))).window(2);
        let host = init(3);
        let out = Skeleton::new(&sizes, Stencil::<T>::library(lib, KernelChoice::Generic))
            .iterations(20)
            .init(move |x| T::from_f64(host.value(x) as f64))
            .init_on_device(init(3).device_kernel::<T>().unwrap())
            .devices(devices(&["cpu:threads=1", kind, kind]))
            .partition(Partition::Weighted(1))
            .alb(alb)
            .run()
            .unwrap();
        assert_eq!(
            bits(&out.grid),
            bits(&reference(3, 20)),
            "mixed, rebalanced"
        );
        assert!(out.report.redistributions.len() >= 4);
    }
    case::<f32>(kind);
    case::<f64>(kind);
}

/// Between `kind` devices of one process (one context: they share device
/// memory) every halo stays on the device, and with a CPU device between
/// them only the halos that touch the CPU go through the host: row, column
/// and 2x2 splits, 2-d and 3-d, one-step and deep halos, and rebalances
/// that resize the tiles, bit-identical to the serial reference.
#[allow(dead_code)]
fn halos_in_device_memory(kind: &str) {
    // (stencil, sizes, devices, partition, halo depth)
    type Case<'a> = (Library, Vec<usize>, &'a [&'a str], Partition, usize);
    let cases: [Case; 7] = [
        // One-sided: the second device receives and never sends.
        (
            Library::S2df5,
            vec![40, 36],
            &[kind, kind],
            Partition::Single(0),
            1,
        ),
        (
            Library::S2d4,
            vec![40, 36],
            &[kind, kind],
            Partition::Single(0),
            1,
        ),
        (
            Library::S2d8,
            vec![40, 36],
            &[kind, kind],
            Partition::Single(1),
            1,
        ),
        (
            Library::S2d4,
            vec![40, 36],
            &[kind, kind, kind, kind],
            Partition::Multi,
            1,
        ),
        (
            Library::S3d27,
            vec![20, 12, 10],
            &[kind, kind],
            Partition::Single(2),
            2,
        ),
        (
            Library::S2d4,
            vec![40, 36],
            &[kind, kind],
            Partition::Single(0),
            3,
        ),
        (
            Library::S2d4,
            vec![40, 36],
            &["cpu:threads=1", kind, kind],
            Partition::Single(0),
            1,
        ),
    ];
    for (lib, sizes, devs, part, depth) in cases {
        let spec = lib.spec();
        let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 6);
        let want = library_serial(lib, &sizes, 17, &init);
        let out = Skeleton::new(
            &sizes,
            Stencil::<f32>::library(lib, KernelChoice::Specialized),
        )
        .iterations(17)
        .init(init.clone())
        .devices(devices(devs))
        .partition(part)
        .halo_depth(epsilod::HaloDepth::Depth(depth))
        .run()
        .unwrap_or_else(|e| panic!("{lib} {devs:?} {part}: {e}"));
        let what = format!("{lib} on {devs:?} {part} depth {depth}");
        assert_eq!(bits(&out.grid), bits(&want), "{what}");
        let s = &out.report.summary;
        assert!(s.halo_messages > 0, "{what}: no halos");
        if devs.contains(&"cpu:threads=1") {
            // Two of the four messages an exchange sends touch the CPU.
            assert_eq!(s.halo_messages_on_device * 2, s.halo_messages, "{what}");
        } else {
            assert_eq!(s.halo_messages_on_device, s.halo_messages, "{what}");
        }
    }
    // Rebalances resize the tiles and move rows, between the two `kind`
    // devices in device memory too (the weights make them trade rows);
    // the halos between them stay on them.
    let plan = vec![
        vec![1.0, 3.0, 1.0],
        vec![1.0, 1.0, 4.0],
        vec![2.0, 1.0, 1.0],
    ];
    let alb = Alb::custom("every-third", move || Box::new(EveryThird(plan.clone()))).window(2);
    let (lib, sizes) = (Library::S2d4, vec![98usize, 40]);
    let spec = lib.spec();
    let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 7);
    let want = library_serial(lib, &sizes, 30, &init);
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(30)
    .init(init)
    .devices(devices(&["cpu:threads=1", kind, kind]))
    .partition(Partition::Weighted(0))
    .alb(alb)
    .run()
    .unwrap_or_else(|e| panic!("rebalanced: {e}"));
    assert_eq!(bits(&out.grid), bits(&want), "rebalanced");
    assert!(out.report.redistributions.len() >= 5, "too few rebalances");
    let s = &out.report.summary;
    assert_eq!(s.halo_messages_on_device * 2, s.halo_messages, "rebalanced");
    // Moves between the two `kind` devices (processes 1 and 2, neighbours)
    // go device to device: every rebalance moves rows across that border,
    // by the weights' ratios, one move a rebalance.
    let r = &out.report.redistributions;
    assert!(r.iter().all(|x| x.moves_on_device <= 1), "{r:?}");
    assert!(
        r.iter().filter(|x| x.moves_on_device == 1).count() >= 4,
        "{r:?}"
    );
}

/// A `kind` device failing mid-run is dropped; the run goes on from its
/// last checkpoint over a CPU and another `kind` device, bit-identical.
#[allow(dead_code)]
fn recovering_from_a_failed_device(kind: &str) {
    let lib = Library::S3d27;
    let spec = lib.spec();
    let sizes = vec![26usize, 12, 14];
    let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 9);
    let want = library_serial(lib, &sizes, 25, &init);
    let dir = tempfile::tempdir().unwrap();
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(25)
    .init(init)
    .devices(devices(&[
        kind,
        &format!("{kind}:fail@17"),
        "cpu:threads=1",
    ]))
    .checkpoint(4, dir.path())
    .on_failure(epsilod::OnFailure::Recover)
    .run()
    .unwrap();
    assert_eq!(bits(&out.grid), bits(&want));
    assert_eq!(out.report.failures.len(), 1);
    assert_eq!(out.report.failures[0].resumed_from, 16);
}

#[allow(dead_code)]
fn rust_only_kernels_say_they_need_a_cpu_device(kind: &str) {
    let fp = Library::S2d4.spec().footprint();
    let k = kernels::Custom::new("rust-only", fp, |nb: &kernels::Neighbourhood<f32>| {
        nb.centre()
    });
    let r = Skeleton::new(
        &[10, 10],
        Stencil::custom(std::sync::Arc::new(k), vec![1, 1], vec![1, 1]),
    )
    .devices(devices(&[kind]))
    .run();
    let e = epsilod::error::chain(&r.err().expect("no device source"));
    assert!(
        e.contains("no device code") && e.contains("cpu devices"),
        "{e}"
    );
}

#[allow(dead_code)]
fn a_kernel_that_fails_to_compile_shows_the_build_log(kind: &str) {
    let fp = Library::S2d4.spec().footprint();
    // SAFETY: the body reads only `src[c]` and writes only `dst[c]`; the
    // cell is one f32. It never runs: it does not compile.
    let broken = unsafe {
        kernels::DeviceKernel::new(
            kernels::CellDecl::scalar::<f32>(),
            "    dst[c] = src[c] +* undeclared_thing;\n",
        )
    };
    let k = kernels::Custom::new("broken", fp, |nb: &kernels::Neighbourhood<f32>| nb.centre())
        .with_device_kernel(broken);
    let r = Skeleton::new(
        &[10, 10],
        Stencil::custom(std::sync::Arc::new(k), vec![1, 1], vec![1, 1]),
    )
    .devices(devices(&[kind]))
    .run();
    let e = epsilod::error::chain(&r.err().expect("the source does not compile"));
    // The API's own name: `opencl` builds for OpenCL, `cuda` for CUDA.
    let api = if kind.starts_with("cuda") {
        "CUDA"
    } else {
        "OpenCL"
    };
    assert!(
        e.contains(&format!("kernel 'broken' failed to build for {api}")),
        "{e}"
    );
    assert!(
        e.contains("undeclared_thing"),
        "the build log names the culprit: {e}"
    );
}

//! The skeleton's results are bit-identical to the naive serial reference,
//! whatever the number of devices, the partition and the weights.

use crate::common::library_serial;
use epsilod::{DeviceSpec, Partition, RunError, SetupError, Skeleton, Stencil};
use hitmap::{HitmapError, Layout, Shape};
use kernels::reference;
use kernels::{random_value, KernelChoice, Library};

use epsilod_testkit::{bits, irregular_init, Lcg};

fn configs(rng: &mut Lcg) -> Vec<(Partition, Vec<DeviceSpec>)> {
    let mut out = Vec::new();
    for n in 1..=4usize {
        for part in [
            Partition::Multi,
            Partition::Single(0),
            Partition::Weighted(0),
        ] {
            let devs = (0..n)
                .map(|i| {
                    let mut d = DeviceSpec::cpu(if i == 1 { 2 } else { 1 });
                    if part == Partition::Weighted(0) {
                        d.weight = 0.2 + 3.0 * rng.uniform();
                    }
                    d
                })
                .collect();
            out.push((part, devs));
        }
    }
    out
}

struct Planned {
    skeleton: Skeleton<f32>,
    layout: Layout,
}

impl Planned {
    fn plan_layout(&self) -> Vec<Shape> {
        self.layout.blocks().to_vec()
    }
}

/// Whether some non-empty block is thinner than the stencil's border
/// (`max(low, high)`) along a dimension the blocks are cut in.
fn too_thin(blocks: &[Shape], low: &[usize], high: &[usize]) -> bool {
    let full: Vec<&Shape> = blocks.iter().filter(|b| !b.is_empty()).collect();
    (0..low.len()).any(|d| {
        let cut = full.iter().any(|b| b.sig(d) != full[0].sig(d));
        cut && full.iter().any(|b| b.sig(d).card() < low[d].max(high[d]))
    })
}

fn check_library(lib: Library, size: usize, iters: u64, rng: &mut Lcg) {
    let spec = lib.spec();
    let sizes = vec![size; lib.ndims()];
    let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 1);
    let want = library_serial(lib, &sizes, iters as usize, &init);
    for (part, devs) in configs(rng) {
        let desc = format!(
            "{lib} size {size} iters {iters} {part} {:?}",
            devs.iter().map(|d| d.to_string()).collect::<Vec<_>>()
        );
        let weights: Vec<f64> = devs.iter().map(|d| d.weight).collect();
        let n = devs.len();
        let skeleton = Skeleton::new(
            &sizes,
            Stencil::<f32>::library(lib, KernelChoice::Specialized),
        )
        .iterations(iters)
        .init(init.clone())
        .devices(devs)
        .partition(part);
        let layout = Layout::new(&skeleton.interior().unwrap(), part, n, Some(&weights)).unwrap();
        let skel = Planned { skeleton, layout };
        // Refused exactly when some block is thinner than the stencil's
        // border along a dimension the layout cuts (worked out here from the
        // blocks, not by the check under test).
        let must_refuse = too_thin(&skel.plan_layout(), &spec.low, &spec.high);
        match skel.skeleton.run() {
            Ok(out) => {
                assert!(!must_refuse, "{desc}: ran, but a block is too thin");
                assert_eq!(bits(&out.grid), bits(&want), "{desc}")
            }
            Err(RunError::Setup(SetupError::Layout(HitmapError::TooThin {
                width,
                border,
                ..
            }))) => {
                assert!(must_refuse && width < border, "{desc}: refused wrongly")
            }
            Err(e) => panic!("{desc}: {e}"),
        }
    }
}

#[test]
fn every_library_stencil_on_every_layout() {
    let mut rng = Lcg(2024);
    for lib in Library::ALL {
        for size in [10, 32] {
            for iters in [1, 100] {
                // 32^4 x 100 in the naive reference alone takes minutes: 4-d runs
                // its 100 iterations at size 10 and one at 32.
                if lib.ndims() == 4 && size == 32 && iters == 100 {
                    continue;
                }
                check_library(lib, size, iters, &mut rng);
            }
        }
    }
}

#[test]
fn generic_kernel_matches_its_reference_on_two_dimensional_blocks() {
    for lib in [Library::S2d8, Library::S3d27, Library::S2df5] {
        let spec = lib.spec();
        let sizes = vec![14; lib.ndims()];
        let init = |i: &[i64]| random_value(i, 1);
        let want = reference::run(
            &sizes,
            &spec.low,
            &spec.high,
            7,
            init,
            reference::generic_formula::<f32>(&spec),
        );
        for n in [1, 3, 4] {
            let out = Skeleton::new(&sizes, Stencil::<f32>::library(lib, KernelChoice::Generic))
                .iterations(7)
                .init(init)
                .devices(vec![DeviceSpec::cpu(1); n])
                .partition(Partition::Multi)
                .run()
                .unwrap();
            assert_eq!(bits(&out.grid), bits(&want), "{lib} on {n} devices");
        }
    }
}

#[test]
fn more_devices_than_rows_leaves_some_idle() {
    let lib = Library::S2d4;
    let sizes = [5, 9];
    let init = |i: &[i64]| random_value(i, 1);
    let want = library_serial(lib, &sizes, 5, init);
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(5)
    .init(init)
    .devices(vec![DeviceSpec::cpu(1); 4])
    .partition(Partition::Single(0))
    .run()
    .unwrap();
    assert_eq!(bits(&out.grid), bits(&want));
    // Three rows of interior, four devices: the last has none.
    assert_eq!(out.report.iterations[0].devices[3].rows, 0);
}

#[test]
fn report_has_every_iteration_and_device() {
    let out = Skeleton::new(
        &[40, 40],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(12)
    .devices(vec![DeviceSpec::cpu(1), DeviceSpec::cpu(1)])
    .partition(Partition::Single(0))
    .run()
    .unwrap();
    let r = &out.report;
    assert_eq!(r.iterations.len(), 12);
    assert!(r.iterations.iter().all(|i| i.devices.len() == 2));
    assert_eq!(
        r.iterations[0]
            .devices
            .iter()
            .map(|d| d.rows)
            .sum::<usize>(),
        38
    );
    assert!(r.summary.loop_seconds > 0.0 && r.summary.total_seconds >= r.summary.loop_seconds);
    assert!(r
        .iterations
        .iter()
        .all(|i| i.devices.iter().all(|d| d.compute_seconds > 0.0)));
    // The summary is the arithmetic of the records.
    let secs: Vec<f64> = r.iterations.iter().map(|i| i.seconds).collect();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-9);
    assert!(close(
        r.summary.mean_iteration_seconds,
        secs.iter().sum::<f64>() / 12.0
    ));
    let mut sorted = secs.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(close(
        r.summary.median_iteration_seconds,
        (sorted[5] + sorted[6]) / 2.0
    ));
    assert!(close(
        r.summary.cell_updates_per_second,
        38.0 * 38.0 * 12.0 / r.summary.loop_seconds
    ));
    let overhead = r
        .iterations
        .iter()
        .map(|i| {
            i.seconds
                - i.devices
                    .iter()
                    .map(|d| d.compute_seconds)
                    .fold(0.0, f64::max)
        })
        .sum::<f64>()
        / 12.0;
    assert!(close(
        r.summary.skeleton_overhead_seconds_per_iteration,
        overhead
    ));
    assert_eq!(r.summary.rebalances, 0);
    assert_eq!(
        r.summary.redistribution_seconds_total.to_bits(),
        0.0f64.to_bits()
    );
    // Elapsed times grow, and the last is the loop.
    assert!(r
        .iterations
        .windows(2)
        .all(|w| w[0].elapsed_seconds <= w[1].elapsed_seconds));
    assert!(r.iterations[11].elapsed_seconds <= r.summary.loop_seconds);
    let json = serde_json::to_value(r).unwrap();
    for key in [
        "config",
        "summary",
        "iterations",
        "redistributions",
        "heuristic",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

/// Kernels' CPU time reaches the report only when the run asks (each
/// reading is two system calls a launch), and then for every device and
/// iteration, with the same result bits either way. No other test in this
/// binary asks, so nothing else can turn the process-wide measuring on.
#[test]
fn cpu_time_is_reported_only_when_asked() {
    let run = |on: bool| {
        Skeleton::new(
            &[66, 66],
            Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
        )
        .iterations(20)
        .devices(vec![DeviceSpec::cpu(1), DeviceSpec::cpu(2)])
        .partition(Partition::Single(0))
        .cpu_time(on)
        .run()
        .unwrap()
    };
    let off = run(false);
    let on = run(true);
    assert_eq!(bits(&off.grid), bits(&on.grid));
    let devices = |o: &epsilod::Outcome<f32>| -> Vec<Option<f64>> {
        o.report
            .iterations
            .iter()
            .flat_map(|it| it.devices.iter().map(|d| d.cpu_seconds))
            .collect()
    };
    assert!(
        devices(&off).iter().all(Option::is_none),
        "{:?}",
        devices(&off)
    );
    assert_eq!(devices(&on).len(), 40);
    #[cfg(target_os = "linux")]
    assert!(
        devices(&on).iter().all(Option::is_some),
        "{:?}",
        devices(&on)
    );
}

/// A run longer than its record limit reports one iteration in each block
/// of k, at places that vary, with the same bits and exact totals; a
/// resumed run counts its blocks from where it resumed.
#[test]
fn long_runs_report_a_sample_of_their_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let run = |iters: u64, records: Option<u64>, step: &str| {
        let s = Skeleton::new(
            &[34, 34],
            Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
        )
        .iterations(iters)
        .devices(vec![DeviceSpec::cpu(1), DeviceSpec::cpu(1)])
        .halo_depth(epsilod::HaloDepth::Depth(4));
        let s = match records {
            Some(max) => s.iteration_records(max),
            None => s,
        };
        match step {
            "checkpoint" => s.checkpoint(40, dir.path()),
            "restart" => s.restart(dir.path()),
            _ => s,
        }
        .run()
        .unwrap()
    };
    let iters = |o: &epsilod::Outcome<f32>| -> Vec<u64> {
        o.report.iterations.iter().map(|i| i.iter).collect()
    };
    let all = run(100, None, "");
    assert_eq!(iters(&all), (0..100).collect::<Vec<_>>());
    assert_eq!(all.report.summary.iterations_recorded_every, 1);
    let sampled = run(100, Some(10), "checkpoint");
    assert_eq!(bits(&all.grid), bits(&sampled.grid));
    assert_eq!(sampled.report.summary.iterations_recorded_every, 10);
    let got = iters(&sampled);
    let blocks: Vec<u64> = got.iter().map(|i| i / 10).collect();
    assert_eq!(blocks, (0..10).collect::<Vec<_>>(), "one a block: {got:?}");
    let places: std::collections::BTreeSet<u64> = got.iter().map(|i| i % 10).collect();
    assert!(places.len() > 1, "the place varies: {got:?}");
    for it in &sampled.report.iterations {
        assert_eq!(it.devices.len(), 2);
        assert!(it.seconds > 0.0 && it.elapsed_seconds <= sampled.report.summary.loop_seconds);
    }
    let s = &sampled.report.summary;
    let cells = 32.0 * 32.0 * 100.0;
    assert!((s.cell_updates_per_second * s.loop_seconds - cells).abs() < 1e-6 * cells);
    // Resumed at 80 for 60 more iterations, 6 blocks of 10 from 80.
    let resumed = run(140, Some(6), "restart");
    assert_eq!(resumed.report.config.resumed_from, Some(80));
    let got = iters(&resumed);
    let blocks: Vec<u64> = got.iter().map(|i| (i - 80) / 10).collect();
    assert_eq!(blocks, (0..6).collect::<Vec<_>>(), "{got:?}");
    assert_eq!(bits(&resumed.grid), bits(&run(140, None, "").grid));
}

//! Deep halos (`halo_depth`): ghost cells k reaches deep, exchanged every k
//! iterations, give the bits of k = 1 and of the serial reference on any
//! sizes, devices, partitions, iteration counts and rebalances; messages
//! fall k-fold.

use epsilod::{Alb, DeviceSpec, HaloDepth, Partition, RunError, SetupError, Skeleton, Stencil};
use epsilod_testkit::{bits, irregular_init, library_reference};
use heuristics::testing::Scripted;
use kernels::{reference, KernelChoice, Library};
use proptest::prelude::*;

fn run(
    lib: Library,
    sizes: &[usize],
    iters: u64,
    devices: usize,
    part: Partition,
    depth: HaloDepth,
    script: Option<Vec<(u64, Vec<f64>)>>,
) -> Result<epsilod::Outcome<f32>, RunError> {
    let spec = lib.spec();
    let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 3);
    let mut s = Skeleton::new(
        sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters)
    .init(init)
    .devices(vec![DeviceSpec::cpu(1); devices])
    .partition(part)
    .halo_depth(depth);
    if let Some(script) = script {
        s = s.alb(
            Alb::custom("scripted", move || {
                let steps: Vec<(u64, &[f64])> =
                    script.iter().map(|(at, w)| (*at, w.as_slice())).collect();
                Box::new(Scripted::new(&steps))
            })
            .window(2),
        );
    }
    s.run()
}

fn reference_of(lib: Library, sizes: &[usize], iters: u64) -> Vec<u32> {
    library_reference(lib, sizes, iters, 3)
}

#[test]
fn messages_fall_by_the_depth() {
    let sizes = [66usize, 50];
    let count = |depth| {
        run(
            Library::S2d4,
            &sizes,
            48,
            3,
            Partition::Single(0),
            HaloDepth::Depth(depth),
            None,
        )
        .unwrap()
        .report
        .summary
        .halo_messages
    };
    let one = count(1);
    assert_eq!(one, 48 * 4, "two inner edges, both ways, every iteration");
    for k in [2, 3, 4, 6] {
        assert_eq!(count(k), one / k as u64, "depth {k}");
    }
}

/// `auto` runs a few iterations at depths 1, 2, 4 and 8, then the rest at
/// the depth the cost model chooses from those times: the serial
/// reference's bits, rebalances during the trials included, and a report
/// that says what was measured and chosen.
#[test]
fn auto_depth_measures_then_chooses() {
    let (lib, sizes, iters) = (Library::S2d4, [70usize, 40], 150);
    let script = vec![
        (5, vec![1.0, 2.0, 1.0]),
        (21, vec![2.0, 1.0, 1.0]),
        (60, vec![1.0, 1.0, 3.0]),
    ];
    let out = run(
        lib,
        &sizes,
        iters,
        3,
        Partition::Weighted(0),
        HaloDepth::Auto,
        Some(script),
    )
    .unwrap();
    assert_eq!(bits(&out.grid), reference_of(lib, &sizes, iters));
    let r = &out.report;
    assert!(
        r.summary.rebalances >= 2,
        "{} rebalances",
        r.summary.rebalances
    );
    let tried: Vec<usize> = r.depth_trials.iter().map(|t| t.depth).collect();
    assert_eq!(tried, [1, 2, 4, 8]);
    assert!(r
        .depth_trials
        .iter()
        .all(|t| t.seconds.is_finite() && t.seconds > 0.0));
    let samples: Vec<(usize, f64)> = r
        .depth_trials
        .iter()
        .map(|t| (t.depth, t.seconds))
        .collect();
    assert_eq!(r.halo_depth, heuristics::depth::choose_depth(&samples));
}

/// Runs too short to repay the measuring stay at depth 1.
#[test]
fn auto_depth_stays_at_one_in_short_runs() {
    let out = run(
        Library::S2d4,
        &[40, 30],
        50,
        3,
        Partition::Single(0),
        HaloDepth::Auto,
        None,
    )
    .unwrap();
    assert_eq!(bits(&out.grid), reference_of(Library::S2d4, &[40, 30], 50));
    assert!(out.report.depth_trials.is_empty());
    assert_eq!(out.report.halo_depth, 1);
    assert_eq!(out.report.summary.halo_messages, 50 * 4);
}

#[test]
fn kernels_reading_the_previous_level_refuse_deep_halos() {
    let e = kernels::AnySpec::from_toml(
        "name = \"w\"\nlow = [1, 1]\nhigh = [1, 1]\nupdate = \"2 * u[0,0] - old2 + 0.1 * (u[-1,0] + u[1,0] - 2 * u[0,0])\"\n",
        "w.toml",
    )
    .unwrap();
    let r = Skeleton::new(&[20, 20], Stencil::<f32>::from_any_spec(&e))
        .devices(vec![DeviceSpec::cpu(1); 2])
        .halo_depth(HaloDepth::Depth(2))
        .run();
    match r {
        Err(RunError::Setup(e @ SetupError::HaloDepth { .. })) => {
            let why = e.to_string();
            assert!(why.contains("previous time level"), "{why}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("deep halos ran a kernel reading the previous level"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn any_depth_gives_the_same_bits(
        which in 0usize..11,
        size in 14usize..40,
        depth in 1usize..9,
        iters in 1u64..40,
        devices in 1usize..5,
        part in 0usize..4,
        events in prop::collection::vec((2u64..38, prop::collection::vec(0.2f64..5.0, 4)), 0..4),
    ) {
        let lib = Library::ALL[which];
        let nd = lib.ndims();
        let size = match nd {
            3 => size / 2 + 5,
            4 => size / 4 + 6,
            _ => size,
        };
        let sizes = vec![size; nd];
        let part = [Partition::Multi, Partition::Single(0), Partition::Weighted(0), Partition::Single(nd - 1)][part];
        let script = matches!(part, Partition::Weighted(_))
            .then(|| events.iter().map(|(at, w)| (*at, w[..devices].to_vec())).collect());
        let out = match run(lib, &sizes, iters, devices, part, HaloDepth::Depth(depth), script) {
            Ok(o) => o,
            Err(RunError::Setup(SetupError::Layout(_))) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        prop_assert_eq!(bits(&out.grid), reference_of(lib, &sizes, iters));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// A random weighted stencil, lopsided reaches included.
    #[test]
    fn random_spec_stencils_too(
        low in prop::collection::vec(0usize..3, 2),
        high in prop::collection::vec(0usize..3, 2),
        seed in 0u64..1000,
        depth in 2usize..6,
        iters in 1u64..20,
        devices in 2usize..4,
        part in 0usize..3,
    ) {
        let n: usize = (0..2).map(|d| low[d] + high[d] + 1).product();
        let weights: Vec<f64> = (0..n)
            .map(|i| (1 + (seed.wrapping_mul(31).wrapping_add(i as u64 * 17)) % 7) as f64 * 0.25)
            .collect();
        let spec = kernels::StencilSpec {
            name: "random".into(),
            low: low.clone(),
            high: high.clone(),
            weights,
            factor: 3.5,
        };
        let sizes = [29usize, 23];
        let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 6);
        let part = [Partition::Multi, Partition::Single(0), Partition::Single(1)][part];
        let out = Skeleton::new(&sizes, Stencil::<f32>::from_spec(&spec))
            .iterations(iters)
            .init(init.clone())
            .devices(vec![DeviceSpec::cpu(1); devices])
            .partition(part)
            .halo_depth(HaloDepth::Depth(depth))
            .run();
        let out = match out {
            Ok(o) => o,
            Err(RunError::Setup(SetupError::Layout(_))) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let want = reference::run(
            &sizes,
            &spec.low,
            &spec.high,
            iters as usize,
            init,
            reference::generic_formula::<f32>(&spec),
        );
        prop_assert_eq!(bits(&out.grid), bits(&want));
    }
}

/// With no halo depth given, one plain CPU device whose tile outgrows its
/// core's second-level cache many times (2 x 16 MiB against any L2 up to
/// 8 MiB) runs at depth 4, with the bits of depth 1, and the report says
/// which depth ran and why; a tile that fits stays at 1.
#[test]
fn the_default_blocks_large_cpu_tiles_with_the_bits_of_depth_one() {
    use epsilod::DepthReason;
    let lib = Library::S2d4;
    let at = |sizes: &[usize], depth: Option<HaloDepth>| {
        let spec = lib.spec();
        let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), 3);
        let s = Skeleton::new(
            sizes,
            Stencil::<f32>::library(lib, KernelChoice::Specialized),
        )
        .iterations(10)
        .init(init)
        .devices(vec![DeviceSpec::cpu(1)]);
        match depth {
            Some(k) => s.halo_depth(k),
            None => s,
        }
        .run()
        .unwrap()
    };
    let large = [2050usize, 2050];
    let (default, one) = (at(&large, None), at(&large, Some(HaloDepth::Depth(1))));
    assert_eq!(bits(&default.grid), bits(&one.grid));
    let why = |o: &epsilod::Outcome<f32>| (o.report.halo_depth, o.report.halo_depth_reason);
    assert_eq!(why(&default), (4, DepthReason::TilesBeyondL2));
    assert_eq!(why(&one), (1, DepthReason::Given));
    let json = serde_json::to_value(&default.report).unwrap();
    assert_eq!(json["halo_depth_reason"], "tiles_beyond_l2");
    let small = at(&[66, 50], None);
    assert_eq!(bits(&small.grid), reference_of(lib, &[66, 50], 10));
    assert_eq!(why(&small), (1, DepthReason::TilesInCache));
}

/// With no halo depth given, a 3-d grid whose tile outgrows the L2 runs at
/// depth 1, and the report says why.
#[test]
fn the_default_keeps_three_dimensional_grids_at_depth_one() {
    use epsilod::DepthReason;
    let sizes = [212usize, 212, 212];
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(Library::S3d6, KernelChoice::Specialized),
    )
    .iterations(1)
    .devices(vec![DeviceSpec::cpu(1)])
    .run()
    .unwrap();
    assert_eq!(
        (out.report.halo_depth, out.report.halo_depth_reason),
        (1, DepthReason::ThreeOrMoreDims)
    );
    let json = serde_json::to_value(&out.report).unwrap();
    assert_eq!(json["halo_depth_reason"], "three_or_more_dims");
}

//! The simulator against hand-computed schedules, trace mode against real
//! decisions, and its error paths.

use super::*;
use crate::predict::{Device, LinkClass, Machine, Method, Run};
use heuristics::gather::DIRECT_UP_TO;
use proptest::prelude::*;

fn cross() -> Footprint {
    Footprint::new(2, vec![vec![-1, 0], vec![1, 0], vec![0, -1], vec![0, 1]])
}

fn scenario(devices: Vec<SimDevice>, rows: i64, iters: u64, alb: Option<&str>) -> Scenario {
    Scenario {
        domain: Shape::from_ranges(&[(1, rows + 1), (1, 1025)]),
        partition: Partition::Weighted(0),
        footprint: cross(),
        cell_bytes: 4.0,
        levels: 1,
        iters,
        devices,
        links: Links::default(),
        heuristic: alb.map(|a| a.parse().unwrap()),
        window: heuristics::WINDOW,
        direct_times_up_to: DIRECT_UP_TO,
        drop_below: heuristics::DROP_BELOW,
        kernels: Kernels::Modelled { seed: 1 },
        noise: NoiseSource::Lognormal,
        iteration_overhead: 0.0,
        rebalance: None,
        record_every: 1,
        halo_depth: 1,
    }
}

/// `machine`'s overlap prediction of two devices on 1024 rows of 1024
/// cells with equal weights over link "l", checked against a simulated
/// loop time.
fn overlap_matches(machine: &Machine, iters: u64, simulated: f64) -> crate::predict::Prediction {
    let run = Run::from_weights(1024, 1024, 1, 4096.0, iters, &[1.0; 2], "l").unwrap();
    let p = machine.predict(&run, Method::Overlap).unwrap();
    assert!(
        (simulated - p.loop_time).abs() < 1e-9 * p.loop_time,
        "{simulated} vs {}",
        p.loop_time
    );
    p
}

/// One link within hosts and between them, posts free.
fn same_links(link: Hockney) -> Links {
    Links {
        intra: link,
        inter: link,
        post: 0.0,
    }
}

/// Two identical noiseless devices: every iteration takes exactly the
/// closed form of `Method::Overlap` (borders, then the exchange behind
/// the inner rows), whether the exchange or the inner rows are longer.
#[test]
fn noiseless_identical_devices_match_the_overlap_closed_form() {
    // A fixed cost per iteration is paid with the borders, before the
    // halos leave, in both.
    // With memory of their own, each halo is read out and written in
    // over the host link: two transfers more in the exchange, as
    // `Machine::staging` has it.
    // (6e-4 s a transfer: the staged exchange outlasts the inner rows.)
    let pcie = Hockney {
        alpha: 6e-4,
        beta: 1e-9,
    };
    for (alpha, beta, fixed, staged) in [
        (1e-6, 1e-10, 0.0, false),
        (1e-3, 1e-8, 0.0, false),
        (1e-3, 1e-8, 4e-4, false),
        (1e-6, 1e-10, 0.0, true),
        (1e-4, 1e-9, 0.0, true),
    ] {
        let link = Hockney { alpha, beta };
        let mut s = scenario(
            (0..2)
                .map(|i| {
                    let mut d = SimDevice::new(format!("d{i}"), 2e-9);
                    d.fixed_seconds = fixed;
                    d.host_link = staged.then_some(pcie);
                    d
                })
                .collect(),
            1024,
            50,
            None,
        );
        s.links = same_links(link);
        let sim = simulate(&s).unwrap();
        let machine = Machine::new(
            (0..2)
                .map(|i| {
                    let d = Device::new(format!("d{i}"), 2e-9).with_fixed(fixed);
                    if staged {
                        d.with_host_link("pcie")
                    } else {
                        d
                    }
                })
                .collect(),
            vec![
                LinkClass::from_hockney("l", link),
                LinkClass::from_hockney("pcie", pcie),
            ],
        )
        .unwrap();
        let p = overlap_matches(&machine, 50, sim.loop_seconds);
        assert_eq!(sim.halo_messages, 2 * 50);
        if fixed > 0.0 {
            // The inner rows (1.046 ms) still hide the exchange
            // (1.041 ms): the iteration is the kernel plus its fixed
            // cost, which the simulator charged too.
            let without = 2e-9 * 512.0 * 1024.0;
            assert!((p.iteration - (without + fixed)).abs() < 1e-15, "{p:?}");
        }
    }
}

/// Ratios over the local median: a step in speed (a slowdown, a
/// rebalance halving the rows) leaves every ratio at 1; stalls come
/// back as themselves, at their own rate.
#[test]
fn noise_ratios_keep_the_stalls_and_drop_the_steps() {
    let n = 400;
    let rows: Vec<Vec<usize>> = (0..n)
        .map(|i| vec![if i < 150 { 100 } else { 50 }, 100])
        .collect();
    let steady = |i: usize, d: usize| {
        let per_row = if d == 1 && i >= 200 { 3e-6 } else { 1e-6 };
        per_row * rows[i][d] as f64
    };
    let compute: Vec<Vec<f64>> = (0..n).map(|i| vec![steady(i, 0), steady(i, 1)]).collect();
    let r = noise_ratios(&compute, &rows, 2, RATIO_HALF_WINDOW).unwrap();
    assert_eq!(r.len(), n - 2);
    assert!(
        r.iter().flatten().all(|&x| (x - 1.0).abs() < 1e-12),
        "{r:?}"
    );
    // One stall of 8x every 50 iterations on device 0.
    let mut stalled = compute.clone();
    for i in (10..n).step_by(50) {
        stalled[i][0] *= 8.0;
    }
    let r = noise_ratios(&stalled, &rows, 2, RATIO_HALF_WINDOW).unwrap();
    let tails: Vec<f64> = r.iter().map(|x| x[0]).filter(|&x| x > 1.5).collect();
    assert_eq!(tails.len(), 8);
    assert!(r.iter().all(|x| x[1] == 1.0));
    assert!(tails.iter().all(|&x| (x - 8.0).abs() < 1e-9));
    assert!(matches!(
        noise_ratios(&[], &[], 0, RATIO_HALF_WINDOW),
        Err(SimError::NoNoise)
    ));
    assert!(noise_ratios(&compute, &rows[1..], 0, RATIO_HALF_WINDOW).is_err());
}

/// A spell of 100 iterations 25% slower: over the default window it is
/// gone but for its edges; over a window wider than it, every iteration
/// of it comes back at 1.25. An iteration where one device has no rows
/// has no row of ratios (the devices' noise stays aligned).
#[test]
fn a_wide_window_keeps_slow_spells() {
    let n = 600;
    let mut rows = vec![vec![10usize, 10]; n];
    rows[5][1] = 0;
    let compute: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let spell = if (300..400).contains(&i) { 1.25 } else { 1.0 };
            vec![1e-5 * spell, 1e-5]
        })
        .collect();
    let spelled = |half_window| {
        let r = noise_ratios(&compute, &rows, 0, half_window).unwrap();
        assert_eq!(r.len(), n - 1);
        r.iter().filter(|x| (x[0] - 1.25).abs() < 1e-9).count()
    };
    assert!(spelled(RATIO_HALF_WINDOW) <= 2 * RATIO_HALF_WINDOW);
    assert_eq!(spelled(150), 100);
}

/// Resampled noise draws only the given ratios, repeats per seed,
/// differs across seeds, and an empty or negative sample is refused.
#[test]
fn resampled_noise_draws_the_measured_ratios_per_seed() {
    let run = |seed: u64, ratios: Vec<f64>| {
        let mut s = scenario(
            vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
            64,
            100,
            None,
        );
        s.kernels = Kernels::Modelled { seed };
        s.noise = NoiseSource::Resampled {
            ratios: ratios.into_iter().map(|x| vec![x]).collect(),
            block: 1,
        };
        simulate(&s)
    };
    let base = 1e-9 * 32.0 * 1024.0;
    let a = run(3, vec![1.0, 10.0]).unwrap();
    let times: Vec<f64> = a
        .steps
        .iter()
        .flat_map(|st| st.devices.iter().map(|d| d.compute / base))
        .collect();
    assert!(times
        .iter()
        .all(|&x| (x - 1.0).abs() < 1e-9 || (x - 10.0).abs() < 1e-9));
    let tens = times.iter().filter(|&&x| x > 5.0).count();
    assert!((60..140).contains(&tens), "{tens} of 200 draws were 10");
    // One source device: both modelled devices take its ratio, together.
    assert!(times.chunks(2).all(|p| p[0] == p[1]));
    let again = run(3, vec![1.0, 10.0]).unwrap();
    assert_eq!(a.loop_seconds, again.loop_seconds);
    let other = run(4, vec![1.0, 10.0]).unwrap();
    assert_ne!(a.loop_seconds, other.loop_seconds);
    assert!(matches!(run(3, vec![]), Err(SimError::NoNoise)));
    assert!(matches!(run(3, vec![1.0, -1.0]), Err(SimError::NoNoise)));
}

/// Blocks of 5: a device takes runs of consecutive ratios from the
/// source (ratios 1, 2, 3, ... make that visible as steps of +1), where
/// independent draws rarely do; and each modelled device takes its own
/// source device's ratio of the same measured iteration.
#[test]
fn resampled_blocks_keep_consecutive_ratios_together() {
    let ratios: Vec<Vec<f64>> = (1..=200)
        .map(|t| vec![f64::from(t), f64::from(1000 + t)])
        .collect();
    let steps = |block: usize| {
        let mut s = scenario(
            vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
            64,
            101,
            None,
        );
        s.noise = NoiseSource::Resampled {
            ratios: ratios.clone(),
            block,
        };
        let sim = simulate(&s).unwrap();
        let base = 1e-9 * 32.0 * 1024.0;
        for st in &sim.steps {
            let r = |d: usize| (st.devices[d].compute / base).round();
            assert_eq!(r(1), r(0) + 1000.0);
        }
        (0..2)
            .map(|d| {
                let r: Vec<f64> = sim
                    .steps
                    .iter()
                    .map(|st| (st.devices[d].compute / base).round())
                    .collect();
                r.windows(2).filter(|w| w[1] == w[0] + 1.0).count()
            })
            .sum::<usize>()
    };
    // 2 devices x 100 transitions: 4 of each 5 inside a block (160),
    // less the blocks that wrap past the end of the ratios, plus the odd
    // new start that happens to follow the last ratio (1 in 200).
    let blocks = steps(5);
    assert!((140..=170).contains(&blocks), "{blocks}");
    assert!(steps(1) < 10, "{}", steps(1));
}

/// With no noise and speeds 1 : 1/3, the first rebalance moves to 3 : 1.
/// The skeleton's drop rule, shared: a device 60x slower loses all
/// its rows at the first rebalance (kept at threshold 0), and comes
/// back when the fast one becomes 100x slower, as soon as the window
/// shows it, under const-iters and under next-alb (which, watching one
/// device, would never ask).
#[test]
fn a_far_slower_device_is_dropped_and_comes_back() {
    for alb in ["const-iters", "next-alb"] {
        let mut s = scenario(
            vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 60e-9)],
            1024,
            300,
            Some(alb),
        );
        s.devices[0].slowdowns.push(Slowdown {
            factor: 100.0,
            from: 100,
        });
        let sim = simulate(&s).unwrap();
        assert_eq!(sim.moves[0].iter, 30, "{alb}");
        assert_eq!(sim.moves[0].weights_after, vec![1.0, 0.0], "{alb}");
        assert_eq!(sim.steps[31].devices[1].rows, 0, "{alb}");
        assert_eq!(sim.steps[99].devices[1].rows, 0, "{alb}");
        let back = sim
            .moves
            .iter()
            .find(|m| m.weights_after[1] > 0.0)
            .expect("the slow device comes back");
        // const-iters rebalances every 31 iterations, its window full
        // only then: 93..=122 saw the fast device at 1x for 7
        // iterations and 100x for 23 (76.9 on average) against the
        // slow one's last 60: (1/60) / (1/60 + 1/76.9) = 0.562. next-alb
        // checks every iteration: at 102 its window 72..=101 holds two
        // slowed iterations (7.6 on average), the first past the
        // threshold: 0.112, and next-alb itself said no.
        let (at, share, asked_back) = match alb {
            "const-iters" => (123, 0.562, false),
            _ => (102, 0.1124, true),
        };
        assert_eq!(back.iter, at, "{alb}");
        assert!(
            (back.weights_after[1] - share).abs() < 1e-3,
            "{alb}: {back:?}"
        );
        let check = sim.checks.iter().find(|c| c.iter == at).unwrap();
        let readmit = check
            .values
            .iter()
            .any(|(k, v)| k == "readmit" && *v == 1.0);
        assert_eq!(readmit, asked_back, "{alb}: {check:?}");
    }
    let mut s = scenario(
        vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 60e-9)],
        1024,
        300,
        Some("const-iters"),
    );
    s.drop_below = 0.0;
    let kept = simulate(&s).unwrap();
    let rows = kept.steps[31].devices[1].rows;
    assert!((1..40).contains(&rows), "{rows}");
}

#[test]
fn weights_converge_to_the_speed_ratio() {
    let s = scenario(
        vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 3e-9)],
        1024,
        200,
        Some("next-alb"),
    );
    let sim = simulate(&s).unwrap();
    let first = &sim.moves[0];
    assert_eq!(first.iter, 30, "the first full window");
    assert!((first.weights_after[0] - 0.75).abs() < 1e-9);
    assert_eq!(sim.steps[31].devices[0].rows, 768);
    assert_eq!(sim.steps[31].devices[1].rows, 256);
}

/// Up to 32 devices the times reach the heuristic one iteration late
/// (the window of 30 is first full at iteration 30); beyond, as late
/// as the skeleton's tree gather delivers them (40 devices: 6 rounds,
/// first full at 35). Each device posts 39 times an iteration directly,
/// along the tree one more each iteration up to 6, which the
/// iterations pay (posts of 1 µs, noiseless devices, free links).
#[test]
fn times_reach_the_heuristic_as_late_as_the_gather_delivers_them() {
    let run = |n: usize, direct_up_to: usize| {
        let mut devices: Vec<SimDevice> = (0..n)
            .map(|i| SimDevice::new(format!("d{i}"), 1e-9))
            .collect();
        devices[0].seconds_per_cell = 3e-9;
        let mut s = scenario(devices, 8 * n as i64, 60, Some("next-alb"));
        s.links.post = 1e-6;
        s.direct_times_up_to = direct_up_to;
        simulate(&s).unwrap()
    };
    let (direct, tree) = (run(32, DIRECT_UP_TO), run(40, DIRECT_UP_TO));
    assert_eq!(direct.moves[0].iter, 30);
    assert_eq!(tree.moves[0].iter, 35);
    assert_eq!(direct.checks.first().map(|c| c.iter), Some(30));
    assert_eq!(tree.checks.first().map(|c| c.iter), Some(35));
    // The same 40 devices with their times sent directly: first full
    // at 30, and the iterations before any rebalance differ by the
    // posts alone.
    let all = run(40, 64);
    assert_eq!(all.moves[0].iter, 30);
    for (it, tree_posts) in [(0, 1.0), (3, 4.0), (10, 6.0), (20, 6.0)] {
        let extra = all.iteration_seconds[it] - tree.iteration_seconds[it];
        assert!(
            (extra - (39.0 - tree_posts) * 1e-6).abs() < 1e-12,
            "iteration {it}: {extra}"
        );
    }
}

/// A run fed back its own kernel times and rebalance costs decides alike
/// at every check and moves to the same weights.
#[test]
fn trace_mode_reproduces_a_run_it_is_fed() {
    for alb in ["const-iters", "cost-aware", "welch", "next-alb"] {
        let mut slow = SimDevice::new("slow", 1e-9);
        slow.slowdowns.push(Slowdown {
            factor: 3.0,
            from: 200,
        });
        slow.cv = 0.1;
        let mut fast = SimDevice::new("fast", 1e-9);
        fast.cv = 0.1;
        let mut s = scenario(vec![fast, slow], 512, 600, Some(alb));
        s.links.intra = Hockney {
            alpha: 1e-5,
            beta: 1e-9,
        };
        let real = simulate(&s).unwrap();
        assert!(!real.moves.is_empty(), "{alb}");
        s.kernels = Kernels::Trace {
            compute: real
                .steps
                .iter()
                .map(|st| st.devices.iter().map(|d| d.compute).collect())
                .collect(),
            rows: real
                .steps
                .iter()
                .map(|st| st.devices.iter().map(|d| d.rows).collect())
                .collect(),
            redistribution_seconds: real.moves.iter().map(|m| m.seconds).collect(),
        };
        let replay = simulate(&s).unwrap();
        assert_eq!(replay.checks, real.checks, "{alb}");
        assert_eq!(replay.moves, real.moves, "{alb}");
    }
}

#[test]
fn a_trace_that_disagrees_is_caught() {
    let s = scenario(
        vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)],
        64,
        3,
        None,
    );
    let mut t = s.clone();
    t.kernels = Kernels::Trace {
        compute: vec![vec![1.0, 1.0]; 3],
        rows: vec![vec![32, 32], vec![32, 32], vec![31, 33]],
        redistribution_seconds: vec![],
    };
    assert!(matches!(
        simulate(&t),
        Err(SimError::TraceDiverged {
            iter: 2,
            device: 0,
            real: 31,
            simulated: 32
        })
    ));
    t.kernels = Kernels::Trace {
        compute: vec![vec![1.0, 1.0]; 2],
        rows: vec![vec![32, 32]; 3],
        redistribution_seconds: vec![],
    };
    assert_eq!(
        simulate(&t).unwrap_err().to_string(),
        "the trace has 2 iterations of kernel times, the run needs 3"
    );
}

#[test]
fn bad_devices_are_refused_by_name() {
    let mut d = SimDevice::new("a", 1e-9);
    d.cv = f64::NAN;
    let e = simulate(&scenario(vec![d], 64, 3, None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "device 0: noise cv must be a finite number from 0 to 100, got NaN"
    );
    // Past 100 the lognormal's variance overflows (a cv of 1e300 panicked).
    let mut d = SimDevice::new("a", 1e-9);
    d.cv = 1e300;
    let e = simulate(&scenario(vec![d], 64, 3, None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "device 0: noise cv must be a finite number from 0 to 100, got 1e300"
    );
    let e = simulate(&scenario(vec![SimDevice::new("a", 0.0)], 64, 3, None)).unwrap_err();
    assert!(e.to_string().contains("seconds per cell must be"));
    assert!(matches!(
        simulate(&scenario(vec![], 64, 3, None)),
        Err(SimError::NoDevices)
    ));
}

/// A tile curve reaches the simulated kernels as it reaches the
/// prediction: noiseless devices with curves run each iteration in the
/// overlap closed form of the curved machine, and a bad curve is refused.
#[test]
fn tile_curves_reach_the_kernels() {
    let curve = vec![(1e5, 0.5), (1e7, 1.0)];
    let link = Hockney {
        alpha: 1e-6,
        beta: 1e-10,
    };
    let mut s = scenario(
        (0..2)
            .map(|i| {
                let mut d = SimDevice::new(format!("d{i}"), 2e-9);
                d.tile_curve = curve.clone();
                d
            })
            .collect(),
        1024,
        20,
        None,
    );
    s.links = same_links(link);
    let sim = simulate(&s).unwrap();
    let mut d = Device::new("d", 2e-9);
    d.tile_curve = curve;
    let machine =
        Machine::new(vec![d.clone(), d], vec![LinkClass::from_hockney("l", link)]).unwrap();
    overlap_matches(&machine, 20, sim.loop_seconds);
    // Not the line's: the factor at 512x1024 cells is 0.64.
    let line = Machine::new(
        vec![Device::new("d", 2e-9); 2],
        vec![LinkClass::from_hockney("l", link)],
    )
    .unwrap();
    let run = Run::from_weights(1024, 1024, 1, 4096.0, 20, &[1.0; 2], "l").unwrap();
    let alone = line.predict(&run, Method::Overlap).unwrap().loop_time;
    assert!(
        sim.loop_seconds < 0.7 * alone,
        "{} vs {alone}",
        sim.loop_seconds
    );

    let mut bad = SimDevice::new("a", 1e-9);
    bad.tile_curve = vec![(1e5, 1.0), (1e4, 1.0)];
    assert_eq!(
        simulate(&scenario(vec![bad], 64, 3, None))
            .unwrap_err()
            .to_string(),
        "device 0: tile curve cells must be a finite number > 0 and increasing, got 10000"
    );
}

/// A failed device keeps no rows; the others share them all from then
/// on, and the run goes to its end.
#[test]
fn a_failed_device_is_dropped() {
    let mut d = SimDevice::new("b", 1e-9);
    d.fail_at = Some(40);
    let s = scenario(
        vec![SimDevice::new("a", 1e-9), d, SimDevice::new("c", 1e-9)],
        300,
        100,
        Some("const-iters"),
    );
    let sim = simulate(&s).unwrap();
    assert_eq!(sim.failures.len(), 1);
    assert_eq!((sim.failures[0].device, sim.failures[0].iter), (1, 40));
    assert_eq!(sim.steps.len(), 100);
    assert!(sim.steps[39].devices[1].rows > 0);
    for st in &sim.steps[40..] {
        assert_eq!(st.devices[1].rows, 0);
        assert_eq!(st.devices.iter().map(|d| d.rows).sum::<usize>(), 300);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Whatever the speeds, noise and slowdowns: rows are conserved
    /// every iteration, no block is ever thinner than the stencil
    /// (without dropping: empty), the clock only moves forward, and a
    /// seed gives the same run twice.
    #[test]
    fn rows_are_conserved_and_blocks_stay_wide(
        speeds in prop::collection::vec((1e-10f64..1e-8, 0.0f64..0.5, 1.0f64..10.0, 0u64..150), 2..9),
        rows in 40i64..400,
        alb in prop::sample::select(vec!["const-iters", "next-alb", "cost-aware", "welch", "double-iters"]),
        seed in any::<u64>(),
    ) {
        let devices = speeds
            .iter()
            .enumerate()
            .map(|(i, &(spc, cv, f, at))| {
                let mut d = SimDevice::new(format!("d{i}"), spc);
                d.cv = cv;
                d.slowdowns.push(Slowdown { factor: f, from: at });
                d
            })
            .collect();
        let mut s = scenario(devices, rows, 200, Some(alb));
        s.kernels = Kernels::Modelled { seed };
        // Every device keeps rows at threshold 0; at the default, up
        // to all but one may be dropped (speeds here differ up to 1000x).
        for drop_below in [0.0, heuristics::DROP_BELOW] {
            s.drop_below = drop_below;
            let sim = simulate(&s).unwrap();
            let mut last = 0.0;
            for st in &sim.steps {
                prop_assert_eq!(st.devices.iter().map(|d| d.rows).sum::<usize>(), rows as usize);
                if drop_below == 0.0 {
                    prop_assert!(st.devices.iter().all(|d| d.rows >= 1));
                }
                prop_assert!(st.elapsed >= last);
                last = st.elapsed;
            }
            prop_assert_eq!(simulate(&s).unwrap(), sim);
        }
    }
}

/// A run longer than the skeleton's record bound keeps a sample of its
/// iterations, as a real run's report does: at most the bound's records,
/// one in each block, with the blocks said; its loop time, mean, overhead
/// and decisions are those of the same run sampled otherwise.
#[test]
fn long_runs_keep_a_bounded_sample_of_records() {
    use heuristics::sampling::{default_records, RECORDED_ITERATIONS};
    let iters = 3 * RECORDED_ITERATIONS + 5;
    let s = scenario(vec![SimDevice::new("a", 1e-9)], 40, iters, None);
    let sim = simulate(&s).unwrap();
    assert_eq!((sim.recorded_every, sim.iteration_seconds_every), (4, 4));
    // The last block holds one iteration, recorded where its place is 0.
    assert!((iters / 4..=iters.div_ceil(4)).contains(&(sim.steps.len() as u64)));
    assert!(sim.steps.len() as u64 <= default_records(1));
    assert_eq!(sim.iteration_seconds.len(), sim.steps.len());
    for (b, st) in sim.steps.iter().enumerate() {
        assert_eq!(st.iter / 4, b as u64, "one in each block of 4");
    }
    // Noiseless: every iteration takes the same time, so the mean over
    // all is each one's (to the sum's rounding).
    let each = sim.iteration_seconds[0];
    assert!((sim.mean_iteration_seconds - each).abs() < 1e-9 * each);
    // Many devices: the bound is on device-iterations.
    let devices = (0..64)
        .map(|i| SimDevice::new(format!("d{i}"), 1e-9))
        .collect();
    let mut s = scenario(devices, 640, 100_000, Some("const-iters"));
    let sim = simulate(&s).unwrap();
    assert_eq!(default_records(64), 65_536);
    assert_eq!(sim.recorded_every, 2);
    assert_eq!(sim.steps.len(), 50_000);
    assert_eq!(sim.iteration_seconds.len(), 100_000);
    // A coarser sample asked for changes the records alone.
    s.record_every = 1000;
    let coarse = simulate(&s).unwrap();
    assert_eq!((coarse.recorded_every, coarse.steps.len()), (1000, 100));
    assert_eq!(coarse.loop_seconds, sim.loop_seconds);
    assert_eq!(coarse.mean_iteration_seconds, sim.mean_iteration_seconds);
    assert_eq!(coarse.overhead_per_iteration, sim.overhead_per_iteration);
    assert_eq!(coarse.iteration_seconds, sim.iteration_seconds);
    assert_eq!((&coarse.checks, &coarse.moves), (&sim.checks, &sim.moves));
}

/// A long simulation keeps its checks as the skeleton does: every one that
/// rebalanced, the latest `CHECKS_KEPT` others, and the count of the rest.
#[test]
fn long_runs_keep_every_rebalance_and_a_bounded_rest_of_checks() {
    use heuristics::CHECKS_KEPT;
    let iters = 5000;
    let devices = vec![SimDevice::new("fast", 1e-9), SimDevice::new("slow", 3e-9)];
    // next-alb checks every iteration, rebalancing where the gap is wide.
    let sim = simulate(&scenario(devices, 400, iters, Some("next-alb"))).unwrap();
    let moved: Vec<u64> = sim
        .checks
        .iter()
        .filter(|c| c.outcome == Outcome::Rebalance)
        .map(|c| c.iter)
        .collect();
    assert!(!sim.moves.is_empty());
    assert_eq!(moved, sim.moves.iter().map(|m| m.iter).collect::<Vec<_>>());
    let others = sim.checks.len() - moved.len();
    assert_eq!(others, CHECKS_KEPT);
    assert!(sim.checks.windows(2).all(|w| w[0].iter < w[1].iter));
    // The latest checks, one an iteration, up to the run's last.
    let tail: Vec<u64> = sim
        .checks
        .iter()
        .rev()
        .take(others)
        .map(|c| c.iter)
        .collect();
    assert!(tail.windows(2).all(|w| w[0] == w[1] + 1), "{tail:?}");
    assert!(tail[0] >= iters - 2, "{tail:?}");
    // Most checks were let go, and counted.
    let made = sim.checks_dropped + sim.checks.len() as u64;
    assert!(sim.checks_dropped > iters / 2 && made < iters, "{made}");
}

/// At halo depth 4 two devices exchange once every 4 iterations, and each
/// computes per period its block plus the cones' rows: its border strip's
/// cone reaches 3, 2, 1 rows into the neighbour's rows and as many into
/// its own inner region, whose cone reaches as far back into the strip
/// (18 rows of 1024 cells more per period than 4 blocks). The kernel time
/// is those cells' and every iteration records a quarter of the period.
#[test]
fn deep_halos_exchange_once_a_period_and_compute_the_cones() {
    let devices = vec![SimDevice::new("a", 1e-9), SimDevice::new("b", 1e-9)];
    let mut s = scenario(devices, 1024, 100, None);
    let shallow = simulate(&s).unwrap();
    assert_eq!((shallow.exchanges, shallow.halo_messages), (100, 200));
    s.halo_depth = 4;
    let deep = simulate(&s).unwrap();
    assert_eq!((deep.exchanges, deep.halo_messages), (25, 50));
    assert_eq!(deep.steps.len(), 100);
    for (a, b) in shallow.steps.iter().zip(&deep.steps) {
        for (x, y) in a.devices.iter().zip(&b.devices) {
            assert_eq!(x.rows, 512);
            assert_eq!(x.cells, 512.0 * 1024.0);
            assert_eq!(y.cells, (512.0 + 18.0 / 4.0) * 1024.0);
            assert!((y.compute / (1e-9 * y.cells) - 1.0).abs() < 1e-12, "{y:?}");
        }
    }
    // A run's end cuts the last period: 102 iterations are 25 periods of 4
    // and one of 2, whose cones reach 1 row (3 rows more than 2 blocks).
    s.iters = 102;
    let cut = simulate(&s).unwrap();
    assert_eq!(cut.exchanges, 26);
    assert_eq!(
        cut.steps[101].devices[0].cells,
        (512.0 + 3.0 / 2.0) * 1024.0
    );
}

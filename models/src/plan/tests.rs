//! The branch and bound and the front against brute force, the network
//! choice, the sweep's layouts and ranking (blocks timed by hand), fixed
//! costs, and bad inventories refused.

use super::*;
use proptest::prelude::*;

fn problem(rows: f64, estimate: Estimate) -> Problem {
    Problem {
        rows,
        cells_per_row: 1024.0,
        halo_rows: 1.0,
        bytes_per_row: 4096.0,
        iterations: 100.0,
        estimate,
    }
}

fn inventory(classes: &[(usize, f64, usize)], nets: &[(f64, f64)]) -> Inventory {
    Inventory {
        in_process: LinkSpec {
            alpha: 2e-6,
            beta: 1e-11,
        },
        shared_memory: Some(LinkSpec {
            alpha: 5e-6,
            beta: 1e-10,
        }),
        networks: nets
            .iter()
            .enumerate()
            .map(|(i, &(alpha, beta))| Network {
                name: format!("net{i}"),
                alpha,
                beta,
            })
            .collect(),
        devices: classes
            .iter()
            .enumerate()
            .map(|(i, &(host, spc, count))| DeviceClass {
                name: format!("c{i}"),
                host: format!("h{host}"),
                seconds_per_cell: spc,
                fixed_seconds: 0.0,
                count,
            })
            .collect(),
    }
}

/// Every subset of individual devices, for the Pareto front's reference.
fn brute_front(inv: &Inventory, p: &Problem) -> Vec<(usize, f64)> {
    let total: usize = inv.devices.iter().map(|d| d.count).sum();
    let mut best = vec![f64::INFINITY; total + 1];
    let mut counts = vec![0usize; inv.devices.len()];
    loop {
        let n: usize = counts.iter().sum();
        for net in inv.network_options() {
            if let Some(t) = inv.time(p, &counts, net, n.max(1), Weights::Seeded) {
                best[n] = best[n].min(t);
            }
        }
        let mut i = 0;
        while i < counts.len() && counts[i] == inv.devices[i].count {
            counts[i] = 0;
            i += 1;
        }
        if i == counts.len() {
            break;
        }
        counts[i] += 1;
    }
    let mut front = Vec::new();
    for (n, &t) in best.iter().enumerate().skip(1) {
        if t.is_finite() && front.last().is_none_or(|&(_, f)| t < f) {
            front.push((n, t));
        }
    }
    front
}

fn classes() -> impl Strategy<Value = Vec<(usize, f64, usize)>> {
    prop::collection::vec((0usize..3, 1e-10f64..1e-8, 0usize..4), 1..5)
        .prop_filter("some device", |c| c.iter().any(|x| x.2 > 0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Branch and bound finds the exhaustive optimum, and the Pareto
    /// front is brute force's, for either estimate.
    #[test]
    fn branch_and_bound_and_the_front_match_brute_force(
        c in classes(),
        nets in prop::collection::vec((1e-6f64..1e-3, 1e-11f64..1e-8), 0..3),
        rows in 16.0f64..100_000.0,
        overlap in any::<bool>(),
        fixed in prop::collection::vec(prop_oneof![Just(0.0), 1e-7f64..1e-3], 4),
    ) {
        let mut inv = inventory(&c, &nets);
        // Fixed costs per iteration keep the search exact: its bound
        // (balanced compute without them) only gets looser.
        for (d, &a) in inv.devices.iter_mut().zip(&fixed) {
            d.fixed_seconds = a;
        }
        let p = problem(rows, if overlap { Estimate::Overlap } else { Estimate::Additive });
        let (bb, ex) = (branch_and_bound(&inv, &p).unwrap(), exhaustive(&inv, &p).unwrap());
        prop_assert!((bb.seconds - ex.seconds).abs() <= 1e-12 * ex.seconds, "{:?} {:?}", bb, ex);
        let front: Vec<(usize, f64)> = pareto(&inv, &p).unwrap().iter().map(|c| (c.devices, c.seconds)).collect();
        let brute = brute_front(&inv, &p);
        prop_assert_eq!(front.len(), brute.len(), "{:?} {:?}", front, brute);
        for (a, b) in front.iter().zip(&brute) {
            prop_assert_eq!(a.0, b.0);
            prop_assert!((a.1 - b.1).abs() <= 1e-12 * b.1);
        }
    }
}

/// Soares §4.1: fast devices behind a slow network lose to slower ones
/// on a fast one when messages dominate, and win when compute does.
#[test]
fn the_network_decides_when_messages_dominate() {
    // Host 0: two devices, 4x faster, reachable only over the slow
    // network from host 1; host 1: eight slow devices.
    let inv = inventory(&[(0, 1e-9, 2), (1, 4e-9, 8)], &[(1e-3, 1e-7)]);
    // Few rows: an iteration is microseconds of compute, the network
    // milliseconds.
    let small = branch_and_bound(&inv, &problem(64.0, Estimate::Additive)).unwrap();
    assert_eq!(small.network, None);
    assert_eq!(small.counts, vec![2, 0], "{small:?}");
    // Many rows: compute dominates and every device pays off.
    let big = branch_and_bound(&inv, &problem(1e6, Estimate::Additive)).unwrap();
    assert_eq!(big.counts, vec![2, 8], "{big:?}");
    assert_eq!(big.network.as_deref(), Some("net0"));
}

/// Two fast and two slow devices on one host, 4096 rows, additive (the
/// messages count, hidden by nothing): the inventory, the problem, the
/// best choice and its sweep.
fn mixed() -> (Inventory, Problem, Choice, Vec<Choice>) {
    let inv = inventory(&[(0, 1e-9, 2), (0, 3e-9, 2)], &[]);
    let p = problem(4096.0, Estimate::Additive);
    let best = branch_and_bound(&inv, &p).unwrap();
    let s = sweep(&inv, &p, &best, &[4096, 1024]);
    (inv, p, best, s)
}

#[test]
fn the_sweep_ranks_layouts_and_seeding_wins_on_mixed_devices() {
    let (inv, p, best, s) = mixed();
    assert_eq!(s.len(), 12, "2 weightings and m x 1..4 per rank");
    assert!(s.windows(2).all(|w| w[0].seconds <= w[1].seconds));
    assert_eq!(s[0].weights, Weights::Seeded);
    assert_eq!(s[0].per_rank, 4, "in-process links are the cheapest");
    // One dimension: no m.
    let flat = Problem {
        cells_per_row: 1.0,
        bytes_per_row: 4.0,
        ..p
    };
    assert!(sweep(&inv, &flat, &best, &[4096])
        .iter()
        .all(|c| c.partition == "w0"));
}

/// The ranking: the best's layouts and each other count's best,
/// fastest first; the runner-up is the first other run, past the same
/// layout at fewer devices per rank.
#[test]
fn the_ranking_and_its_runner_up() {
    let (inv, p, _, s) = mixed();
    let counts = per_count(&inv, &p).unwrap();
    assert_eq!(
        counts.iter().map(|c| c.devices).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let r = ranked(&s, &counts);
    assert_eq!(r.len(), s.len() + 3, "{r:?}");
    assert!(r.windows(2).all(|w| w[0].seconds <= w[1].seconds));
    assert_eq!(r[0], s[0]);
    let second = runner_up(&r).unwrap();
    let k = r.iter().position(|c| c == second).unwrap();
    assert!(k > 1, "seeded slabs at 3 and 4 per rank first: {r:?}");
    let layout = |c: &Choice| (c.counts.clone(), c.partition.clone(), c.weights);
    assert!(r[..k].iter().all(|c| layout(c) == layout(&r[0])));
    assert_ne!(layout(second), layout(&r[0]));
    // One device: its three layouts are one run.
    let one = inventory(&[(0, 1e-9, 1)], &[]);
    let b = branch_and_bound(&one, &p).unwrap();
    let r = ranked(
        &sweep(&one, &p, &b, &[4096, 1024]),
        &per_count(&one, &p).unwrap(),
    );
    assert_eq!(r.len(), 3);
    assert_eq!(runner_up(&r), None);
}

/// Hand-computed blocks: four 10 ns devices on 64x64 cells of 4 B make a
/// 2x2 grid of 32x32 blocks, each sending 32 cells (128 B) to its two
/// face neighbours, against slabs of 16 rows whose inner devices send
/// 64 cells (256 B) to two. With messages dear per byte, m wins. In 3-d
/// eight devices on 16³ make 2x2x2 blocks of 8³ with three neighbours.
#[test]
fn the_sweep_times_block_partitions_by_hand() {
    let mut inv = inventory(&[(0, 1e-8, 4)], &[]);
    inv.in_process = LinkSpec {
        alpha: 2e-6,
        beta: 1e-9,
    };
    let p = Problem {
        rows: 64.0,
        cells_per_row: 64.0,
        halo_rows: 1.0,
        bytes_per_row: 256.0,
        iterations: 100.0,
        estimate: Estimate::Additive,
    };
    let best = branch_and_bound(&inv, &p).unwrap();
    assert_eq!(best.counts, vec![4]);
    let s = sweep(&inv, &p, &best, &[64, 64]);
    let m = &s[0];
    assert_eq!((m.partition.as_str(), m.per_rank), ("m", 4), "{s:?}");
    let blocks = 1024e-8 + 2.0 * (2e-6 + 128e-9);
    assert!((m.seconds - 100.0 * blocks).abs() < 1e-15, "{m:?}");
    let slab = s
        .iter()
        .find(|c| c.partition == "w0" && c.per_rank == 4 && c.weights == Weights::Equal)
        .unwrap();
    let slabs = 1024e-8 + 2.0 * (2e-6 + 256e-9);
    assert!((slab.seconds - 100.0 * slabs).abs() < 1e-15, "{slab:?}");

    let mut inv = inventory(&[(0, 1e-8, 8)], &[]);
    inv.in_process = LinkSpec {
        alpha: 2e-6,
        beta: 1e-9,
    };
    let p = Problem {
        rows: 16.0,
        cells_per_row: 256.0,
        bytes_per_row: 1024.0,
        ..p
    };
    let t = inv.time_blocks(&p, &[16, 16, 16], &[8], None, 8).unwrap();
    let blocks = 512e-8 + 3.0 * (2e-6 + 256e-9);
    assert!((t - 100.0 * blocks).abs() < 1e-15, "{t}");
    // A size that is not the problem's is refused.
    assert_eq!(inv.time_blocks(&p, &[16, 16], &[8], None, 8), None);
}

/// A fixed cost per iteration makes small devices not worth booking:
/// by rate alone eight slow devices add 8/4 = 2 fast devices' worth, but
/// the two fast ones finish an iteration in 0.52 ms, less than the slow
/// ones' fixed 0.6 ms.
#[test]
fn a_fixed_cost_per_iteration_drops_devices_that_do_not_pay() {
    let mut inv = inventory(&[(0, 1e-9, 2), (0, 4e-9, 8)], &[]);
    let p = problem(1024.0, Estimate::Additive);
    assert_eq!(branch_and_bound(&inv, &p).unwrap().counts, vec![2, 8]);
    inv.devices[1].fixed_seconds = 6e-4;
    let best = branch_and_bound(&inv, &p).unwrap();
    assert_eq!(best.counts, vec![2, 0], "{best:?}");
    // 1024 x 1024 cells over two 1 ns devices, plus one message.
    let alone = 1024.0 * 1024.0 * 1e-9 / 2.0 + 2e-6 + 4096.0 * 1e-11;
    assert!((best.seconds - 100.0 * alone).abs() < 1e-12, "{best:?}");
    inv.devices[1].fixed_seconds = -1.0;
    assert!(exhaustive(&inv, &p).is_err());
}

#[test]
fn bad_inventories_are_refused() {
    let mut inv = inventory(&[(0, 1e-9, 0)], &[]);
    assert_eq!(
        branch_and_bound(&inv, &problem(10.0, Estimate::Additive)).unwrap_err(),
        PlanError::Empty("no devices")
    );
    inv.devices[0].count = 1;
    inv.devices[0].seconds_per_cell = -1.0;
    assert_eq!(
        exhaustive(&inv, &problem(10.0, Estimate::Additive))
            .unwrap_err()
            .to_string(),
        "device c0 seconds_per_cell must be a finite number > 0, got -1"
    );
    // Too many devices, or too many choices of counts, before any
    // search (99999999999 devices once asked for 2.4 TB).
    let p = problem(10.0, Estimate::Additive);
    for (classes, why) in [
        (
            vec![(0, 1e-9, 99_999_999_999)],
            "99999999999 devices, at most 1024",
        ),
        (
            vec![(0, 1e-9, usize::MAX), (1, 1e-9, 1)],
            "devices, at most 1024",
        ),
        (vec![(0, 1e-9, 16); 41], "choices of counts over 41 entries"),
    ] {
        let inv = inventory(&classes, &[(1e-6, 1e-9)]);
        for e in [
            branch_and_bound(&inv, &p).unwrap_err(),
            pareto(&inv, &p).unwrap_err(),
        ] {
            assert!(e.to_string().contains(why), "{e}");
        }
    }
    let mut twice = inventory(&[(0, 1e-9, 1), (0, 2e-9, 1)], &[(1e-6, 1e-9)]);
    twice.devices[1].name = "c0".into();
    assert_eq!(
        branch_and_bound(&twice, &p).unwrap_err().to_string(),
        "the inventory names device c0@h0 twice: give each entry a name of its own"
    );
    twice.devices[1].host = "h1".into();
    branch_and_bound(&twice, &p).unwrap();
    twice.networks.push(twice.networks[0].clone());
    assert!(branch_and_bound(&twice, &p)
        .unwrap_err()
        .to_string()
        .contains("network net0 twice"));
    // Two hosts and no network: each host alone.
    let inv = inventory(&[(0, 1e-9, 1), (1, 1e-9, 1)], &[]);
    let c = branch_and_bound(&inv, &problem(10.0, Estimate::Additive)).unwrap();
    assert_eq!(c.devices, 1);
}

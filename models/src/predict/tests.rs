//! HCLogP against the thesis's tables, the methods against hand-computed
//! predictions, the balanced split and seeded weights, host staging and
//! memory floors, typed errors and round trips.

use super::*;
use crate::cell_cost::{cell_cost_factor, WorkingSet};
use crate::link::{Hockney, LogGp};
use crate::memory::HostMemory;
use crate::ModelError;
use proptest::prelude::*;

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// modelling.md §2.3: FT with I = 20, I_s = 2, I_e = 13.412 s.
#[test]
fn hclogp_reproduces_ft_compute_table() {
    let comp = |sum_rp: f64| round1(hclogp::comp_time(20.0, 2.0, 13.412, sum_rp, 0.0));
    assert_eq!(comp(2.0), 67.1);
    assert_eq!(comp(4.0), 33.5);
    assert_eq!(comp(8.0), 16.8);
    // Heterogeneous: one AMD (1) and one Intel (1.78) core.
    assert_eq!(comp(1.0 + 1.78), 48.2);
}

/// modelling.md §2.3: FT's all-to-all, N_op = 2, M = 512·256·256·4/P
/// bytes, Ethernet L = 6.9e-5 s, B = 93.4 MB/s, over I = 20 iterations.
#[test]
fn hclogp_reproduces_ft_communication_table() {
    let comm = |p: usize| {
        let m = 512.0 * 256.0 * 256.0 * 4.0 / p as f64;
        round1(20.0 * hclogp::comm_time(Op::AllToAll, 2.0, p, 6.9e-5, m, 93.4e6, 0.0))
    };
    assert_eq!(comm(2), 28.7);
    assert_eq!(comm(4), 43.1);
    assert_eq!(comm(8), 50.3);
    // The published total check: compute + communication + overhead.
    assert_eq!(round1(67.1 + comm(2) + 2.1), 97.9);
}

fn machine(spc: &[f64]) -> Machine {
    let devices = spc
        .iter()
        .enumerate()
        .map(|(i, &s)| Device::new(format!("d{i}"), s))
        .collect();
    let mut link = LinkClass::from_hockney(
        "net",
        Hockney {
            alpha: 2e-5,
            beta: 1e-9,
        },
    );
    link.loggp = LogGp {
        l: 1.5e-5,
        o_s: 2e-6,
        o_r: 3e-6,
        g: 4e-6,
        big_g: 1e-9,
    };
    link.switch_latency = 1e-6;
    Machine::new(devices, vec![link]).unwrap()
}

/// Devices in host memory whose cells outgrow the cache are held to
/// the memory's rate; those whose cells fit, and devices with their own
/// memory, keep their line. Hand-computed.
#[test]
fn host_memory_floors_kernels_beyond_the_cache() {
    // 1e-9 s a cell: 1e6 cells take 1 ms by the line. 8-byte cells move
    // 16 MB an iteration (read, write); two such devices hold 32 MB.
    let memory = HostMemory::new(vec![(1e6, 64e9), (32e6, 8e9)]).unwrap();
    let mut m = machine(&[1e-9, 1e-9]).with_memory(memory);
    let run = |cells_per_row: u64| Run {
        rows: vec![1000, 1000],
        cells_per_row,
        halo_rows: 1,
        halo_bytes_per_row: 8.0 * cells_per_row as f64,
        iterations: 1,
        link: "net".into(),
    };
    // Not in host memory: the line.
    let o = m.predict(&run(1000), Method::Overlap).unwrap();
    assert!((o.devices[0].compute - 1e-3).abs() < 1e-15);
    for d in &mut m.devices {
        d.host_memory = true;
    }
    // 32 MB resident at 8 GB/s, shared by two: 16 MB each at 4 GB/s,
    // 4 ms, over the line's 1 ms.
    for method in [Method::Overlap, Method::Hockney] {
        let p = m.predict(&run(1000), method).unwrap();
        assert!((p.devices[1].compute - 4e-3).abs() < 1e-15, "{p:?}");
    }
    // A fortieth of the cells: 0.4 MB each, 0.8 MB resident (inside
    // the first point: 64 GB/s); half of it each takes 12.5 us, under
    // the line's 25 us.
    let small = m.predict(&run(25), Method::Overlap).unwrap();
    assert!(
        (small.devices[0].compute - 2.5e-5).abs() < 1e-15,
        "{small:?}"
    );
    // Overlap stretches border and inner alike where memory binds.
    let o = m.predict(&run(1000), Method::Overlap).unwrap();
    assert!(
        (o.iteration - (4e-3 + m.iteration_overhead)).abs() < 1e-15,
        "{o:?}"
    );
    // Machine files without the fields read as before.
    let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
    let back: Machine = serde_json::from_str(json).unwrap();
    assert!(back.memory.is_none() && !back.devices[0].host_memory);
}

/// At the working set it was calibrated at, a machine predicts as its
/// lines do; at four times the cells per device its host devices' cells
/// cost the factor `cell_cost` gives, the same for both, and the
/// balanced time with them. Without noise the interval is the point;
/// with it, it brackets the median.
#[test]
fn the_working_set_moves_host_devices_and_noise_makes_an_interval() {
    let memory = HostMemory::new(vec![(2e6, 64e9), (32e6, 8e9)]).unwrap();
    let mut m = machine(&[1e-9, 2e-9]).with_memory(memory.clone());
    for d in &mut m.devices {
        d.host_memory = true;
    }
    let run = |rows: u64| Run {
        rows: vec![rows, rows],
        cells_per_row: 1000,
        halo_rows: 1,
        halo_bytes_per_row: 4000.0,
        iterations: 100,
        link: "net".into(),
    };
    let at = WorkingSet::of(&[5e5, 5e5], 1000.0, 4.0, 1.0);
    let mut calibrated = m.clone();
    calibrated.calibrated_at = Some(at);
    for method in Method::ALL {
        assert_eq!(
            calibrated.predict(&run(500), method).unwrap(),
            m.predict(&run(500), method).unwrap()
        );
    }
    let big = calibrated.predict(&run(2000), Method::Hockney).unwrap();
    let k = cell_cost_factor(
        &memory,
        &at,
        &WorkingSet::of(&[2e6, 2e6], 1000.0, 4.0, 1.0),
        1e-9,
    );
    assert!(k > 1.0);
    for (d, spc) in [(0, 1e-9), (1, 2e-9)] {
        let want = (k * spc * 2e6).max(m.kernel_times(&[2e6, 2e6], 4.0)[d]);
        assert!(
            (big.devices[d].compute / want - 1.0).abs() < 1e-12,
            "{big:?}"
        );
    }
    let quiet = calibrated.predict(&run(2000), Method::Overlap).unwrap();
    let i = calibrated
        .interval(&run(2000), Method::Overlap, ExchangeTime::Links)
        .unwrap();
    for x in [i.low, i.median, i.high] {
        assert!((x / quiet.loop_time - 1.0).abs() < 1e-12, "{i:?}");
    }
    for d in &mut calibrated.devices {
        d.cv = 0.1;
        d.spell = 0.05;
    }
    let i = calibrated
        .interval(&run(2000), Method::Overlap, ExchangeTime::Links)
        .unwrap();
    assert!(i.low < i.median && i.median < i.high, "{i:?}");
    assert!(i.low < quiet.loop_time && quiet.loop_time < i.high, "{i:?}");
}

/// `--weights-from`'s split: where the host's memory rate falls past
/// the calibrated working set, the device in host memory costs more per
/// cell and gets fewer rows than the plain split gives it; at the
/// calibrated tiles the split is the plain one.
#[test]
fn seeded_weights_follow_the_working_set_of_their_tiles() {
    let memory = HostMemory::new(vec![(2e6, 64e9), (32e6, 8e9)]).unwrap();
    // Equal lines: the plain split halves the rows.
    let mut m = machine(&[1e-9, 1e-9]).with_memory(memory);
    m.devices[0].host_memory = true;
    m.calibrated_at = Some(WorkingSet::of(&[2.5e5], 1000.0, 4.0, 1.0));
    let plain = m.seeded_weights(4e6);
    assert_eq!(plain[0], plain[1]);
    let big = m.seeded_weights_for(4000, 1000, 1, 4.0);
    assert!(big[0] < 0.9 * big[1], "{big:?}");
    assert!(
        (big.iter().sum::<f64>() / 4e6 - 1.0).abs() < 1e-9,
        "{big:?}"
    );
    // The plain split's tiles are the calibrated ones: nothing moves.
    assert_eq!(
        m.seeded_weights_for(500, 1000, 1, 4.0),
        m.seeded_weights(5e5)
    );
    // Without a calibrated working set the plain split stands.
    m.calibrated_at = None;
    assert_eq!(m.seeded_weights_for(4000, 1000, 1, 4.0), plain);
}

#[test]
fn relative_power_is_normalised_to_the_slowest() {
    let m = machine(&[1e-9, 4e-9, 2e-9]);
    let rp: Vec<f64> = m.devices.iter().map(|d| d.relative_power).collect();
    assert_eq!(rp, vec![4.0, 1.0, 2.0]);
}

#[test]
fn hand_computed_two_device_prediction() {
    let m = machine(&[1e-9, 2e-9]);
    let run = Run {
        rows: vec![600, 400],
        cells_per_row: 1000,
        halo_rows: 1,
        halo_bytes_per_row: 8000.0,
        iterations: 10,
        link: "net".into(),
    };
    let h = m.predict(&run, Method::Hockney).unwrap();
    let ex = 2e-5 + 8000.0 * 1e-9;
    assert!((h.devices[0].compute - 6e-4).abs() < 1e-15);
    assert!((h.devices[1].compute - 8e-4).abs() < 1e-15);
    assert!((h.iteration - (8e-4 + ex)).abs() < 1e-15);
    assert!((h.loop_time - 10.0 * (8e-4 + ex)).abs() < 1e-14);
    // 1e6 cells over speeds 1e9 + 0.5e9 cells/s.
    assert!((h.balanced_iteration - 1e6 / 1.5e9).abs() < 1e-15);
    let o = m.predict(&run, Method::Overlap).unwrap();
    // Device 1: border 2 rows = 4e-6 s, inner 398 rows = 7.96e-4 s > exchange.
    assert!((o.iteration - 8e-4).abs() < 1e-15, "{o:?}");
    let hc = m.predict(&run, Method::HcLogP).unwrap();
    let hc_ex = 1.5e-5 + 8000.0 * 1e-9 + 5e-6;
    assert!(
        (hc.iteration - (1e6 / 1.5e9 + hc_ex)).abs() < 1e-15,
        "{hc:?}"
    );
}

/// A device without rows (dropped by ALB, or seeded out) exchanges
/// nothing and is no one's neighbour: the devices either side of it
/// exchange with each other, one halo each, as the skeleton's plan has.
#[test]
fn a_device_without_rows_leaves_the_chain() {
    let m = machine(&[1e-9, 5e-9, 2e-9]);
    let run = |rows: Vec<u64>| Run {
        rows,
        cells_per_row: 1000,
        halo_rows: 1,
        halo_bytes_per_row: 8000.0,
        iterations: 10,
        link: "net".into(),
    };
    let ex = 2e-5 + 8000.0 * 1e-9;
    let h = m.predict(&run(vec![600, 0, 400]), Method::Hockney).unwrap();
    assert!((h.devices[0].exchange - ex).abs() < 1e-15, "{h:?}");
    assert_eq!(h.devices[1].compute, 0.0);
    assert_eq!(h.devices[1].exchange, 0.0);
    assert!((h.devices[2].exchange - ex).abs() < 1e-15, "{h:?}");
    assert!((h.iteration - (8e-4 + ex)).abs() < 1e-15);
    // Alone with rows, a device waits for no halo: the run is its
    // kernel.
    let o = m.predict(&run(vec![0, 0, 1000]), Method::Overlap).unwrap();
    assert!(o.devices.iter().all(|d| d.exchange == 0.0), "{o:?}");
    assert!((o.iteration - 2e-3).abs() < 1e-15, "{o:?}");
}

/// A device with memory of its own pays a read out and a write in per
/// neighbour outside its peer group, on every method's exchange; one of
/// its group pays none. Hand-computed: three devices in a chain, the
/// halo 8000 B, the host link 10 µs + 0.1 ns/B (10.8 µs a halo).
#[test]
fn halos_of_devices_with_their_own_memory_pass_through_the_host() {
    let mut host = machine(&[1e-9, 1e-10, 1e-10]);
    host.links.push(LinkClass::from_hockney(
        "pcie",
        Hockney {
            alpha: 1e-5,
            beta: 1e-10,
        },
    ));
    let run = Run {
        rows: vec![100, 400, 500],
        cells_per_row: 1000,
        halo_rows: 1,
        halo_bytes_per_row: 8000.0,
        iterations: 1,
        link: "net".into(),
    };
    let once = 1e-5 + 8000.0 * 1e-10;
    // Devices 1 and 2 with memory of their own, in no group (each its
    // own), then in one group.
    let mut alone = host.clone();
    for d in [1, 2] {
        alone.devices[d] = alone.devices[d].clone().with_host_link("pcie");
    }
    let mut grouped = alone.clone();
    grouped.devices[1].peer_group = Some(7);
    grouped.devices[2].peer_group = Some(7);
    for method in Method::ALL {
        let before = host.predict(&run, method).unwrap();
        let staged = alone.predict(&run, method).unwrap();
        let shared = grouped.predict(&run, method).unwrap();
        // Alone: device 1 stages both neighbours' halos (a read and a
        // write each), device 2 its one; device 0, in host memory,
        // waits for device 1's read. In one group: device 1 stages only
        // its host neighbour's, device 2 none, device 0 as before.
        for (p, wants) in [
            (&staged, [once, 4.0 * once, 2.0 * once]),
            (&shared, [once, 2.0 * once, 0.0]),
        ] {
            for (d, want) in wants.into_iter().enumerate() {
                let got = p.devices[d].exchange - before.devices[d].exchange;
                assert!(
                    (got - want).abs() < 1e-15,
                    "{method} device {d}: staged {got}, want {want}"
                );
            }
        }
    }
    // A host link that names no link class is the typed error.
    alone.devices[0] = alone.devices[0].clone().with_host_link("nowhere");
    assert_eq!(
        alone.predict(&run, Method::Overlap),
        Err(ModelError::UnknownLink("nowhere".into()))
    );
}

/// Hand-computed: `a` = 0.2 ms and 0, `b` = 1 ns and 0.1 ns, 1e6 cells.
/// Both busy: T = (1e6 + 2e5) / (1e9 + 1e10) s = 109.09 µs < 0.2 ms, so
/// the slow device's fixed cost alone exceeds it and it sits out:
/// T = 1e6 · 0.1 ns = 100 µs, all cells on the fast one.
#[test]
fn balance_equalises_fixed_plus_per_cell_time() {
    let (t, cells) = balance(&[(2e-4, 1e-9), (0.0, 1e-10)], 1e6);
    assert!((t - 1e-4).abs() < 1e-15, "{t}");
    assert_eq!(cells, vec![0.0, 1e6]);
    // Larger: T = (1e7 + 2e5) / 1.1e10 = 927.27 µs > 0.2 ms, both busy
    // and both finishing at T.
    let costs = [(2e-4, 1e-9), (0.0, 1e-10)];
    let (t, cells) = balance(&costs, 1e7);
    assert!((t - 1.02e7 / 1.1e10).abs() < 1e-15, "{t}");
    assert!((cells.iter().sum::<f64>() - 1e7).abs() < 1e-6);
    for (c, (a, b)) in cells.iter().zip(costs) {
        assert!((a + b * c - t).abs() < 1e-15);
    }
    // No fixed costs: HCLogP's split by power.
    let (t, cells) = balance(&[(0.0, 1e-9), (0.0, 3e-9)], 4e6);
    assert!((t - 4e6 / (1e9 + 1e9 / 3.0)).abs() < 1e-15);
    assert!((cells[0] / cells[1] - 3.0).abs() < 1e-12);
}

/// The measured CPU+GPU case in miniature: a CPU device with a fixed
/// cost per iteration and a GPU 14x faster per cell. The seeded weights
/// shift rows to the GPU, every method charges the fixed cost, and the
/// old single-rate machine predicts the seeded iteration far too short.
#[test]
fn the_fixed_cost_enters_every_method_and_the_seeded_weights() {
    let mut m = machine(&[4.8e-11, 3.3e-12]);
    m.devices[0].fixed_seconds = 2e-4;
    let m = Machine::new(m.devices, m.links).unwrap();
    let (rows, cpr) = (8194u64, 8194u64);
    let total = (rows * cpr) as f64;
    let w = m.seeded_weights(total);
    let by_power: Vec<f64> = m.devices.iter().map(|d| d.relative_power).collect();
    assert!(w[0] / w[1] < by_power[0] / by_power[1] * 0.9, "{w:?}");
    let run = Run::from_weights(rows, cpr, 1, cpr as f64 * 4.0, 10, &w, "net").unwrap();
    let cells = |d: usize| run.rows[d] as f64 * cpr as f64;
    for method in [Method::Hockney, Method::LogGp, Method::Overlap] {
        let p = m.predict(&run, method).unwrap();
        let cpu = 2e-4 + 4.8e-11 * cells(0);
        assert!(
            (p.devices[0].compute - cpu).abs() < 1e-15,
            "{method}: {p:?}"
        );
        assert!((p.devices[1].compute - 3.3e-12 * cells(1)).abs() < 1e-15);
    }
    let (t, _) = balance(&m.costs(), total);
    let hc = m.predict(&run, Method::HcLogP).unwrap();
    assert_eq!(hc.devices[0].compute, t);
    assert_eq!(hc.balanced_iteration, t);
    let rv = m.predict(&run, Method::Rivera).unwrap();
    assert!((rv.devices[0].compute - (2e-4 + 4.8e-11 * total / 2.0)).abs() < 1e-15);
    // Seeded rows put both devices within one row's time of T.
    let ovl = m.predict(&run, Method::Overlap).unwrap();
    for d in &ovl.devices {
        assert!(
            (d.compute - t).abs() < 4.8e-11 * cpr as f64 + 1e-12,
            "{ovl:?}"
        );
    }
    // The single-rate machine seeds by power and predicts the CPU's
    // share as if it cost nothing fixed.
    let old = machine(&[4.8e-11, 3.3e-12]);
    let w_old = old.seeded_weights(total);
    let run_old = Run::from_weights(rows, cpr, 1, cpr as f64 * 4.0, 10, &w_old, "net").unwrap();
    let under = old.predict(&run_old, Method::Overlap).unwrap();
    let real = m.predict(&run_old, Method::Overlap).unwrap();
    assert!(real.iteration > under.iteration * 1.5, "{under:?} {real:?}");
    // A machine file from before the field loads with no fixed cost.
    let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
    let back: Machine = serde_json::from_str(json).unwrap();
    assert_eq!(back.devices[0].fixed_seconds, 0.0);
    let mut neg = Device::new("n", 1e-9);
    neg.fixed_seconds = -1e-6;
    assert!(Machine::new(vec![neg], vec![]).is_err());
}

/// A tile curve scales the line by the factor at the tile's cells,
/// log-linear between its points and flat beyond them; the balanced
/// split finds the cells where the curved times meet; the machine
/// refuses a bad curve and reads one without a curve as the line.
#[test]
fn a_tile_curve_scales_the_line_and_the_balanced_split() {
    let mut d = Device::new("d", 1e-9).with_fixed(1e-5);
    d.tile_curve = vec![(1e5, 0.75), (1e6, 1.0)];
    let line = |c: f64| 1e-5 + 1e-9 * c;
    assert_eq!(d.time(1e5), line(1e5) * 0.75);
    assert_eq!(
        d.time(1e4),
        line(1e4) * 0.75,
        "below the curve: its first factor"
    );
    assert_eq!(d.time(4e6), line(4e6), "beyond: its last");
    // Halfway in log between 1e5 and 1e6 cells: halfway in log factor.
    let mid = 1e5 * 10f64.sqrt();
    assert!((d.time(mid) - line(mid) * 0.75f64.sqrt()).abs() < 1e-15);
    assert_eq!(d.time(0.0), 0.0);

    // One point is a constant factor: a device twice as fast by its
    // curve takes two thirds of the cells, as a line at half the rate
    // would, and the iteration is what either device then takes.
    let mut fast = Device::new("fast", 1e-9);
    fast.tile_curve = vec![(1e3, 0.5)];
    let m = Machine::new(vec![fast.clone(), Device::new("slow", 1e-9)], vec![]).unwrap();
    let (t, cells) = m.balanced(3e6);
    assert!(
        (cells[0] - 2e6).abs() < 1e-3 && (cells[1] - 1e6).abs() < 1e-3,
        "{cells:?}"
    );
    assert!((t - 1e-3).abs() < 1e-12, "{t}");
    assert_eq!(m.seeded_weights(3e6), cells);
    let times_at = |m: &Machine, cells: &[f64]| -> Vec<f64> {
        m.devices
            .iter()
            .zip(cells)
            .map(|(d, &c)| d.time(c))
            .collect()
    };
    // A curve that varies: the split settles where both times meet.
    fast.tile_curve = vec![(1e5, 0.5), (1e7, 1.0)];
    let m = Machine::new(vec![fast, Device::new("slow", 1e-9)], vec![]).unwrap();
    let (t, cells) = m.balanced(3e6);
    let times = times_at(&m, &cells);
    assert!((times[0] - times[1]).abs() < 1e-9 * t, "{times:?}");
    assert!(
        (times[0] - t).abs() < 1e-9 * t && cells[0] > 1.5e6,
        "{cells:?}"
    );

    // The factor enters the compute of every method that times each
    // device's own rows (a prediction of the two devices' seeded
    // rows), and Rivera's equal shares.
    let run = Run::from_weights(3000, 1000, 1, 4000.0, 1, &cells, "l").unwrap();
    let with_link = Machine::new(
        m.devices.clone(),
        vec![LinkClass::from_hockney(
            "l",
            Hockney {
                alpha: 1e-6,
                beta: 1e-10,
            },
        )],
    )
    .unwrap();
    let c0 = run.rows[0] as f64 * 1000.0;
    for method in [Method::Hockney, Method::LogGp, Method::Overlap] {
        let p = with_link.predict(&run, method).unwrap();
        let want = m.devices[0].time(c0);
        assert!(
            (p.devices[0].compute - want).abs() < 1e-12 * want,
            "{method}: {p:?}"
        );
    }
    let rivera = with_link.predict(&run, Method::Rivera).unwrap();
    assert_eq!(rivera.devices[0].compute, m.devices[0].time(3e6 / 2.0));
    assert!(m.devices[0].tile_factor(c0) < 0.9, "a factor that shows");
    // HCLogP's compute is the balanced split's time, curves included,
    // not the lines' water-filling.
    let hclogp = with_link.predict(&run, Method::HcLogP).unwrap();
    assert_eq!(hclogp.devices[0].compute, t);
    assert!(balance(&m.costs(), 3e6).0 > 1.1 * t, "{t}");

    // A steep curve (0.25 to 1 over a doubling of cells, as a tile
    // leaving the L2 showed): each round of a fixed-point split
    // overshot the last, and it swapped between two splits for ever.
    let steep = |spc: f64| {
        let mut d = Device::new("s", spc);
        d.tile_curve = vec![(1.04e5, 0.25), (2.1e5, 1.0), (5.2e5, 1.0)];
        d
    };
    let m = Machine::new(vec![steep(1e-9), steep(2e-9)], vec![]).unwrap();
    let (t, cells) = m.balanced(262144.0);
    let times = times_at(&m, &cells);
    assert!(
        (cells.iter().sum::<f64>() - 262144.0).abs() < 1e-6,
        "{cells:?}"
    );
    assert!(
        (times[0] - times[1]).abs() < 1e-9 * t,
        "{times:?} {cells:?}"
    );
    assert!((t - 7.17e-5).abs() < 0.01e-5, "{t}");

    for (curve, want) in [
        (
            vec![(1e5, 0.0)],
            "device 0: tile curve factor must be a finite number > 0 and not falling, got 0",
        ),
        (
            vec![(1e5, 1.0), (1e4, 1.0)],
            "device 0: tile curve cells must be a finite number > 0 and increasing, got 10000",
        ),
        (
            vec![(1e5, 1.0), (2e5, 0.4)],
            "device 0: tile curve factor must be a finite number > 0 and not falling, got 0.4",
        ),
        (
            vec![(1e5, 1.0), (1e5, 1.2)],
            "device 0: tile curve cells must be a finite number > 0 and increasing, got 100000",
        ),
        (
            vec![(f64::NAN, 1.0)],
            "device 0: tile curve cells must be a finite number > 0 and increasing, got NaN",
        ),
        (
            vec![(1e5, f64::INFINITY)],
            "device 0: tile curve factor must be a finite number > 0 and not falling, got inf",
        ),
    ] {
        let mut bad = Device::new("b", 1e-9);
        bad.tile_curve = curve;
        assert_eq!(
            Machine::new(vec![bad], vec![]).unwrap_err().to_string(),
            want
        );
    }
    let json = r#"{"devices":[{"name":"c","seconds_per_cell":1e-9}],"links":[]}"#;
    let back: Machine = serde_json::from_str(json).unwrap();
    assert!(back.devices[0].tile_curve.is_empty());
    let round: Machine = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(round, m);
}

#[test]
fn a_learned_phase_time_replaces_every_methods_exchange() {
    let m = machine(&[1e-9, 2e-9]);
    let run = Run::from_weights(1000, 1000, 1, 8000.0, 10, &[3.0, 2.0], "net").unwrap();
    let t = 3e-4;
    for method in Method::ALL {
        let linked = m.predict(&run, method).unwrap();
        let learned = m
            .predict_with(&run, method, ExchangeTime::Phase(t))
            .unwrap();
        for (a, b) in linked.devices.iter().zip(&learned.devices) {
            assert_eq!(a.compute, b.compute, "{method}");
            assert_eq!(b.exchange, t, "{method}");
        }
        if method != Method::Overlap {
            let slowest = learned
                .devices
                .iter()
                .map(|d| d.compute)
                .fold(0.0, f64::max);
            assert!(
                (learned.iteration - (slowest + t)).abs() < 1e-15,
                "{method}"
            );
        }
    }
    // Overlap: 1 border row (the strip facing the other device; the
    // domain's edge sends nothing), then the phase against 399 inner
    // rows.
    let o = m
        .predict_with(&run, Method::Overlap, ExchangeTime::Phase(1.0))
        .unwrap();
    assert!((o.iteration - (1000.0 * 2e-9 + 1.0)).abs() < 1e-12, "{o:?}");
    // One device exchanges nothing, whatever the phase model says.
    let alone = machine(&[1e-9]);
    let one = Run::from_weights(10, 10, 1, 80.0, 1, &[1.0], "net").unwrap();
    let p = alone
        .predict_with(&one, Method::Hockney, ExchangeTime::Phase(t))
        .unwrap();
    assert_eq!(p.devices[0].exchange, 0.0);
    assert!(matches!(
        m.predict_with(&run, Method::Hockney, ExchangeTime::Phase(f64::NAN)),
        Err(ModelError::InvalidValue { .. })
    ));
}

#[test]
fn errors_are_typed() {
    let m = machine(&[1e-9, 2e-9]);
    let mut run = Run::from_weights(100, 10, 1, 80.0, 1, &[1.0, 1.0], "net").unwrap();
    run.link = "nowhere".into();
    assert_eq!(
        m.predict(&run, Method::Hockney),
        Err(ModelError::UnknownLink("nowhere".into()))
    );
    let run = Run::from_weights(100, 10, 1, 80.0, 1, &[1.0], "net").unwrap();
    assert_eq!(
        m.predict(&run, Method::Hockney),
        Err(ModelError::DeviceCount { run: 1, machine: 2 })
    );
    assert!(Machine::new(vec![Device::new("z", 0.0)], vec![]).is_err());
    // Links' parameters are checked as devices' are.
    let mut bad = m.links[0].clone();
    bad.hockney.alpha = -1.0;
    assert_eq!(
        Machine::new(m.devices.clone(), vec![bad.clone()]).unwrap_err(),
        ModelError::InvalidValue {
            what: "link alpha",
            value: -1.0
        }
    );
    bad.hockney.alpha = 1e-6;
    bad.loggp.big_g = f64::NAN;
    assert!(Machine::new(m.devices.clone(), vec![bad]).is_err());
}

#[test]
fn method_names_round_trip() {
    for m in Method::ALL {
        assert_eq!(m.name().parse::<Method>(), Ok(m));
    }
    assert!("logp".parse::<Method>().is_err());
}

#[test]
fn from_weights_sums_exactly_and_follows_weights() {
    let r = Run::from_weights(1001, 1, 1, 8.0, 1, &[3.0, 1.0, 1.0], "net").unwrap();
    assert_eq!(r.rows.iter().sum::<u64>(), 1001);
    assert_eq!(r.rows, vec![601, 200, 200]);
    // Cumulative rounding, as the run: bounds round(10/3) = 3 and
    // round(20/3) = 7 (largest remainder would give 4, 3, 3).
    let r = Run::from_weights(10, 1, 1, 8.0, 1, &[1.0; 3], "net").unwrap();
    assert_eq!(r.rows, vec![3, 4, 3]);
    assert!(matches!(
        Run::from_weights(10, 1, 1, 8.0, 1, &[2.0, -1.0], "net"),
        Err(ModelError::InvalidValue { what: "weight", .. })
    ));
}

#[test]
fn machine_round_trips_through_serde() {
    let m = machine(&[1e-9, 3e-9]);
    let json = serde_json::to_string(&m).unwrap();
    let back: Machine = serde_json::from_str(&json).unwrap();
    assert_eq!(back, m);
    let p = m
        .predict(
            &Run::from_weights(10, 1, 1, 8.0, 1, &[1.0, 1.0], "net").unwrap(),
            Method::LogGp,
        )
        .unwrap();
    assert!(serde_json::to_string(&p)
        .unwrap()
        .contains("\"method\":\"loggp\""));
}

proptest! {
    #[test]
    fn overlap_never_exceeds_additive_and_balanced_is_a_lower_bound(
        spc in prop::collection::vec(1e-10f64..1e-8, 1..8),
        fixed in prop::collection::vec(0.0f64..1e-4, 8),
        weights in prop::collection::vec(0.01f64..10.0, 8),
        rows in 8u64..5000,
        cells in 1u64..2000,
        halo in 1u64..4,
    ) {
        let mut m = machine(&spc);
        for (d, &a) in m.devices.iter_mut().zip(&fixed) {
            d.fixed_seconds = a;
        }
        let w = &weights[..spc.len()];
        let run = Run::from_weights(rows, cells, halo, cells as f64 * 8.0, 7, w, "net").unwrap();
        let add = m.predict(&run, Method::Hockney).unwrap();
        let ovl = m.predict(&run, Method::Overlap).unwrap();
        prop_assert!(ovl.iteration <= add.iteration * (1.0 + 1e-12));
        for method in Method::ALL {
            let p = m.predict(&run, method).unwrap();
            prop_assert!(p.balanced_loop <= p.loop_time * (1.0 + 1e-12), "{method}: {p:?}");
        }
    }
}

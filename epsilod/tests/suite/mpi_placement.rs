//! Virtual process 0 on rank 1, under real `mpirun`: the report (rebalances,
//! heuristic decisions) must not depend on which rank holds it, and the
//! result must stay bit-identical to the serial reference. The test starts
//! itself under `mpirun -np 2`.
#![cfg(feature = "mpi")]

use crate::common::library_serial;
use epsilod::{Alb, Cluster, DeviceSpec, Partition, Skeleton, Stencil};
use epsilod_testkit::process::under_mpirun;
use heuristics::testing::Scripted;
use heuristics::{Decision, Heuristic, Snapshot};
use kernels::{KernelChoice, Library};
use std::sync::{Arc, Mutex};

#[test]
fn process_0_on_rank_1_leaves_the_report_whole() {
    under_mpirun(
        "mpi_placement::process_0_on_rank_1_leaves_the_report_whole",
        2,
        rank_main,
    );
}

fn rank_main() {
    let launch = epsilod::Launch::from_vars(|k| std::env::var(k).ok());
    let cluster = Cluster::join(launch).expect("joining the job");
    // Two devices, times sent directly; then three, process 0 and 2 on
    // rank 1, their times along Bruck's tree (as runs of more than 32
    // devices send them), crossing the ranks in every round.
    for (devices, placement, direct_up_to) in [(2, vec![1, 0], 32), (3, vec![1, 0, 1], 1)] {
        run_placed(&cluster, devices, placement, direct_up_to);
    }
}

/// Each check's iteration and every device's window samples.
type Seen = Vec<(u64, Vec<Vec<f64>>)>;

/// The script's decisions, recording every window this rank's processes
/// are shown.
struct Recording(Scripted, Arc<Mutex<Seen>>);

impl Heuristic for Recording {
    fn name(&self) -> &str {
        "scripted"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        let windows = s.devices.iter().map(|d| d.samples.clone()).collect();
        self.1.lock().unwrap().push((s.iter, windows));
        self.0.check(s)
    }
}

fn run_placed(cluster: &Cluster, devices: usize, placement: Vec<usize>, direct_up_to: usize) {
    let size = [34usize, 20];
    let init = |i: &[i64]| (i[0] * 7 + i[1]) as f32 * 0.25;
    let (w1, w2) = match devices {
        2 => (vec![1.0, 3.0], vec![2.0, 1.0]),
        _ => (vec![1.0, 3.0, 1.0], vec![2.0, 1.0, 2.0]),
    };
    let seen = Arc::new(Mutex::new(Seen::new()));
    let s2 = seen.clone();
    let window = 5;
    let lag = heuristics::gather::Gather::of(devices, direct_up_to).lag(devices) as u64;
    let out = Skeleton::new(
        &size,
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(100)
    .init(init)
    .devices(vec![DeviceSpec::cpu(1); devices])
    .partition(Partition::Weighted(0))
    .alb(
        Alb::custom("scripted", move || {
            Box::new(Recording(
                Scripted::new(&[(40, &w1[..]), (80, &w2[..])]),
                s2.clone(),
            ))
        })
        .window(window)
        // A message a row (80 bytes) between the ranks.
        .slab_bytes(80)
        .direct_times_up_to(direct_up_to),
    )
    .placement(placement)
    .run_in(cluster)
    .expect("the run");
    let r = &out.report;
    assert_eq!(r.summary.rebalances, 2, "rank {}", cluster.rank());
    assert_eq!(r.redistributions.len(), 2);
    let at: Vec<u64> = r.redistributions.iter().map(|x| x.iter).collect();
    assert_eq!(at, [40, 80]);
    // A message a row moved: a slab of 80 bytes holds one row of the
    // region and not two.
    for m in &r.redistributions {
        assert_eq!(m.messages, m.rows_moved, "{devices} devices");
    }
    // Every window this rank's processes saw holds each device's own
    // kernel times from the report, `lag` iterations back, whichever rank
    // the device ran on (a full window holds only times since the last
    // rebalance).
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "rank {} saw no check", cluster.rank());
    for (it, windows) in seen.iter() {
        let newest = it - lag;
        for (d, w) in windows.iter().enumerate() {
            let want: Vec<f64> = (newest + 1 - window as u64..=newest)
                .map(|i| r.iterations[i as usize].devices[d].compute_seconds)
                .collect();
            assert_eq!(w, &want, "{devices} devices, lag {lag}: device {d} at {it}");
        }
    }
    assert!(r
        .heuristic
        .iter()
        .any(|d| d.values.get("at") == Some(&80.0)));
    if cluster.is_root() {
        let want = library_serial(Library::S2d4, &size, 100, init);
        let bits = |a: &ndarray::ArrayD<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out.grid), bits(&want));
    }
}

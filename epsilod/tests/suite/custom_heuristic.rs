//! A heuristic written outside the crates, plugged into a run through the
//! public API (`Alb::custom`): the skeleton consults it after every full
//! window, rebalances when and to the weights it says, and the result stays
//! bit-identical to the serial reference.

use crate::common::library_serial;
use epsilod::{Alb, DeviceSpec, Partition, Skeleton, Stencil};
use epsilod_testkit::{bits, irregular_init};
use heuristics::{Decision, Heuristic, Snapshot};
use kernels::{KernelChoice, Library};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Once `after` iterations have run, gives the second device three times
/// the first's rows, once; every iteration it is asked about is noted in
/// `asked`.
struct ShiftOnce {
    after: u64,
    asked: Arc<Mutex<Vec<u64>>>,
}

impl Heuristic for ShiftOnce {
    fn name(&self) -> &str {
        "shift-once"
    }

    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        self.asked.lock().unwrap().push(s.iter);
        if s.iter < self.after || s.rebalances > 0 {
            return Decision::no();
        }
        Decision {
            weights: Some(vec![1.0, 3.0]),
            values: vec![("after", self.after as f64)],
            ..Decision::yes()
        }
    }
}

#[test]
fn a_heuristic_of_your_own_decides_when_and_how_to_rebalance() {
    let lib = Library::S2d4;
    let spec = lib.spec();
    let sizes = vec![66usize, 40];
    let iters = 24;
    let init = irregular_init(sizes.clone(), spec.low.clone(), spec.high.clone(), 8);
    let want = library_serial(lib, &sizes, iters, &init);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let noted = asked.clone();
    let alb = Alb::custom("shift-once", move || {
        Box::new(ShiftOnce {
            after: 10,
            asked: noted.clone(),
        })
    })
    .window(4);
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(iters as u64)
    .init(init)
    .devices(vec![
        DeviceSpec::parse("cpu:threads=1").unwrap(),
        DeviceSpec::parse("cpu:threads=1").unwrap(),
    ])
    .partition(Partition::Weighted(0))
    .alb(alb)
    .run()
    .unwrap();

    assert_eq!(bits(&out.grid), bits(&want));
    // Each device's process asks its own copy; every check is reported.
    let asked: BTreeSet<u64> = asked.lock().unwrap().iter().copied().collect();
    let reported: BTreeSet<u64> = out.report.heuristic.iter().map(|r| r.iter).collect();
    assert!(asked.len() > 2, "consulted at every check: {asked:?}");
    assert_eq!(reported, asked, "each check reported");
    // One rebalance, after the first check at or past iteration 10.
    let first = *asked.iter().find(|&&i| i >= 10).unwrap();
    let r = &out.report.redistributions;
    assert_eq!(r.iter().map(|x| x.iter).collect::<Vec<_>>(), [first]);
    let rows: Vec<usize> = out.report.iterations[iters - 1]
        .devices
        .iter()
        .map(|d| d.rows)
        .collect();
    assert!(rows[1] >= 2 * rows[0], "its weights 1:3 gave {rows:?}");
}

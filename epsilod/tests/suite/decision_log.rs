//! A long run's heuristic records stay bounded: every check that
//! rebalanced is kept, of the others only the latest, the rest counted.

use epsilod::report::DecisionOutcome;
use epsilod::{Alb, DeviceSpec, Partition, Skeleton, Stencil};
use heuristics::{Decision, Heuristic, Snapshot};
use kernels::{KernelChoice, Library};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Rebalances at given iterations to given weights, counting its checks.
struct Scripted {
    moves: Vec<(u64, Vec<f64>)>,
    checks: Arc<AtomicU64>,
}

impl Heuristic for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn check(&mut self, s: &Snapshot<'_>) -> Decision {
        self.checks.fetch_add(1, Ordering::Relaxed);
        match self.moves.iter().find(|(at, _)| *at == s.iter) {
            Some((_, w)) => Decision {
                weights: Some(w.clone()),
                ..Decision::yes()
            },
            None => Decision::no(),
        }
    }
}

#[test]
fn a_long_run_keeps_every_rebalance_and_the_latest_other_checks() {
    let iters = 3000;
    let kept = 100;
    let moves: Vec<(u64, Vec<f64>)> = [400u64, 1100, 1800, 2500]
        .iter()
        .enumerate()
        .map(|(k, &at)| {
            (
                at,
                if k % 2 == 0 {
                    vec![0.3, 0.7]
                } else {
                    vec![0.6, 0.4]
                },
            )
        })
        .collect();
    let checks = Arc::new(AtomicU64::new(0));
    let (script, counter) = (moves.clone(), checks.clone());
    let out = Skeleton::new(
        &[34, 18],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(iters)
    .devices(vec![DeviceSpec::cpu(1), DeviceSpec::cpu(1)])
    .partition(Partition::Weighted(0))
    .alb(
        Alb::custom("scripted", move || {
            Box::new(Scripted {
                moves: script.clone(),
                checks: counter.clone(),
            })
        })
        .window(2)
        .checks_kept(kept),
    )
    .run()
    .unwrap();
    let r = &out.report;
    let at: Vec<u64> = moves.iter().map(|m| m.0).collect();
    let rebalanced: Vec<u64> = r
        .heuristic
        .iter()
        .filter(|h| h.decision == DecisionOutcome::Rebalance)
        .map(|h| h.iter)
        .collect();
    assert_eq!(rebalanced, at);
    assert_eq!(
        r.redistributions.iter().map(|m| m.iter).collect::<Vec<_>>(),
        at
    );
    assert!(r.redistributions.iter().all(|m| m.rows_moved > 0));
    let others: Vec<u64> = r
        .heuristic
        .iter()
        .filter(|h| h.decision != DecisionOutcome::Rebalance)
        .map(|h| h.iter)
        .collect();
    assert_eq!(others.len(), kept);
    // The latest checks, in order, up to the run's last.
    assert!(others.windows(2).all(|w| w[1] == w[0] + 1), "{others:?}");
    assert_eq!(others.last(), r.heuristic.last().map(|h| &h.iter));
    assert!(r.heuristic.windows(2).all(|w| w[0].iter < w[1].iter));
    // Each of the two processes checked every time: the report counts one's.
    let made = checks.load(Ordering::Relaxed) / 2;
    assert!(made > 2900, "{made} checks");
    assert_eq!(
        r.heuristic.len() as u64 + r.summary.heuristic_checks_dropped,
        made
    );
    let json = serde_json::to_value(r).unwrap();
    assert_eq!(
        json["summary"]["heuristic_checks_dropped"],
        made - kept as u64 - at.len() as u64
    );
}

//! Replaying a predicted phase on fewer processes (P3S's Synthetic
//! Signature, modelling.md §1): the processes of a [`ScaledTrace`] are
//! measured one range at a time; each measured process that talks to
//! processes outside its range gets a "black hole" that receives what it
//! sends out and sends it what it expects in, so it runs its phase as it
//! would among all of them. Optionally a noise pair carries the rest of
//! the phase's traffic (P3S Eq. 7.1), so the range's messages share the
//! transport with as much traffic as in the full run.

use serde::{Deserialize, Serialize};

use crate::scaling::ScaledTrace;

/// One message of the replayed phase, as a local process sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leg {
    /// The local process at the other end.
    pub local: usize,
    /// The tag both ends use: the sender's global id, or for a message to
    /// a black hole the global id it stands in for.
    pub tag: u64,
    /// Its size.
    pub bytes: u64,
}

/// What one local process does each iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Role {
    /// A process of the range: compute (emulated), then send and receive
    /// its messages.
    Measured {
        /// Its id in the trace.
        global: usize,
        /// Seconds to emulate before the exchange.
        compute_seconds: f64,
        /// Its messages out.
        sends: Vec<Leg>,
        /// Its messages in.
        recvs: Vec<Leg>,
    },
    /// A black hole: sends its measured process what the processes outside
    /// the range would, and receives what it sends them.
    Hole {
        /// Messages to its measured process.
        sends: Vec<Leg>,
        /// Messages from it.
        recvs: Vec<Leg>,
    },
    /// One of the noise pair: each iteration it sends its half of the
    /// messages of the phase that no measured process or black hole
    /// carries, to the other, and receives the other half.
    Noise {
        /// Messages to the other of the pair.
        sends: Vec<Leg>,
        /// Messages from it.
        recvs: Vec<Leg>,
    },
    /// A process the job has to spare.
    Idle,
}

/// Tags of noise messages start here, above every process id (the tags of
/// the range's own messages).
const NOISE_TAG: u64 = 1 << 40;

/// Who sends what to whom in `trace`'s phase, as (from, to, bytes).
fn all_legs(trace: &ScaledTrace) -> Vec<(usize, usize, u64)> {
    trace
        .processes
        .iter()
        .enumerate()
        .flat_map(|(from, p)| p.sends.iter().map(move |m| (from, m.peer, m.bytes)))
        .collect()
}

/// The messages of the phase that replaying `range` does not carry: those
/// between two processes outside it. P3S's Eq. 7.1: the noise of a phase is
/// the traffic in transit in it minus the range's own (measured processes
/// and black holes), `TotComRuidoFase_i = TotComEnTransitoFase_i -
/// TotalECommsFase_i`.
pub fn noise_legs(trace: &ScaledTrace, range: std::ops::Range<usize>) -> Vec<(usize, usize, u64)> {
    all_legs(trace)
        .into_iter()
        .filter(|&(f, t, _)| !range.contains(&f) && !range.contains(&t))
        .collect()
}

/// The local processes replaying `range` of `trace`: the measured ones
/// first (in order), then one black hole per measured process that has
/// partners outside the range, then with `noise` the noise pair (where
/// there is traffic outside the range), then idle ones up to `slots`.
pub fn plan_range(
    trace: &ScaledTrace,
    range: std::ops::Range<usize>,
    slots: usize,
    noise: bool,
) -> Vec<Role> {
    let inside = |g: usize| range.contains(&g);
    let local_of = |g: usize| g - range.start;
    let legs = all_legs(trace);
    let mut roles: Vec<Role> = Vec::new();
    let mut holes: Vec<Role> = Vec::new();
    let first_hole = range.len();
    for g in range.clone() {
        let outside =
            |&&(f, t, _): &&(usize, usize, u64)| (f == g && !inside(t)) || (t == g && !inside(f));
        let hole = legs
            .iter()
            .any(|l| outside(&l))
            .then(|| first_hole + holes.len());
        let sends = legs
            .iter()
            .filter(|l| l.0 == g)
            .map(|&(_, to, bytes)| match (inside(to), hole) {
                (true, _) => Leg {
                    local: local_of(to),
                    tag: g as u64,
                    bytes,
                },
                (false, Some(h)) => Leg {
                    local: h,
                    tag: to as u64,
                    bytes,
                },
                (false, None) => unreachable!("a process with outside partners has a hole"),
            })
            .collect();
        let recvs = legs
            .iter()
            .filter(|l| l.1 == g)
            .map(|&(from, _, bytes)| match (inside(from), hole) {
                (true, _) => Leg {
                    local: local_of(from),
                    tag: from as u64,
                    bytes,
                },
                (false, Some(h)) => Leg {
                    local: h,
                    tag: from as u64,
                    bytes,
                },
                (false, None) => unreachable!("a process with outside partners has a hole"),
            })
            .collect();
        if hole.is_some() {
            let me = local_of(g);
            holes.push(Role::Hole {
                // What the outside sends g, and receives from it.
                sends: legs
                    .iter()
                    .filter(|l| l.1 == g && !inside(l.0))
                    .map(|&(from, _, bytes)| Leg {
                        local: me,
                        tag: from as u64,
                        bytes,
                    })
                    .collect(),
                recvs: legs
                    .iter()
                    .filter(|l| l.0 == g && !inside(l.1))
                    .map(|&(_, to, bytes)| Leg {
                        local: me,
                        tag: to as u64,
                        bytes,
                    })
                    .collect(),
            });
        }
        roles.push(Role::Measured {
            global: g,
            compute_seconds: trace.processes[g].compute_seconds,
            sends,
            recvs,
        });
    }
    roles.extend(holes);
    let rest = if noise {
        noise_legs(trace, range)
    } else {
        Vec::new()
    };
    if !rest.is_empty() {
        // Taking turns, so each of the pair sends about half.
        let (a, b) = (roles.len(), roles.len() + 1);
        let leg = |i: usize, local: usize| Leg {
            local,
            tag: NOISE_TAG + i as u64,
            bytes: rest[i].2,
        };
        let (evens, odds): (Vec<usize>, Vec<usize>) = (0..rest.len()).partition(|i| i % 2 == 0);
        roles.push(Role::Noise {
            sends: evens.iter().map(|&i| leg(i, b)).collect(),
            recvs: odds.iter().map(|&i| leg(i, b)).collect(),
        });
        roles.push(Role::Noise {
            sends: odds.iter().map(|&i| leg(i, a)).collect(),
            recvs: evens.iter().map(|&i| leg(i, a)).collect(),
        });
    }
    while roles.len() < slots {
        roles.push(Role::Idle);
    }
    roles
}

/// Consecutive ranges of at most `size` processes covering all `count`.
pub fn ranges(count: usize, size: usize) -> Vec<std::ops::Range<usize>> {
    let size = size.max(1);
    (0..count)
        .step_by(size)
        .map(|a| a..(a + size).min(count))
        .collect()
}

/// Local processes `range` needs: itself, its black holes and with
/// `noise` the noise pair.
pub fn slots_needed(trace: &ScaledTrace, range: std::ops::Range<usize>, noise: bool) -> usize {
    plan_range(trace, range, 0, noise).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaling::{Message, PredictedProcess};

    /// P processes in a line, each sending `bytes` to each neighbour.
    fn line(p: usize, bytes: u64) -> ScaledTrace {
        let processes = (0..p)
            .map(|r| PredictedProcess {
                compute_seconds: 1e-4 * (r + 1) as f64,
                comm_seconds: 0.0,
                sends: [r.checked_sub(1), (r + 1 < p).then_some(r + 1)]
                    .into_iter()
                    .flatten()
                    .map(|peer| Message { peer, bytes })
                    .collect(),
            })
            .collect();
        ScaledTrace {
            count: p,
            weight: 100,
            processes,
            iteration_seconds: 0.0,
            loop_seconds: 0.0,
        }
    }

    /// Every message a role sends is one its partner receives, with the
    /// same tag and size, and the other way round.
    fn matched(roles: &[Role]) {
        let io = |r: &Role| match r {
            Role::Measured { sends, recvs, .. }
            | Role::Hole { sends, recvs }
            | Role::Noise { sends, recvs } => (sends.clone(), recvs.clone()),
            Role::Idle => (vec![], vec![]),
        };
        for (me, r) in roles.iter().enumerate() {
            let (sends, recvs) = io(r);
            for s in sends {
                let (_, theirs) = io(&roles[s.local]);
                let want = Leg { local: me, ..s };
                assert_eq!(
                    theirs.iter().filter(|l| **l == want).count(),
                    1,
                    "{me} -> {s:?}"
                );
            }
            for r in recvs {
                let (theirs, _) = io(&roles[r.local]);
                let want = Leg { local: me, ..r };
                assert_eq!(
                    theirs.iter().filter(|l| **l == want).count(),
                    1,
                    "{me} <- {r:?}"
                );
            }
        }
    }

    #[test]
    fn ranges_measure_every_process_once_with_holes_at_the_cuts() {
        let t = line(10, 64);
        let rs = ranges(10, 4);
        assert_eq!(rs, vec![0..4, 4..8, 8..10]);
        let mut measured = Vec::new();
        for r in rs {
            let roles = plan_range(&t, r.clone(), 8, false);
            assert_eq!(roles.len(), 8.max(slots_needed(&t, r.clone(), false)));
            matched(&roles);
            for role in &roles {
                if let Role::Measured {
                    global,
                    sends,
                    recvs,
                    ..
                } = role
                {
                    measured.push(*global);
                    assert_eq!(sends.len(), t.processes[*global].sends.len());
                    assert_eq!(recvs.len(), sends.len(), "a line is symmetric");
                }
            }
            // Holes only where the line is cut: the range's two ends (one
            // at the line's own ends).
            let holes = roles
                .iter()
                .filter(|r| matches!(r, Role::Hole { .. }))
                .count();
            let cuts = usize::from(r.start > 0) + usize::from(r.end < 10);
            assert_eq!(holes, cuts, "{r:?}");
        }
        assert_eq!(measured, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn blocks_with_corners_replay_in_any_ranges() {
        // A 4x3 grid, each process sending to its up to 8 neighbours.
        let (nx, ny) = (4usize, 3usize);
        let processes = (0..nx * ny)
            .map(|r| {
                let (x, y) = ((r / ny) as i64, (r % ny) as i64);
                let mut sends = Vec::new();
                for dx in -1..=1i64 {
                    for dy in -1..=1i64 {
                        let (a, b) = (x + dx, y + dy);
                        if (dx, dy) != (0, 0)
                            && (0..nx as i64).contains(&a)
                            && (0..ny as i64).contains(&b)
                        {
                            let peer = (a as usize) * ny + b as usize;
                            sends.push(Message {
                                peer,
                                bytes: 4 * (1 + dx.abs() + dy.abs()) as u64,
                            });
                        }
                    }
                }
                PredictedProcess {
                    compute_seconds: 1e-4,
                    comm_seconds: 0.0,
                    sends,
                }
            })
            .collect();
        let t = ScaledTrace {
            count: nx * ny,
            weight: 3,
            processes,
            iteration_seconds: 0.0,
            loop_seconds: 0.0,
        };
        for size in 1..=12 {
            let mut measured = 0;
            for r in ranges(12, size) {
                let roles = plan_range(&t, r, 0, false);
                matched(&roles);
                measured += roles
                    .iter()
                    .filter(|r| matches!(r, Role::Measured { .. }))
                    .count();
            }
            assert_eq!(measured, 12, "ranges of {size}");
        }
    }

    #[test]
    fn a_whole_range_needs_no_holes() {
        let t = line(6, 8);
        let roles = plan_range(&t, 0..6, 6, true);
        assert!(roles.iter().all(|r| matches!(r, Role::Measured { .. })));
        matched(&roles);
    }

    /// Bytes each role sends per iteration.
    fn sent(r: &Role) -> u64 {
        match r {
            Role::Measured { sends, .. } | Role::Hole { sends, .. } | Role::Noise { sends, .. } => {
                sends.iter().map(|l| l.bytes).sum()
            }
            Role::Idle => 0,
        }
    }

    #[test]
    fn the_noise_pair_carries_the_traffic_the_range_does_not() {
        // Sizes differ per process, so a leg counted twice or missed shows.
        let mut t = line(10, 0);
        for (r, p) in t.processes.iter_mut().enumerate() {
            for m in &mut p.sends {
                m.bytes = 100 + r as u64;
            }
        }
        let total: u64 = t
            .processes
            .iter()
            .flat_map(|p| &p.sends)
            .map(|m| m.bytes)
            .sum();
        for size in 1..=10 {
            for r in ranges(10, size) {
                let roles = plan_range(&t, r.clone(), 0, true);
                matched(&roles);
                let noise: Vec<&Role> = roles
                    .iter()
                    .filter(|r| matches!(r, Role::Noise { .. }))
                    .collect();
                // Eq. 7.1: in transit = the range's own + noise.
                let carried: u64 = roles.iter().map(sent).sum();
                assert_eq!(carried, total, "range {r:?}");
                let outside = noise_legs(&t, r.clone());
                assert_eq!(noise.len(), if outside.is_empty() { 0 } else { 2 });
                assert_eq!(
                    noise.iter().map(|n| sent(n)).sum::<u64>(),
                    outside.iter().map(|l| l.2).sum::<u64>()
                );
                // The pair splits the work: half the messages each, one more
                // at most.
                if let [a, b] = noise[..] {
                    let n = |r: &Role| match r {
                        Role::Noise { sends, .. } => sends.len(),
                        _ => 0,
                    };
                    assert!(n(a).abs_diff(n(b)) <= 1);
                }
                let plain = plan_range(&t, r.clone(), 0, false);
                assert_eq!(plain.len() + noise.len(), roles.len());
                assert_eq!(slots_needed(&t, r, true), roles.len());
            }
        }
    }
}

//! The kernel times ALB decides on, gathered without waiting
//! (`heuristics::gather`): every period each process starts the gather of
//! its own time and advances the ones in flight by one round; the oldest
//! completes, `lag` periods after its period ended, at the same period end
//! on every process.

use crate::tag::Tag;
use heuristics::gather::{self, Gather};
use hitmap::{Transport, TransportError};
use std::collections::VecDeque;
use std::ops::Range;

/// A period's iterations and every process's kernel seconds per
/// iteration over it, in rank order.
pub(crate) type Gathered = (Range<u64>, Vec<f64>);

/// Why a gather failed.
#[derive(Debug)]
pub(crate) enum GatherError {
    /// The transport's.
    Net(TransportError),
    /// A message of the wrong length: the processes disagree on the
    /// schedule.
    Protocol(String),
}

impl From<TransportError> for GatherError {
    fn from(e: TransportError) -> Self {
        GatherError::Net(e)
    }
}

/// A process's gathers in flight.
pub(crate) struct TimesGather {
    me: usize,
    procs: usize,
    how: Gather,
    /// Oldest first: each period's iterations, the values held (this
    /// process's first, then the next processes' in rank order, wrapping),
    /// and the rounds done.
    inflight: VecDeque<(Range<u64>, Vec<f64>, usize)>,
}

impl TimesGather {
    /// Process `me` of `procs`, gathering directly up to `direct_up_to`.
    pub(crate) fn new(me: usize, procs: usize, direct_up_to: usize) -> TimesGather {
        TimesGather {
            me,
            procs,
            how: Gather::of(procs, direct_up_to),
            inflight: VecDeque::new(),
        }
    }

    /// Period `period` has ended with this process's kernel seconds per
    /// iteration `mine`: starts its gather, advances the others, and
    /// returns the period whose gather completed with every process's
    /// time, in rank order.
    pub(crate) fn advance<T, X: Transport<T>>(
        &mut self,
        t: &mut X,
        period: Range<u64>,
        mine: f64,
    ) -> Result<Option<Gathered>, GatherError> {
        let (me, procs) = (self.me, self.procs);
        let tag = |p: &Range<u64>| Tag::Times(p.end - 1).encode();
        match self.how {
            Gather::Direct => {
                for q in (0..procs).filter(|&q| q != me) {
                    t.send_values(q, tag(&period), vec![mine])?;
                }
                let done = match self.inflight.pop_front() {
                    Some((before, own, _)) => {
                        let mut row = Vec::with_capacity(procs);
                        for q in 0..procs {
                            row.push(if q == me {
                                own[0]
                            } else {
                                first(t.recv_values(q, tag(&before))?)
                            });
                        }
                        Some((before, row))
                    }
                    None => None,
                };
                self.inflight.push_back((period, vec![mine], 0));
                Ok(done)
            }
            Gather::Tree => {
                let (to, _, _) = gather::round(me, procs, 0);
                t.send_values(to, tag(&period), vec![mine])?;
                let done = self.next_round(t)?;
                self.inflight.push_back((period, vec![mine], 0));
                Ok(done)
            }
        }
    }

    /// Completes every gather in flight, so that no message is left
    /// unreceived when the run ends: the rounds go on without new periods,
    /// in the same order on every process.
    pub(crate) fn finish<T, X: Transport<T>>(&mut self, t: &mut X) -> Result<(), GatherError> {
        match self.how {
            Gather::Direct => {
                if let Some((before, _, _)) = self.inflight.pop_front() {
                    let tag = Tag::Times(before.end - 1).encode();
                    for q in (0..self.procs).filter(|&q| q != self.me) {
                        t.recv_values(q, tag)?;
                    }
                }
            }
            Gather::Tree => {
                while !self.inflight.is_empty() {
                    self.next_round(t)?;
                }
            }
        }
        Ok(())
    }

    /// One round of every tree gather in flight: the round sent at the
    /// last period end is received, and the next one sent. Returns the
    /// gather that completed, in rank order.
    fn next_round<T, X: Transport<T>>(
        &mut self,
        t: &mut X,
    ) -> Result<Option<Gathered>, GatherError> {
        let (me, procs) = (self.me, self.procs);
        let rounds = gather::rounds(procs);
        for (p, held, done) in self.inflight.iter_mut() {
            let tag = Tag::Times(p.end - 1).encode();
            let (_, from, count) = gather::round(me, procs, *done);
            let got = t.recv_values(from, tag)?;
            if got.len() != count {
                return Err(GatherError::Protocol(format!(
                    "times of iterations {p:?} from {from}: {} values in round {done}, expected {count}",
                    got.len()
                )));
            }
            held.extend_from_slice(&got);
            *done += 1;
            if *done < rounds {
                let (to, _, count) = gather::round(me, procs, *done);
                t.send_values(to, tag, held[..count].to_vec())?;
            }
        }
        if self.inflight.front().is_none_or(|g| g.2 != rounds) {
            return Ok(None);
        }
        Ok(self.inflight.pop_front().map(|(p, held, _)| {
            let mut row = vec![0.0; procs];
            for (k, v) in held.into_iter().enumerate() {
                row[(me + k) % procs] = v;
            }
            (p, row)
        }))
    }
}

/// A time message's value (0 for an empty one, which no sender posts).
fn first(v: Vec<f64>) -> f64 {
    v.first().copied().unwrap_or(0.0)
}

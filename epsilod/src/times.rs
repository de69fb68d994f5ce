//! The kernel times ALB decides on, gathered without waiting
//! (`heuristics::gather`): every period each process starts the gather of
//! its own time and advances the ones in flight by one round; the oldest
//! completes, `lag` periods after its period ended, at the same period end
//! on every process.

use crate::error::{Delivery, ProtocolError};
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
    Protocol(ProtocolError),
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
    pub(crate) fn advance<T>(
        &mut self,
        t: &mut dyn Transport<T>,
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
                                let got = t.recv_values(q, tag(&before))?;
                                check_len(&before, q, &got, 1, Delivery::Direct)?;
                                got[0]
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
    pub(crate) fn finish<T>(&mut self, t: &mut dyn Transport<T>) -> Result<(), GatherError> {
        match self.how {
            Gather::Direct => {
                if let Some((before, _, _)) = self.inflight.pop_front() {
                    let tag = Tag::Times(before.end - 1).encode();
                    for q in (0..self.procs).filter(|&q| q != self.me) {
                        let got = t.recv_values(q, tag)?;
                        check_len(&before, q, &got, 1, Delivery::Direct)?;
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
    fn next_round<T>(&mut self, t: &mut dyn Transport<T>) -> Result<Option<Gathered>, GatherError> {
        let (me, procs) = (self.me, self.procs);
        let rounds = gather::rounds(procs);
        for (p, held, done) in self.inflight.iter_mut() {
            let tag = Tag::Times(p.end - 1).encode();
            let (_, from, count) = gather::round(me, procs, *done);
            let got = t.recv_values(from, tag)?;
            check_len(p, from, &got, count, Delivery::Round(*done))?;
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

/// Errors unless a message from `from` (`how`: sent directly, or in which
/// round) holds `count` times: a process that disagrees on the schedule must not steer the
/// heuristic with made-up numbers.
fn check_len(
    period: &Range<u64>,
    from: usize,
    got: &[f64],
    count: usize,
    delivery: Delivery,
) -> Result<(), GatherError> {
    if got.len() == count {
        return Ok(());
    }
    Err(GatherError::Protocol(ProtocolError::Times {
        period: period.clone(),
        peer: from,
        got: got.len(),
        delivery,
        expected: count,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hitmap::in_process;

    /// Process `p`'s time of period `k`, distinct for every pair.
    fn value(run: usize, p: usize, k: u64) -> f64 {
        (run * 100_000 + p * 1000) as f64 + k as f64
    }

    /// `procs` processes on threads run `periods` periods of two
    /// iterations, gathering directly or along the tree, twice over the
    /// same endpoints and tags (as a restart on one communicator would):
    /// every process gets every period's row, in rank order, exactly `lag`
    /// periods after it ended, and after `finish` no message is left to be
    /// mistaken for the second run's.
    fn gathers(procs: usize, direct_up_to: usize) {
        let periods = 12u64;
        let how = Gather::of(procs, direct_up_to);
        let lag = how.lag(procs) as u64;
        let endpoints = in_process::<f32>(procs);
        std::thread::scope(|s| {
            for (me, mut t) in endpoints.into_iter().enumerate() {
                s.spawn(move || {
                    for run in 0..2 {
                        let mut g = TimesGather::new(me, procs, direct_up_to);
                        for k in 0..periods {
                            let period = 2 * k..2 * k + 2;
                            let done = g.advance(&mut t, period, value(run, me, k)).unwrap();
                            match done {
                                Some((p, row)) => {
                                    let j = k - lag;
                                    assert_eq!(p, 2 * j..2 * j + 2, "{procs} procs, period {k}");
                                    let want: Vec<f64> =
                                        (0..procs).map(|q| value(run, q, j)).collect();
                                    assert_eq!(row, want, "{procs} procs, run {run}, period {j}");
                                }
                                None => assert!(k < lag, "{procs} procs: nothing at {k}"),
                            }
                        }
                        g.finish(&mut t).unwrap();
                    }
                });
            }
        });
    }

    #[test]
    fn every_process_gets_every_row_lag_periods_late_and_nothing_is_left() {
        for procs in [1, 2, 3, 5, 8, 13] {
            gathers(procs, 32);
            gathers(procs, 1);
        }
    }

    /// A time message of the wrong length is the protocol error, naming
    /// the sender, not a time of zero.
    #[test]
    fn a_message_of_the_wrong_length_is_an_error() {
        for direct_up_to in [32, 1] {
            let mut ends = in_process::<f32>(2);
            let mut other = ends.pop().unwrap();
            let mut me = ends.pop().unwrap();
            let mut g = TimesGather::new(0, 2, direct_up_to);
            assert!(g.advance(&mut me, 0..1, 1.0).unwrap().is_none());
            other
                .send_values(0, Tag::Times(0).encode(), vec![1.0, 2.0])
                .unwrap();
            match g.advance(&mut me, 1..2, 1.0) {
                Err(GatherError::Protocol(why)) => {
                    let why = why.to_string();
                    assert!(why.contains("from 1: 2 values"), "{why}")
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

//! `--halo-depth auto`: which depth each of a run's first iterations runs
//! at, and the times measured there, from which `heuristics::depth`
//! chooses the depth for the rest of the run.
//!
//! After a short warm-up at depth 1 (first touches of memory, kernels
//! compiled at their first launch), the candidates take turns in rounds,
//! a few iterations each, so that a slow phase of a shared machine (tens
//! of slower iterations at a time) falls on every candidate rather than on
//! one; each
//! candidate is judged by its fastest period.

/// The depths tried.
pub(crate) const CANDIDATES: [usize; 4] = [1, 2, 4, 8];

/// Iterations at depth 1 first, not measured.
const WARMUP: u64 = 2;
/// Rounds over the candidates.
const ROUNDS: usize = 2;
/// Iterations of each candidate per round: whole periods of each, several
/// of the shallow ones.
const PER_ROUND: [u64; 4] = [4, 4, 4, 8];

/// The trials of one run: its first [`Trials::LENGTH`] iterations.
pub(crate) struct Trials {
    /// Per candidate, seconds per iteration of each period measured.
    times: Vec<Vec<f64>>,
}

impl Trials {
    /// Iterations the trials take.
    pub(crate) const LENGTH: u64 = WARMUP + ROUNDS as u64 * sum(&PER_ROUND);
    /// The fewest iterations a run must have for trials: they take a third.
    pub(crate) const MIN_ITERS: u64 = 3 * Self::LENGTH;

    pub(crate) fn new() -> Trials {
        Trials {
            times: vec![Vec::new(); CANDIDATES.len()],
        }
    }

    /// The candidate (index) and iterations left of the segment `done`
    /// iterations into the run lies in; `None` in the warm-up.
    fn segment(done: u64) -> Option<(usize, u64)> {
        let mut at = done.checked_sub(WARMUP)? % sum(&PER_ROUND);
        for (i, &n) in PER_ROUND.iter().enumerate() {
            if at < n {
                return Some((i, n - at));
            }
            at -= n;
        }
        None
    }

    /// The depth of the period starting `done` iterations into the run.
    pub(crate) fn depth(&self, done: u64) -> usize {
        Self::segment(done).map_or(1, |(i, _)| CANDIDATES[i])
    }

    /// The most iterations the period starting at `done` may have: it ends
    /// with its segment.
    pub(crate) fn left(&self, done: u64) -> usize {
        match Self::segment(done) {
            Some((_, left)) => left as usize,
            None => (WARMUP - done) as usize,
        }
    }

    /// The period of `len` iterations from `done` on took `wall` seconds.
    pub(crate) fn record(&mut self, done: u64, len: usize, wall: f64) {
        if let Some((i, _)) = Self::segment(done) {
            self.times[i].push(wall / len as f64);
        }
    }

    /// Whether the trials are over once `done` iterations have run.
    pub(crate) fn finished(&self, done: u64) -> bool {
        done >= Self::LENGTH
    }

    /// This process's fastest seconds per iteration at each candidate
    /// (infinite for one never measured).
    pub(crate) fn fastest(&self) -> Vec<f64> {
        self.times
            .iter()
            .map(|t| t.iter().copied().fold(f64::INFINITY, f64::min))
            .collect()
    }
}

const fn sum(v: &[u64]) -> u64 {
    let (mut s, mut i) = (0, 0);
    while i < v.len() {
        s += v[i];
        i += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule, period by period as the skeleton runs it: the
    /// warm-up, then rounds of whole periods of each candidate; every
    /// candidate measured in every round; over at `LENGTH`.
    #[test]
    fn candidates_take_turns_in_whole_periods() {
        let mut t = Trials::new();
        let (mut done, mut periods) = (0u64, Vec::new());
        while !t.finished(done) {
            let (depth, len) = (t.depth(done), t.left(done).min(t.depth(done)));
            assert!(len == depth || done < WARMUP, "a cut period at {done}");
            periods.push((done, depth));
            t.record(done, len, depth as f64 * 10.0 + done as f64);
            done += len as u64;
        }
        assert_eq!(done, Trials::LENGTH);
        let round = [1, 1, 1, 1, 2, 2, 4, 8];
        let depths: Vec<usize> = periods.iter().map(|p| p.1).collect();
        let want: Vec<usize> = [1, 1].iter().chain(&round).chain(&round).copied().collect();
        assert_eq!(depths, want);
        // Per iteration: 10 for depth 1 plus the start, the fastest of each.
        let f = t.fastest();
        assert_eq!(
            f,
            vec![
                10.0 + 2.0,
                (20.0 + 6.0) / 2.0,
                (40.0 + 10.0) / 4.0,
                (80.0 + 14.0) / 8.0
            ]
        );
    }
}

//! What each operation is over a run of cells in which every condition on
//! the global index holds or fails throughout: such conditions are found
//! per run rather than per cell, a `select` on one becomes its branch, and
//! arithmetic on known values is done once, with the same IEEE operations
//! in `T` that the rows would do cell by cell.

use super::math::Math;
use super::op::Op;
use super::parse::Func;
use std::cmp::Ordering;

/// An operation over one run of cells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Val<T> {
    /// Computed cell by cell.
    Row,
    /// The same value in every cell.
    Scalar(T),
    /// The value of an earlier operation that is computed cell by cell
    /// (a `select` whose condition is known).
    Alias(usize),
    /// The global index along the last dimension, computed cell by cell;
    /// this is its value at the run's first cell.
    Index(i64),
}

/// The run's values, and which operations its roots need.
pub(super) struct Run<T> {
    vals: Vec<Val<T>>,
    /// What the roots depend on.
    live: Vec<bool>,
    /// What is read cell by cell (the roots, operands of what is computed).
    rows: Vec<bool>,
    /// Values known for the run that a computed operation reads as a row
    /// (all but arithmetic and comparisons, which take them as they are;
    /// constants have their rows already).
    fills: Vec<(usize, T)>,
    /// Comparisons with the last global index: each one's operation and
    /// the cells over which it keeps its outcome.
    ends: Vec<(usize, usize)>,
}

impl<T: Math> Run<T> {
    pub(super) fn new() -> Run<T> {
        Run {
            vals: Vec::new(),
            live: Vec::new(),
            rows: Vec::new(),
            fills: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// The operation whose row holds `i`'s value.
    pub(super) fn source(&self, i: usize) -> usize {
        match self.vals[i] {
            Val::Alias(j) => j,
            _ => i,
        }
    }

    /// `i`'s value where it is the same in every cell.
    pub(super) fn scalar(&self, i: usize) -> Option<T> {
        match self.vals[i] {
            Val::Scalar(v) => Some(v),
            _ => None,
        }
    }

    /// The rows to fill with a value before the run is computed.
    pub(super) fn fills(&self) -> &[(usize, T)] {
        &self.fills
    }

    /// Whether `k` is computed cell by cell in this run (for its roots).
    pub(super) fn computes(&self, k: usize) -> bool {
        self.rows[k] && matches!(self.vals[k], Val::Row | Val::Index(_))
    }

    /// The values of `ops` from the cell at global index `g`, and the
    /// number of cells, at most `n`, along the last dimension over which
    /// they hold. With `hoist` false every global index is a row and no
    /// condition on it is known (array cells).
    pub(super) fn plan(
        &mut self,
        ops: &[Op<T>],
        (sums, weights): (&[Vec<usize>], &[Vec<T>]),
        roots: &[usize],
        g: &[i64],
        n: usize,
        hoist: bool,
    ) -> usize {
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        let truth = |b: bool| Val::Scalar(if b { one } else { zero });
        let last = g.len() - 1;
        self.vals.clear();
        self.ends.clear();
        for (k, op) in ops.iter().enumerate() {
            // A known operand: its value, and the global index where it is
            // the last dimension's (whose value changes along the run).
            let known = |i: usize| match self.vals[self.source(i)] {
                Val::Scalar(v) => Some((v, None)),
                Val::Index(x) => Some((index::<T>(x), Some(x))),
                _ => None,
            };
            let s = |i: usize| self.scalar(i);
            let val = match *op {
                Op::Load(_) | Op::Old2(_) => Val::Row,
                Op::Const(c) => Val::Scalar(c),
                Op::Global(_) if !hoist => Val::Row,
                Op::Global(d) if d == last => Val::Index(g[d]),
                Op::Global(d) => Val::Scalar(index::<T>(g[d])),
                Op::Neg(a) => s(a).map_or(Val::Row, |x| Val::Scalar(-x)),
                Op::Not(a) => s(a).map_or(Val::Row, |x| truth(x == zero)),
                Op::Arith(f, a, b) => match (s(a), s(b)) {
                    (Some(x), Some(y)) => Val::Scalar(f.apply(x, y)),
                    _ => Val::Row,
                },
                Op::Compare(f, a, b) => match (known(a), known(b)) {
                    (Some((x, xi)), Some((y, yi))) => {
                        // One side the last global index (both: the same
                        // index, the same comparison all along): the run
                        // ends where that index passes the other side.
                        match (xi, yi) {
                            (Some(i), None) => self.ends.push((k, until_passed(i, y, n))),
                            (None, Some(i)) => self.ends.push((k, until_passed(i, x, n))),
                            _ => {}
                        }
                        truth(f.holds(x, y))
                    }
                    _ => Val::Row,
                },
                Op::And(a, b) => match (s(a), s(b)) {
                    (Some(x), Some(y)) => truth(x != zero && y != zero),
                    _ => Val::Row,
                },
                Op::Or(a, b) => match (s(a), s(b)) {
                    (Some(x), Some(y)) => truth(x != zero || y != zero),
                    _ => Val::Row,
                },
                Op::Select(c, a, b) => match s(c) {
                    Some(c) => {
                        let chosen = if c != zero { a } else { b };
                        match s(chosen) {
                            Some(v) => Val::Scalar(v),
                            None => Val::Alias(self.source(chosen)),
                        }
                    }
                    None => Val::Row,
                },
                Op::Call1(f, a) => s(a).map_or(Val::Row, |x| {
                    Val::Scalar(match f {
                        Func::Sqrt => x.sqrt(),
                        Func::Abs => x.abs(),
                        Func::Min | Func::Max => unreachable!("two arguments"),
                    })
                }),
                Op::Call2(f, a, b) => match (s(a), s(b)) {
                    (Some(x), Some(y)) => Val::Scalar(match f {
                        Func::Min => x.min(y),
                        Func::Max => x.max(y),
                        Func::Sqrt | Func::Abs => unreachable!("one argument"),
                    }),
                    _ => Val::Row,
                },
                Op::Sum(i, tail) | Op::Weighted(i, tail) => {
                    let w = |k: usize| weights[i].get(k).copied();
                    // `((t0 + t1) + t2) + ...` where every term is known
                    // (no allocation: a plan is made per run of cells).
                    let term = |k: usize| s(sums[i][k]).map(|x| w(k).map_or(x, |w| w * x));
                    let total = (1..sums[i].len()).fold(term(0), |acc, k| Some(acc? + term(k)?));
                    match (total, tail.map(|(f, c)| (f, s(c)))) {
                        (Some(t), None) => Val::Scalar(t),
                        (Some(t), Some((f, Some(c)))) => Val::Scalar(f.apply(t, c)),
                        _ => Val::Row,
                    }
                }
            };
            self.vals.push(val);
        }
        self.mark_live(ops, sums, roots);
        self.fills.clear();
        for (k, op) in ops.iter().enumerate() {
            if !self.computes(k) || matches!(op, Op::Arith(..) | Op::Compare(..)) {
                continue;
            }
            let (vals, fills) = (&self.vals, &mut self.fills);
            op.operands(sums, |i| {
                if let (Val::Scalar(v), false) = (vals[i], matches!(ops[i], Op::Const(_))) {
                    fills.push((i, v));
                }
            });
        }
        // The run ends where a comparison the roots depend on changes.
        self.ends
            .iter()
            .filter(|&&(k, _)| self.live[k])
            .fold(n, |len, &(_, end)| len.min(end))
    }

    /// Marks what `roots` depend on: every operand of what is computed
    /// cell by cell; of a known `select`, its condition and its branch;
    /// of a known `&&` (`||`), a false (true) operand alone where one is.
    fn mark_live(&mut self, ops: &[Op<T>], sums: &[Vec<usize>], roots: &[usize]) {
        let zero = T::from_f64(0.0);
        self.live.clear();
        self.live.resize(ops.len(), false);
        self.rows.clear();
        self.rows.resize(ops.len(), false);
        for &r in roots {
            self.live[r] = true;
            let r = self.source(r);
            self.rows[r] = true;
        }
        for k in (0..ops.len()).rev() {
            if !self.live[k] {
                continue;
            }
            if self.computes(k) {
                let (vals, live, rows) = (&self.vals, &mut self.live, &mut self.rows);
                ops[k].operands(sums, |i| {
                    live[i] = true;
                    rows[match vals[i] {
                        Val::Alias(j) => j,
                        _ => i,
                    }] = true;
                });
                continue;
            }
            let (vals, live) = (&self.vals, &mut self.live);
            let s = |i: usize| match vals[i] {
                Val::Scalar(v) => Some(v),
                _ => None,
            };
            let computed = matches!(vals[k], Val::Row | Val::Index(_));
            match ops[k] {
                Op::Select(c, a, b) if !computed => {
                    let chosen = if s(c).is_some_and(|c| c != zero) {
                        a
                    } else {
                        b
                    };
                    live[c] = true;
                    live[chosen] = true;
                }
                Op::And(a, b) | Op::Or(a, b) if !computed => {
                    // The operand that decides: false for `&&`, true for `||`.
                    let decides = matches!(ops[k], Op::Or(..));
                    match [a, b]
                        .into_iter()
                        .find(|&i| s(i).map(|v| v != zero) == Some(decides))
                    {
                        Some(i) => live[i] = true,
                        None => {
                            live[a] = true;
                            live[b] = true;
                        }
                    }
                }
                _ => ops[k].operands(sums, |i| live[i] = true),
            }
        }
    }
}

/// The global index `x` as the rows compute it.
fn index<T: Math>(x: i64) -> T {
    T::from_f64(x as f64)
}

/// The cells, from global index `x` on (at most `n`), before the index
/// (rounded to `T`, which never decreases as it grows) moves from below
/// `v` to equal it, or from equal to above: every comparison with `v`
/// keeps its outcome over them.
fn until_passed<T: Math>(x: i64, v: T, n: usize) -> usize {
    let side = |i: i64| index::<T>(i).partial_cmp(&v);
    let first: Option<Ordering> = side(x);
    // `side(lo)` is `first`; `side(hi)` differs, or `hi` is past the run.
    let (mut lo, mut hi) = (x, x + n as i64);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if side(mid) == first {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (hi - x) as usize
}

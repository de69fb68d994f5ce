//! The operations an expression compiles to ([`super::rows`]), and what
//! each one's operands are.

use super::parse::{Arith, Compare, Func};

/// One operation; operands are earlier operations' indices. Conditions are
/// carried as 1 and 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Op<T> {
    /// A component of a neighbour: `Program::loads[i]`.
    Load(usize),
    Const(T),
    /// The global index along a dimension.
    Global(usize),
    /// A component of the destination's value before this step (level
    /// t-1).
    Old2(usize),
    Neg(usize),
    Arith(Arith, usize, usize),
    Compare(Compare, usize, usize),
    And(usize, usize),
    Or(usize, usize),
    Not(usize),
    Select(usize, usize, usize),
    Call1(Func, usize),
    Call2(Func, usize, usize),
    /// `(((t0 + t1) + t2) + ...) op c`: a left-to-right sum, then
    /// optionally one more operation with a last operand, in one pass
    /// (the same roundings as one operation per pass; [`super::fused`]).
    /// Its terms are `Program::sums[i]`.
    Sum(usize, Option<(Arith, usize)>),
    /// `(((w0 t0) + (w1 t1)) + ...) op c`: a left-to-right sum of terms
    /// each multiplied by a constant (1 where none, an exact identity), in
    /// one pass. Its terms are `Program::sums[i]`, its constants
    /// `Program::weights[i]`.
    Weighted(usize, Option<(Arith, usize)>),
}

impl<T> Op<T> {
    /// The operations this one reads (`sums` holds fused sums' terms).
    pub(super) fn operands(&self, sums: &[Vec<usize>], mut f: impl FnMut(usize)) {
        match *self {
            Op::Load(_) | Op::Const(_) | Op::Global(_) | Op::Old2(_) => {}
            Op::Neg(a) | Op::Not(a) | Op::Call1(_, a) => f(a),
            Op::Arith(_, a, b)
            | Op::Compare(_, a, b)
            | Op::And(a, b)
            | Op::Or(a, b)
            | Op::Call2(_, a, b) => {
                f(a);
                f(b)
            }
            Op::Select(c, a, b) => {
                f(c);
                f(a);
                f(b)
            }
            Op::Sum(i, tail) | Op::Weighted(i, tail) => {
                sums[i].iter().for_each(|&t| f(t));
                if let Some((_, c)) = tail {
                    f(c)
                }
            }
        }
    }
}

//! Expressions evaluated cell by cell on the host: the values of auxiliary
//! fields, computed once where a device holds them. The operations are the
//! row operations' ([`super::rows`]) in `T`, one cell at a time, so a field
//! is the same on every device and layout.

use super::math::Math;
use super::parse::{Expr, Func};

/// The value of `e` at global index `g`. `e` reads no grid (`u`, `old2`,
/// auxiliary fields) and no `let`, and its sizes are bound
/// (`ExprSpec::for_domain`): what the spec's `aux` definitions are once
/// parsed and bound.
///
/// # Panics
///
/// On an expression that reads the grid, a `let` or an unbound size.
pub fn value<T: Math>(e: &Expr, g: &[i64]) -> T {
    let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
    let truth = |b: bool| if b { one } else { zero };
    let v = |x: &Expr| value::<T>(x, g);
    match e {
        Expr::Num(x) => T::from_f64(*x),
        Expr::Global(d) => T::from_f64(g[*d] as f64),
        Expr::Neg(a) => -v(a),
        Expr::Not(a) => truth(v(a) == zero),
        Expr::Arith(op, a, b) => op.apply(v(a), v(b)),
        Expr::Compare(op, a, b) => truth(op.holds(v(a), v(b))),
        Expr::And(a, b) => truth(v(a) != zero && v(b) != zero),
        Expr::Or(a, b) => truth(v(a) != zero || v(b) != zero),
        // Both sides computed, as the row operations do (no side effects).
        Expr::Select(c, a, b) => {
            let (c, x, y) = (v(c), v(a), v(b));
            if c != zero {
                x
            } else {
                y
            }
        }
        Expr::Call(f, args) => match (f, &args[..]) {
            (Func::Sqrt, [a]) => v(a).sqrt(),
            (Func::Abs, [a]) => v(a).abs(),
            (Func::Min, [a, b]) => v(a).min(v(b)),
            (Func::Max, [a, b]) => v(a).max(v(b)),
            _ => unreachable!("the parser checks arities"),
        },
        Expr::Cell(..) | Expr::Old2(_) | Expr::Aux(..) | Expr::Let(_) | Expr::Size(_) => {
            unreachable!("an aux field's definition reads no grid, no let and no unbound size")
        }
    }
}

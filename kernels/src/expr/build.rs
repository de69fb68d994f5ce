//! Expression kernels written in Rust: the same IR as spec files, built
//! with operators, so an app's kernel is one Rust expression that runs on
//! the CPU and on every device dialect with the same bits.
//!
//! ```
//! use kernels::expr::build::{u, select};
//! use kernels::{ExprKernel, ExprSpec, Kernel};
//!
//! let s = u(&[-1, 0]) + u(&[1, 0]) + u(&[0, -1]) + u(&[0, 1]);
//! let update = select(s.clone().gt(0.5), s / 4.0, u(&[0, 0]));
//! let spec = ExprSpec::from_rust("clipped-2d4", vec![1, 1], vec![1, 1], update).unwrap();
//! let kernel = ExprKernel::<f32>::new(&spec);
//! assert_eq!(kernel.footprint().offsets().len(), 5);
//! ```
//!
//! Operators associate as in Rust (left to right), which is the order the
//! CPU and the generated C compute in; a value used twice (`s` above) is
//! computed once on the CPU.

use super::parse::{Arith, Compare, Expr, Func};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A real-valued expression.
#[derive(Clone, Debug, PartialEq)]
pub struct E(pub(crate) Expr);

/// A condition (from a comparison).
#[derive(Clone, Debug, PartialEq)]
pub struct Cond(pub(crate) Expr);

/// The old cell at `offset` (one entry per dimension).
pub fn u(offset: &[i64]) -> E {
    E(Expr::Cell(offset.to_vec(), 0))
}

/// The cell's global index along dimension `d` (boundary included).
pub fn g(d: usize) -> E {
    E(Expr::Global(d))
}

/// The global domain's size along dimension `d` (boundary included),
/// bound by [`ExprSpec::for_domain`](super::ExprSpec::for_domain).
pub fn n(d: usize) -> E {
    E(Expr::Size(d))
}

/// Auxiliary field number `field` (its place in the list given to
/// [`ExprSpec::with_aux`](super::ExprSpec::with_aux)) at `offset`.
pub fn aux(field: usize, offset: &[i64]) -> E {
    E(Expr::Aux(field, offset.to_vec()))
}

/// The cell one level before `u(&[0, ...])` (level t-1).
pub fn old2() -> E {
    E(Expr::Old2(0))
}

/// A literal, rounded to the cell type where used.
pub fn num(v: f64) -> E {
    E(Expr::Num(v))
}

/// `if_true` where `condition` holds, else `if_false`.
pub fn select(condition: Cond, if_true: impl Into<E>, if_false: impl Into<E>) -> E {
    E(Expr::Select(
        Box::new(condition.0),
        Box::new(if_true.into().0),
        Box::new(if_false.into().0),
    ))
}

impl From<f64> for E {
    fn from(v: f64) -> E {
        num(v)
    }
}

macro_rules! arith {
    ($tr:ident, $method:ident, $op:expr) => {
        impl<R: Into<E>> $tr<R> for E {
            type Output = E;
            fn $method(self, rhs: R) -> E {
                E(Expr::Arith($op, Box::new(self.0), Box::new(rhs.into().0)))
            }
        }
        impl $tr<E> for f64 {
            type Output = E;
            fn $method(self, rhs: E) -> E {
                E(Expr::Arith($op, Box::new(Expr::Num(self)), Box::new(rhs.0)))
            }
        }
    };
}
arith!(Add, add, Arith::Add);
arith!(Sub, sub, Arith::Sub);
arith!(Mul, mul, Arith::Mul);
arith!(Div, div, Arith::Div);

impl Neg for E {
    type Output = E;
    fn neg(self) -> E {
        E(Expr::Neg(Box::new(self.0)))
    }
}

impl E {
    fn compare(self, op: Compare, rhs: impl Into<E>) -> Cond {
        Cond(Expr::Compare(op, Box::new(self.0), Box::new(rhs.into().0)))
    }
    fn call(f: Func, args: Vec<E>) -> E {
        E(Expr::Call(f, args.into_iter().map(|a| a.0).collect()))
    }

    pub fn lt(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Lt, rhs)
    }
    pub fn le(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Le, rhs)
    }
    pub fn gt(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Gt, rhs)
    }
    pub fn ge(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Ge, rhs)
    }
    /// Equal (IEEE: NaN equals nothing).
    pub fn eq_to(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Eq, rhs)
    }
    pub fn ne_to(self, rhs: impl Into<E>) -> Cond {
        self.compare(Compare::Ne, rhs)
    }
    pub fn sqrt(self) -> E {
        E::call(Func::Sqrt, vec![self])
    }
    pub fn abs(self) -> E {
        E::call(Func::Abs, vec![self])
    }
    /// The smaller (C's `fmin`: a NaN operand yields the other).
    pub fn min(self, rhs: impl Into<E>) -> E {
        E::call(Func::Min, vec![self, rhs.into()])
    }
    /// The larger (C's `fmax`).
    pub fn max(self, rhs: impl Into<E>) -> E {
        E::call(Func::Max, vec![self, rhs.into()])
    }
}

impl Cond {
    pub fn and(self, rhs: Cond) -> Cond {
        Cond(Expr::And(Box::new(self.0), Box::new(rhs.0)))
    }
    pub fn or(self, rhs: Cond) -> Cond {
        Cond(Expr::Or(Box::new(self.0), Box::new(rhs.0)))
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Cond {
        Cond(Expr::Not(Box::new(self.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Dialect;
    use crate::{ExprKernel, ExprSpec, Kernel};

    #[test]
    fn rust_and_spec_text_build_the_same_kernel() {
        let text = ExprSpec::from_toml(
            "name = \"k\"\nlow = [1, 1]\nhigh = [1, 1]\nupdate = \"select(u[0,0] > 0.5 && !(u[1,0] <= -1), sqrt(abs(u[-1,0] - 2 * u[0,1])) / 3, min(u[0,-1], 0.25) + max(-u[1,1], 1))\"\n",
            "k.toml",
        )
        .unwrap();
        let cond = u(&[0, 0]).gt(0.5).and(u(&[1, 0]).le(-num(1.0)).not());
        let a = (u(&[-1, 0]) - 2.0 * u(&[0, 1])).abs().sqrt() / 3.0;
        let b = u(&[0, -1]).min(0.25) + (-u(&[1, 1])).max(1.0);
        let rust = ExprSpec::from_rust("k", vec![1, 1], vec![1, 1], select(cond, a, b)).unwrap();
        assert_eq!(rust.update, text.update);
        for d in Dialect::ALL {
            assert_eq!(
                ExprKernel::<f32>::new(&rust)
                    .device_kernel()
                    .unwrap()
                    .source(d),
                ExprKernel::<f32>::new(&text)
                    .device_kernel()
                    .unwrap()
                    .source(d)
            );
        }
    }

    #[test]
    fn reads_outside_the_boundary_are_refused() {
        let e = ExprSpec::from_rust("far", vec![1], vec![1], u(&[2]) * 0.5).unwrap_err();
        assert!(
            e.to_string()
                .contains("u[2] reaches past low = [1], high = [1]"),
            "{e}"
        );
        let e = ExprSpec::from_rust("d", vec![1, 1], vec![1, 1], u(&[0]) + 1.0).unwrap_err();
        assert!(e.to_string().contains("2 offsets"), "{e}");
        assert!(ExprSpec::from_rust("k", vec![1], vec![1], num(1.0)).is_err());
        let k = ExprKernel::<f64>::new(
            &ExprSpec::from_rust("ok", vec![1], vec![1], u(&[1]) - u(&[-1])).unwrap(),
        );
        assert_eq!(k.footprint().offsets(), &[vec![-1], vec![1]]);
    }
}

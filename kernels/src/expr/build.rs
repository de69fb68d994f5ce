//! Expression kernels written in Rust: the same IR as spec files, built
//! with operators, so an app's kernel is one Rust expression that runs on
//! the CPU and on every device dialect with the same bits.
//!
//! ```
//! use kernels::expr::build::{u, select};
//! use kernels::{ExprKernel, ExprSpec, Kernel};
//!
//! let s = u(&[-1, 0]) + u(&[1, 0]) + u(&[0, -1]) + u(&[0, 1]);
//! let update = select(s.gt(0.5), s / 4.0, u(&[0, 0]));
//! let spec = ExprSpec::from_rust("clipped-2d4", vec![1, 1], vec![1, 1], update).unwrap();
//! let kernel = ExprKernel::<f32>::new(&spec);
//! assert_eq!(kernel.footprint().offsets().len(), 5);
//! ```
//!
//! Operators associate as in Rust (left to right), which is the order the
//! CPU and the generated C compute in; a value used twice (`s` above) is
//! computed once on the CPU. Expressions are small `Copy` handles to nodes
//! kept once each (equal nodes share one handle), so a term is reused by
//! naming it again.

use super::parse::{Arith, Compare, Expr, Func};
use std::collections::HashMap;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// A real-valued expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct E(Id);

/// A condition (from a comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cond(Id);

/// A node's place in the [`Nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Id(u32);

/// One node of an expression, its operands by handle. Numbers are kept
/// by their bits so that nodes can be compared and hashed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Num(u64),
    Cell(Vec<i64>),
    Global(usize),
    Size(usize),
    Aux(usize, Vec<i64>),
    Old2,
    Neg(Id),
    Arith(Arith, Id, Id),
    Compare(Compare, Id, Id),
    And(Id, Id),
    Or(Id, Id),
    Not(Id),
    Select(Id, Id, Id),
    Call(Func, Vec<Id>),
}

/// Every node built in this process, each once: a handle stays valid for
/// the life of the process, and building the same expression again adds
/// nothing.
#[derive(Default)]
struct Nodes {
    all: Vec<Node>,
    ids: HashMap<Node, Id>,
}

static NODES: LazyLock<Mutex<Nodes>> = LazyLock::new(Mutex::default);

/// The nodes, locked. A panic elsewhere cannot leave them half-written
/// (a node is pushed and indexed together), so a poisoned lock is used
/// as it is.
fn nodes() -> MutexGuard<'static, Nodes> {
    NODES.lock().unwrap_or_else(|e| e.into_inner())
}

fn add(node: Node) -> Id {
    let mut n = nodes();
    if let Some(&id) = n.ids.get(&node) {
        return id;
    }
    let id = Id(u32::try_from(n.all.len()).expect("fewer than 2^32 expression nodes"));
    n.all.push(node.clone());
    n.ids.insert(node, id);
    id
}

impl Nodes {
    /// The tree under `id`, as the parser would have built it.
    fn tree(&self, id: Id) -> Expr {
        let t = |i: &Id| Box::new(self.tree(*i));
        match &self.all[id.0 as usize] {
            Node::Num(bits) => Expr::Num(f64::from_bits(*bits)),
            Node::Cell(o) => Expr::Cell(o.clone(), 0),
            Node::Global(d) => Expr::Global(*d),
            Node::Size(d) => Expr::Size(*d),
            Node::Aux(i, o) => Expr::Aux(*i, o.clone()),
            Node::Old2 => Expr::Old2(0),
            Node::Neg(a) => Expr::Neg(t(a)),
            Node::Arith(op, a, b) => Expr::Arith(*op, t(a), t(b)),
            Node::Compare(op, a, b) => Expr::Compare(*op, t(a), t(b)),
            Node::And(a, b) => Expr::And(t(a), t(b)),
            Node::Or(a, b) => Expr::Or(t(a), t(b)),
            Node::Not(a) => Expr::Not(t(a)),
            Node::Select(c, a, b) => Expr::Select(t(c), t(a), t(b)),
            Node::Call(f, args) => Expr::Call(*f, args.iter().map(|a| self.tree(*a)).collect()),
        }
    }
}

impl E {
    /// The expression as a tree of the spec language.
    pub(crate) fn expr(self) -> Expr {
        nodes().tree(self.0)
    }
}

/// The old cell at `offset` (one entry per dimension).
pub fn u(offset: &[i64]) -> E {
    E(add(Node::Cell(offset.to_vec())))
}

/// The cell's global index along dimension `d` (boundary included).
pub fn g(d: usize) -> E {
    E(add(Node::Global(d)))
}

/// The global domain's size along dimension `d` (boundary included),
/// bound by [`ExprSpec::for_domain`](super::ExprSpec::for_domain).
pub fn n(d: usize) -> E {
    E(add(Node::Size(d)))
}

/// Auxiliary field number `field` (its place in the list given to
/// [`ExprSpec::with_aux`](super::ExprSpec::with_aux)) at `offset`.
pub fn aux(field: usize, offset: &[i64]) -> E {
    E(add(Node::Aux(field, offset.to_vec())))
}

/// The cell one level before `u(&[0, ...])` (level t-1).
pub fn old2() -> E {
    E(add(Node::Old2))
}

/// A literal, rounded to the cell type where used.
pub fn num(v: f64) -> E {
    E(add(Node::Num(v.to_bits())))
}

/// `if_true` where `condition` holds, else `if_false`.
pub fn select(condition: Cond, if_true: impl Into<E>, if_false: impl Into<E>) -> E {
    E(add(Node::Select(
        condition.0,
        if_true.into().0,
        if_false.into().0,
    )))
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
                E(add(Node::Arith($op, self.0, rhs.into().0)))
            }
        }
        impl $tr<E> for f64 {
            type Output = E;
            fn $method(self, rhs: E) -> E {
                E(add(Node::Arith($op, num(self).0, rhs.0)))
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
        E(add(Node::Neg(self.0)))
    }
}

impl E {
    fn compare(self, op: Compare, rhs: impl Into<E>) -> Cond {
        Cond(add(Node::Compare(op, self.0, rhs.into().0)))
    }
    fn call(f: Func, args: &[E]) -> E {
        E(add(Node::Call(f, args.iter().map(|a| a.0).collect())))
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
        E::call(Func::Sqrt, &[self])
    }
    pub fn abs(self) -> E {
        E::call(Func::Abs, &[self])
    }
    /// The smaller (C's `fmin`: a NaN operand yields the other).
    pub fn min(self, rhs: impl Into<E>) -> E {
        E::call(Func::Min, &[self, rhs.into()])
    }
    /// The larger (C's `fmax`).
    pub fn max(self, rhs: impl Into<E>) -> E {
        E::call(Func::Max, &[self, rhs.into()])
    }
}

impl Cond {
    pub fn and(self, rhs: Cond) -> Cond {
        Cond(add(Node::And(self.0, rhs.0)))
    }
    pub fn or(self, rhs: Cond) -> Cond {
        Cond(add(Node::Or(self.0, rhs.0)))
    }
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Cond {
        Cond(add(Node::Not(self.0)))
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
    fn a_term_is_reused_by_naming_it_again() {
        let c = u(&[0]);
        let k = num(0.25);
        let rust = ExprSpec::from_rust("r", vec![1], vec![1], k * (c - u(&[-1])) + c * c).unwrap();
        let text = ExprSpec::from_toml(
            "name = \"r\"\nlow = [1]\nhigh = [1]\nupdate = \"0.25 * (u[0] - u[-1]) + u[0] * u[0]\"\n",
            "r.toml",
        )
        .unwrap();
        assert_eq!(rust.update, text.update);
        // Equal expressions are one node, whoever builds them.
        assert_eq!(u(&[0]), c);
        assert_ne!(num(0.0), num(-0.0));
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

//! Weighted stencils as formulas: neighbours, numbers, sums, products and
//! quotients, with the grouping and precision EPSILOD's reference states.
//! A library stencil is written once as a formula; its weights, its device
//! code and the checks of its specialised CPU kernel all come from it.

use crate::cell::Real;
use crate::spec::StencilSpec;
use std::collections::BTreeMap;

/// A weighted stencil's update, in the order it is evaluated. Unlike an
/// expression kernel's [`Expr`](crate::expr::Expr), a formula keeps the
/// reference's groups (a sum is one parenthesised group) and its step into
/// double precision, which the generated C spells out as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Formula {
    /// The old cell at an offset from the cell being computed.
    At(Vec<i64>),
    /// A number, in the precision of what it is combined with.
    Num(f64),
    /// A left-to-right sum, from the first term.
    Sum(Vec<Formula>),
    /// `a * b`.
    Mul(Box<Formula>, Box<Formula>),
    /// `a / b`.
    Div(Box<Formula>, Box<Formula>),
    /// The operand, computed in the cell type, widened to double:
    /// everything combined with it computes in double, and the update is
    /// rounded back to the cell type.
    Double(Box<Formula>),
}

/// A value while evaluating: in the cell type, or widened.
#[derive(Clone, Copy)]
enum Value<T> {
    Cell(T),
    Double(f64),
}

impl<T: Real> Value<T> {
    fn wide(self) -> f64 {
        match self {
            Value::Cell(v) => v.to_f64(),
            Value::Double(v) => v,
        }
    }
}

impl Formula {
    /// The old cell at `offset`.
    pub fn at(offset: &[i64]) -> Formula {
        Formula::At(offset.to_vec())
    }

    /// A sum of `terms`, in order.
    pub fn sum(terms: impl IntoIterator<Item = Formula>) -> Formula {
        Formula::Sum(terms.into_iter().collect())
    }

    /// `weight * self`.
    pub fn times(self, weight: f64) -> Formula {
        Formula::Mul(Box::new(Formula::Num(weight)), Box::new(self))
    }

    /// `self / divisor`.
    pub fn over(self, divisor: f64) -> Formula {
        Formula::Div(Box::new(self), Box::new(Formula::Num(divisor)))
    }

    /// `self` widened to double ([`Formula::Double`]).
    pub fn in_double(self) -> Formula {
        Formula::Double(Box::new(self))
    }

    /// The generic kernel's formula: weights times neighbours in
    /// lexicographic order, from the first term, divided by the factor.
    pub fn weighted(spec: &StencilSpec) -> Formula {
        Formula::sum(
            spec.terms()
                .into_iter()
                .map(|(o, w)| Formula::Mul(Box::new(Formula::Num(w)), Box::new(Formula::At(o)))),
        )
        .over(spec.factor)
    }

    /// Whether anything in the formula computes in double.
    pub fn is_double(&self) -> bool {
        match self {
            Formula::At(_) | Formula::Num(_) => false,
            Formula::Double(_) => true,
            Formula::Sum(v) => v.iter().any(Formula::is_double),
            Formula::Mul(a, b) | Formula::Div(a, b) => a.is_double() || b.is_double(),
        }
    }

    /// The formula as a weighted stencil named `name`: a linear sum
    /// divided by a number, its boundary as wide as its reads reach.
    ///
    /// # Panics
    ///
    /// On a formula that is not `sum / number` with number weights.
    pub(crate) fn spec(&self, name: &str) -> StencilSpec {
        let Formula::Div(sum, factor) = self else {
            panic!("a weighted formula is a sum over a number")
        };
        let Formula::Num(factor) = **factor else {
            panic!("a weighted formula's divisor is a number")
        };
        let mut weights = BTreeMap::new();
        sum.linear(1.0, &mut |o, w| {
            *weights.entry(o.to_vec()).or_insert(0.0) += w
        });
        let nd = weights.keys().next().map_or(0, Vec::len);
        let reach = |d: usize, sign: i64| {
            weights
                .keys()
                .map(|o| (sign * o[d]).max(0))
                .max()
                .unwrap_or(0) as usize
        };
        let low = (0..nd).map(|d| reach(d, -1)).collect();
        let high = (0..nd).map(|d| reach(d, 1)).collect();
        StencilSpec::from_fn(name, low, high, factor, |o| {
            weights.get(o).copied().unwrap_or(0.0)
        })
        .expect("a formula's reads lie inside the boundary they set")
    }

    /// Calls `f` with every read and its weight, `scale` times the
    /// products around it.
    fn linear(&self, scale: f64, f: &mut impl FnMut(&[i64], f64)) {
        match self {
            Formula::At(o) => f(o, scale),
            Formula::Sum(v) => v.iter().for_each(|t| t.linear(scale, f)),
            Formula::Mul(a, b) => match (&**a, &**b) {
                (Formula::Num(w), x) | (x, Formula::Num(w)) => x.linear(scale * w, f),
                _ => panic!("a weighted formula multiplies by numbers only"),
            },
            Formula::Div(a, b) => match **b {
                Formula::Num(w) => a.linear(scale / w, f),
                _ => panic!("a weighted formula divides by numbers only"),
            },
            Formula::Double(a) => a.linear(scale, f),
            Formula::Num(_) => panic!("a weighted formula adds no constants"),
        }
    }

    /// The update of one cell, computed as the device code and the
    /// specialised kernels compute it: `read` gives the old cell at an
    /// offset.
    ///
    /// # Panics
    ///
    /// On an empty sum.
    pub fn value<T: Real>(&self, read: &dyn Fn(&[i64]) -> T) -> T {
        match self.eval(read, self.is_double()) {
            Value::Cell(v) => v,
            Value::Double(v) => T::from_f64(v),
        }
    }

    /// `wide`: the formula around this node computes in double, so a
    /// number here is a double.
    fn eval<T: Real>(&self, read: &dyn Fn(&[i64]) -> T, wide: bool) -> Value<T> {
        let pair = |a: &Formula, b: &Formula| {
            let wide = a.is_double() || b.is_double();
            (a.eval(read, wide), b.eval(read, wide))
        };
        let arith = |x: Value<T>, y: Value<T>, op: fn(T, T) -> T, wide_op: fn(f64, f64) -> f64| {
            match (x, y) {
                (Value::Cell(x), Value::Cell(y)) => Value::Cell(op(x, y)),
                _ => Value::Double(wide_op(x.wide(), y.wide())),
            }
        };
        match self {
            Formula::At(o) => Value::Cell(read(o)),
            Formula::Num(v) if wide => Value::Double(*v),
            Formula::Num(v) => Value::Cell(T::from_f64(*v)),
            Formula::Sum(terms) => {
                let wide = self.is_double();
                let mut it = terms.iter().map(|t| t.eval(read, wide));
                let first = it.next().expect("a sum has terms");
                it.fold(first, |s, t| arith(s, t, |a, b| a + b, |a, b| a + b))
            }
            Formula::Mul(a, b) => {
                let (x, y) = pair(a, b);
                arith(x, y, |a, b| a * b, |a, b| a * b)
            }
            Formula::Div(a, b) => {
                let (x, y) = pair(a, b);
                arith(x, y, |a, b| a / b, |a, b| a / b)
            }
            Formula::Double(a) => Value::Double(a.eval(read, false).wide()),
        }
    }
}

//! The numbers expression kernels compute in: [`Math`], the arithmetic
//! beyond [`Real`] (f32, f64), and [`ExprCell`], a cell of one or of N of
//! them. Apart because the row operations and the kernel both build on it.

use crate::cell::Real;
use std::ops::{Neg, Sub};

/// The arithmetic expression kernels need beyond [`Real`].
pub trait Math: Real + Sub<Output = Self> + Neg<Output = Self> {
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    /// The smaller; the other where one is NaN (C's `fmin`).
    fn min(self, other: Self) -> Self;
    /// The larger; the other where one is NaN (C's `fmax`).
    fn max(self, other: Self) -> Self;
}

macro_rules! math {
    ($t:ty) => {
        impl Math for $t {
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
        }
    };
}
math!(f32);
math!(f64);

/// A cell an expression kernel computes: one real (`f32`, `f64`), or an
/// array of them (`[f32; 19]`) for specs with `cell = N`.
pub trait ExprCell: crate::cell::Cell {
    /// The type each component computes in.
    type Real: Math;
    /// `None` for a scalar cell; the component count of an array cell.
    const COMPONENTS: Option<usize>;
}

impl<T: Math> ExprCell for T {
    type Real = T;
    const COMPONENTS: Option<usize> = None;
}

impl<T: Math, const N: usize> ExprCell for [T; N] {
    type Real = T;
    const COMPONENTS: Option<usize> = Some(N);
}

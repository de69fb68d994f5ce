//! What a grid can hold.

use crate::device::DeviceScalar;
use std::fmt::Debug;
use std::ops::{Add, Div, Mul};

/// A grid cell: plain old data (so it can travel as bytes and be written raw),
/// shareable between threads. f32, f64 and `[f32; 19]` all qualify.
pub trait Cell: bytemuck::Pod + Send + Sync + PartialEq + Debug {}
impl<T: bytemuck::Pod + Send + Sync + PartialEq + Debug> Cell for T {}

/// A floating-point cell, for weighted stencils. Every one can also be
/// computed on devices ([`DeviceScalar`]), so any weighted stencil has
/// device code.
pub trait Real:
    Cell + DeviceScalar + PartialOrd + Add<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    /// The value widened (exactly) to f64.
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

//! What a grid can hold.

use std::fmt::Debug;
use std::ops::{Add, Div, Mul};

/// A grid cell: plain old data (so it can travel as bytes and be written raw),
/// shareable between threads. f32, f64 and `[f32; 19]` all qualify.
pub trait Cell: bytemuck::Pod + Send + Sync + PartialEq + Debug {}
impl<T: bytemuck::Pod + Send + Sync + PartialEq + Debug> Cell for T {}

/// A floating-point cell, for weighted stencils.
pub trait Real:
    Cell + PartialOrd + Add<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// The C type name, for generated device code.
    const C_NAME: &'static str;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    const C_NAME: &'static str = "float";
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    const C_NAME: &'static str = "double";
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

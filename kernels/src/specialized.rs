//! Hand-specialised kernels for the library stencils, each evaluating in
//! exactly the order of reference.md §1 so results are bit-identical to
//! EPSILOD's. Rust never fuses multiply-adds, and sums here are written left
//! to right as the reference states them.

use crate::cell::Real;
use crate::frame::Frame;
use crate::kernel::{sweep, Kernel};
use crate::library::Library;
use hitmap::Footprint;
use std::marker::PhantomData;
use std::ops::Range;

pub struct Specialized<T> {
    lib: Library,
    footprint: Footprint,
    _cell: PhantomData<fn() -> T>,
}

impl<T: Real> Specialized<T> {
    pub fn new(lib: Library) -> Specialized<T> {
        Specialized {
            lib,
            footprint: lib.spec().footprint(),
            _cell: PhantomData,
        }
    }
}

/// The offsets as element distances in `frame`.
fn linear_offsets<const N: usize, const K: usize>(
    frame: &Frame,
    offs: [[i64; N]; K],
) -> [isize; K] {
    offs.map(|o| frame.linear(&o))
}

/// Unit offsets along every axis, in `axis(k)` order: dimension 0 below,
/// above, dimension 1 below, above, ...
fn axis<const N: usize, const K: usize>(k: i64) -> [[i64; N]; K] {
    std::array::from_fn(|i| {
        let mut o = [0; N];
        o[i / 2] = if i % 2 == 0 { -k } else { k };
        o
    })
}

/// Constants are written inside the kernels' closures, not captured, so they
/// are compile-time values in the row loop (`/ 4` becomes an exact `* 0.25`).
#[inline(always)]
fn constant<T: Real>(v: f64) -> T {
    T::from_f64(v)
}

#[inline(always)]
fn sum<T: Real, const K: usize>(x: &[T]) -> T {
    x[1..].iter().fold(x[0], |a, &b| a + b)
}

impl<T: Real> Kernel<T> for Specialized<T> {
    fn name(&self) -> &str {
        self.lib.name()
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn device_kernel(&self) -> Option<crate::DeviceKernel> {
        Some(crate::device::exprs::library::<T>(self.lib))
    }

    fn apply(&self, src: &[T], dst: &mut [T], frame: &Frame, region: &[Range<usize>]) {
        match self.lib {
            Library::S1dc2 => sweep(
                src,
                dst,
                frame,
                region,
                linear_offsets(frame, axis::<1, 2>(1)),
                |x| (x[0] + x[1]) / constant(2.0),
            ),
            Library::S2d4 => sweep(
                src,
                dst,
                frame,
                region,
                linear_offsets(frame, axis::<2, 4>(1)),
                |x| (x[0] + x[1] + x[2] + x[3]) / constant(4.0),
            ),
            Library::S3d6 => sweep(
                src,
                dst,
                frame,
                region,
                linear_offsets(frame, axis::<3, 6>(1)),
                |x| sum::<T, 6>(&x) / constant(6.0),
            ),
            Library::S4d8 => sweep(
                src,
                dst,
                frame,
                region,
                linear_offsets(frame, axis::<4, 8>(1)),
                |x| sum::<T, 8>(&x) / constant(8.0),
            ),
            Library::S1dnc4 => {
                let offs = linear_offsets(frame, [[-2], [2], [-1], [1]]);
                sweep(src, dst, frame, region, offs, |x| {
                    T::from_f64(
                        (0.5 * (x[0] + x[1]).to_f64() + x[2].to_f64() + x[3].to_f64()) / 3.0,
                    )
                })
            }
            Library::S2d8 => {
                let a: [[i64; 2]; 4] = axis(1);
                let offs = [a[0], a[1], a[2], a[3], [-1, -1], [1, -1], [-1, 1], [1, 1]];
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    (constant::<T>(4.0) * (x[0] + x[1] + x[2] + x[3]) + (x[4] + x[5] + x[6] + x[7]))
                        / constant(20.0)
                })
            }
            Library::S2dnc8 => {
                let (a2, a1): ([[i64; 2]; 4], [[i64; 2]; 4]) = (axis(2), axis(1));
                let offs = [a2[0], a2[1], a2[2], a2[3], a1[0], a1[1], a1[2], a1[3]];
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    ((x[0] + x[1] + x[2] + x[3]) + constant::<T>(4.0) * (x[4] + x[5] + x[6] + x[7]))
                        / constant(20.0)
                })
            }
            Library::S3dnc12 => {
                let (a2, a1): ([[i64; 3]; 6], [[i64; 3]; 6]) = (axis(2), axis(1));
                let offs: [[i64; 3]; 12] =
                    std::array::from_fn(|i| if i < 6 { a2[i] } else { a1[i - 6] });
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    (sum::<T, 6>(&x[..6]) + constant::<T>(6.0) * sum::<T, 6>(&x[6..]))
                        / constant(42.0)
                })
            }
            Library::S2df5 => {
                let offs = [[-1, 0], [0, -1], [-2, 0], [0, -2], [-1, -1]];
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    (constant::<T>(2.0) * (x[0] + x[1]) + (x[2] + x[3]) + constant::<T>(0.5) * x[4])
                        / constant(6.5)
                })
            }
            Library::S3df7 => {
                let offs = [
                    [-1, 0, 0],
                    [0, -1, 0],
                    [0, 0, -1],
                    [-2, 0, 0],
                    [0, -2, 0],
                    [0, 0, -2],
                    [-1, -1, -1],
                ];
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    (constant::<T>(2.0) * (x[0] + x[1] + x[2])
                        + x[3]
                        + x[4]
                        + x[5]
                        + constant::<T>(0.5) * x[6])
                        / constant(9.5)
                })
            }
            Library::S3d27 => {
                let offs: [[i64; 3]; 27] = std::array::from_fn(|k| {
                    [k as i64 / 9 - 1, (k as i64 / 3) % 3 - 1, k as i64 % 3 - 1]
                });
                sweep(src, dst, frame, region, linear_offsets(frame, offs), |x| {
                    sum::<T, 27>(&x) / constant(27.0)
                })
            }
        }
    }
}

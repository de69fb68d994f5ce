//! The generic weighted kernel: any `StencilSpec`, any real cell type.

use crate::cell::Real;
use crate::frame::{for_each_row, Frame};
use crate::kernel::Kernel;
use crate::spec::StencilSpec;
use hitmap::Footprint;
use std::ops::Range;

/// `sum(w * x) / factor` over the non-zero weights in lexicographic offset
/// order, the sum starting from the first term. May differ from the
/// specialised kernels in the last bits (a different evaluation order).
pub struct Generic<T> {
    name: String,
    spec: StencilSpec,
    footprint: Footprint,
    terms: Vec<(Vec<i64>, T)>,
    factor: T,
    /// `1 / factor` when that is exact (a power of two well inside the range
    /// of T): then `x * recip` is bit-identical to `x / factor`, and cheaper.
    recip: Option<T>,
}

impl<T: Real> Generic<T> {
    pub fn new(spec: &StencilSpec) -> Generic<T> {
        Generic {
            name: spec.name.clone(),
            spec: spec.clone(),
            footprint: spec.footprint(),
            terms: spec
                .terms()
                .into_iter()
                .map(|(o, w)| (o, T::from_f64(w)))
                .collect(),
            factor: T::from_f64(spec.factor),
            recip: exact_reciprocal(spec.factor).map(T::from_f64),
        }
    }
}

pub(crate) fn exact_reciprocal(f: f64) -> Option<f64> {
    let power_of_two = f.is_normal() && f.to_bits() & ((1u64 << 52) - 1) == 0;
    (power_of_two && f.abs() >= 2f64.powi(-60) && f.abs() <= 2f64.powi(60)).then(|| 1.0 / f)
}

impl<T: Real> Kernel<T> for Generic<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn device_kernel(&self) -> Option<crate::DeviceKernel> {
        Some(crate::device::exprs::generic::<T>(&self.spec))
    }

    fn apply(&self, src: &[T], dst: &mut [T], frame: &Frame, region: &[Range<usize>]) {
        let terms: Vec<(isize, T)> = self
            .terms
            .iter()
            .map(|(o, w)| (frame.linear(o), *w))
            .collect();
        let (factor, recip) = (self.factor, self.recip);
        for_each_row(frame, region, |s, d, len| {
            weighted_row(&mut dst[d..d + len], src, s, &terms, factor, recip);
        });
    }
}

/// Few passes over the row, each a vectorisable loop over contiguous slices
/// adding up to four terms, strictly in term order (so the result is the same
/// as adding one term at a time). `out` is an argument of its own so the
/// compiler knows it does not alias `src` (see `kernel::row`).
#[inline(never)]
fn weighted_row<T: Real>(
    out: &mut [T],
    src: &[T],
    s: usize,
    terms: &[(isize, T)],
    factor: T,
    recip: Option<T>,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: `weighted_row_avx2` only requires AVX2, which the CPU was just found to have.
        return unsafe { weighted_row_avx2(out, src, s, terms, factor, recip) };
    }
    weighted_row_body(out, src, s, terms, factor, recip)
}

/// See `kernel::row_avx2`: wider vectors, same arithmetic.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn weighted_row_avx2<T: Real>(
    out: &mut [T],
    src: &[T],
    s: usize,
    terms: &[(isize, T)],
    factor: T,
    recip: Option<T>,
) {
    weighted_row_body(out, src, s, terms, factor, recip)
}

#[inline(always)]
fn weighted_row_body<T: Real>(
    out: &mut [T],
    src: &[T],
    s: usize,
    terms: &[(isize, T)],
    factor: T,
    recip: Option<T>,
) {
    let len = out.len();
    let row = |off: isize| {
        let start = (s as isize + off) as usize;
        &src[start..start + len]
    };
    let mut groups = terms.chunks_exact(4);
    let mut first = true;
    for q in groups.by_ref() {
        let (a, b, c, d) = (row(q[0].0), row(q[1].0), row(q[2].0), row(q[3].0));
        let (wa, wb, wc, wd) = (q[0].1, q[1].1, q[2].1, q[3].1);
        let quad = out.iter_mut().zip(a).zip(b).zip(c).zip(d);
        if first {
            for ((((o, xa), xb), xc), xd) in quad {
                *o = wa * *xa + wb * *xb + wc * *xc + wd * *xd;
            }
        } else {
            for ((((o, xa), xb), xc), xd) in quad {
                *o = *o + wa * *xa + wb * *xb + wc * *xc + wd * *xd;
            }
        }
        first = false;
    }
    for &(off, w) in groups.remainder() {
        if first {
            out.iter_mut().zip(row(off)).for_each(|(o, x)| *o = w * *x);
        } else {
            out.iter_mut()
                .zip(row(off))
                .for_each(|(o, x)| *o = *o + w * *x);
        }
        first = false;
    }
    match recip {
        Some(r) => out.iter_mut().for_each(|o| *o = *o * r),
        None => out.iter_mut().for_each(|o| *o = *o / factor),
    }
}

#[cfg(test)]
mod tests {
    use super::exact_reciprocal;

    #[test]
    fn reciprocal_only_for_powers_of_two() {
        assert_eq!(exact_reciprocal(4.0), Some(0.25));
        assert_eq!(exact_reciprocal(-0.5), Some(-2.0));
        assert_eq!(exact_reciprocal(6.0), None);
        assert_eq!(exact_reciprocal(27.0), None);
        assert_eq!(exact_reciprocal(f64::MIN_POSITIVE), None);
        // Division by 8 and multiplication by 1/8 agree bit for bit.
        for x in [1.1f32, 3.0e-38, 7.7e37, -0.3] {
            assert_eq!((x / 8.0).to_bits(), (x * 0.125).to_bits());
        }
    }
}

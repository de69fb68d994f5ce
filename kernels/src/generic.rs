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
    footprint: Footprint,
    terms: Vec<(Vec<i64>, T)>,
    factor: T,
}

impl<T: Real> Generic<T> {
    pub fn new(spec: &StencilSpec) -> Generic<T> {
        Generic {
            name: spec.name.clone(),
            footprint: spec.footprint(),
            terms: spec
                .terms()
                .into_iter()
                .map(|(o, w)| (o, T::from_f64(w)))
                .collect(),
            factor: T::from_f64(spec.factor),
        }
    }
}

impl<T: Real> Kernel<T> for Generic<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn apply(&self, src: &[T], dst: &mut [T], frame: &Frame, region: &[Range<usize>]) {
        let terms: Vec<(isize, T)> = self
            .terms
            .iter()
            .map(|(o, w)| (frame.linear(o), *w))
            .collect();
        let factor = self.factor;
        // One pass per term over the row keeps each inner loop a plain
        // vectorisable multiply-add over contiguous slices, in term order.
        for_each_row(frame, region, |s, d, len| {
            let out = &mut dst[d..d + len];
            let row = |off: isize| {
                let start = (s as isize + off) as usize;
                &src[start..start + len]
            };
            let (o0, w0) = terms[0];
            for (o, x) in out.iter_mut().zip(row(o0)) {
                *o = w0 * *x;
            }
            for &(off, w) in &terms[1..] {
                for (o, x) in out.iter_mut().zip(row(off)) {
                    *o = *o + w * *x;
                }
            }
            for o in out.iter_mut() {
                *o = *o / factor;
            }
        });
    }
}

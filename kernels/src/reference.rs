//! The naive serial reference: one global array, one cell at a time, every
//! neighbour looked up by its global index. Slow on purpose and obviously
//! correct; tests compare every other path against it.

use crate::cell::Real;
use crate::library::Library;
use crate::spec::StencilSpec;
use hitmap::Shape;
use ndarray::{ArrayD, IxDyn};

/// Reads the neighbour at an offset from the cell being computed.
pub type Neighbour<'a, T> = &'a dyn Fn(&[i64]) -> T;

/// Runs `iters` iterations of `cell` on a `sizes` grid whose `low`/`high`
/// boundary keeps its initial values.
pub fn run<T: Copy>(
    sizes: &[usize],
    low: &[usize],
    high: &[usize],
    iters: usize,
    init: impl Fn(&[i64]) -> T,
    cell: impl Fn(Neighbour<'_, T>) -> T,
) -> ArrayD<T> {
    let all = Shape::from_sizes(sizes);
    let mut cur: Vec<T> = all.iter().map(|g| init(&g)).collect();
    let mut next = cur.clone();
    // Row-major strides: the index of (i0, i1, ...) is sum(i_d * stride_d).
    let mut stride = vec![1i64; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * sizes[d + 1] as i64;
    }
    let interior = Shape::from_ranges(
        &(0..sizes.len())
            .map(|d| (low[d] as i64, sizes[d] as i64 - high[d] as i64))
            .collect::<Vec<_>>(),
    );
    for _ in 0..iters {
        for idx in interior.iter() {
            let at: i64 = idx.iter().zip(&stride).map(|(i, s)| i * s).sum();
            let x = |o: &[i64]| {
                let off: i64 = o.iter().zip(&stride).map(|(o, s)| o * s).sum();
                cur[(at + off) as usize]
            };
            next[at as usize] = cell(&x);
        }
        std::mem::swap(&mut cur, &mut next);
    }
    ArrayD::from_shape_vec(IxDyn(sizes), cur).expect("the grid has the product of sizes cells")
}

/// reference.md §1's evaluation order for each library stencil, written out.
pub fn library_formula(lib: Library) -> fn(Neighbour<'_, f32>) -> f32 {
    match lib {
        Library::S1dc2 => |x| (x(&[-1]) + x(&[1])) / 2.0,
        Library::S1dnc4 => |x| {
            ((0.5 * (x(&[-2]) + x(&[2])) as f64 + x(&[-1]) as f64 + x(&[1]) as f64) / 3.0) as f32
        },
        Library::S2d4 => |x| (x(&[-1, 0]) + x(&[1, 0]) + x(&[0, -1]) + x(&[0, 1])) / 4.0,
        Library::S2d8 => |x| {
            (4.0 * (x(&[-1, 0]) + x(&[1, 0]) + x(&[0, -1]) + x(&[0, 1]))
                + (x(&[-1, -1]) + x(&[1, -1]) + x(&[-1, 1]) + x(&[1, 1])))
                / 20.0
        },
        Library::S2dnc8 => |x| {
            ((x(&[-2, 0]) + x(&[2, 0]) + x(&[0, -2]) + x(&[0, 2]))
                + 4.0 * (x(&[-1, 0]) + x(&[1, 0]) + x(&[0, -1]) + x(&[0, 1])))
                / 20.0
        },
        Library::S2df5 => |x| {
            (2.0 * (x(&[-1, 0]) + x(&[0, -1])) + (x(&[-2, 0]) + x(&[0, -2])) + 0.5 * x(&[-1, -1]))
                / 6.5
        },
        Library::S3d6 => |x| {
            (x(&[-1, 0, 0])
                + x(&[1, 0, 0])
                + x(&[0, -1, 0])
                + x(&[0, 1, 0])
                + x(&[0, 0, -1])
                + x(&[0, 0, 1]))
                / 6.0
        },
        Library::S3d27 => |x| {
            let mut s = x(&[-1, -1, -1]);
            for a in -1..=1 {
                for b in -1..=1 {
                    for c in -1..=1 {
                        if (a, b, c) != (-1, -1, -1) {
                            s += x(&[a, b, c]);
                        }
                    }
                }
            }
            s / 27.0
        },
        Library::S3dnc12 => |x| {
            ((x(&[-2, 0, 0])
                + x(&[2, 0, 0])
                + x(&[0, -2, 0])
                + x(&[0, 2, 0])
                + x(&[0, 0, -2])
                + x(&[0, 0, 2]))
                + 6.0
                    * (x(&[-1, 0, 0])
                        + x(&[1, 0, 0])
                        + x(&[0, -1, 0])
                        + x(&[0, 1, 0])
                        + x(&[0, 0, -1])
                        + x(&[0, 0, 1])))
                / 42.0
        },
        Library::S3df7 => |x| {
            (2.0 * (x(&[-1, 0, 0]) + x(&[0, -1, 0]) + x(&[0, 0, -1]))
                + x(&[-2, 0, 0])
                + x(&[0, -2, 0])
                + x(&[0, 0, -2])
                + 0.5 * x(&[-1, -1, -1]))
                / 9.5
        },
        Library::S4d8 => |x| {
            (x(&[-1, 0, 0, 0])
                + x(&[1, 0, 0, 0])
                + x(&[0, -1, 0, 0])
                + x(&[0, 1, 0, 0])
                + x(&[0, 0, -1, 0])
                + x(&[0, 0, 1, 0])
                + x(&[0, 0, 0, -1])
                + x(&[0, 0, 0, 1]))
                / 8.0
        },
    }
}

/// The generic kernel's arithmetic: `sum(w * x)` from the first non-zero term,
/// lexicographic order, then `/ factor`.
pub fn generic_formula<T: Real>(spec: &StencilSpec) -> impl Fn(Neighbour<'_, T>) -> T {
    let terms: Vec<(Vec<i64>, T)> = spec
        .terms()
        .into_iter()
        .map(|(o, w)| (o, T::from_f64(w)))
        .collect();
    let factor = T::from_f64(spec.factor);
    move |x| {
        let mut s = terms[0].1 * x(&terms[0].0);
        for (o, w) in &terms[1..] {
            s = s + *w * x(o);
        }
        s / factor
    }
}

//! Fused sums, the row operation stencils spend their time in:
//! `dst = (((t0 + t1) + t2) + ...) op last`, every addition rounded in
//! that order, whatever the number of terms.
//!
//! With AVX2 (f32 and f64) one pass keeps blocks of running sums in
//! registers while the terms stream in, one load per term and cell, as a
//! hand-written stencil does. Elsewhere the sum runs in passes of a few
//! terms through the destination. Measured on 3d27 258^3, one thread
//! (`benches/examples/expr_ratio.rs`): passes ran at 0.64-0.81x the
//! specialised kernel, the one-pass loop at parity (docs/benchmarks.md).
//! Portable Rust could not do it in one pass without monomorphising a loop
//! per number of terms (hundreds of copies with the tails): LLVM does not
//! vectorise a block of sums kept across a loop over the terms.

use super::math::Math;
use super::parse::Arith;
use std::any::TypeId;

/// The second operand of the operation that ends a fused sum: a row, or a
/// constant (kept in a register rather than read from a row of copies).
#[derive(Clone, Copy, Debug)]
pub(super) enum Last<'a, T> {
    Row(&'a [T]),
    Scalar(T),
}

/// The operation that ends a fused sum, if any.
pub(super) type Tail<'a, T> = Option<(Arith, Last<'a, T>)>;

/// `dst[j] = (((terms[0][j] + terms[1][j]) + ...) op last[j])` for every
/// cell of `dst`; each term (and a row `last`) at least as long as `dst`.
/// Not inlined: as a parameter, `dst` is known not to alias the terms,
/// which is what lets the portable loops vectorise.
#[inline(never)]
pub(super) fn fused<T: Math>(dst: &mut [T], terms: &[&[T]], tail: Tail<'_, T>) {
    let n = dst.len();
    assert!(
        !terms.is_empty()
            && terms.iter().all(|t| t.len() >= n)
            && !matches!(tail, Some((_, Last::Row(r))) if r.len() < n),
        "every operand of a fused sum covers the destination"
    );
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && avx2::fused(dst, terms, tail) {
        return;
    }
    passes(dst, terms, tail)
}

/// The same as [`fused`] without AVX2, in passes (tests compare the two).
pub(super) fn passes<T: Math>(dst: &mut [T], terms: &[&[T]], tail: Tail<'_, T>) {
    match tail {
        None => passes_with(dst, terms, None, |x, _| x),
        Some((op, Last::Row(r))) => match op {
            Arith::Add => passes_with(dst, terms, Some(r), |x, y| x + y),
            Arith::Sub => passes_with(dst, terms, Some(r), |x, y| x - y),
            Arith::Mul => passes_with(dst, terms, Some(r), |x, y| x * y),
            Arith::Div => passes_with(dst, terms, Some(r), |x, y| x / y),
        },
        Some((op, Last::Scalar(c))) => match op {
            Arith::Add => passes_with(dst, terms, None, move |x, _| x + c),
            Arith::Sub => passes_with(dst, terms, None, move |x, _| x - c),
            Arith::Mul => passes_with(dst, terms, None, move |x, _| x * c),
            Arith::Div => passes_with(dst, terms, None, move |x, _| x / c),
        },
    }
}

/// `dst = fin(((t0 + t1) + t2) + ..., last)`, up to four terms per pass,
/// `fin` applied in the last pass (`last` its second operand, if any).
fn passes_with<T: Math>(
    dst: &mut [T],
    terms: &[&[T]],
    last: Option<&[T]>,
    fin: impl Fn(T, T) -> T + Copy,
) {
    let n = dst.len();
    if terms.len() < 3 {
        // One or two terms: no pass shape below; plain loops.
        for (j, o) in dst.iter_mut().enumerate() {
            let mut acc = terms[0][j];
            for t in &terms[1..] {
                acc = acc + t[j];
            }
            *o = fin(acc, last.map_or(acc, |l| l[j]));
        }
        return;
    }
    let with_last = last.is_some();
    let last = last.map_or(&[][..], |l| &l[..n]);
    // The passes: the first takes up to four terms, the others three.
    let first = terms.len().min(4);
    let count = 1 + (terms.len() - first).div_ceil(3);
    let mut at = 0;
    for p in 0..count {
        let take = if p == 0 {
            first
        } else {
            (terms.len() - at).min(3)
        };
        let group = &terms[at..at + take];
        at += take;
        let end = p + 1 == count;
        // Each shape its own loop, so each vectorises.
        macro_rules! pass {
            ($acc:expr, $group:expr, [$($t:ident),+]) => {{
                let [$($t),+] = $group else { unreachable!("the group's size") };
                // Every operand cut to the destination's length, so the
                // loops index without bounds checks and vectorise.
                $(let $t = &$t[..n];)+
                if end && with_last {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = fin($acc(*o, j) $(+ $t[j])+, last[j]);
                    }
                } else if end {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = fin($acc(*o, j) $(+ $t[j])+, *o);
                    }
                } else {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = $acc(*o, j) $(+ $t[j])+;
                    }
                }
            }};
        }
        let keep = |o: T, _: usize| o;
        match (p, take) {
            (0, 4) => {
                let t0 = &group[0][..n];
                pass!(|_: T, j: usize| t0[j], &group[1..], [a, b, c])
            }
            (0, 3) => {
                let t0 = &group[0][..n];
                pass!(|_: T, j: usize| t0[j], &group[1..], [a, b])
            }
            (_, 3) => pass!(keep, group, [a, b, c]),
            (_, 2) => pass!(keep, group, [a, b]),
            (_, 1) => pass!(keep, group, [a]),
            _ => unreachable!("a pass has one to four terms"),
        }
    }
}

/// `dst[j] = ((((w0 t0[j]) + (w1 t1[j])) + ...) op last[j])` for every
/// cell of `dst`, one to eight terms, in one pass: a loop per number of
/// terms, which the compiler vectorises with the caller's instruction set.
#[inline(always)]
pub(super) fn weighted<T: Math>(dst: &mut [T], terms: &[(T, &[T])], tail: Tail<'_, T>) {
    match tail {
        None => weighted_with(dst, terms, None, |x, _| x),
        Some((op, Last::Row(r))) => match op {
            Arith::Add => weighted_with(dst, terms, Some(r), |x, y| x + y),
            Arith::Sub => weighted_with(dst, terms, Some(r), |x, y| x - y),
            Arith::Mul => weighted_with(dst, terms, Some(r), |x, y| x * y),
            Arith::Div => weighted_with(dst, terms, Some(r), |x, y| x / y),
        },
        Some((op, Last::Scalar(c))) => match op {
            Arith::Add => weighted_with(dst, terms, None, move |x, _| x + c),
            Arith::Sub => weighted_with(dst, terms, None, move |x, _| x - c),
            Arith::Mul => weighted_with(dst, terms, None, move |x, _| x * c),
            Arith::Div => weighted_with(dst, terms, None, move |x, _| x / c),
        },
    }
}

#[inline(always)]
fn weighted_with<T: Math>(
    dst: &mut [T],
    terms: &[(T, &[T])],
    last: Option<&[T]>,
    fin: impl Fn(T, T) -> T + Copy,
) {
    let n = dst.len();
    macro_rules! arity {
        ($($k:tt),+) => {{
            let w = [$(terms[$k].0),+];
            // Every row cut to the destination's length, so the loop
            // indexes without bounds checks.
            let t = [$(&terms[$k].1[..n]),+];
            match last {
                Some(l) => {
                    let l = &l[..n];
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = fin(arity!(@sum w, t, j; $($k),+), l[j]);
                    }
                }
                None => {
                    for (j, o) in dst.iter_mut().enumerate() {
                        let s = arity!(@sum w, t, j; $($k),+);
                        *o = fin(s, s);
                    }
                }
            }
        }};
        (@sum $w:ident, $t:ident, $j:ident; 0 $(, $k:tt)*) => {
            ($w[0] * $t[0][$j]) $(+ ($w[$k] * $t[$k][$j]))*
        };
    }
    match terms.len() {
        1 => arity!(0),
        2 => arity!(0, 1),
        3 => arity!(0, 1, 2),
        4 => arity!(0, 1, 2, 3),
        5 => arity!(0, 1, 2, 3, 4),
        6 => arity!(0, 1, 2, 3, 4, 5),
        7 => arity!(0, 1, 2, 3, 4, 5, 6),
        8 => arity!(0, 1, 2, 3, 4, 5, 6, 7),
        k => unreachable!("a weighted sum has one to eight terms, not {k}"),
    }
}

/// Whether `T` is `U`.
fn same<T: 'static, U: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<U>()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{same, Arith, Last, Math, Tail};
    use std::arch::x86_64::*;

    /// Runs the sum with AVX2 when `T` is f32 or f64 (true), else does
    /// nothing (false). The caller has checked that the CPU has AVX2 and
    /// that every operand covers `dst`.
    pub(super) fn fused<T: Math>(dst: &mut [T], terms: &[&[T]], tail: Tail<'_, T>) -> bool {
        macro_rules! run {
            ($t:ty, $f:ident) => {{
                // SAFETY: `T` is `$t` (their TypeIds are equal), so these
                // are the same types; a cast per row, where copying the
                // terms showed in profiles.
                let (dst, terms) = unsafe {
                    (
                        &mut *(dst as *mut [T] as *mut [$t]),
                        &*(terms as *const [&[T]] as *const [&[$t]]),
                    )
                };
                let tail = tail.map(|(op, l)| {
                    (
                        op,
                        match l {
                            Last::Row(r) => Last::Row(bytemuck::cast_slice(r)),
                            Last::Scalar(c) => Last::Scalar(bytemuck::cast(c)),
                        },
                    )
                });
                // SAFETY: the caller found AVX2, and checked every
                // operand's length (`$f` reads `dst.len()` cells of each).
                unsafe { $f(dst, terms, tail) };
                true
            }};
        }
        if same::<T, f32>() {
            run!(f32, fused_f32)
        } else if same::<T, f64>() {
            run!(f64, fused_f64)
        } else {
            false
        }
    }

    /// One AVX2 fused sum over `$t`, `$lanes` to a vector, blocks of four
    /// vectors (four independent chains of additions hide their latency;
    /// two ran slower on 2d4, eight no faster).
    macro_rules! fused_avx2 {
        ($name:ident, $blocks:ident, $t:ty, $v:ty, $lanes:expr, $load:ident, $store:ident,
         $set1:ident, $add:ident, $sub:ident, $mul:ident, $div:ident) => {
            /// # Safety
            /// The CPU has AVX2, and every term and a row `last` hold at
            /// least `dst.len()` cells.
            #[target_feature(enable = "avx2")]
            unsafe fn $name(dst: &mut [$t], terms: &[&[$t]], tail: Tail<'_, $t>) {
                let (first, rest) = terms.split_first().expect("a fused sum has terms");
                // The tail chosen once, outside the loop: a match per block
                // compiled to an indirect jump per block (2d4: 0.62x the
                // specialised kernel against 0.7x hoisted).
                // Up to eight terms after the first, a loop of its own
                // with the terms written out (2d4: 0.85x the specialised
                // kernel with a loop over the terms, 0.93x without).
                macro_rules! with {
                    ($fin:expr) => {
                        // SAFETY: as this function's; `R` is rest.len()
                        // (or 0).
                        unsafe {
                            match rest.len() {
                                1 => $blocks::<1>(dst, first, rest, $fin),
                                2 => $blocks::<2>(dst, first, rest, $fin),
                                3 => $blocks::<3>(dst, first, rest, $fin),
                                4 => $blocks::<4>(dst, first, rest, $fin),
                                5 => $blocks::<5>(dst, first, rest, $fin),
                                6 => $blocks::<6>(dst, first, rest, $fin),
                                7 => $blocks::<7>(dst, first, rest, $fin),
                                8 => $blocks::<8>(dst, first, rest, $fin),
                                _ => $blocks::<0>(dst, first, rest, $fin),
                            }
                        }
                    };
                }
                macro_rules! ops {
                    ($op:expr, $y:expr) => {
                        match $op {
                            Arith::Add => with!(|j, a| $add(a, $y(j))),
                            Arith::Sub => with!(|j, a| $sub(a, $y(j))),
                            Arith::Mul => with!(|j, a| $mul(a, $y(j))),
                            Arith::Div => with!(|j, a| $div(a, $y(j))),
                        }
                    };
                }
                let j = match tail {
                    None => with!(|_, a| a),
                    Some((op, Last::Scalar(c))) => {
                        let c = $set1(c);
                        ops!(op, |_: usize| c)
                    }
                    Some((op, Last::Row(r))) => {
                        let r = r.as_ptr();
                        // SAFETY: `$blocks` asks for cells below dst.len(),
                        // which `last` holds.
                        let y = |j: usize| unsafe { $load(r.add(j)) };
                        ops!(op, y)
                    }
                };
                for (k, o) in dst.iter_mut().enumerate().skip(j) {
                    let mut acc = first[k];
                    for t in rest {
                        acc += t[k];
                    }
                    *o = match tail {
                        None => acc,
                        Some((op, last)) => {
                            let y = match last {
                                Last::Row(r) => r[k],
                                Last::Scalar(c) => c,
                            };
                            op.apply(acc, y)
                        }
                    };
                }
            }

            /// The whole vectors of `$name`, `fin(j, sum)` ending each;
            /// gives back where single cells start. `R` is the number of
            /// terms after the first, or 0 for any number.
            ///
            /// # Safety
            /// As `$name`'s, `rest` holds `R` terms unless `R` is 0, and
            /// `fin` may read cells `j..j + $lanes`.
            #[target_feature(enable = "avx2")]
            #[inline]
            unsafe fn $blocks<const R: usize>(
                dst: &mut [$t],
                first: &[$t],
                rest: &[&[$t]],
                fin: impl Fn(usize, $v) -> $v,
            ) -> usize {
                const L: usize = $lanes;
                const A: usize = 4;
                let n = dst.len();
                let mut j = 0;
                // Four vectors at a time, then one.
                while j + A * L <= n {
                    // SAFETY: j + A*L <= n and every operand holds n cells.
                    unsafe {
                        let p = first.as_ptr().add(j);
                        let mut a: [$v; A] = std::array::from_fn(|k| $load(p.add(k * L)));
                        if R > 0 {
                            let ps: [*const $t; R] =
                                std::array::from_fn(|i| rest[i].as_ptr().add(j));
                            for (k, a) in a.iter_mut().enumerate() {
                                for p in ps {
                                    *a = $add(*a, $load(p.add(k * L)));
                                }
                            }
                        } else {
                            // Three terms a pass of the loop (3d27: 0.95x
                            // with one, 1.0x with three).
                            let mut groups = rest.chunks_exact(3);
                            for g in groups.by_ref() {
                                let ps = [
                                    g[0].as_ptr().add(j),
                                    g[1].as_ptr().add(j),
                                    g[2].as_ptr().add(j),
                                ];
                                for (k, a) in a.iter_mut().enumerate() {
                                    for p in ps {
                                        *a = $add(*a, $load(p.add(k * L)));
                                    }
                                }
                            }
                            for t in groups.remainder() {
                                let p = t.as_ptr().add(j);
                                for (k, a) in a.iter_mut().enumerate() {
                                    *a = $add(*a, $load(p.add(k * L)));
                                }
                            }
                        }
                        let o = dst.as_mut_ptr().add(j);
                        for (k, a) in a.iter().enumerate() {
                            $store(o.add(k * L), fin(j + k * L, *a));
                        }
                    }
                    j += A * L;
                }
                while j + L <= n {
                    // SAFETY: j + L <= n and every operand holds n cells.
                    unsafe {
                        let mut a = $load(first.as_ptr().add(j));
                        for t in rest {
                            a = $add(a, $load(t.as_ptr().add(j)));
                        }
                        $store(dst.as_mut_ptr().add(j), fin(j, a));
                    }
                    j += L;
                }
                j
            }
        };
    }

    fused_avx2!(
        fused_f32,
        blocks_f32,
        f32,
        __m256,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_set1_ps,
        _mm256_add_ps,
        _mm256_sub_ps,
        _mm256_mul_ps,
        _mm256_div_ps
    );
    fused_avx2!(
        fused_f64,
        blocks_f64,
        f64,
        __m256d,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_set1_pd,
        _mm256_add_pd,
        _mm256_sub_pd,
        _mm256_mul_pd,
        _mm256_div_pd
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ops() -> impl Strategy<Value = Option<(Arith, bool)>> {
        prop::option::of((
            prop::sample::select(vec![Arith::Add, Arith::Sub, Arith::Mul, Arith::Div]),
            any::<bool>(),
        ))
    }

    /// Cell by cell, in order: what every path must equal.
    fn serial<T: Math>(terms: &[Vec<T>], tail: Tail<'_, T>, n: usize) -> Vec<T> {
        (0..n)
            .map(|j| {
                let acc = terms[1..].iter().fold(terms[0][j], |a, t| a + t[j]);
                match tail {
                    None => acc,
                    Some((op, l)) => {
                        let y = match l {
                            Last::Row(r) => r[j],
                            Last::Scalar(c) => c,
                        };
                        op.apply(acc, y)
                    }
                }
            })
            .collect()
    }

    fn check<T: Math>(vals: &[f64], k: usize, n: usize, tail: Option<(Arith, bool)>) {
        // Values with mixed magnitudes and signs, zeros and -0.0, so the
        // order of the additions shows in the bits.
        let at = |i: usize| T::from_f64(vals[i % vals.len()]);
        let terms: Vec<Vec<T>> = (0..k)
            .map(|t| (0..n + 3).map(|j| at(t * 131 + j * 7)).collect())
            .collect();
        let row: Vec<T> = (0..n).map(|j| at(j * 3 + 1)).collect();
        let tail = tail.map(|(op, is_row)| {
            (
                op,
                if is_row {
                    Last::Row(&row[..])
                } else {
                    Last::Scalar(at(5))
                },
            )
        });
        let want = serial(&terms, tail, n);
        let refs: Vec<&[T]> = terms.iter().map(|t| &t[..]).collect();
        let same = |got: &[T]| {
            got.iter().zip(&want).all(|(a, b)| {
                bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
                    || (a.to_f64().is_nan() && b.to_f64().is_nan())
            })
        };
        let mut got = vec![T::from_f64(9.0); n];
        fused(&mut got, &refs, tail);
        assert!(same(&got), "fused, {k} terms, {n} cells, {tail:?}");
        let mut got = vec![T::from_f64(9.0); n];
        passes(&mut got, &refs, tail);
        assert!(same(&got), "passes, {k} terms, {n} cells, {tail:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The AVX2 loops (where the CPU has them) and the passes equal the
        /// cell-by-cell sum bit for bit, f32 and f64, any arity and length.
        #[test]
        fn every_path_is_the_serial_sum(
            vals in prop::collection::vec(
                prop_oneof![-1e6f64..1e6, -1.0f64..1.0, Just(0.0), Just(-0.0), Just(1e30)],
                1..64,
            ),
            k in 1usize..40,
            n in 0usize..100,
            tail in ops(),
        ) {
            check::<f32>(&vals, k, n, tail);
            check::<f64>(&vals, k, n, tail);
        }
    }
}

//! An init function's values over a region, computed in parallel: every run
//! starts by filling its tiles from the host, and on a 16386^2 grid one
//! thread took seconds for it.

use hitmap::{Shape, Sig};
use rayon::prelude::*;

/// `region` cut along its first dimension into slabs of at most `rows`
/// indices there, in order.
pub(crate) fn slabs(region: &Shape, rows: usize) -> impl Iterator<Item = Shape> + '_ {
    let first = region.sig(0);
    let (n, stride, begin) = (first.card(), first.stride(), first.begin());
    let rows = rows.max(1);
    (0..n).step_by(rows).map(move |k| {
        let mut sigs = region.sigs().to_vec();
        let end = begin + ((k + rows).min(n) as i64) * stride;
        sigs[0] = Sig::new(begin + k as i64 * stride, end, stride);
        Shape::new(sigs)
    })
}

/// The values of `f` at each index of `region`, row-major, computed over
/// slabs of the first dimension on the current rayon pool.
pub(crate) fn values<T: Send>(region: &Shape, f: &(dyn Fn(&[i64]) -> T + Sync)) -> Vec<T> {
    if region.is_empty() {
        return Vec::new();
    }
    let n = region.sig(0).card();
    let slabs_wanted = (rayon::current_num_threads() * 4).clamp(1, n);
    let parts: Vec<Vec<T>> = slabs(region, n.div_ceil(slabs_wanted))
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|slab| values_serial(&slab, f))
        .collect();
    let mut all = Vec::with_capacity(region.card());
    for p in parts {
        all.extend(p);
    }
    all
}

/// The same, on this thread alone.
pub(crate) fn values_serial<T>(region: &Shape, f: &(dyn Fn(&[i64]) -> T + Sync)) -> Vec<T> {
    let mut v = Vec::with_capacity(region.card());
    region.for_each_index(|i| v.push(f(i)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parallel_values_are_the_serial_ones(
            sigs in prop::collection::vec((-4i64..4, 0i64..40, 1i64..3), 1..4)
        ) {
            let region = Shape::new(sigs.into_iter().map(|(b, l, s)| Sig::new(b, b + l, s)).collect());
            let f = |i: &[i64]| i.iter().fold(7i64, |h, &x| h * 31 + x);
            let want: Vec<i64> = region.iter().map(|i| f(&i)).collect();
            prop_assert_eq!(values(&region, &f), want.clone());
            prop_assert_eq!(values_serial(&region, &f), want.clone());
            for rows in 1..4 {
                let sliced: Vec<i64> = slabs(&region, rows).flat_map(|s| values_serial(&s, &f)).collect();
                prop_assert_eq!(&sliced, &want);
                prop_assert!(slabs(&region, rows).all(|s| s.sig(0).card() <= rows));
            }
        }
    }
}

//! Every kernel against the naive serial reference, bit for bit, on random
//! data (random values make any change of evaluation order visible).

use hitmap::{Shape, Tile};
use kernels::reference::{self, Neighbour};
use kernels::*;
use ndarray::ArrayD;
use proptest::prelude::*;

/// Irregular values in [-3, 7): random data makes any change of evaluation order visible.
fn hash(idx: &[i64], seed: u64) -> f32 {
    random_value(idx, seed) * 10.0 - 3.0
}

/// Runs `kernel` on one tile covering the grid, ping-ponging two buffers.
fn run_tiles<T: Cell>(
    kernel: &dyn Kernel<T>,
    sizes: &[usize],
    low: &[usize],
    high: &[usize],
    iters: usize,
    init: impl Fn(&[i64]) -> T,
) -> ArrayD<T> {
    let all = Shape::from_sizes(sizes);
    let mut a = Tile::new(all.clone(), init(&vec![0; sizes.len()])).unwrap();
    a.fill_with(&all, &init).unwrap();
    let mut b = a.clone();
    let frame = Frame::row_major(sizes);
    let region: Vec<_> = (0..sizes.len())
        .map(|d| low[d]..sizes[d] - high[d])
        .collect();
    for _ in 0..iters {
        launch_serial(kernel, a.as_slice(), b.as_slice_mut(), &frame, &region).unwrap();
        std::mem::swap(&mut a, &mut b);
    }
    a.view().to_owned()
}

fn bits(a: &ArrayD<f32>) -> Vec<u32> {
    a.iter().map(|v| v.to_bits()).collect()
}

fn sizes_for(lib: Library, raw: &[usize]) -> Vec<usize> {
    raw[..lib.ndims()]
        .iter()
        .map(|&s| if lib.ndims() == 4 { 5 + s % 4 } else { 5 + s })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn specialised_matches_reference_order(which in 0usize..11, raw in prop::collection::vec(0usize..12, 4),
                                           iters in 1usize..4, seed in any::<u64>()) {
        let lib = Library::ALL[which];
        let spec = lib.spec();
        let sizes = sizes_for(lib, &raw);
        let init = |i: &[i64]| hash(i, seed);
        let k = Specialized::<f32>::new(lib);
        let got = run_tiles(&k, &sizes, &spec.low, &spec.high, iters, init);
        let f = reference::library_formula(lib);
        let want = reference::run(&sizes, &spec.low, &spec.high, iters, init, f);
        prop_assert_eq!(bits(&got), bits(&want));
    }

    /// The specialised kernels against their stencil's formula, the one
    /// definition their device code is written from, in both cell types.
    #[test]
    fn specialised_matches_its_formula(which in 0usize..11, raw in prop::collection::vec(0usize..12, 4),
                                       iters in 1usize..4, seed in any::<u64>()) {
        let lib = Library::ALL[which];
        let spec = lib.spec();
        let sizes = sizes_for(lib, &raw);
        let formula = lib.formula();
        let init = |i: &[i64]| hash(i, seed);
        let got = run_tiles(&Specialized::<f32>::new(lib), &sizes, &spec.low, &spec.high, iters, init);
        let want = reference::run(&sizes, &spec.low, &spec.high, iters, init, |x| formula.value::<f32>(x));
        prop_assert_eq!(bits(&got), bits(&want));
        let init = |i: &[i64]| hash(i, seed) as f64 / 3.0;
        let got = run_tiles(&Specialized::<f64>::new(lib), &sizes, &spec.low, &spec.high, iters, init);
        let want = reference::run(&sizes, &spec.low, &spec.high, iters, init, |x| formula.value::<f64>(x));
        let bits64 = |a: &ndarray::ArrayD<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits64(&got), bits64(&want));
    }

    /// The weighted form of a formula is the generic kernel's formula.
    #[test]
    fn weighted_formula_is_the_generic_order(which in 0usize..11, raw in prop::collection::vec(0usize..12, 4),
                                             seed in any::<u64>()) {
        let lib = Library::ALL[which];
        let spec = lib.spec();
        let sizes = sizes_for(lib, &raw);
        let init = |i: &[i64]| hash(i, seed);
        let weighted = Formula::weighted(&spec);
        let got = reference::run(&sizes, &spec.low, &spec.high, 2, init, |x| weighted.value::<f32>(x));
        let want = reference::run(&sizes, &spec.low, &spec.high, 2, init, reference::generic_formula::<f32>(&spec));
        prop_assert_eq!(bits(&got), bits(&want));
    }

    #[test]
    fn generic_matches_generic_reference(which in 0usize..11, raw in prop::collection::vec(0usize..12, 4),
                                         iters in 1usize..4, seed in any::<u64>()) {
        let lib = Library::ALL[which];
        let spec = lib.spec();
        let sizes = sizes_for(lib, &raw);
        let init = |i: &[i64]| hash(i, seed);
        let got = run_tiles(&Generic::<f32>::new(&spec), &sizes, &spec.low, &spec.high, iters, init);
        let want = reference::run(&sizes, &spec.low, &spec.high, iters, init, reference::generic_formula::<f32>(&spec));
        prop_assert_eq!(bits(&got), bits(&want));
    }
}

#[test]
fn f64_kernels_run_in_f64() {
    let lib = Library::S2d4;
    let spec = lib.spec();
    let init = |i: &[i64]| hash(i, 3) as f64 / 3.0;
    let got = run_tiles(
        &Specialized::<f64>::new(lib),
        &[9, 7],
        &spec.low,
        &spec.high,
        3,
        init,
    );
    let want = reference::run(
        &[9, 7],
        &spec.low,
        &spec.high,
        3,
        init,
        reference::generic_formula::<f64>(&spec),
    );
    // The generic order (N, W, E, S) differs from the specialised (N, S, W, E),
    // so compare within f64 rounding rather than bit for bit.
    for (a, b) in got.iter().zip(want.iter()) {
        assert!((a - b).abs() < 1e-12);
    }
    assert!(
        got.iter().any(|v| (*v as f32) as f64 != *v),
        "values carry f64 precision"
    );
}

#[test]
fn order_matters_so_the_test_can_fail() {
    // Summing 3d27's neighbours in another order changes some results: the
    // bit-identity tests above are sensitive to evaluation order.
    let lib = Library::S3d27;
    let spec = lib.spec();
    let init = |i: &[i64]| hash(i, 11);
    let reversed = |x: Neighbour<'_, f32>| {
        let mut s = x(&[1, 1, 1]);
        for k in (0..26).rev() {
            s += x(&[k / 9 - 1, (k / 3) % 3 - 1, k % 3 - 1]);
        }
        s / 27.0
    };
    let a = reference::run(
        &[8, 8, 8],
        &spec.low,
        &spec.high,
        1,
        init,
        reference::library_formula(lib),
    );
    let b = reference::run(&[8, 8, 8], &spec.low, &spec.high, 1, init, reversed);
    assert_ne!(bits(&a), bits(&b));
}

#[test]
fn custom_kernel_on_struct_cells() {
    // A 2-component cell: (sum of the four neighbours' first parts, centre's second part + 1).
    type C = [f32; 2];
    let fp = Library::S2d4.spec().footprint();
    let k = Custom::new("pair", fp, |nb: &Neighbourhood<C>| {
        let s = nb.get(&[-1, 0])[0] + nb.get(&[1, 0])[0] + nb.get(&[0, -1])[0] + nb.get(&[0, 1])[0];
        [s / 4.0, nb.centre()[1] + 1.0]
    });
    let init = |i: &[i64]| [hash(i, 5), i[0] as f32];
    let got = run_tiles(&k, &[6, 7], &[1, 1], &[1, 1], 2, init);
    let want = reference::run(&[6, 7], &[1, 1], &[1, 1], 2, init, |x| {
        let s = x(&[-1, 0])[0] + x(&[1, 0])[0] + x(&[0, -1])[0] + x(&[0, 1])[0];
        [s / 4.0, x(&[0, 0])[1] + 1.0]
    });
    assert_eq!(got, want);
}

#[test]
fn launches_outside_the_buffer_are_errors() {
    let k = Specialized::<f32>::new(Library::S2d4);
    let frame = Frame::row_major(&[5, 5]);
    let src = vec![0.0; 25];
    let mut dst = vec![0.0; 25];
    assert!(matches!(
        launch_serial(&k, &src, &mut dst, &frame, &[0..3, 1..4]),
        Err(KernelError::OutOfBuffer { .. })
    ));
    assert!(matches!(
        launch_serial(&k, &src, &mut dst, &frame, std::slice::from_ref(&(1..3))),
        Err(KernelError::Rank { .. })
    ));
    assert!(launch_serial(&k, &src, &mut dst, &frame, &[1..4, 1..4]).is_ok());
}

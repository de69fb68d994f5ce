//! The conformance suite every backend runs: call [`run_all`] from a test
//! with a constructor for the backend. Each check panics with what went wrong.

use crate::controller::{BufferId, Controller};
use crate::error::DeviceError;
use hitmap::{Shape, Sig};
use kernels::reference;
use kernels::{basic_init, library_kernel, KernelChoice, Library};
use std::sync::Arc;

/// An irregular value per index (so misplaced cells show), centred on 0.
pub fn probe_value(idx: &[i64]) -> f32 {
    kernels::random_value(idx, 17) - 0.5
}

fn read_all(c: &mut dyn Controller<f32>, b: BufferId, r: &Shape) -> Vec<f32> {
    let mut v = Vec::new();
    c.read(b, r, &mut v).expect("read");
    v
}

/// Writes, reads back, fills from indices, and strided sub-regions.
pub fn transfers(c: &mut dyn Controller<f32>) {
    let ext = Shape::from_ranges(&[(3, 11), (-2, 7)]);
    let cap = Shape::from_ranges(&[(0, 16), (-2, 7)]);
    let b = c.alloc(&ext, &cap).expect("alloc");
    assert_eq!(c.extent(b).unwrap(), ext);
    c.fill(b, &ext, &probe_value).expect("fill");
    let want: Vec<f32> = ext.iter().map(|i| probe_value(&i)).collect();
    assert_eq!(read_all(c, b, &ext), want, "fill then read");
    let sub = Shape::new(vec![Sig::new(4, 11, 3), Sig::range(0, 5)]);
    let data: Vec<f32> = (0..sub.card()).map(|i| i as f32).collect();
    c.write(b, &sub, &data).expect("write");
    assert_eq!(read_all(c, b, &sub), data, "strided write then read");
    let untouched = Shape::from_ranges(&[(5, 7), (-2, 7)]);
    let want: Vec<f32> = untouched.iter().map(|i| probe_value(&i)).collect();
    assert_eq!(read_all(c, b, &untouched), want, "write touched other rows");
    assert!(c
        .write(b, &Shape::from_ranges(&[(0, 2), (0, 1)]), &[0.0, 0.0])
        .is_err());
    assert!(c.write(b, &sub, &data[1..]).is_err(), "short data accepted");
    c.free(b).unwrap();
    assert_eq!(c.extent(b), Err(DeviceError::UnknownBuffer(b.0)));
}

/// Growing and shrinking keeps the shared cells at their global indices.
pub fn resizing(c: &mut dyn Controller<f32>) {
    let ext = Shape::from_ranges(&[(10, 20), (0, 6)]);
    let b = c.alloc(&ext, &ext.expand(&[4, 0], &[4, 0])).unwrap();
    c.fill(b, &ext, &probe_value).unwrap();
    let inside = Shape::from_ranges(&[(7, 23), (0, 6)]);
    assert!(
        !c.resize(b, &inside, &[4, 0]).unwrap(),
        "fits: no reallocation"
    );
    let kept = Shape::from_ranges(&[(10, 20), (0, 6)]);
    let want: Vec<f32> = kept.iter().map(|i| probe_value(&i)).collect();
    assert_eq!(read_all(c, b, &kept), want);
    let beyond = Shape::from_ranges(&[(15, 40), (0, 6)]);
    assert!(c.resize(b, &beyond, &[4, 0]).unwrap(), "must reallocate");
    let kept = Shape::from_ranges(&[(15, 20), (0, 6)]);
    let want: Vec<f32> = kept.iter().map(|i| probe_value(&i)).collect();
    assert_eq!(read_all(c, b, &kept), want);
}

/// Every library stencil, both kernel kinds, three ping-pong iterations on a
/// device buffer offset from the origin: bit-identical to the serial reference.
pub fn library_kernels(c: &mut dyn Controller<f32>) {
    for lib in Library::ALL {
        let spec = lib.spec();
        let nd = lib.ndims();
        let sizes: Vec<usize> = (0..nd)
            .map(|d| if nd == 4 { 6 + d } else { 11 + 3 * d })
            .collect();
        let all = Shape::from_sizes(&sizes);
        let interior = Shape::from_ranges(
            &(0..nd)
                .map(|d| (spec.low[d] as i64, (sizes[d] - spec.high[d]) as i64))
                .collect::<Vec<_>>(),
        );
        let cap = all.expand(&vec![1; nd], &vec![2; nd]);
        let init = |i: &[i64]| probe_value(i) + basic_init(i, &sizes, &spec.low, &spec.high);
        for choice in [KernelChoice::Specialized, KernelChoice::Generic] {
            let k = c
                .load(Arc::from(library_kernel::<f32>(lib, choice)))
                .unwrap();
            let mut a = c.alloc(&all, &cap).unwrap();
            let mut b = c.alloc(&all, &cap).unwrap();
            c.fill(a, &all, &init).unwrap();
            c.fill(b, &all, &init).unwrap();
            for it in 0..3 {
                c.set_iteration(it);
                c.launch(k, a, b, &interior).unwrap();
                std::mem::swap(&mut a, &mut b);
            }
            c.wait().unwrap();
            assert!(
                c.take_kernel_seconds() > 0.0,
                "{lib}: no kernel time measured"
            );
            let got = read_all(c, a, &all);
            let want = match choice {
                KernelChoice::Specialized => reference::run(
                    &sizes,
                    &spec.low,
                    &spec.high,
                    3,
                    init,
                    reference::library_formula(lib),
                ),
                KernelChoice::Generic => reference::run(
                    &sizes,
                    &spec.low,
                    &spec.high,
                    3,
                    init,
                    reference::generic_formula::<f32>(&spec),
                ),
            };
            let same = got
                .iter()
                .zip(want.iter())
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "{lib} {choice:?}: result differs from the serial reference"
            );
            c.free(a).unwrap();
            c.free(b).unwrap();
        }
    }
}

/// Bad launches are errors, not panics or silent garbage.
pub fn launch_errors(c: &mut dyn Controller<f32>) {
    let k = c
        .load(Arc::from(library_kernel::<f32>(
            Library::S2d4,
            KernelChoice::Specialized,
        )))
        .unwrap();
    let all = Shape::from_sizes(&[8, 8]);
    let a = c.alloc(&all, &all).unwrap();
    let b = c.alloc(&all, &all).unwrap();
    let other = c.alloc(&all, &all.expand(&[1, 1], &[1, 1])).unwrap();
    let inner = Shape::from_ranges(&[(1, 7), (1, 7)]);
    assert!(c.launch(k, a, b, &inner).is_ok());
    assert!(matches!(
        c.launch(k, a, b, &all),
        Err(DeviceError::ReadsOutside { .. })
    ));
    assert!(matches!(
        c.launch(k, a, a, &inner),
        Err(DeviceError::BufferMismatch(_))
    ));
    assert!(matches!(
        c.launch(k, a, other, &inner),
        Err(DeviceError::BufferMismatch(_))
    ));
    assert_eq!(
        c.launch(k, a, BufferId(999), &inner),
        Err(DeviceError::UnknownBuffer(999))
    );
    assert!(matches!(
        c.launch(crate::KernelId(999), a, b, &inner),
        Err(DeviceError::UnknownKernel(999))
    ));
    let flat = Shape::from_ranges(&[(1, 7)]);
    assert!(c.launch(k, a, b, &flat).is_err());
}

/// Boxes of 1 to 4 dimensions (columns, slabs, interior blocks) inside an
/// allocation larger than the extent: reads return the cells at those
/// indices, writes land there and nowhere else.
pub fn boxes(c: &mut dyn Controller<f32>) {
    for nd in 1..=4usize {
        let ext = Shape::from_ranges(
            &(0..nd)
                .map(|d| (d as i64 - 1, 6 + d as i64))
                .collect::<Vec<_>>(),
        );
        let cap = ext.expand(
            &(0..nd)
                .map(|d| if d == 0 { 2 } else { 0 })
                .collect::<Vec<_>>(),
            &(0..nd)
                .map(|d| if d == 0 { 3 } else { 0 })
                .collect::<Vec<_>>(),
        );
        let b = c.alloc(&ext, &cap).expect("alloc");
        c.fill(b, &ext, &probe_value).expect("fill");
        let mut want: std::collections::HashMap<Vec<i64>, f32> =
            ext.iter().map(|i| (i.clone(), probe_value(&i))).collect();
        let last = nd - 1;
        let column = ext.with_sig(last, Sig::range(2, 3));
        let inner = ext.shrink(&vec![1; nd], &vec![2; nd]);
        let slab = ext.with_sig(0, Sig::range(3, 5));
        for (k, r) in [column, inner, slab].iter().enumerate() {
            let got = read_all(c, b, r);
            let expect: Vec<f32> = r.iter().map(|i| want[&i]).collect();
            assert_eq!(got, expect, "{nd}-d read of {r}");
            let data: Vec<f32> = (0..r.card())
                .map(|i| 1000.0 * (k + 1) as f32 + i as f32)
                .collect();
            c.write(b, r, &data).expect("write");
            for (i, v) in r.iter().zip(&data) {
                want.insert(i, *v);
            }
            let all: Vec<f32> = ext.iter().map(|i| want[&i]).collect();
            assert_eq!(read_all(c, b, &ext), all, "{nd}-d write of {r}");
        }
        c.free(b).unwrap();
    }
}

/// Runs every check on fresh controllers from `make`.
pub fn run_all(make: &mut dyn FnMut() -> Box<dyn Controller<f32>>) {
    transfers(make().as_mut());
    boxes(make().as_mut());
    resizing(make().as_mut());
    library_kernels(make().as_mut());
    launch_errors(make().as_mut());
}

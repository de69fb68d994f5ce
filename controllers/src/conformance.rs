//! The conformance suite every backend runs, generated per backend and per
//! cell type by [`controller_conformance!`](crate::controller_conformance):
//! one `#[test]` per check, for `f32`, `f64` and a 19-float struct (the gas
//! simulation's cell, whole and in planes), so a failure names the backend,
//! the type and the check. Each check panics with what went wrong.

use crate::controller::{BufferId, Controller, KernelId};
use crate::error::DeviceError;
use hitmap::{Shape, Sig};
use kernels::reference;
use kernels::{
    basic_init, library_kernel, Cell, DeviceScalar, InitSpec, Kernel, KernelChoice, Library, Real,
};
use std::sync::Arc;

/// An irregular value per index (so misplaced cells show), centred on 0.
pub fn probe_value(idx: &[i64]) -> f32 {
    kernels::random_value(idx, 17) - 0.5
}

/// A cell type the suite can check: an irregular value per index and a
/// distinct value per count, so a misplaced or dropped cell shows.
pub trait Probe: Cell {
    /// The value the suite stores at `idx`.
    fn probe(idx: &[i64]) -> Self;
    /// The `n`-th value of a written block (distinct for distinct `n`).
    fn numbered(n: usize) -> Self;
}

impl Probe for f32 {
    fn probe(idx: &[i64]) -> f32 {
        probe_value(idx)
    }
    fn numbered(n: usize) -> f32 {
        n as f32
    }
}

impl Probe for f64 {
    fn probe(idx: &[i64]) -> f64 {
        // Bits below f32's precision too, so a narrowing path shows.
        probe_value(idx) as f64 + 1e-12 * kernels::random_value(idx, 5) as f64
    }
    fn numbered(n: usize) -> f64 {
        n as f64 + 0.25
    }
}

/// The gas simulation's D3Q19 cell: a struct type a backend must move whole.
impl Probe for [f32; 19] {
    fn probe(idx: &[i64]) -> [f32; 19] {
        std::array::from_fn(|q| probe_value(idx) + q as f32)
    }
    fn numbered(n: usize) -> [f32; 19] {
        std::array::from_fn(|q| (19 * n + q) as f32)
    }
}

fn read_all<T: Cell>(c: &mut dyn Controller<T>, b: BufferId, r: &Shape) -> Vec<T> {
    let mut v = Vec::new();
    c.read(b, r, &mut v).expect("read");
    v
}

fn probes<T: Probe>(r: &Shape) -> Vec<T> {
    r.iter().map(|i| T::probe(&i)).collect()
}

/// Bits of a float grid, so `-0.0 != 0.0` and NaNs compare as stored.
fn bits<T: Real>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// Writes, reads back, fills from indices, and strided sub-regions.
pub fn transfers<T: Probe>(c: &mut dyn Controller<T>) {
    let ext = Shape::from_ranges(&[(3, 11), (-2, 7)]);
    let cap = Shape::from_ranges(&[(0, 16), (-2, 7)]);
    let b = c.alloc(&ext, &cap).expect("alloc");
    assert_eq!(c.extent(b).unwrap(), ext);
    c.fill(b, &ext, &T::probe).expect("fill");
    assert!(read_all(c, b, &ext) == probes::<T>(&ext), "fill then read");
    let sub = Shape::new(vec![Sig::new(4, 11, 3), Sig::range(0, 5)]);
    let data: Vec<T> = (0..sub.card()).map(T::numbered).collect();
    c.write(b, &sub, &data).expect("write");
    assert!(read_all(c, b, &sub) == data, "strided write then read");
    let untouched = Shape::from_ranges(&[(5, 7), (-2, 7)]);
    assert!(
        read_all(c, b, &untouched) == probes::<T>(&untouched),
        "write touched other rows"
    );
    let outside = Shape::from_ranges(&[(0, 2), (0, 1)]);
    assert!(c.write(b, &outside, &[T::numbered(0); 2]).is_err());
    assert!(c.write(b, &sub, &data[1..]).is_err(), "short data accepted");
    // A region copied into another buffer (another allocation, of other
    // pitches) lands at the same indices, and only there: whole rows of
    // the source (part of each row of the wider destination), and a
    // strided region.
    let wide = Shape::from_ranges(&[(2, 12), (-4, 9)]);
    let other = c.alloc(&wide, &wide).expect("alloc");
    let numbered: Vec<T> = (0..wide.card()).map(T::numbered).collect();
    c.write(other, &wide, &numbered).expect("write");
    let strided = Shape::new(vec![Sig::new(7, 11, 3), Sig::new(-2, 7, 2)]);
    for region in [&untouched, &strided] {
        c.copy_region(b, other, region).expect("copy");
        assert!(
            read_all(c, other, region) == read_all(c, b, region),
            "copied {region}"
        );
    }
    let after = read_all(c, other, &wide);
    for (k, i) in wide.iter().enumerate() {
        if !untouched.contains(&i) && !strided.contains(&i) {
            assert!(after[k] == numbered[k], "the copy touched {i:?}");
        }
    }
    assert!(
        c.copy_region(b, b, &untouched).is_err(),
        "a copy into itself"
    );
    assert!(c.copy_region(b, other, &outside).is_err(), "a copy outside");
    c.free(other).unwrap();
    c.free(b).unwrap();
    assert_eq!(c.extent(b), Err(DeviceError::UnknownBuffer(b.0)));
}

/// Halos in device memory between two controllers of one peer domain
/// ([`crate::PeerCopies`]): regions (2-d and 3-d, several in one message,
/// one empty, none overlapping) packed from one tile land bit for bit in
/// another tile of other pitches at the same global indices, and nothing else
/// there changes; a message passed back for reuse carries new contents; one
/// whose sizes do not match the regions is refused. A device of no domain
/// refuses to pack.
pub fn peer_messages<T: Probe>(make: &mut dyn FnMut() -> Box<dyn Controller<T>>) {
    let (mut a, mut b) = (make(), make());
    let cases = [
        (
            Shape::from_ranges(&[(0, 10), (-1, 13)]),
            Shape::from_ranges(&[(8, 20), (-1, 13)]),
            Shape::from_ranges(&[(4, 24), (-3, 15)]),
            vec![
                Shape::from_ranges(&[(8, 10), (-1, 8)]),
                Shape::from_ranges(&[(9, 10), (2, 2)]),
                Shape::from_ranges(&[(8, 10), (8, 13)]),
            ],
        ),
        (
            Shape::from_ranges(&[(0, 4), (0, 5), (0, 6)]),
            Shape::from_ranges(&[(2, 8), (-1, 6), (0, 6)]),
            Shape::from_ranges(&[(1, 9), (-2, 7), (-1, 8)]),
            vec![Shape::from_ranges(&[(2, 4), (0, 5), (1, 5)])],
        ),
    ];
    let Some(domain) = a.peer_domain() else {
        let (ext, _, _, regions) = &cases[0];
        let t = a.alloc(ext, ext).unwrap();
        assert!(
            a.pack_peer(t, regions, None).is_err(),
            "packed with no domain"
        );
        return;
    };
    assert_eq!(b.peer_domain(), Some(domain), "two of one kind");
    for (ea, eb, cb, regions) in cases {
        let ta = a.alloc(&ea, &ea).unwrap();
        a.fill(ta, &ea, &T::probe).unwrap();
        let tb = b.alloc(&eb, &cb).unwrap();
        let old = |_: &[i64]| T::numbered(7);
        b.fill(tb, &eb, &old).unwrap();
        let msg = a.pack_peer(ta, &regions, None).expect("pack");
        b.unpack_peer(tb, &regions, &msg).expect("unpack");
        b.wait().unwrap();
        let sent = |i: &[i64]| regions.iter().any(|r| r.contains(i));
        let want: Vec<T> = eb
            .iter()
            .map(|i| {
                if sent(&i) {
                    T::probe(&i)
                } else {
                    T::numbered(7)
                }
            })
            .collect();
        assert!(
            read_all(b.as_mut(), tb, &eb) == want,
            "{eb}: regions moved wrong"
        );
        // Passed back for the next message: new contents arrive.
        for r in &regions {
            let fresh: Vec<T> = (0..r.card()).map(|n| T::numbered(n + 11)).collect();
            a.write(ta, r, &fresh).unwrap();
        }
        let again = a.pack_peer(ta, &regions, Some(msg)).expect("pack, reusing");
        b.unpack_peer(tb, &regions, &again).expect("unpack");
        b.wait().unwrap();
        for r in &regions {
            let fresh: Vec<T> = (0..r.card()).map(|n| T::numbered(n + 11)).collect();
            assert!(read_all(b.as_mut(), tb, r) == fresh, "{r}: reused message");
        }
        let other = [regions[0].expand(&vec![0; ea.ndims()], &{
            let mut one = vec![0; ea.ndims()];
            one[ea.ndims() - 1] = -1;
            one
        })];
        assert!(
            b.unpack_peer(tb, &other, &again).is_err(),
            "a message of other sizes accepted"
        );
        a.free(ta).unwrap();
        b.free(tb).unwrap();
    }
}

/// Initial states computed on the device (`InitSpec`'s kernels: EPSILOD's
/// boundary values, a random interior or none, 2-d and 3-d) over a whole
/// tile offset from the origin and over a block inside it: the bits of the
/// host's values, and nothing outside the region written. A device that
/// does not fill on the device says so and is left as it was.
pub fn device_init<T: Probe + Real + DeviceScalar>(c: &mut dyn Controller<T>) {
    let specs = [
        InitSpec {
            sizes: vec![20, 18],
            low: vec![1, 2],
            high: vec![2, 1],
            random: Some(7),
        },
        InitSpec {
            sizes: vec![20, 18],
            low: vec![1, 1],
            high: vec![1, 1],
            random: None,
        },
        InitSpec {
            sizes: vec![9, 8, 11],
            low: vec![1, 1, 2],
            high: vec![1, 2, 1],
            random: Some(3),
        },
    ];
    for spec in specs {
        let nd = spec.sizes.len();
        let ext = Shape::from_ranges(
            &spec
                .sizes
                .iter()
                .map(|&n| (-1, n as i64 + 1))
                .collect::<Vec<_>>(),
        );
        let cap = ext.expand(&vec![2; nd], &vec![1; nd]);
        let kernel = spec.device_kernel::<T>().expect("a kernel");
        let want = |i: &[i64]| T::from_f64(spec.value(i) as f64);
        let b = c.alloc(&ext, &cap).unwrap();
        let untouched = |_: &[i64]| T::numbered(5);
        c.fill(b, &ext, &untouched).unwrap();
        if !c.fill_device(b, &ext, &kernel).expect("fill") {
            assert!(
                read_all(c, b, &ext) == probes_of(&ext, &untouched),
                "refused, yet wrote"
            );
            c.free(b).unwrap();
            return;
        }
        c.wait().unwrap();
        let got = read_all(c, b, &ext);
        assert_eq!(
            bits(&got),
            bits(&probes_of(&ext, &want)),
            "{spec:?}: whole tile"
        );
        c.fill(b, &ext, &untouched).unwrap();
        let block = Shape::from_ranges(
            &spec
                .sizes
                .iter()
                .map(|&n| (2, n as i64 - 3))
                .collect::<Vec<_>>(),
        );
        assert!(c.fill_device(b, &block, &kernel).unwrap());
        c.wait().unwrap();
        let expected: Vec<T> = ext
            .iter()
            .map(|i| {
                if block.contains(&i) {
                    want(&i)
                } else {
                    untouched(&i)
                }
            })
            .collect();
        assert_eq!(
            bits(&read_all(c, b, &ext)),
            bits(&expected),
            "{spec:?}: a block"
        );
        let outside = ext.expand(&vec![1; nd], &vec![0; nd]);
        assert!(
            c.fill_device(b, &outside, &kernel).is_err(),
            "outside the extent"
        );
        c.free(b).unwrap();
    }
}

fn probes_of<T: Cell>(r: &Shape, f: &dyn Fn(&[i64]) -> T) -> Vec<T> {
    r.iter().map(|i| f(&i)).collect()
}

/// Growing and shrinking keeps the shared cells at their global indices.
pub fn resizing<T: Probe>(c: &mut dyn Controller<T>) {
    let ext = Shape::from_ranges(&[(10, 20), (0, 6)]);
    let b = c.alloc(&ext, &ext.expand(&[4, 0], &[4, 0])).unwrap();
    c.fill(b, &ext, &T::probe).unwrap();
    let inside = Shape::from_ranges(&[(7, 23), (0, 6)]);
    assert!(
        !c.resize(b, &inside, &[4, 0]).unwrap(),
        "fits: no reallocation"
    );
    let kept = Shape::from_ranges(&[(10, 20), (0, 6)]);
    assert!(read_all(c, b, &kept) == probes::<T>(&kept));
    let beyond = Shape::from_ranges(&[(15, 40), (0, 6)]);
    assert!(c.resize(b, &beyond, &[4, 0]).unwrap(), "must reallocate");
    let kept = Shape::from_ranges(&[(15, 20), (0, 6)]);
    assert!(read_all(c, b, &kept) == probes::<T>(&kept));
    // Emptied (a device ALB dropped), it keeps its memory for the rows it
    // may be given again.
    assert!(
        !c.resize(b, &Shape::empty(2), &[4, 0]).unwrap(),
        "empty: no reallocation"
    );
    assert_eq!(c.extent(b).unwrap().card(), 0);
    assert!(
        !c.resize(b, &kept, &[4, 0]).unwrap(),
        "back within the allocation: no reallocation"
    );
    c.fill(b, &kept, &T::probe).unwrap();
    assert!(read_all(c, b, &kept) == probes::<T>(&kept));
    // Emptied again, then given rows beyond its allocation: a new one,
    // nothing to keep (the old memory goes first), and it holds what it is
    // given.
    assert!(!c.resize(b, &Shape::empty(2), &[4, 0]).unwrap());
    let far = Shape::from_ranges(&[(60, 75), (0, 6)]);
    assert!(c.resize(b, &far, &[4, 0]).unwrap(), "must reallocate");
    assert_eq!(c.extent(b).unwrap(), far);
    c.fill(b, &far, &T::probe).unwrap();
    assert!(read_all(c, b, &far) == probes::<T>(&far));
}

/// Every library stencil as the specialised kernel (whose evaluation order
/// reference.md fixes for f32): see [`library_kernels`].
pub fn specialised_kernels(c: &mut dyn Controller<f32>) {
    library_kernels(c, KernelChoice::Specialized, |lib| {
        Box::new(reference::library_formula(lib))
    });
}

/// Every library stencil as the generic kernel, in any float type: see
/// [`library_kernels`].
pub fn generic_kernels<T: Real + Probe>(c: &mut dyn Controller<T>) {
    library_kernels(c, KernelChoice::Generic, |lib| {
        Box::new(reference::generic_formula::<T>(&lib.spec()))
    });
}

type Formula<T> = Box<dyn Fn(reference::Neighbour<'_, T>) -> T>;

/// Every library stencil, three ping-pong iterations on a device buffer
/// offset from the origin: bit-identical to the serial reference.
fn library_kernels<T: Real + Probe>(
    c: &mut dyn Controller<T>,
    choice: KernelChoice,
    formula: impl Fn(Library) -> Formula<T>,
) {
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
        let init = |i: &[i64]| {
            T::probe(i) + T::from_f64(basic_init(i, &sizes, &spec.low, &spec.high) as f64)
        };
        let k = c.load(Arc::from(library_kernel::<T>(lib, choice))).unwrap();
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
        let want = reference::run(&sizes, &spec.low, &spec.high, 3, init, formula(lib));
        assert!(
            bits(&got) == bits(want.as_slice().expect("row-major")),
            "{lib} {choice:?}: result differs from the serial reference"
        );
        c.free(a).unwrap();
        c.free(b).unwrap();
    }
}

/// The skeleton's iteration: border strips, a wait, the inner region as an
/// overlapped launch while the boundary ring of the destination is written
/// (as received halos are), then a wait: bit-identical to the serial
/// reference after ten iterations.
pub fn overlapped_launches<T: Real + Probe>(c: &mut dyn Controller<T>) {
    let lib = Library::S2d4;
    let spec = lib.spec();
    let sizes = [23usize, 37];
    let all = Shape::from_sizes(&sizes);
    let rows = |a: i64, b: i64| Shape::from_ranges(&[(a, b), (1, sizes[1] as i64 - 1)]);
    let n = sizes[0] as i64;
    let strips = [rows(1, 2), rows(n - 2, n - 1)];
    let inner = rows(2, n - 2);
    let ring = all.difference(&all.shrink(&[1, 1], &[1, 1]));
    let init =
        |i: &[i64]| T::probe(i) + T::from_f64(basic_init(i, &sizes, &spec.low, &spec.high) as f64);
    let k = c
        .load(Arc::from(library_kernel::<T>(lib, KernelChoice::Generic)))
        .unwrap();
    let mut a = c.alloc(&all, &all).unwrap();
    let mut b = c.alloc(&all, &all).unwrap();
    c.fill(a, &all, &init).unwrap();
    for it in 0..10 {
        c.set_iteration(it);
        for s in &strips {
            c.launch(k, a, b, s).unwrap();
        }
        c.wait().unwrap();
        c.launch_overlapped(k, a, b, &inner).unwrap();
        for part in &ring {
            c.fill(b, part, &init).unwrap();
        }
        c.wait().unwrap();
        std::mem::swap(&mut a, &mut b);
    }
    let got = read_all(c, a, &all);
    let want = reference::run(
        &sizes,
        &spec.low,
        &spec.high,
        10,
        init,
        reference::generic_formula::<T>(&spec),
    );
    assert!(
        bits(&got) == bits(want.as_slice().expect("row-major")),
        "overlapped launches: result differs from the serial reference"
    );
}

/// Several iterations in one launch (temporal blocking). A device that
/// fuses: every library stencil, two of 2, 3 and 5 steps (each pair in
/// turn: a step count is a kernel compilation on PoCL and NVRTC, and these
/// are most of the OpenCL suite's time), each step's region the cone
/// of a final region (a whole interior, a thin top strip, an inner block, a
/// one-wide slab of the last dimension), gives the bits of the same steps
/// launched one by one, leaves the source as it was and writes nothing
/// outside the final region; regions that are not nested are refused. A
/// device that does not fuse runs one step and refuses two.
pub fn fused_launches<T: Real + Probe>(c: &mut dyn Controller<T>) {
    if c.fused_steps() < 2 {
        let all = Shape::from_sizes(&[8, 8]);
        let inner = all.shrink(&[1, 1], &[1, 1]);
        let k = c
            .load(Arc::from(library_kernel::<T>(
                Library::S2d4,
                KernelChoice::Generic,
            )))
            .unwrap();
        let a = c.alloc(&all, &all).unwrap();
        let b = c.alloc(&all, &all).unwrap();
        c.launch_steps(k, a, b, std::slice::from_ref(&inner))
            .expect("one step");
        assert!(c.launch_steps(k, a, b, &[inner.clone(), inner]).is_err());
        return;
    }
    for (n, lib) in Library::ALL.into_iter().enumerate() {
        let spec = lib.spec();
        let nd = lib.ndims();
        let sizes: Vec<usize> = (0..nd)
            .map(|d| if nd == 4 { 9 + d } else { 17 + 3 * d })
            .collect();
        let all = Shape::from_sizes(&sizes);
        let (low, high) = (spec.low.clone(), spec.high.clone());
        let interior = Shape::from_ranges(
            &(0..nd)
                .map(|d| (low[d] as i64, (sizes[d] - high[d]) as i64))
                .collect::<Vec<_>>(),
        );
        let cap = all.expand(&vec![1; nd], &vec![2; nd]);
        let init = |i: &[i64]| {
            T::probe(i) + T::from_f64(basic_init(i, &sizes, &spec.low, &spec.high) as f64)
        };
        let kernel: Arc<dyn Kernel<T>> =
            Arc::from(library_kernel::<T>(lib, KernelChoice::Specialized));
        let k = c.load(kernel.clone()).unwrap();
        let first = interior.sig(0).begin();
        let finals = [
            interior.clone(),
            interior.with_sig(0, Sig::range(first, first + 2)),
            {
                let (mut lo, mut hi) = (vec![0; nd], vec![0; nd]);
                (lo[0], hi[0]) = (3, 2);
                interior.shrink(&lo, &hi)
            },
            {
                let l = interior.sig(nd - 1).begin();
                interior.with_sig(nd - 1, Sig::range(l + 1, l + 2))
            },
        ];
        let (src, dst) = (c.alloc(&all, &cap).unwrap(), c.alloc(&all, &cap).unwrap());
        for steps in [[2usize, 3], [2, 5], [3, 5]][n % 3] {
            for f in finals.iter().filter(|f| !f.is_empty()) {
                let cones = cones(f, steps, &low, &high, &interior);
                fused(c, k, (src, dst), &all, &init, &cones);
                let what = format!("{lib}, {steps} steps fused, final region {f}");
                assert!(
                    bits(&read_all(c, dst, f)) == bits(&stepwise(&kernel, &all, &init, &cones, f)),
                    "{what}: differs from the steps one by one"
                );
                assert!(
                    bits(&read_all(c, src, &all)) == bits(&probes_with(&all, &init)),
                    "{what}: the source changed"
                );
                for part in all.difference(f) {
                    assert!(
                        bits(&read_all(c, dst, &part)) == bits(&probes_with(&part, &init)),
                        "{what}: wrote outside the final region"
                    );
                }
            }
        }
        let whole = interior.clone();
        let top = interior.with_sig(0, Sig::range(first, first + 1));
        assert!(
            c.launch_steps(k, src, dst, &[top, whole]).is_err(),
            "{lib}: regions that grow accepted"
        );
        for b in [src, dst] {
            c.free(b).unwrap();
        }
    }
}

/// Fused launches of 2-d and 3-d stencils (symmetric and one-sided
/// reaches, stars and boxes) over grids wider than a work group's tile,
/// final regions the whole interior (cones clipped to it) and an inner
/// block (cones free): the bits of the same steps launched one by one.
/// Each stencil runs 2 and 8 steps and two counts between, so that every
/// count from 2 to 8 runs (a count is a kernel compilation on PoCL and
/// NVRTC). Devices that do not fuse skip it.
pub fn fused_against_single_steps<T: Real + Probe>(c: &mut dyn Controller<T>) {
    if c.fused_steps() < 8 {
        return;
    }
    for (lib, sizes, between) in [
        (Library::S2d4, vec![70, 90], [3, 5]),
        (Library::S2df5, vec![66, 75], [4, 7]),
        (Library::S3d27, vec![21, 24, 27], [5, 6]),
        (Library::S3df7, vec![20, 23, 26], [3, 7]),
    ] {
        let spec = lib.spec();
        let nd = sizes.len();
        let all = Shape::from_sizes(&sizes);
        let (low, high) = (spec.low.clone(), spec.high.clone());
        let interior = Shape::from_ranges(
            &(0..nd)
                .map(|d| (low[d] as i64, (sizes[d] - high[d]) as i64))
                .collect::<Vec<_>>(),
        );
        let init = |i: &[i64]| {
            T::probe(i) + T::from_f64(basic_init(i, &sizes, &spec.low, &spec.high) as f64)
        };
        let kernel: Arc<dyn Kernel<T>> = Arc::from(library_kernel::<T>(lib, KernelChoice::Generic));
        let k = c.load(kernel.clone()).unwrap();
        let (src, dst) = (c.alloc(&all, &all).unwrap(), c.alloc(&all, &all).unwrap());
        for steps in [2, between[0], between[1], 8] {
            let inner = interior.shrink(&vec![3; nd], &vec![2; nd]);
            for f in [&interior, &inner] {
                let cones = cones(f, steps, &low, &high, &interior);
                fused(c, k, (src, dst), &all, &init, &cones);
                // The final region from the steps one by one, the source's
                // cells elsewhere (a fused launch leaves them as they were).
                let mut want = probes_with(&all, &init);
                let mut got = stepwise(&kernel, &all, &init, &cones, f).into_iter();
                for (n, i) in all.iter().enumerate() {
                    if f.contains(&i) {
                        want[n] = got.next().expect("a cell per index of the region");
                    }
                }
                assert!(
                    bits(&read_all(c, dst, &all)) == bits(&want),
                    "{lib}, {steps} steps fused over {f}: differs from the steps one by one"
                );
            }
        }
        for b in [src, dst] {
            c.free(b).unwrap();
        }
    }
}

/// Fills `src` and `dst` (each one allocation over `all`) from `init` and
/// runs `cones` fused in one [`crate::FusedSteps::launch_steps`] from `src`
/// into `dst`.
pub fn fused<T: Cell>(
    c: &mut dyn Controller<T>,
    k: KernelId,
    (src, dst): (BufferId, BufferId),
    all: &Shape,
    init: &(dyn Fn(&[i64]) -> T + Sync),
    cones: &[Shape],
) {
    for b in [src, dst] {
        c.fill(b, all, init).unwrap();
    }
    c.launch_steps(k, src, dst, cones).unwrap();
    c.wait().unwrap();
}

/// The cells of `region` after `kernel` ran `cones` one step at a time
/// from `init` over `all`, on one CPU thread: what a fused launch of the
/// same cones must give. The CPU controller stands in for the device's own
/// one-step launches (it passes this suite against the serial reference,
/// and every backend's one-step kernels do too): on PoCL every new
/// work-group shape, and each cone has its own, is a kernel compilation.
pub fn stepwise<T: Cell>(
    kernel: &Arc<dyn Kernel<T>>,
    all: &Shape,
    init: &(dyn Fn(&[i64]) -> T + Sync),
    cones: &[Shape],
    region: &Shape,
) -> Vec<T> {
    let mut c = crate::CpuController::<T>::new(1).expect("a CPU controller");
    let k = c.load(kernel.clone()).unwrap();
    let (mut a, mut b) = (c.alloc(all, all).unwrap(), c.alloc(all, all).unwrap());
    for buf in [a, b] {
        c.fill(buf, all, init).unwrap();
    }
    for cone in cones {
        c.launch(k, a, b, cone).unwrap();
        std::mem::swap(&mut a, &mut b);
    }
    read_all(&mut c, a, region)
}

/// The regions of `steps` fused iterations whose last is `region`: step
/// `j` widened by the reach (`low`, `high`) of the steps after it, within
/// the `interior` (what the skeleton launches).
pub fn cones(
    region: &Shape,
    steps: usize,
    low: &[usize],
    high: &[usize],
    interior: &Shape,
) -> Vec<Shape> {
    (0..steps)
        .map(|j| {
            let n = (steps - 1 - j) as i64;
            let lo: Vec<i64> = low.iter().map(|&r| r as i64 * n).collect();
            let hi: Vec<i64> = high.iter().map(|&r| r as i64 * n).collect();
            region.expand(&lo, &hi).intersect(interior)
        })
        .collect()
}

fn probes_with<T: Cell>(r: &Shape, f: &dyn Fn(&[i64]) -> T) -> Vec<T> {
    r.iter().map(|i| f(&i)).collect()
}

/// Bad launches are errors, not panics or silent garbage.
pub fn launch_errors<T: Real>(c: &mut dyn Controller<T>) {
    let k = c
        .load(Arc::from(library_kernel::<T>(
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
        c.launch(KernelId(999), a, b, &inner),
        Err(DeviceError::UnknownKernel(999))
    ));
    let flat = Shape::from_ranges(&[(1, 7)]);
    assert!(c.launch(k, a, b, &flat).is_err());
}

/// Boxes of 1 to 4 dimensions (columns, slabs, interior blocks) inside an
/// allocation larger than the extent: reads return the cells at those
/// indices, writes land there and nowhere else.
pub fn boxes<T: Probe>(c: &mut dyn Controller<T>) {
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
        c.fill(b, &ext, &T::probe).expect("fill");
        let mut want: std::collections::HashMap<Vec<i64>, T> =
            ext.iter().map(|i| (i.clone(), T::probe(&i))).collect();
        let last = nd - 1;
        let column = ext.with_sig(last, Sig::range(2, 3));
        let inner = ext.shrink(&vec![1; nd], &vec![2; nd]);
        let slab = ext.with_sig(0, Sig::range(3, 5));
        for (k, r) in [column, inner, slab].iter().enumerate() {
            let got = read_all(c, b, r);
            let expect: Vec<T> = r.iter().map(|i| want[&i]).collect();
            assert!(got == expect, "{nd}-d read of {r}");
            let data: Vec<T> = (0..r.card())
                .map(|i| T::numbered(1000 * (k + 1) + i))
                .collect();
            c.write(b, r, &data).expect("write");
            for (i, v) in r.iter().zip(&data) {
                want.insert(i, *v);
            }
            let all: Vec<T> = ext.iter().map(|i| want[&i]).collect();
            assert!(read_all(c, b, &ext) == all, "{nd}-d write of {r}");
        }
        c.free(b).unwrap();
    }
}

/// The update of [`planes_kernel`]: components of three neighbours mixed
/// across component indices, so a component read from the wrong plane or
/// the wrong cell shows.
fn mixed(at: impl Fn([i64; 3]) -> [f32; 19]) -> [f32; 19] {
    let (me, x, y, z) = (at([0, 0, 0]), at([-1, 0, 0]), at([0, 1, 0]), at([0, 0, -1]));
    std::array::from_fn(|q| (x[q] + y[(q + 1) % 19]) * 0.5 + z[(q + 18) % 19] - me[q] * 0.25)
}

/// A 3-d kernel of 19-float cells whose device body reaches cells only
/// through the accessors, so GPU controllers that load it first lay their
/// cells out in planes ([`kernels::CellLayout::Planes`]).
pub fn planes_kernel() -> Arc<dyn kernels::Kernel<[f32; 19]>> {
    let offsets = [[0, 0, 0], [-1, 0, 0], [0, 1, 0], [0, 0, -1]];
    let footprint = hitmap::Footprint::new(3, offsets.iter().map(|o| o.to_vec()).collect());
    let body = "    const cell me = CELL_AT(src, c);\n    cell v;\n    \
                for (int q = 0; q < 19; q++)\n        \
                v.d[q] = (PART_AT(src, c - s1, q) + PART_AT(src, c + s2, (q + 1) % 19)) * 0.5f\n            \
                + PART_AT(src, c - s3, (q + 18) % 19) - me.d[q] * 0.25f;\n    CELL_PUT(dst, c, v);\n";
    // SAFETY: the body reads `src` at `c` and at the footprint's three
    // other offsets (dimensions 0, 1, 2 stepping by s1, s2, s3) and writes
    // only cell `c` of `dst`; `cell` is 19 floats, like `[f32; 19]`.
    let device = unsafe { kernels::DeviceKernel::new(kernels::CellDecl::array::<f32>(19), body) }
        .with_planes();
    Arc::new(
        kernels::Custom::new(
            "planes",
            footprint,
            |nb: &kernels::Neighbourhood<[f32; 19]>| {
                mixed(|o| nb.get(&[o[0] as isize, o[1] as isize, o[2] as isize]))
            },
        )
        .with_device_kernel(device),
    )
}

/// Cells a kernel can read in planes, with that kernel loaded before any
/// buffer (as a run loads it): transfers, boxes and resizing as for whole
/// cells, and launches over a 3-d tile inside a larger allocation, before
/// and after it is reallocated (the planes' stride changes), give the
/// host's bits and leave other cells alone.
pub fn cell_planes(c: &mut dyn Controller<[f32; 19]>) {
    let k = c.load(planes_kernel()).expect("load");
    transfers(c);
    boxes(c);
    resizing(c);
    let ext = Shape::from_ranges(&[(0, 6), (-1, 6), (0, 9)]);
    let cap = ext.expand(&[1, 0, 2], &[2, 0, 0]);
    let (src, dst) = (c.alloc(&ext, &cap).unwrap(), c.alloc(&ext, &cap).unwrap());
    let old = |i: &[i64]| <[f32; 19]>::numbered((i[0] * 100 + i[1] * 10 + i[2] + 1000) as usize);
    for round in 0..2 {
        let ext = c.extent(src).unwrap();
        c.fill(src, &ext, &<[f32; 19]>::probe).unwrap();
        c.fill(dst, &ext, &old).unwrap();
        let region = ext.shrink(&[1, 0, 1], &[0, 1, 0]);
        c.launch(k, src, dst, &region).expect("launch");
        c.wait().unwrap();
        let want: Vec<[f32; 19]> = ext
            .iter()
            .map(|i| {
                if region.contains(&i) {
                    mixed(|o| <[f32; 19]>::probe(&[i[0] + o[0], i[1] + o[1], i[2] + o[2]]))
                } else {
                    old(&i)
                }
            })
            .collect();
        let got = read_all(c, dst, &ext);
        let bits =
            |v: &[[f32; 19]]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
        assert!(
            bits(&got) == bits(&want),
            "round {round}: launch over {region}"
        );
        if round == 0 {
            let grown = Shape::from_ranges(&[(-3, 7), (-1, 6), (0, 9)]);
            for b in [src, dst] {
                assert!(c.resize(b, &grown, &[0, 0, 0]).unwrap(), "must reallocate");
            }
        }
    }
}

/// The kernel [`aux_fields`] checks with: one auxiliary field, read at
/// offsets.
pub fn aux_kernel<T: kernels::expr::Math>() -> Arc<kernels::ExprKernel<T>> {
    let spec = kernels::ExprSpec::from_toml(
        "name = \"aux\"\nlow = [1, 1]\nhigh = [1, 1]\naux = { k = \"g[0] * 0.5 - g[1] / 3\" }\nupdate = \"u[0,0] * k[0,1] + k[-1,0] - u[1,-1]\"\n",
        "aux.toml",
    )
    .expect("a valid spec");
    Arc::new(kernels::ExprKernel::<T>::new(&spec))
}

/// Auxiliary fields: a kernel reading one at offsets computes what the
/// host computes from the same buffers; launches without the fields bound,
/// or with a field of another allocation, are refused.
pub fn aux_fields<T: Probe + kernels::expr::Math>(c: &mut dyn Controller<T>) {
    let kernel = aux_kernel::<T>();
    let field = kernels::Kernel::aux_fields(kernel.as_ref())[0].clone();
    let ext = Shape::from_ranges(&[(3, 40), (-2, 35)]);
    let cap = ext.expand(&[4, 0], &[2, 0]);
    let (src, dst, aux) = (
        c.alloc(&ext, &cap).expect("alloc"),
        c.alloc(&ext, &cap).expect("alloc"),
        c.alloc(&ext, &cap).expect("alloc"),
    );
    c.fill(src, &ext, &T::probe).expect("fill");
    c.fill(dst, &ext, &T::probe).expect("fill");
    c.fill(aux, &ext, field.as_ref()).expect("fill");
    let k = c.load(kernel.clone()).expect("load");
    let region = ext.shrink(&[1, 1], &[1, 1]);
    match c.launch(k, src, dst, &region) {
        Err(DeviceError::AuxFields {
            wants: 1, bound: 0, ..
        }) => {}
        other => panic!("a launch with no field bound gave {other:?}"),
    }
    let other = c.alloc(&ext, &ext).expect("alloc");
    c.bind_aux(k, &[other]).expect("bind");
    assert!(
        matches!(
            c.launch(k, src, dst, &region),
            Err(DeviceError::BufferMismatch(_))
        ),
        "a field of another allocation was accepted"
    );
    c.bind_aux(k, &[aux]).expect("bind");
    c.launch(k, src, dst, &region).expect("launch");
    c.wait().expect("wait");
    let got = read_all(c, dst, &region);
    // The host's kernel over the whole extent, row-major.
    let dims: Vec<usize> = ext.extents();
    let frame = kernels::Frame::row_major(&dims).with_origin(&[3, -2]);
    let host_src: Vec<T> = ext.iter().map(|i| T::probe(&i)).collect();
    let host_aux: Vec<T> = ext.iter().map(|i| field(&i)).collect();
    let mut host_dst = host_src.clone();
    let local = [1..dims[0] - 1, 1..dims[1] - 1];
    let p = frame.plane();
    kernels::Kernel::apply_aux(
        kernel.as_ref(),
        &host_src,
        &[&host_aux],
        &mut host_dst[p..(dims[0] - 1) * p],
        &frame,
        &local,
    );
    let want: Vec<T> = region
        .iter()
        .map(|i| host_dst[((i[0] - 3) as usize) * p + (i[1] + 2) as usize])
        .collect();
    assert!(
        bytemuck::cast_slice::<T, u8>(&got) == bytemuck::cast_slice::<T, u8>(&want),
        "a kernel reading an auxiliary field"
    );
    for b in [src, dst, aux, other] {
        c.free(b).unwrap();
    }
}

/// Runs every `f32` check on fresh controllers from `make` (for a backend
/// that cannot be named in the macro, e.g. one built from runtime state).
pub fn run_all(make: &mut dyn FnMut() -> Box<dyn Controller<f32>>) {
    transfers(make().as_mut());
    boxes(make().as_mut());
    resizing(make().as_mut());
    specialised_kernels(make().as_mut());
    generic_kernels(make().as_mut());
    overlapped_launches(make().as_mut());
    fused_launches(make().as_mut());
    fused_against_single_steps(make().as_mut());
    launch_errors(make().as_mut());
    aux_fields(make().as_mut());
    device_init(make().as_mut());
    peer_messages(make);
}

/// Generates the conformance suite for one backend: a module `$name` with
/// one `#[test]` per check and cell type (submodules `single` for `f32`,
/// `double` for `f64`, `d3q19` for `[f32; 19]`).
/// `<T>` names the cell type in the constructor expression, which runs
/// once per test. Attributes before the name go on every test, e.g.
/// `#[ignore = "needs an NVIDIA GPU"]` for hardware CI lacks:
///
/// ```
/// use controllers::{controller_conformance, CpuController};
/// controller_conformance!(cpu_two_threads, <T> CpuController::<T>::new(2).unwrap());
/// controller_conformance!(
///     #[ignore = "an example of hardware CI lacks"]
///     cpu_eight_threads,
///     <T> CpuController::<T>::new(8).unwrap()
/// );
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! controller_conformance {
    ($(#[$attr:meta])* $name:ident, <$t:ident> $make:expr) => {
        #[allow(non_snake_case)]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance as check;

            #[allow(dead_code)]
            fn make<$t: check::Probe>() -> Box<dyn $crate::Controller<$t>> {
                Box::new($make)
            }

            $crate::controller_conformance!(@tests [$(#[$attr])*] single = f32:
                transfers boxes resizing specialised_kernels generic_kernels
                overlapped_launches fused_launches fused_against_single_steps launch_errors
                aux_fields device_init);
            $crate::controller_conformance!(@tests [$(#[$attr])*] double = f64:
                transfers boxes resizing generic_kernels overlapped_launches fused_launches
                fused_against_single_steps launch_errors aux_fields device_init);
            $crate::controller_conformance!(@tests [$(#[$attr])*] d3q19 = [f32; 19]:
                transfers boxes resizing cell_planes);

            #[test]
            $(#[$attr])*
            fn peer_messages() {
                check::peer_messages::<f32>(&mut make::<f32>);
                check::peer_messages::<[f32; 19]>(&mut make::<[f32; 19]>);
                // In planes, where the backend lays cells out so.
                check::peer_messages::<[f32; 19]>(&mut || {
                    let mut c = make::<[f32; 19]>();
                    c.load(check::planes_kernel()).expect("load");
                    c
                });
            }
        }
    };
    (@tests [$($attrs:tt)*] $m:ident = $t:ty: $($check:ident)*) => {
        mod $m {
            #[allow(unused_imports)]
            use super::check;
            #[allow(unused_imports)]
            use super::make;
            $crate::controller_conformance!(@each [$($attrs)*] $t; $($check)*);
        }
    };
    (@each [$($attrs:tt)*] $t:ty;) => {};
    (@each [$($attrs:tt)*] $t:ty; $check:ident $($rest:ident)*) => {
        #[test]
        $($attrs)*
        fn $check() {
            check::$check(make::<$t>().as_mut());
        }
        $crate::controller_conformance!(@each [$($attrs)*] $t; $($rest)*);
    };
}

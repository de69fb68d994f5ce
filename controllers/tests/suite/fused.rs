//! Fused launches (temporal blocking) on the CPU over random grids, final
//! regions, step counts, thread counts and window sizes: the bits of the
//! same steps launched one by one, and of the serial reference where the
//! final region is the whole interior. Grids here are long enough in
//! dimension 0 that a launch is cut into several tasks whose cones overlap.

use controllers::{BufferId, Controller, CpuController};
use hitmap::{Shape, Sig};
use kernels::{basic_init, library_kernel, reference, Kernel, KernelChoice, Library};
use proptest::prelude::*;
use std::sync::Arc;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn read(c: &mut CpuController<f32>, b: BufferId, r: &Shape) -> Vec<f32> {
    let mut v = Vec::new();
    c.read(b, r, &mut v).unwrap();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn fused_steps_give_the_bits_of_one_step_at_a_time(
        which in 0usize..8,
        long in 60usize..1500,
        short in prop::collection::vec(5usize..16, 2),
        steps in 2usize..7,
        threads in 1usize..5,
        window in prop::sample::select(vec![1usize, 3000, 40_000, 1 << 20]),
        cut in prop::collection::vec((0.0f64..1.0, 0.0f64..1.0), 3),
        whole in any::<bool>(),
    ) {
        let lib = [
            Library::S1dnc4, Library::S2d4, Library::S2d8, Library::S2dnc8,
            Library::S2df5, Library::S3d6, Library::S3d27, Library::S3df7,
        ][which];
        let spec = lib.spec();
        let nd = lib.ndims();
        let long = if nd == 3 { long / 6 + 20 } else { long };
        let sizes: Vec<usize> = (0..nd).map(|d| if d == 0 { long } else { short[d - 1] + 4 }).collect();
        let all = Shape::from_sizes(&sizes);
        let interior = Shape::from_ranges(
            &(0..nd)
                .map(|d| (spec.low[d] as i64, (sizes[d] - spec.high[d]) as i64))
                .collect::<Vec<_>>(),
        );
        // A random box of the interior, or the interior itself.
        let fin = if whole {
            interior.clone()
        } else {
            Shape::new(
                (0..nd)
                    .map(|d| {
                        let s = interior.sig(d);
                        let n = s.card() as f64;
                        let (a, b) = (cut[d].0 * n, cut[d].1 * n);
                        let (lo, hi) = (a.min(b) as i64, (a.max(b) as i64 + 1).min(n as i64));
                        Sig::range(s.begin() + lo, s.begin() + hi)
                    })
                    .collect(),
            )
        };
        let cones = controllers::conformance::cones(&fin, steps, &spec.low, &spec.high, &interior);
        let init = |i: &[i64]| {
            controllers::conformance::probe_value(i) + basic_init(i, &sizes, &spec.low, &spec.high)
        };
        let mut c = CpuController::<f32>::new(threads).unwrap().window_bytes(window);
        let kernel: Arc<dyn Kernel<f32>> = Arc::from(library_kernel::<f32>(lib, KernelChoice::Specialized));
        let k = c.load(kernel.clone()).unwrap();
        let cap = all.expand(&vec![2; nd], &vec![1; nd]);
        let (src, dst) = (c.alloc(&all, &cap).unwrap(), c.alloc(&all, &cap).unwrap());
        controllers::conformance::fused(&mut c, k, (src, dst), &all, &init, &cones);
        let want = controllers::conformance::stepwise(&kernel, &all, &init, &cones, &fin);
        prop_assert_eq!(bits(&read(&mut c, dst, &fin)), bits(&want));
        if whole {
            let want = reference::run(
                &sizes, &spec.low, &spec.high, steps, init, reference::library_formula(lib),
            );
            let got = read(&mut c, dst, &all);
            prop_assert_eq!(bits(&got), bits(want.as_slice().unwrap()));
        }
    }
}

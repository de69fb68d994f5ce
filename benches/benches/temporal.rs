//! Temporal blocking on one CPU device using every core: K
//! iterations fused into one pass over memory (`FusedSteps::launch_steps`)
//! against K one-step launches and against the copy roofline (a parallel
//! copy of the same array: 8 bytes moved per cell, the most a one-step
//! stencil can reach). Throughput is cell updates: interior cells x K.

use benches::copy;
use controllers::{Controller, CpuController, FusedSteps};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hitmap::Shape;
use kernels::{library_kernel, KernelChoice, Library};
use std::sync::Arc;

fn fused(c: &mut Criterion, group: &str, lib: Library, sizes: &[usize], depths: &[usize]) {
    let cells: usize = sizes.iter().product();
    let nd = sizes.len();
    let all = Shape::from_sizes(sizes);
    let interior = all.shrink(&vec![1; nd], &vec![1; nd]);
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    let src: Vec<f32> = (0..cells).map(|i| (i % 97) as f32).collect();
    let mut dst = vec![0.0f32; cells];
    g.throughput(Throughput::Elements(interior.card() as u64));
    g.bench_function("copy", |b| {
        b.iter(|| copy(&src, &mut dst, *sizes.last().unwrap()))
    });
    drop(dst);
    let mut dev = CpuController::<f32>::new(rayon::current_num_threads()).unwrap();
    let k = dev
        .load(Arc::from(library_kernel::<f32>(
            lib,
            KernelChoice::Specialized,
        )))
        .unwrap();
    let a = dev.alloc(&all, &all).unwrap();
    let b = dev.alloc(&all, &all).unwrap();
    dev.write(a, &all, &src).unwrap();
    dev.write(b, &all, &src).unwrap();
    drop(src);
    for &depth in depths {
        g.throughput(Throughput::Elements((interior.card() * depth) as u64));
        let steps = vec![interior.clone(); depth];
        g.bench_function(format!("{depth} one-step launches"), |bench| {
            bench.iter(|| {
                let (mut x, mut y) = (a, b);
                for s in &steps {
                    dev.launch(k, x, y, s).unwrap();
                    std::mem::swap(&mut x, &mut y);
                }
            })
        });
        g.bench_function(format!("{depth} fused"), |bench| {
            bench.iter(|| dev.launch_steps(k, a, b, &steps).unwrap())
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    fused(c, "2d4-4098^2", Library::S2d4, &[4098, 4098], &[2, 4, 8]);
    fused(c, "2d4-16386^2", Library::S2d4, &[16386, 16386], &[4]);
    fused(c, "3d27-258^3", Library::S3d27, &[258, 258, 258], &[4]);
}

criterion_group!(temporal_benches, benches);
criterion_main!(temporal_benches);

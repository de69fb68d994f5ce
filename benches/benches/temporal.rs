//! Temporal blocking on one CPU device using every core: K
//! iterations fused into one pass over memory (`FusedSteps::launch_steps`)
//! against K one-step launches and against the copy roofline (a parallel
//! copy of the same array: 8 bytes moved per cell, the most a one-step
//! stencil can reach). Throughput is cell updates: interior cells x K.

use benches::copy;
use controllers::{BufferId, Controller, CpuController, FusedSteps, KernelId};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hitmap::Shape;
use kernels::{library_kernel, KernelChoice, Library};
use std::sync::Arc;

/// `lib` loaded on `dev`, and two buffers over `all` holding `src`.
fn setup(
    dev: &mut CpuController<f32>,
    lib: Library,
    all: &Shape,
    src: &[f32],
) -> (KernelId, BufferId, BufferId) {
    let k = dev
        .load(Arc::from(library_kernel::<f32>(
            lib,
            KernelChoice::Specialized,
        )))
        .unwrap();
    let a = dev.alloc(all, all).unwrap();
    let b = dev.alloc(all, all).unwrap();
    dev.write(a, all, src).unwrap();
    dev.write(b, all, src).unwrap();
    (k, a, b)
}

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
    let (k, a, b) = setup(&mut dev, lib, &all, &src);
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

/// 4 fused steps of 2d4 cut into bands of columns of several widths
/// (`band_cols`; 0 for whole rows), each with windows of the whole L2 and
/// of a quarter of it: the measurements behind the default band and
/// window sizes.
fn bands(c: &mut Criterion, n: usize) {
    let all = Shape::from_sizes(&[n, n]);
    let interior = all.shrink(&[1, 1], &[1, 1]);
    let mut g = c.benchmark_group(format!("2d4-{n}^2-bands"));
    g.sample_size(10);
    g.throughput(Throughput::Elements((interior.card() * 4) as u64));
    let src: Vec<f32> = (0..n * n).map(|i| (i % 97) as f32).collect();
    let steps = vec![interior; 4];
    let l2 = controllers::cpu::l2_cache_bytes();
    for band in [0, 512, 1024, 2048] {
        for (share, window) in [(1, l2), (4, l2 / 4)] {
            // Launches in bands keep a quarter of `window_bytes` in windows.
            let bytes = if band == 0 { window } else { 4 * window };
            let mut dev = CpuController::<f32>::new(rayon::current_num_threads())
                .unwrap()
                .band_cols(band)
                .window_bytes(bytes);
            let (k, a, b) = setup(&mut dev, Library::S2d4, &all, &src);
            g.bench_function(format!("band {band}, windows L2/{share}"), |bench| {
                bench.iter(|| dev.launch_steps(k, a, b, &steps).unwrap())
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    fused(c, "2d4-4098^2", Library::S2d4, &[4098, 4098], &[2, 4, 8]);
    fused(c, "2d4-16386^2", Library::S2d4, &[16386, 16386], &[4]);
    fused(c, "3d27-258^3", Library::S3d27, &[258, 258, 258], &[4]);
    bands(c, 4098);
    bands(c, 8194);
}

criterion_group!(temporal_benches, benches);
criterion_main!(temporal_benches);

//! Kernels on one CPU device (all cores) against a hand-written rayon loop and
//! a parallel copy of the same array (8 bytes moved per cell).

use benches::{copy, hand_2d4, hand_3d27};
use controllers::{Controller, CpuController};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hitmap::Shape;
use kernels::{library_kernel, ExprKernel, ExprSpec, Kernel, KernelChoice, Library};
use std::sync::Arc;

fn device_step(
    c: &mut Criterion,
    group: &str,
    lib: Library,
    sizes: &[usize],
    hand: &dyn Fn(&[f32], &mut [f32]),
    update: &str,
) {
    let cells: usize = sizes.iter().product();
    let threads = rayon::current_num_threads();
    let all = Shape::from_sizes(sizes);
    let interior = all.shrink(&vec![1; sizes.len()], &vec![1; sizes.len()]);
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(interior.card() as u64));
    g.sample_size(20);

    let src: Vec<f32> = (0..cells).map(|i| (i % 97) as f32).collect();
    let mut dst = vec![0.0f32; cells];
    let row = *sizes.last().unwrap();
    g.bench_function("copy", |b| b.iter(|| copy(&src, &mut dst, row)));
    g.bench_function("hand-rayon", |b| b.iter(|| hand(&src, &mut dst)));

    // The same update written as a spec expression (specialised order).
    let spec = lib.spec();
    let expr = ExprSpec::from_toml(
        &format!(
            "name = \"e\"\nlow = {:?}\nhigh = {:?}\nupdate = \"{update}\"\n",
            spec.low, spec.high
        ),
        "bench",
    )
    .unwrap();
    let kernels: Vec<(String, Arc<dyn Kernel<f32>>)> =
        [KernelChoice::Specialized, KernelChoice::Generic]
            .into_iter()
            .map(|choice| {
                let k: Arc<dyn Kernel<f32>> = Arc::from(library_kernel::<f32>(lib, choice));
                (format!("{choice:?}").to_lowercase(), k)
            })
            .chain([(
                "expression".to_string(),
                Arc::new(ExprKernel::<f32>::new(&expr)) as Arc<dyn Kernel<f32>>,
            )])
            .collect();
    for (name, kernel) in kernels {
        let mut dev = CpuController::<f32>::new(threads).unwrap();
        let k = dev.load(kernel).unwrap();
        let a = dev.alloc(&all, &all).unwrap();
        let bb = dev.alloc(&all, &all).unwrap();
        dev.write(a, &all, &src).unwrap();
        dev.write(bb, &all, &src).unwrap();
        g.bench_function(name, |b| {
            b.iter(|| dev.launch(k, a, bb, &interior).unwrap())
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let n = 4098;
    device_step(
        c,
        "2d4-4098x4098",
        Library::S2d4,
        &[n, n],
        &|s, d| hand_2d4(s, d, n, n),
        "(u[-1,0] + u[1,0] + u[0,-1] + u[0,1]) / 4",
    );
    let m = 258;
    let all27: Vec<String> = (0..27)
        .map(|k| format!("u[{},{},{}]", k / 9 - 1, (k / 3) % 3 - 1, k % 3 - 1))
        .collect();
    device_step(
        c,
        "3d27-258^3",
        Library::S3d27,
        &[m, m, m],
        &|s, d| hand_3d27(s, d, m),
        &format!("({}) / 27", all27.join(" + ")),
    );
}

criterion_group!(kernel_benches, benches);
criterion_main!(kernel_benches);

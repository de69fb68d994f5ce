//! The whole skeleton on 2d4 4098x4098, 100 iterations (the README's main job):
//! against a hand-written 2-thread loop, and 2 one-thread devices against one
//! two-thread device (the halo exchange must hide behind the inner compute).
//! Skeleton samples are the report's loop time (setup and output excluded,
//! as for the hand loop).

use benches::hand_2d4_iterations;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use epsilod::{DeviceSpec, KernelChoice, Library, Partition, Skeleton, Stencil};
use std::time::Duration;

const N: usize = 4098;
const ITERS: u64 = 100;

fn skeleton_loop(devices: Vec<DeviceSpec>, partition: Partition) -> Duration {
    let out = Skeleton::new(
        &[N, N],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(ITERS)
    .init(|i| if i[0] == 0 { 1.0 } else { 0.0 })
    .devices(devices)
    .partition(partition)
    .run()
    .expect("the bench configuration is valid");
    Duration::from_secs_f64(out.report.summary.loop_seconds)
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("2d4-4098x4098-100iters");
    g.throughput(Throughput::Elements(((N - 2) * (N - 2)) as u64 * ITERS));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(8));

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut a: Vec<f32> = (0..N * N).map(|i| if i < N { 1.0 } else { 0.0 }).collect();
    let mut b = a.clone();
    g.bench_function("hand-2-threads", |bch| {
        bch.iter(|| pool.install(|| hand_2d4_iterations(&mut a, &mut b, N, ITERS as usize)))
    });
    g.bench_function("skeleton-1dev-x-2threads", |bch| {
        bch.iter_custom(|reps| {
            (0..reps)
                .map(|_| skeleton_loop(vec![DeviceSpec::cpu(2)], Partition::Multi))
                .sum()
        })
    });
    g.bench_function("skeleton-2dev-x-1thread", |bch| {
        bch.iter_custom(|reps| {
            (0..reps)
                .map(|_| {
                    skeleton_loop(
                        vec![DeviceSpec::cpu(1), DeviceSpec::cpu(1)],
                        Partition::Single(0),
                    )
                })
                .sum()
        })
    });
    g.finish();
}

criterion_group!(skeleton_benches, benches);
criterion_main!(skeleton_benches);

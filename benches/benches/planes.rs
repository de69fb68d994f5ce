//! Cells reordered into planes on the host (`controllers::gpu::planes`):
//! what a halo of gas-sim cells costs on its way to or from a GPU device
//! that holds them in planes, against copying the same bytes as they are
//! (the least any staging could cost). One halo of gas-sim 258x258x130 is
//! 258 x 130 cells of 76 bytes (2.5 MB); a moved slab of 1 MiB is smaller.

use controllers::gpu::planes::Planes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn planes(c: &mut Criterion) {
    let cells = 258 * 130;
    let p = Planes::new(19, 4);
    let whole: Vec<u8> = (0..cells * 76).map(|i| (i % 251) as u8).collect();
    let mut back = vec![0u8; whole.len()];
    let mut g = c.benchmark_group("planes/gas-halo");
    g.throughput(Throughput::Bytes(whole.len() as u64));
    g.bench_function("copy", |b| b.iter(|| back.copy_from_slice(&whole)));
    g.bench_function("to_planes", |b| b.iter(|| p.to_planes(&whole).len()));
    let planes = p.to_planes(&whole).into_owned();
    g.bench_function("from_planes", |b| {
        b.iter(|| p.from_planes(&planes, &mut back))
    });
    g.finish();
    assert_eq!(back, whole);
}

criterion_group!(benches, planes);
criterion_main!(benches);

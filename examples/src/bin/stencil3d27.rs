//! 3-d 27-point smoothing (EPSILOD's 3d27) of a noisy field, on blocks in all
//! three dimensions.
//!
//!     cargo run --release -p examples --bin stencil3d27 -- --size 130 --iters 50

use anyhow::Result;
use clap::Parser;
use epsilod::{DeviceSpec, KernelChoice, Library, Partition, Skeleton, Stencil};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 130)]
    size: usize,
    #[arg(long, default_value_t = 50)]
    iters: u64,
    #[arg(long, default_value_t = 2)]
    devices: usize,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    // A deterministic pseudo-random field in [0, 1).
    let noise = |i: &[i64]| {
        let h = ((i[0] * 73_856_093) ^ (i[1] * 19_349_663) ^ (i[2] * 83_492_791)) as u64;
        (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as f32 / (1u64 << 24) as f32
    };
    let out = Skeleton::new(
        &[a.size; 3],
        Stencil::<f32>::library(Library::S3d27, KernelChoice::Specialized),
    )
    .iterations(a.iters)
    .init(noise)
    .devices(vec![DeviceSpec::cpu(1); a.devices])
    .partition(Partition::Multi)
    .run()?;
    // Under MPI, rank 0 holds the gathered result.
    if !out.is_root() {
        return Ok(());
    }
    let interior = out
        .grid
        .slice_each_axis(|_| ndarray::Slice::new(1, Some(-1), 1));
    let (min, max) = interior
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    println!(
        "after {} iterations the interior spans [{min:.4}, {max:.4}] (started in [0, 1))",
        a.iters
    );
    println!(
        "{:.3e} cell updates/s",
        out.report.summary.cell_updates_per_second
    );
    Ok(())
}

//! 2-d heat diffusion (Jacobi, EPSILOD's 2d4): a hot top edge, cold elsewhere.
//!
//!     cargo run --release -p examples --bin stencil2d4 -- --size 1026 --iters 500 --devices 2

use anyhow::Result;
use clap::Parser;
use epsilod::{output, DeviceSpec, KernelChoice, Library, Partition, Skeleton, Stencil};

#[derive(Parser)]
struct Args {
    /// Grid side, boundary included.
    #[arg(long, default_value_t = 1026)]
    size: usize,
    #[arg(long, default_value_t = 500)]
    iters: u64,
    /// Number of one-thread CPU devices.
    #[arg(long, default_value_t = 2)]
    devices: usize,
    /// Optional result file (.npy, .txt, .dat or .vti).
    #[arg(long)]
    output: Option<std::path::PathBuf>,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let out = Skeleton::new(
        &[a.size, a.size],
        Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized),
    )
    .iterations(a.iters)
    .init(|i| if i[0] == 0 { 100.0 } else { 0.0 })
    .devices(vec![DeviceSpec::cpu(1); a.devices])
    .partition(Partition::Single(0))
    .run()?;
    // Under MPI, rank 0 holds the gathered result.
    if !out.is_root() {
        return Ok(());
    }
    let probe = out.grid[[8.min(a.size - 1), a.size / 2]];
    println!("temperature 8 cells below the hot edge, mid-column: {probe:.4}");
    println!(
        "{:.3e} cell updates/s",
        out.report.summary.cell_updates_per_second
    );
    if let Some(path) = a.output {
        output::write(&path, out.grid.view())?;
    }
    Ok(())
}

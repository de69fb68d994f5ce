//! EPSILOD's basic_stencils app: a library stencil on EPSILOD's boundary
//! values, the result in EPSILOD's text format (one value a line, %042.40f),
//! so it can be diffed against EPSILOD's own reference outputs.
//!
//!     cargo run --release -p examples --bin basic-stencils -- 2d4 32 100 out.txt

use anyhow::{bail, Result};
use clap::Parser;
use epsilod::{
    basic_init, output, DeviceSpec, KernelChoice, Library, Partition, Skeleton, Stencil,
};

#[derive(Parser)]
struct Args {
    /// Stencil id: 1dc2 1dnc4 2d4 2d8 2dnc8 2df5 3d6 3d27 3dnc12 3df7 4d8.
    stencil: String,
    /// Size in every dimension, boundary included.
    size: usize,
    iters: u64,
    /// Result file (.txt for EPSILOD's format, or .npy / .dat).
    output: std::path::PathBuf,
    /// Number of one-thread CPU devices.
    #[arg(long, default_value_t = 1)]
    devices: usize,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let Some(lib) = Library::by_name(&a.stencil) else {
        bail!("unknown stencil '{}': use one of 1dc2 1dnc4 2d4 2d8 2dnc8 2df5 3d6 3d27 3dnc12 3df7 4d8", a.stencil);
    };
    let spec = lib.spec();
    let sizes = vec![a.size; lib.ndims()];
    let sz = sizes.clone();
    let out = Skeleton::new(
        &sizes,
        Stencil::<f32>::library(lib, KernelChoice::Specialized),
    )
    .iterations(a.iters)
    .init(move |i| basic_init(i, &sz, &spec.low, &spec.high))
    .devices(vec![DeviceSpec::cpu(1); a.devices])
    .partition(Partition::Multi)
    .run()?;
    // Under MPI, rank 0 holds the gathered result.
    if !out.is_root() {
        return Ok(());
    }
    output::write(&a.output, out.grid.view())?;
    Ok(())
}

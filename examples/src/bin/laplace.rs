//! EPSILOD's laplace: Jacobi iterations of the 3-d Laplace equation with
//! anisotropic spacing. Its kernel is one Rust expression
//! (`epsilod_apps::laplace::update`) that also runs, with the same bits, on
//! OpenCL and CUDA devices. Prints the mean of the interior and writes the
//! grid when asked.
//!
//!     cargo run --release -p examples --bin laplace -- 66 66 66 200 out.npy

use anyhow::Result;
use clap::Parser;
use epsilod::Skeleton;
use epsilod_apps::laplace;

#[derive(Parser)]
struct Args {
    /// Global sizes, the 1-cell boundary included.
    s0: usize,
    s1: usize,
    s2: usize,
    #[command(flatten)]
    run: examples::RunArgs,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let size = [a.s0, a.s1, a.s2];
    let skeleton = Skeleton::new(&size, laplace::stencil(&size)).init(laplace::init(&size));
    let Some(out) = a.run.run(skeleton)? else {
        return Ok(());
    };
    let interior = out.grid.slice_each_axis(|ax| {
        let n = size[ax.axis.index()] as isize;
        ndarray::Slice::from(1..n - 1)
    });
    let mean = interior.iter().map(|&v| f64::from(v)).sum::<f64>() / interior.len() as f64;
    println!(
        "laplace {}x{}x{}, {} iterations: interior mean {mean:.6}, loop {:.3} s",
        a.s0, a.s1, a.s2, a.run.iters, out.report.summary.loop_seconds
    );
    a.run.write(&out)
}

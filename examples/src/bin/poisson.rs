//! EPSILOD's poisson: Jacobi iterations of ∇²u = b on a 2-d grid with two
//! point sources, found by the cells' global index. The kernel is one Rust
//! expression (`epsilod_apps::poisson::update`) for CPU and GPU devices
//! alike. Prints u at the two sources and writes the grid when asked.
//!
//!     cargo run --release -p examples --bin poisson -- 258 130 1000 out.npy

use anyhow::Result;
use clap::Parser;
use epsilod::Skeleton;
use epsilod_apps::poisson;

#[derive(Parser)]
struct Args {
    /// Global sizes, the 1-cell boundary included.
    nx: usize,
    ny: usize,
    #[command(flatten)]
    run: examples::RunArgs,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let size = [a.nx, a.ny];
    let skeleton = Skeleton::new(&size, poisson::stencil(&size)).init(poisson::init(&size));
    let Some(out) = a.run.run(skeleton)? else {
        return Ok(());
    };
    let (p, q) = ([a.nx / 4, a.ny / 4], [3 * a.nx / 4, 3 * a.ny / 4]);
    println!(
        "poisson {}x{}, {} iterations: u at the sources {:.6} and {:.6}, loop {:.3} s",
        a.nx,
        a.ny,
        a.run.iters,
        out.grid[p.as_slice()],
        out.grid[q.as_slice()],
        out.report.summary.loop_seconds
    );
    a.run.write(&out)
}

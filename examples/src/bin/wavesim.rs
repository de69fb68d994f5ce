//! EPSILOD's wavesim: the 2-d wave equation with three time levels in two
//! buffers. The update reads the level before (`old2`) and clamps at the
//! edge by the global index: one Rust expression
//! (`epsilod_apps::wavesim::update`) for CPU and GPU devices. With load
//! balancing both levels move, so results stay bit-identical.
//!
//!     cargo run --release -p examples --bin wavesim -- 512 512 400 wave.npy

use anyhow::Result;
use clap::Parser;
use epsilod::Skeleton;
use epsilod_apps::wavesim;

#[derive(Parser)]
struct Args {
    /// User domain: rows (dimension 0) and columns (dimension 1).
    rows: usize,
    cols: usize,
    #[command(flatten)]
    run: examples::RunArgs,
    /// Time step.
    #[arg(long, default_value_t = wavesim::DT)]
    dt: f32,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let size = [a.rows + 2, a.cols + 2];
    let skeleton = Skeleton::new(&size, wavesim::stencil(&size, a.dt))
        .init(wavesim::init(&size))
        .init_previous(wavesim::init_previous(&size, a.dt));
    let Some(out) = a.run.run(skeleton)? else {
        return Ok(());
    };
    let peak = out.grid.iter().fold(f32::MIN, |m, &v| m.max(v));
    println!(
        "wavesim {}x{}, {} steps of {}: peak {peak:.6}, loop {:.3} s",
        a.rows, a.cols, a.run.iters, a.dt, out.report.summary.loop_seconds
    );
    a.run.write(&out)
}

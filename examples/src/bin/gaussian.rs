//! EPSILOD's gaussian: a grey-level image blurred `iters` times by a
//! kw x kw Gaussian, f64 steps inside an f32 kernel and a truncation, as
//! the original computes it; one Rust kernel and the same arithmetic as
//! device C (`epsilod_apps::gaussian`), so CPU and GPU devices agree bit
//! for bit. Arguments and output as the original's: it writes
//! `<out_prefix>_<iters>_<kw>.ascii.pgm`, each pixel `%03.0f` on a line.
//!
//!     cargo run --release -p examples --bin gaussian -- 10 5 photo.pgm blurred

use anyhow::{ensure, Result};
use clap::Parser;
use epsilod::output::{self, OutputGrid};
use epsilod::Skeleton;
use epsilod_apps::gaussian;

#[derive(Parser)]
struct Args {
    iters: u64,
    /// Kernel width (2 to 31).
    kw: usize,
    /// The image: .pgm (P2 or P5) or a 2-d .npy array.
    input: std::path::PathBuf,
    /// The result goes to <out_prefix>_<iters>_<kw>.ascii.pgm.
    out_prefix: String,
    /// The Gaussian's standard deviation, in pixels.
    #[arg(long, default_value_t = gaussian::SIGMA)]
    sigma: f32,
    /// Devices, as `epsilod run --devices` takes them.
    #[arg(long = "device", default_value = "cpu")]
    devices: Vec<String>,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    ensure!(
        gaussian::KW_RANGE.contains(&a.kw),
        "kernel width {}: give 2 to 31",
        a.kw
    );
    ensure!(a.sigma > 0.0, "sigma {}: give a number above 0", a.sigma);
    let gaussian::Image {
        rows,
        cols,
        pixels,
        maxval,
    } = gaussian::load_image(&a.input)
        .map_err(|why| anyhow::anyhow!("cannot read {}: {why}", a.input.display()))?;
    let out = Skeleton::new(
        &gaussian::global_size(rows, cols, a.kw),
        gaussian::stencil(a.kw, a.sigma),
    )
    .iterations(a.iters)
    .init(gaussian::init(pixels, rows, cols, a.kw))
    .devices(examples::devices(&a.devices)?)
    .run()?;
    if !out.is_root() {
        return Ok(());
    }
    let path = format!("{}_{}_{}.ascii.pgm", a.out_prefix, a.iters, a.kw);
    let image = gaussian::Blurred {
        image: output::Region {
            grid: out.grid,
            region: Some(gaussian::image_region(rows, cols, a.kw)),
        },
        maxval,
    };
    image.write_to(std::path::Path::new(&path))?;
    println!(
        "gaussian {rows}x{cols}, kw {}, {} steps: {path}, loop {:.3} s",
        a.kw, a.iters, out.report.summary.loop_seconds
    );
    Ok(())
}

//! EPSILOD's gas simulation (D3Q19 lattice Boltzmann): a flow from the low-x
//! wall around a sphere. Writes the user domain's raw cells (19 f32 each).
//!
//!     cargo run --release -p examples --bin gas-sim -- 128 128 32 100 gas.dat

use anyhow::Result;
use clap::Parser;
use epsilod::{output, DeviceSpec, Partition, Skeleton};
use epsilod_apps::gas;

#[derive(Parser)]
struct Args {
    /// User domain along array dimensions 0, 1, 2 (y, x, z in the physics).
    sx: usize,
    sy: usize,
    sz: usize,
    iters: u64,
    /// Raw output of the user domain (.dat), or .npy.
    output: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 2)]
    devices: usize,
}

fn main() -> std::process::ExitCode {
    examples::main(run)
}

fn run(a: Args) -> Result<()> {
    let user = [a.sx, a.sy, a.sz];
    let out = Skeleton::new(&gas::global_size(user), gas::stencil())
        .iterations(a.iters)
        .init(gas::init(user))
        .devices(vec![DeviceSpec::cpu(1); a.devices])
        .partition(Partition::Single(0))
        .run()?;
    // Under MPI, rank 0 holds the gathered result.
    if !out.is_root() {
        return Ok(());
    }
    let domain = gas::user_domain(user);
    let cells = out.grid.slice_each_axis(|ax| {
        let s = domain.sig(ax.axis.index());
        ndarray::Slice::from(s.begin() as isize..s.end() as isize)
    });
    // Mean density of the fluid cells (walls and inflow cells hold +-inf in slot 0).
    let fluid: Vec<f32> = cells
        .iter()
        .filter(|c| c[0].is_finite())
        .map(|c| c.iter().sum())
        .collect();
    let mean = fluid.iter().sum::<f32>() / fluid.len().max(1) as f32;
    println!("{} fluid cells, mean density {mean:.6}", fluid.len());
    if let Some(path) = a.output {
        output::write(&path, cells)?;
    }
    Ok(())
}

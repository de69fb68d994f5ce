//! The environment variables that tune a run, ask for diagnostics or tell
//! how a launcher started the process, read here once: the libraries never read the environment; they take these as
//! typed options ([`GpuOptions`], `RunOptions::host_halos`) and log through
//! `tracing`, whose filter [`log_filter`] sets.

use crate::error::CliError;
use controllers::gpu::runs::RunShape;
use epsilod::devices::{DeviceKind, DeviceSpec, GpuOptions};
use epsilod::Launch;
use kernels::CellLayout;
use tracing_subscriber::filter::{LevelFilter, Targets};

/// `cells` or `planes`: how GPU devices not told otherwise by `layout=`
/// lay out array cells (other values are ignored).
const CELL_LAYOUT: &str = "EPSILOD_CELL_LAYOUT";
/// `bx,by,rows`: one launch shape for every CUDA launch.
const CUDA_LAUNCH: &str = "EPSILOD_CUDA_LAUNCH";
/// Set: each CUDA kernel's timed launch shapes and the one chosen.
const CUDA_LAUNCH_LOG: &str = "EPSILOD_CUDA_LAUNCH_LOG";
/// Set: each fused kernel chosen, with its tile.
const FUSED_LOG: &str = "EPSILOD_FUSED_LOG";

fn set(var: &str) -> bool {
    std::env::var_os(var).is_some()
}

/// `specs`, each GPU device tuned as the environment says.
pub fn tune(specs: Vec<DeviceSpec>) -> Result<Vec<DeviceSpec>, CliError> {
    let tuning = gpu_options(specs.iter().any(is_cuda))?;
    Ok(specs.into_iter().map(|s| s.tuned(tuning)).collect())
}

/// One device tuned as [`tune`] tunes a run's.
pub fn tune_one(spec: DeviceSpec) -> Result<DeviceSpec, CliError> {
    let tuning = gpu_options(is_cuda(&spec))?;
    Ok(spec.tuned(tuning))
}

fn is_cuda(spec: &DeviceSpec) -> bool {
    matches!(spec.kind, DeviceKind::Gpu(d) if d.backend == "cuda")
}

/// The GPU options the environment asks for. A bad [`CUDA_LAUNCH`] is
/// refused only where a CUDA device would use it (`cuda`).
pub fn gpu_options(cuda: bool) -> Result<GpuOptions, CliError> {
    let layout = match std::env::var(CELL_LAYOUT).as_deref() {
        Ok("cells") => Some(CellLayout::Cells),
        Ok("planes") => Some(CellLayout::Planes),
        _ => None,
    };
    let launch = match std::env::var(CUDA_LAUNCH).map(|v| RunShape::parse(&v)) {
        Ok(Err(why)) if cuda => {
            return Err(CliError::LaunchShape {
                var: CUDA_LAUNCH,
                why,
            })
        }
        Ok(shape) => shape.ok(),
        Err(_) => None,
    };
    Ok(GpuOptions {
        layout,
        launch,
        log_fused: set(FUSED_LOG),
        log_launch: set(CUDA_LAUNCH_LOG),
    })
}

/// How a launcher (mpirun, srun) started this process, from its variables
/// ([`Launch::VARIABLES`], then [`Launch::SLURM_PMIX_VARIABLES`]).
pub fn launch() -> Launch {
    Launch::from_vars(|k| std::env::var(k).ok())
}

/// `EPSILOD_HOST_HALOS=1` sends every halo through the host, even between
/// devices that share memory: to compare, or to rule the device path out
/// when a result looks wrong.
pub fn host_halos() -> bool {
    std::env::var("EPSILOD_HOST_HALOS").is_ok_and(|v| v == "1")
}

/// What the libraries log: `RUST_LOG`'s filter (warnings by default), and
/// the devices' `info` lines where a log variable asks for them.
pub fn log_filter() -> Targets {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::WARN));
    match set(FUSED_LOG) || set(CUDA_LAUNCH_LOG) {
        true => filter.with_target("controllers", LevelFilter::INFO),
        false => filter,
    }
}

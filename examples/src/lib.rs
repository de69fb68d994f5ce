//! Shared by the example binaries: join the MPI job when mpirun started
//! the program, and report an error as one line, never a backtrace.

use std::process::ExitCode;

/// Parses the command line as `A`, joins the job (see `epsilod::Cluster`),
/// runs `app`, and prints its error as `error: ...` with its causes. Under
/// MPI only rank 0 prints: every rank meets the same error (a rank failing
/// alone ends the job itself). Bad arguments are one line and status 2, as
/// `epsilod`'s.
pub fn main<A: clap::Parser>(app: impl FnOnce(A) -> anyhow::Result<()>) -> ExitCode {
    // The launcher's variables, read here: the library never reads the
    // environment.
    let launch = epsilod::Launch::from_vars(|k| std::env::var(k).ok());
    let args = match A::try_parse() {
        Ok(a) => a,
        Err(e) => return bad_arguments(&e, launch.prints_for_all_ranks()),
    };
    let cluster = match epsilod::Cluster::join(launch) {
        Ok(c) => c,
        Err(e) => {
            if launch.prints_for_all_ranks() {
                epsilod::cluster::print_error(&epsilod::error::chain(&e));
            }
            return ExitCode::FAILURE;
        }
    };
    let result = app(args);
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if cluster.is_root() {
                epsilod::cluster::print_error(&format!("{e:#}"));
            }
            ExitCode::FAILURE
        }
    };
    // Waits for every rank (see Cluster): printed first, so nothing is lost.
    drop(cluster);
    code
}

/// Help goes to stdout with status 0; a bad argument is one line on stderr
/// (printed where `prints`) and status 2.
fn bad_arguments(e: &clap::Error, prints: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if prints {
        let program = std::env::args_os()
            .next()
            .map(std::path::PathBuf::from)
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "the program".into());
        epsilod::cluster::print_error(&epsilod::cluster::usage_error_line(
            &e.render().to_string(),
            &program,
        ));
    }
    ExitCode::from(2)
}

/// Devices as `epsilod run --devices` writes them.
pub fn devices(specs: &[String]) -> anyhow::Result<Vec<epsilod::DeviceSpec>> {
    Ok(specs
        .iter()
        .map(|d| epsilod::DeviceSpec::parse(d))
        .collect::<Result<Vec<_>, _>>()?)
}

/// What the grid examples take after their sizes: iterations, where to
/// write the grid, and devices.
#[derive(clap::Args)]
// Not the help's about text: each example's own command has none.
#[command(about = None, long_about = None)]
pub struct RunArgs {
    pub iters: u64,
    /// Where to write the whole grid, boundary included (.npy, .raw or
    /// .txt).
    pub output: Option<std::path::PathBuf>,
    /// Devices, as `epsilod run --devices` takes them.
    #[arg(long = "device", default_value = "cpu")]
    pub devices: Vec<String>,
}

impl RunArgs {
    /// Runs `skeleton` for these iterations on these devices: the outcome
    /// on the root, `None` on the other ranks, which print nothing.
    pub fn run<T: epsilod::output::OutputCell>(
        &self,
        skeleton: epsilod::Skeleton<T>,
    ) -> anyhow::Result<Option<epsilod::Outcome<T>>> {
        let out = skeleton
            .iterations(self.iters)
            .devices(devices(&self.devices)?)
            .run()?;
        Ok(out.is_root().then_some(out))
    }

    /// Writes `out`'s grid where asked.
    pub fn write<T: epsilod::output::OutputCell>(
        &self,
        out: &epsilod::Outcome<T>,
    ) -> anyhow::Result<()> {
        if let Some(path) = &self.output {
            epsilod::output::write(path, out.grid.view())?;
        }
        Ok(())
    }
}

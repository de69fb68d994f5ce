//! The skeleton: a higher-order function that runs an iterative stencil over
//! any mix of devices. The user gives the domain, the stencil, the
//! iterations and an init function; the skeleton partitions, allocates,
//! exchanges halos (overlapped with the inner compute) and gathers the result.

use crate::alb::Alb;
use crate::devices::DeviceSpec;
use crate::error::ConfigError;
use crate::report::{median, DeviceIteration, IterationRecord, Report, ReportConfig, Summary};
use crate::vp::{self, Shared, VpResult};
use hitmap::{in_process, Layout, Partition, Shape, Transport};
use kernels::{library_kernel, Cell, Generic, Kernel, KernelChoice, Library, Real, StencilSpec};
use ndarray::{ArrayD, ArrayViewD, Dimension, IxDyn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Initial value of a cell from its global index (boundary cells included).
pub type InitFn<T> = Arc<dyn Fn(&[i64]) -> T + Send + Sync>;

/// A stencil as the skeleton needs it: the kernel and the fixed boundary
/// width on each side of each dimension (boundary cells are never written).
#[derive(Clone)]
pub struct Stencil<T> {
    pub name: String,
    pub kernel: Arc<dyn Kernel<T>>,
    pub low: Vec<usize>,
    pub high: Vec<usize>,
    pub kernel_kind: String,
}

impl<T: Real> Stencil<T> {
    /// A library stencil with the chosen CPU kernel.
    pub fn library(lib: Library, choice: KernelChoice) -> Stencil<T> {
        let spec = lib.spec();
        Stencil {
            name: lib.name().to_string(),
            kernel: Arc::from(library_kernel::<T>(lib, choice)),
            low: spec.low,
            high: spec.high,
            kernel_kind: format!("{choice:?}").to_lowercase(),
        }
    }

    /// A stencil from a spec (generic kernel).
    pub fn from_spec(spec: &StencilSpec) -> Stencil<T> {
        Stencil {
            name: spec.name.clone(),
            kernel: Arc::new(Generic::<T>::new(spec)),
            low: spec.low.clone(),
            high: spec.high.clone(),
            kernel_kind: "generic".into(),
        }
    }
}

impl<T: Cell> Stencil<T> {
    /// Any kernel (custom cell types included), with its boundary widths.
    pub fn custom(kernel: Arc<dyn Kernel<T>>, low: Vec<usize>, high: Vec<usize>) -> Stencil<T> {
        Stencil {
            name: kernel.name().to_string(),
            kernel,
            low,
            high,
            kernel_kind: "custom".into(),
        }
    }
}

/// The result of a run: the whole global array (boundaries included) and
/// the report.
///
/// Under MPI the grid is gathered to rank 0 only (other ranks get an empty
/// array); every rank gets the same merged report.
pub struct Outcome<T> {
    pub grid: ArrayD<T>,
    pub report: Report,
    pub(crate) root: bool,
}

impl<T> Outcome<T> {
    /// True where `grid` holds the result: always in one process, on rank 0
    /// under MPI.
    pub fn is_root(&self) -> bool {
        self.root
    }
}

/// Builder for one run.
pub struct Skeleton<T> {
    size: Vec<usize>,
    stencil: Stencil<T>,
    iters: u64,
    init: InitFn<T>,
    devices: Vec<DeviceSpec>,
    partition: Partition,
    alb: Option<Alb>,
    progress: bool,
    placement: Option<Vec<usize>>,
}

impl<T: Cell> Skeleton<T> {
    /// A run over a global array of `size` (boundary cells included).
    /// Defaults: 1 iteration, all-zero init, one CPU device on every core,
    /// partition `m`.
    pub fn new(size: &[usize], stencil: Stencil<T>) -> Skeleton<T> {
        Skeleton {
            size: size.to_vec(),
            stencil,
            iters: 1,
            init: Arc::new(|_| T::zeroed()),
            devices: vec![DeviceSpec::cpu(crate::devices::all_cores())],
            partition: Partition::Multi,
            alb: None,
            progress: false,
            placement: None,
        }
    }

    pub fn iterations(mut self, n: u64) -> Self {
        self.iters = n;
        self
    }

    pub fn init(mut self, f: impl Fn(&[i64]) -> T + Send + Sync + 'static) -> Self {
        self.init = Arc::new(f);
        self
    }

    pub fn devices(mut self, d: Vec<DeviceSpec>) -> Self {
        self.devices = d;
        self
    }

    pub fn partition(mut self, p: Partition) -> Self {
        self.partition = p;
        self
    }

    /// Automatic load balancing (needs a weighted partition, `w<d>`).
    pub fn alb(mut self, alb: Option<Alb>) -> Self {
        self.alb = alb;
        self
    }

    /// Under MPI: the rank hosting each device (default: device `i` on rank
    /// `i mod ranks`). Ignored in a single process.
    pub fn placement(mut self, ranks: Vec<usize>) -> Self {
        self.placement = Some(ranks);
        self
    }

    /// The rank of each device in a job whose ranks run on `hosts`,
    /// checked: every rank hosts at least one.
    #[cfg(feature = "mpi")]
    pub(crate) fn owners(&self, hosts: &[String]) -> Result<Vec<usize>, ConfigError> {
        let (n, ranks) = (self.devices.len(), hosts.len());
        let owners = match &self.placement {
            None => {
                if ranks > n {
                    return Err(ConfigError::TooManyRanks { ranks, devices: n });
                }
                (0..n).map(|i| i % ranks).collect()
            }
            Some(p) => {
                if p.len() != n {
                    return Err(ConfigError::Mpi(format!(
                        "the placement names {} ranks for {n} devices",
                        p.len()
                    )));
                }
                p.clone()
            }
        };
        if let Some(&r) = owners.iter().find(|&&r| r >= ranks) {
            return Err(ConfigError::Mpi(format!(
                "a device is placed on rank {r}, but there are {ranks} ranks"
            )));
        }
        for (r, host) in hosts.iter().enumerate() {
            if !owners.contains(&r) {
                return Err(ConfigError::RankWithoutDevice {
                    rank: r,
                    host: host.clone(),
                    why: "the placement gives it none".into(),
                });
            }
        }
        Ok(owners)
    }

    #[cfg(feature = "mpi")]
    pub(crate) fn ndims(&self) -> usize {
        self.size.len()
    }

    #[cfg(feature = "mpi")]
    pub(crate) fn shows_progress(&self) -> bool {
        self.progress
    }

    /// What every rank must agree on before a distributed run.
    #[cfg(feature = "mpi")]
    pub(crate) fn fingerprint(&self) -> String {
        format!(
            "{} {} x {} iterations, devices [{}] on ranks {}, partition {}, alb {}",
            self.stencil.name,
            self.size
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("x"),
            self.iters,
            self.devices
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            self.placement
                .as_ref()
                .map_or("i mod ranks".into(), |p| format!("{p:?}")),
            self.partition,
            self.alb.as_ref().map_or("none", |a| a.name.as_str())
        )
    }

    /// Shows a progress bar on stderr (when it is a terminal).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// The cells that are computed (the global array less its boundary).
    pub fn interior(&self) -> Result<Shape, ConfigError> {
        let nd = self.stencil.low.len();
        let size_str = self
            .size
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join("x");
        if self.size.len() != nd {
            return Err(ConfigError::Size {
                size: size_str,
                why: format!(
                    "stencil '{}' is {nd}-d but the size has {} dimension(s)",
                    self.stencil.name,
                    self.size.len()
                ),
            });
        }
        for d in 0..nd {
            let border = self.stencil.low[d] + self.stencil.high[d];
            if self.size[d] <= border {
                return Err(ConfigError::Size {
                    size: size_str,
                    why: format!(
                        "dimension {d} needs more than {border} cells (the boundary of '{}') to leave an interior",
                        self.stencil.name
                    ),
                });
            }
        }
        Ok(Shape::from_ranges(
            &(0..nd)
                .map(|d| {
                    (
                        self.stencil.low[d] as i64,
                        (self.size[d] - self.stencil.high[d]) as i64,
                    )
                })
                .collect::<Vec<_>>(),
        ))
    }

    /// The layout the run would use (validates sizes, partition and widths).
    pub fn layout(&self) -> Result<Layout, ConfigError> {
        let interior = self.interior()?;
        if self.devices.is_empty() {
            return Err(ConfigError::Device {
                spec: String::new(),
                why: "no devices given".into(),
            });
        }
        if let Some(a) = &self.alb {
            if a.name != "none" && !matches!(self.partition, Partition::Weighted(_)) {
                return Err(ConfigError::AlbNeedsWeights(a.name.clone()));
            }
        }
        let weights: Vec<f64> = self.devices.iter().map(|d| d.weight).collect();
        let layout = Layout::new(
            &interior,
            self.partition,
            self.devices.len(),
            Some(&weights),
        )?;
        let fp = self.stencil.kernel.footprint();
        layout.check_width(&fp.low(), &fp.high())?;
        Ok(layout)
    }

    /// Runs every iteration and gathers the result. Inside an MPI job
    /// (see [`Cluster`](crate::Cluster)) every rank calls it with the same
    /// arguments and runs its own devices.
    pub fn run(&self) -> Result<Outcome<T>, ConfigError> {
        if let Some(job) = crate::cluster::active().filter(|j| j.size > 1) {
            #[cfg(feature = "mpi")]
            return crate::distributed::run(self, &job);
            #[cfg(not(feature = "mpi"))]
            unreachable!("a job of {} ranks without the mpi feature", job.size);
        }
        if let Some((_, size)) = crate::cluster::launched().filter(|l| l.1 > 1) {
            return Err(if cfg!(feature = "mpi") {
                ConfigError::NotJoined { size }
            } else {
                ConfigError::NoMpi { size }
            });
        }
        let started = Instant::now();
        let layout = self.layout()?;
        let progress = AtomicU64::new(0);
        let shared = self.shared(&layout, &progress);
        let endpoints: Vec<Mutex<Option<_>>> = in_process::<T>(self.devices.len())
            .into_iter()
            .map(|e| Mutex::new(Some(e)))
            .collect();
        let all: Vec<usize> = (0..self.devices.len()).collect();
        let results = self.run_vps(
            &shared,
            &all,
            |p| {
                endpoints[p]
                    .lock()
                    .ok()
                    .and_then(|mut e| e.take())
                    .ok_or_else(|| ConfigError::Mpi(format!("no endpoint for {p}")))
            },
            None,
            self.progress,
            started,
        );
        let results = first_cause(results)?;
        let grid = self.assemble(&results);
        let report = self.report(&layout, &results, started.elapsed().as_secs_f64());
        Ok(Outcome {
            grid,
            report,
            root: true,
        })
    }

    pub(crate) fn shared<'a>(
        &'a self,
        layout: &'a Layout,
        progress: &'a AtomicU64,
    ) -> Shared<'a, T> {
        tracing::info!(
            stencil = %self.stencil.name,
            iters = self.iters,
            partition = %self.partition,
            "starting on {} device(s)",
            self.devices.len()
        );
        for (p, (d, b)) in self.devices.iter().zip(layout.blocks()).enumerate() {
            tracing::debug!("virtual process {p}: {d}, block {b}");
        }
        Shared {
            size: &self.size,
            stencil: &self.stencil,
            iters: self.iters,
            init: &self.init,
            layout,
            alb: self.alb.as_ref().filter(|a| a.name != "none"),
            progress,
        }
    }

    /// Runs the virtual processes `local`, one thread each, each with the
    /// endpoint `make` gives it (made in its thread). `fail_fast` is called
    /// on the first failure, while the others may still be waiting for the
    /// one that failed (under MPI nothing would tell them).
    #[allow(clippy::type_complexity)]
    pub(crate) fn run_vps<X, F>(
        &self,
        shared: &Shared<'_, T>,
        local: &[usize],
        make: F,
        fail_fast: Option<&dyn Fn(&ConfigError)>,
        progress: bool,
        started: Instant,
    ) -> Vec<Result<VpResult<T>, ConfigError>>
    where
        X: Transport<T>,
        F: Fn(usize) -> Result<X, ConfigError> + Sync,
    {
        let panicked = |p: usize| ConfigError::Run {
            vp: p,
            device: self.devices[p].to_string(),
            why: "it panicked (a bug: please report it)".into(),
        };
        std::thread::scope(|s| {
            let mut handles: Vec<_> = local
                .iter()
                .map(|&p| {
                    let make = &make;
                    let spec = &self.devices[p];
                    let h = std::thread::Builder::new()
                        .name(format!("epsilod-vp{p}"))
                        .spawn_scoped(s, move || vp::run(shared, spec, p, make(p)?))
                        .expect("spawning a virtual process thread");
                    Some(h)
                })
                .collect();
            let mut results: Vec<Option<Result<VpResult<T>, ConfigError>>> =
                local.iter().map(|_| None).collect();
            if progress || fail_fast.is_some() {
                // Only runs that last show a bar, so short ones print nothing.
                let mut bar = None;
                while handles.iter().any(Option::is_some) {
                    for (i, h) in handles.iter_mut().enumerate() {
                        if h.as_ref().is_some_and(|h| h.is_finished()) {
                            let r = h
                                .take()
                                .and_then(|h| h.join().ok())
                                .unwrap_or_else(|| Err(panicked(local[i])));
                            if let (Err(e), Some(f)) = (&r, fail_fast) {
                                f(e);
                            }
                            results[i] = Some(r);
                        }
                    }
                    if progress && bar.is_none() && started.elapsed() > Duration::from_secs(1) {
                        bar = Some(progress_bar(self.iters));
                    }
                    if let Some(b) = &bar {
                        b.set_position(shared.progress.load(Ordering::Relaxed));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                if let Some(b) = bar {
                    b.finish_and_clear();
                }
            }
            handles
                .into_iter()
                .zip(results)
                .enumerate()
                .map(|(i, (h, r))| match (h, r) {
                    (_, Some(r)) => r,
                    (Some(h), None) => h.join().unwrap_or_else(|_| Err(panicked(local[i]))),
                    (None, None) => Err(panicked(local[i])),
                })
                .collect()
        })
    }

    pub(crate) fn assemble(&self, results: &[VpResult<T>]) -> ArrayD<T> {
        let init = &self.init;
        let mut grid = ArrayD::from_shape_fn(IxDyn(&self.size), |ix| {
            let g: Vec<i64> = (0..ix.ndim()).map(|d| ix[d] as i64).collect();
            init(&g)
        });
        for r in results.iter().filter(|r| !r.block.is_empty()) {
            let view = ArrayViewD::from_shape(IxDyn(&r.block.extents()), &r.data)
                .expect("a block's data matches its shape");
            grid.slice_each_axis_mut(|ax| {
                let s = r.block.sig(ax.axis.index());
                ndarray::Slice::from(s.begin() as isize..s.end() as isize)
            })
            .assign(&view);
        }
        grid
    }

    pub(crate) fn report(&self, layout: &Layout, results: &[VpResult<T>], total: f64) -> Report {
        let iterations: Vec<IterationRecord> = (0..self.iters as usize)
            .map(|i| IterationRecord {
                iter: i as u64,
                seconds: results.iter().map(|r| r.stats[i].wall).fold(0.0, f64::max),
                elapsed_seconds: results
                    .iter()
                    .map(|r| r.stats[i].elapsed)
                    .fold(0.0, f64::max),
                devices: results
                    .iter()
                    .map(|r| DeviceIteration {
                        compute_seconds: r.stats[i].compute,
                        comm_seconds: r.stats[i].comm,
                        rows: r.stats[i].rows,
                    })
                    .collect(),
            })
            .collect();
        let secs: Vec<f64> = iterations.iter().map(|i| i.seconds).collect();
        let loop_seconds = results.iter().map(|r| r.loop_seconds).fold(0.0, f64::max);
        let cells = layout.domain().card() as f64 * self.iters as f64;
        let n = secs.len().max(1) as f64;
        let overhead = iterations
            .iter()
            .map(|it| {
                it.seconds
                    - it.devices
                        .iter()
                        .map(|d| d.compute_seconds)
                        .fold(0.0, f64::max)
            })
            .sum::<f64>()
            / n;
        let redistributions = results[0].redistributions.clone();
        Report {
            config: ReportConfig {
                stencil: self.stencil.name.clone(),
                size: self.size.clone(),
                iters: self.iters,
                devices: self.devices.iter().map(|d| d.to_string()).collect(),
                alb: self.alb.as_ref().map_or("none".into(), |a| a.name.clone()),
                partition: self.partition.to_string(),
                kernel: self.stencil.kernel_kind.clone(),
            },
            summary: Summary {
                total_seconds: total,
                loop_seconds,
                mean_iteration_seconds: secs.iter().sum::<f64>() / n,
                median_iteration_seconds: median(&secs),
                rebalances: redistributions.len(),
                redistribution_seconds_total: redistributions
                    .iter()
                    .map(|r| r.seconds)
                    .fold(0.0, |a, b| a + b),
                cell_updates_per_second: if loop_seconds > 0.0 {
                    cells / loop_seconds
                } else {
                    0.0
                },
                skeleton_overhead_seconds_per_iteration: overhead,
            },
            iterations,
            redistributions,
            heuristic: results[0].decisions.iter().map(|d| d.to_json()).collect(),
        }
    }
}

fn progress_bar(iters: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(iters),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} iterations ({eta} left)",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Prefers the error that started a failure over the "peer gone" errors it
/// caused in the other virtual processes.
fn first_cause<T>(
    results: Vec<Result<VpResult<T>, ConfigError>>,
) -> Result<Vec<VpResult<T>>, ConfigError> {
    let is_echo =
        |e: &ConfigError| matches!(e, ConfigError::Run { why, .. } if why.contains("is gone"));
    let mut echo = None;
    let mut ok = Vec::new();
    for r in results {
        match r {
            Ok(v) => ok.push(v),
            Err(e) if is_echo(&e) => echo = echo.or(Some(e)),
            Err(e) => return Err(e),
        }
    }
    match echo {
        Some(e) => Err(e),
        None => Ok(ok),
    }
}

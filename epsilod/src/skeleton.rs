//! The skeleton: a higher-order function that runs an iterative stencil over
//! any mix of devices. The user gives the domain, the stencil, the
//! iterations and an init function; the skeleton partitions, allocates,
//! exchanges halos (overlapped with the inner compute) and gathers the
//! result. This is the builder; [`RunPlan`] is what it validates into, and
//! the executors carry a plan out.

use crate::alb::Alb;
use crate::cluster::{self, Cluster, JobInfo};
use crate::devices::DeviceSpec;
use crate::error::{RunError, SetupError};
use crate::executor::{execute, LocalJob, Outcome};
use crate::plan::{self, Observer, RunPlan};
use crate::stencil::{InitFn, Stencil};
use hitmap::{Partition, Shape};
use kernels::Cell;
use std::sync::Arc;

/// Everything about a run that is not its stencil, size or init: what a
/// driver (the command line, an app) sets the same way for any cell type.
#[derive(Clone)]
pub struct RunOptions {
    /// Iterations.
    pub iters: u64,
    /// The devices, one virtual process each.
    pub devices: Vec<DeviceSpec>,
    /// How the interior is cut.
    pub partition: Partition,
    /// Load balancing, if any.
    pub alb: Option<Alb>,
    /// Under MPI, the rank of each device.
    pub placement: Option<Vec<usize>>,
    /// Told of progress.
    pub observer: Option<Observer>,
    /// Pin each device's threads to cores of its own (see
    /// [`Skeleton::pin`]).
    pub pin: bool,
}

impl Default for RunOptions {
    /// The skeleton's defaults.
    fn default() -> RunOptions {
        RunOptions {
            iters: 1,
            devices: vec![DeviceSpec::cpu(crate::devices::all_cores())],
            partition: Partition::Multi,
            alb: None,
            placement: None,
            observer: None,
            pin: false,
        }
    }
}

/// Builder for one run.
pub struct Skeleton<T> {
    size: Vec<usize>,
    stencil: Stencil<T>,
    iters: u64,
    init: InitFn<T>,
    init_previous: Option<InitFn<T>>,
    devices: Vec<DeviceSpec>,
    partition: Partition,
    alb: Option<Alb>,
    placement: Option<Vec<usize>>,
    pin: bool,
    observer: Option<Observer>,
}

impl<T: Cell> Skeleton<T> {
    /// A run over a global array of `size` (boundary cells included).
    /// Defaults: 1 iteration, all-zero init, one CPU device on every core,
    /// partition `m`, no load balancing.
    pub fn new(size: &[usize], stencil: Stencil<T>) -> Skeleton<T> {
        Skeleton {
            size: size.to_vec(),
            stencil,
            iters: 1,
            init: Arc::new(|_| T::zeroed()),
            init_previous: None,
            devices: vec![DeviceSpec::cpu(crate::devices::all_cores())],
            partition: Partition::Multi,
            alb: None,
            placement: None,
            observer: None,
            pin: false,
        }
    }

    /// Takes every option of `o`.
    pub fn options(mut self, o: &RunOptions) -> Self {
        self.iters = o.iters;
        self.devices = o.devices.clone();
        self.partition = o.partition;
        self.alb = o.alb.clone();
        self.placement = o.placement.clone();
        self.observer = o.observer.clone();
        self.pin = o.pin;
        self
    }

    /// Pins each local device's threads to cores of its own, in device
    /// order among the cores this process may run on (under MPI, its share
    /// of them on its host): a CPU device of T threads gets the next T
    /// cores for its pool, any other device (and a one-thread CPU device,
    /// which computes on it) one core for its virtual process's thread.
    /// Off by default; where there are too few cores, they are reused in
    /// turn, and where the OS refuses, threads run unpinned. Results do not
    /// depend on it.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Iterations to run.
    pub fn iterations(mut self, n: u64) -> Self {
        self.iters = n;
        self
    }

    /// Every cell's first value, from its global index (boundary included;
    /// boundary cells keep it).
    pub fn init(mut self, f: impl Fn(&[i64]) -> T + Send + Sync + 'static) -> Self {
        self.init = Arc::new(f);
        self
    }

    /// For kernels that read the level before the current one
    /// ([`kernels::Kernel::reads_previous`], an expression's `old2`): that
    /// level's interior cells at the first step, from their global index.
    /// Without it the first step sees the init there too.
    pub fn init_previous(mut self, f: impl Fn(&[i64]) -> T + Send + Sync + 'static) -> Self {
        self.init_previous = Some(Arc::new(f));
        self
    }

    /// The devices, one virtual process each.
    pub fn devices(mut self, d: Vec<DeviceSpec>) -> Self {
        self.devices = d;
        self
    }

    /// How the interior is cut over the devices.
    pub fn partition(mut self, p: Partition) -> Self {
        self.partition = p;
        self
    }

    /// Automatic load balancing (needs a weighted partition, `w<d>`);
    /// `None` for none.
    pub fn alb(mut self, alb: impl Into<Option<Alb>>) -> Self {
        self.alb = alb.into();
        self
    }

    /// Under MPI: the rank hosting each device (default: device `i` on rank
    /// `i mod ranks`). Ignored in a single process.
    pub fn placement(mut self, ranks: Vec<usize>) -> Self {
        self.placement = Some(ranks);
        self
    }

    /// Told the iterations finished so far while the run goes on (see
    /// [`Observer`]); a progress bar, say.
    pub fn observe(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(f));
        self
    }

    /// The cells that are computed (the global array less its boundary).
    pub fn interior(&self) -> Result<Shape, SetupError> {
        plan::interior(&self.size, &self.stencil)
    }

    /// Validates the run: sizes, devices, partition, ALB, block widths.
    pub fn plan(&self) -> Result<RunPlan<T>, SetupError> {
        RunPlan::new(
            self.size.clone(),
            self.stencil.clone(),
            self.iters,
            self.init.clone(),
            self.devices.clone(),
            self.partition,
            self.alb.clone(),
            self.placement.clone(),
            self.observer.clone(),
        )
        .map(|mut plan| {
            plan.pin = self.pin;
            plan.init_previous = self.init_previous.clone();
            plan
        })
    }

    /// Runs every iteration and gathers the result, in the job this process
    /// joined with [`Cluster::join`] (alone if it joined none).
    pub fn run(&self) -> Result<Outcome<T>, RunError> {
        self.run_on(&cluster::current()?)
    }

    /// Runs in `cluster`: every rank calls it with the same arguments and
    /// runs its own devices.
    pub fn run_in(&self, cluster: &Cluster) -> Result<Outcome<T>, RunError> {
        self.run_on(cluster.info())
    }

    fn run_on(&self, job: &JobInfo) -> Result<Outcome<T>, RunError> {
        if job.size > 1 {
            #[cfg(feature = "mpi")]
            return execute(self.plan(), &crate::cluster::mpi::MpiJob::new(job));
            #[cfg(not(feature = "mpi"))]
            return Err(SetupError::NoMpi { size: job.size }.into());
        }
        execute(
            self.plan(),
            &LocalJob::<T>::new(job.clone(), self.devices.len()),
        )
    }
}

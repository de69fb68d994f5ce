//! epsilod: iterative stencil loops on heterogeneous devices.
//!
//! ```no_run
//! use epsilod::{DeviceSpec, KernelChoice, Library, Skeleton, Stencil};
//!
//! // 2-d Jacobi (2d4) on a 1026x1026 grid whose top row is held at 1.0,
//! // split over two one-thread CPU devices.
//! let out = Skeleton::new(&[1026, 1026], Stencil::<f32>::library(Library::S2d4, KernelChoice::Specialized))
//!     .iterations(100)
//!     .init(|i| if i[0] == 0 { 1.0 } else { 0.0 })
//!     .devices(vec![DeviceSpec::cpu(1), DeviceSpec::cpu(1)])
//!     .run()
//!     .unwrap();
//! println!("{} cell updates/s", out.report.summary.cell_updates_per_second);
//! ```
//!
//! The layers inside: [`Skeleton`] (the builder) validates into a
//! [`RunPlan`]; the executor runs one thread per local virtual process
//! (`vp`), each with a device and a transport endpoint; a [`Cluster`]
//! decides whether the job is this process or several MPI ranks.
//!
//! An app needs this crate only: it re-exports what stencils are built
//! from (the [`Library`] and [`KernelChoice`], spec files' [`ExprSpec`] and
//! [`InitSpec`], closures over a [`Neighbourhood`] in a [`Custom`] kernel
//! with its [`DeviceKernel`] body, a [`Footprint`] and [`Shape`]) and the
//! expression language's Rust form as [`expr`] (`use epsilod::expr::{num, u};`).
//!
//! Cargo features: `npy` (`.npy` results and the `npy` module, a reader) and `vtk`
//! (`.vti` results) build the file formats' writers, off by default; `mpi`,
//! `opencl` and `cuda` the cluster and device backends.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod alb;
pub mod checkpoint;
pub mod cluster;
mod cores;
pub mod depth_choice;
mod depth_trials;
pub mod devices;
pub mod error;
mod executor;
pub mod job;
mod memory;
#[cfg(feature = "npy")]
pub mod npy;
pub mod options;
pub mod output;
mod peer_mail;
pub mod pgm;
pub mod plan;
pub mod report;
mod results;
pub mod size;
pub mod skeleton;
pub mod spmd;
pub mod stencil;
mod tag;
mod times;
mod vp;

pub use alb::Alb;
pub use checkpoint::{CheckpointError, Checkpointing, Digest, Held, HeldByBoth, RunIdentity};
pub use cluster::{Cluster, Launch};
pub use devices::{DeviceKind, DeviceOptions, DeviceSpec, SlowdownSpec};
pub use error::{ClusterError, RunError, SetupError, VpError};
pub use executor::Outcome;
pub use job::JobInfo;
pub use plan::{Observer, RunPlan};
pub use report::{DepthReason, Report};
pub use size::size_text;
pub use skeleton::{HaloDepth, OnFailure, RunOptions, Skeleton};
pub use stencil::{InitFn, KernelKind, Stencil};

// What apps build stencils from, so that they depend on this crate alone.
pub use hitmap::{Footprint, Partition, Shape};
pub use kernels::expr::build as expr;
pub use kernels::{
    basic_init, AnySpec, CellDecl, CellLayout, Custom, DeviceKernel, DeviceScalar, Dialect,
    ExprKernel, ExprSpec, InitSpec, KernelChoice, Library, Neighbourhood, Real, SpecError, Table,
};
// An app's own CPU kernel over whole rows (gas-sim's, gaussian's).
pub use kernels::{for_each_row, neighbour_row, Frame, Kernel};

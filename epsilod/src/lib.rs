//! epsilod: iterative stencil loops on heterogeneous devices.
//!
//! ```no_run
//! use epsilod::{Skeleton, Stencil, DeviceSpec};
//! use kernels::{KernelChoice, Library};
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

pub mod alb;
pub mod apps;
pub mod cli;
pub mod cluster;
pub mod compare;
pub mod devices;
#[cfg(feature = "mpi")]
mod distributed;
pub mod error;
pub mod output;
pub mod plot;
pub mod report;
pub mod skeleton;
mod vp;

pub use alb::Alb;
pub use cluster::Cluster;
pub use devices::{DeviceKind, DeviceSpec};
pub use error::ConfigError;
pub use hitmap::Partition;
pub use report::Report;
pub use skeleton::{InitFn, Outcome, Skeleton, Stencil};

//! Time prediction of a stencil run over a described machine, by the
//! published additive methods and by `Overlap`, this skeleton's schedule.
//!
//! The run is the skeleton's 1-D row partition: device `d` owns
//! `rows[d]` consecutive rows of `cells_per_row` cells and exchanges
//! `halo_rows · halo_bytes_per_row` bytes with each of its neighbours (one
//! at the ends of the chain, two inside) every iteration.
//!
//! The files, each importing only those listed before it:
//! - `method`: [`Method`] and [`ExchangeTime`], the caller's choices;
//! - `exchange`: LogGP's, Rivera's and HCLogP's message terms;
//! - [`hclogp`]: HCLogP's published formulas;
//! - `device`: one calibrated [`Device`];
//! - `run`: the [`Run`] to predict and the [`Prediction`];
//! - `machine`: [`Machine`] and [`LinkClass`], kernel times and the
//!   machine at a run's working set;
//! - `balance`: the balanced split and the weights it seeds;
//! - `predictor`: each method's per-device times, the loop and its interval.

mod balance;
mod device;
mod exchange;
pub mod hclogp;
mod machine;
mod method;
mod predictor;
mod run;
#[cfg(test)]
mod tests;

pub use balance::balance;
pub use device::Device;
pub use exchange::{rivera_p2p, Op, RIVERA_HEADER_BYTES, RIVERA_PAYLOAD_BYTES};
pub use machine::{LinkClass, Machine};
pub use method::{ExchangeTime, Method, UnknownMethod};
pub use run::{DeviceTime, Prediction, Run};

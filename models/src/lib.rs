//! models: performance models for stencil runs on heterogeneous clusters.
//! Pure arithmetic over calibration numbers: nothing here knows devices,
//! files or the network.
//!
//! - [`link`]: link models (Hockney, LogGP, piecewise-linear with detected
//!   breakpoints) and their least-squares fits to ping-pong samples;
//! - [`metrics`]: the error metrics of the modelling theses (relative error,
//!   MMRE, Pred(25), R², Spearman rank correlation, RCC);
//! - [`predict`]: per-device compute and exchange time, iteration, loop and
//!   perfectly balanced time of a run over a [`predict::Machine`], by the
//!   published methods (Hockney, LogGP, HCLogP, Rivera) and by `Overlap`,
//!   which models this skeleton's border/exchange/inner schedule;
//! - [`scaling`]: strong-scaling prediction from signatures of small runs
//!   (P3S's method for one stencil phase), and [`replay`], the predicted
//!   phase measured one range of processes at a time with black holes;
//! - [`learned`]: a communication phase's features and learned models of
//!   its time (LinReg-SV, robust LinReg-MV, boosted trees, and [`forest`]'s
//!   random forest and extra trees);
//! - [`semi_empirical`]: the study's baseline for them, alpha-beta with
//!   Gahvari's multicore, contention and distance penalties;
//! - [`halo_features`]: a predicted run's halo exchange as those features,
//!   read from hitmap's plan of its layout (`predict --comm`);
//! - [`simulate`]: the skeleton's loop on a virtual clock (real layouts,
//!   plans, ALB cycle and heuristics; modelled devices and links), and
//!   trace mode, which replays a real run's kernel times; [`sim_spec`] its
//!   scenario options (an anomalous host, thermal drift);
//! - [`plan`]: HCLogP's branch and bound over a device inventory, the
//!   Pareto front of (devices, time) and a layout sweep;
//! - [`calibrate`]: a device's seconds per cell and a link class's models
//!   from measurements (`epsilod calibrate` measures);
//! - [`cell_cost`]: a device's seconds per cell at a run's working set,
//!   from the one calibration measured and the host's memory curve;
//! - [`interval`]: a predicted loop time's median and 90% interval under
//!   the calibrated noise;
//! - [`fit`]: the least-squares line and power law the others use.
//!
//! The formulas are written out in `docs/modelling.md`.
//!
//! ```
//! use models::link::{Hockney, Sample};
//! use models::predict::{Device, LinkClass, Machine, Method, Run};
//!
//! let samples: Vec<Sample> = (0..8)
//!     .map(|i| { let b = (i * 4096) as f64; Sample::new(b, 5e-6 + b * 1e-9) })
//!     .collect();
//! let link = Hockney::fit(&samples).unwrap();
//! let machine = Machine::new(
//!     vec![Device::new("cpu0", 2e-9), Device::new("cpu1", 4e-9)],
//!     vec![LinkClass::from_hockney("local", link)],
//! ).unwrap();
//! let run = Run::from_weights(1000, 1000, 1, 8000.0, 100, &[2.0, 1.0], "local").unwrap();
//! let p = machine.predict(&run, Method::Overlap).unwrap();
//! assert!(p.balanced_loop <= p.loop_time);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calibrate;
pub mod cell_cost;
mod curve;
pub mod fit;
pub mod forest;
pub mod halo_features;
pub mod interval;
pub mod learned;
pub mod link;
pub mod memory;
pub mod metrics;
pub mod plan;
pub mod predict;
pub mod replay;
pub mod scaling;
pub mod semi_empirical;
pub mod sim_spec;
pub mod simulate;

/// Compiles and runs the examples of `docs/modelling.md` as doc-tests, so
/// the user guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/modelling.md")]
pub struct ModellingGuide;

use thiserror::Error;

/// Why a model could not be fitted, evaluated or scored.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    /// A fit or metric got fewer points than it needs.
    #[error("{what} needs at least {needed} points, got {got}")]
    TooFewPoints {
        /// What was being computed.
        what: &'static str,
        /// Points it needs.
        needed: usize,
        /// Points it got.
        got: usize,
    },
    /// All sample sizes are equal, so no slope can be fitted.
    #[error("all samples have the same size: the slope is undetermined")]
    DegenerateSizes,
    /// An input was NaN, infinite, or negative where that makes no sense.
    #[error("invalid value for {what}: {value}")]
    InvalidValue {
        /// Which input.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// A device's tile curve breaks one of its rules.
    #[error("device {device}: {what} must be a finite number {bound}, got {value}")]
    BadTileCurve {
        /// The device's index in the machine.
        device: usize,
        /// What is wrong: the curve's cells or its factors.
        what: &'static str,
        /// The rule broken.
        bound: &'static str,
        /// The value that breaks it.
        value: f64,
    },
    /// A curve has two points at one x.
    #[error("{what} {value} is measured twice")]
    Repeated {
        /// What the curve's x is.
        what: &'static str,
        /// The x measured twice.
        value: f64,
    },
    /// Two inputs that must pair up have different lengths.
    #[error("length mismatch: {left} estimates against {right} measurements")]
    LengthMismatch {
        /// First length.
        left: usize,
        /// Second length.
        right: usize,
    },
    /// A relative error against a measured value of zero is undefined.
    #[error("a measured value is zero: relative error is undefined")]
    ZeroMeasurement,
    /// A machine file without devices (`"devices": []`): it said "a
    /// machine needs at least 1 points, got 0".
    #[error("the machine describes no devices: calibrate some (epsilod calibrate), or list them under \"devices\"")]
    NoDevices,
    /// The run names a link class the machine does not have.
    #[error("unknown link class {0:?}")]
    UnknownLink(String),
    /// The run and the machine disagree on the number of devices.
    #[error("the run has {run} devices, the machine {machine}")]
    DeviceCount {
        /// Devices in the run.
        run: usize,
        /// Devices in the machine.
        machine: usize,
    },
}

pub(crate) fn check_finite(what: &'static str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ModelError::InvalidValue { what, value })
    }
}

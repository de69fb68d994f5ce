//! Strong-scaling prediction from small runs: this project's counterpart of
//! P3S (modelling.md §1). A stencil run has one relevant phase, the
//! iteration, repeated W = iterations times. A [`Signature`] records that
//! phase at a small device count; a [`ScalingModel`] fitted over signatures
//! at several counts infers who talks to whom as equations of P, fits
//! message volume and compute time as power laws, and predicts the phase's
//! logical trace and the loop time at a larger count.
//!
//! What P3S does that this does not need: phase detection (the skeleton
//! knows its phase) and instruction counting (the cells a process updates
//! are its instruction count, and "total cells per iteration is constant"
//! is the invariant that makes the far point valid).
//!
//! The files, each importing only those listed before it:
//! - `grid`: the process grids a layout can have as P grows;
//! - `error`: [`ScalingError`];
//! - `signature`: what a short run records ([`Signature`]) and the clock
//!   compute is read on;
//! - `pattern`: the communication pattern as equations of P, inferred;
//! - `exchange`: message sizes as laws and the exchange cost;
//! - `node`: the target node's cores and bandwidth floor;
//! - `trace`: the predicted phase and its validation;
//! - `model`: [`ScalingModel`], fitted from signatures, predicting counts.

mod error;
mod exchange;
mod grid;
mod model;
mod node;
mod pattern;
mod signature;
#[cfg(test)]
mod tests;
mod trace;

pub use error::ScalingError;
pub use exchange::ExchangeCost;
pub use grid::Grid;
pub use model::ScalingModel;
pub use node::{Bandwidth, Node};
pub use pattern::Pattern;
pub use signature::{one_halo_depth, ComputeClock, Message, ProcessSignature, Signature};
pub use trace::{
    PredictedProcess, ScaledTrace, Validation, MAX_REPLAY_COMPUTE_SECONDS, MAX_REPLAY_MESSAGE_BYTES,
};

//! Why signatures could not be modelled: one error for every step from
//! reading signatures to predicting a count.

use thiserror::Error;

use super::grid::Grid;
use crate::ModelError;

/// Why signatures could not be modelled.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScalingError {
    /// Fewer distinct device counts than a fit needs.
    #[error("the model needs signatures at {needed} or more device counts, got {got}")]
    TooFewCounts {
        /// Counts it needs.
        needed: usize,
        /// Distinct counts given.
        got: usize,
    },
    /// A signature that cannot be a run's.
    #[error("the signature at {count} devices is invalid: {why}")]
    BadSignature {
        /// Its device count.
        count: usize,
        /// What is wrong.
        why: String,
    },
    /// A trace (`epsilod scale --out`) that no run could give, or that a
    /// replay could not emulate.
    #[error("the trace is invalid: {0}")]
    BadTrace(String),
    /// No candidate grid explains every signature's messages.
    #[error(
        "no process grid explains the signatures' messages (tried a line and square grids \
         of up to the domain's dimensions, with neighbours at the same offsets everywhere)"
    )]
    NoPattern,
    /// Two grids explain the signatures but predict different messages.
    #[error(
        "the signatures fit both {a} and {b}, which differ at {target} devices: add a \
         signature or a far point at a count where they differ (one with two or more prime \
         factors)"
    )]
    Ambiguous {
        /// One grid.
        a: Grid,
        /// Another.
        b: Grid,
        /// The count asked for.
        target: usize,
    },
    /// The signatures do not share one problem size.
    #[error(
        "not strong scaling: the signature at {count} devices updates {cells} cells per \
         iteration, the one at {first_count} updates {first} (far points go in separately)"
    )]
    NotStrongScaling {
        /// The odd signature's count.
        count: usize,
        /// Its cells.
        cells: u64,
        /// The first signature's count.
        first_count: usize,
        /// Its cells.
        first: u64,
    },
    /// The signatures come from runs of different lengths.
    #[error("the signatures' weights (iterations) differ: {0:?}; record them for one run")]
    WeightVaries(Vec<u64>),
    /// Signatures of runs at different halo depths, each named with its
    /// depth ([`super::signature::one_halo_depth`]).
    #[error(
        "the signatures ran at different halo depths ({}), which no one model fits: record \
         them all at one step a launch, `epsilod signature ... --halo-depth 1`",
        depths(.0)
    )]
    DepthVaries(Vec<(String, usize)>),
    /// Compute fitted on CPU time, and a signature without it.
    #[error(
        "the signature at {count} devices has no kernel CPU time for every process (GPU \
         devices, or recorded before signatures had it): fit compute on wall time"
    )]
    NoCpuTime {
        /// Its device count.
        count: usize,
    },
    /// A node description that cannot be one.
    #[error("invalid node for the compute term: {0}")]
    BadNode(String),
    /// A regression failed.
    #[error(transparent)]
    Fit(#[from] ModelError),
}

/// `name at depth K, ...`.
fn depths(named: &[(String, usize)]) -> String {
    named
        .iter()
        .map(|(name, depth)| format!("{name} at depth {depth}"))
        .collect::<Vec<_>>()
        .join(", ")
}

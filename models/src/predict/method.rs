//! What the caller chooses: the prediction method by name, and where the
//! exchange time comes from. Plain choices that every other file reads.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How to predict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Compute of the own rows plus Hockney time per neighbour, added.
    Hockney,
    /// Compute plus back-to-back LogGP messages, added.
    LogGp,
    /// HCLogP: power-weighted balanced compute plus `N_op·(L + M/B + o_d)`.
    HcLogP,
    /// Rivera: equal-work compute plus packetised point-to-point time.
    Rivera,
    /// This skeleton: border compute, then the exchange hidden behind the
    /// inner compute: `max_d border_d + max(exchange_d, inner_d)`.
    Overlap,
}

impl Method {
    /// Every method, in documentation order.
    pub const ALL: [Method; 5] = [
        Method::Hockney,
        Method::LogGp,
        Method::HcLogP,
        Method::Rivera,
        Method::Overlap,
    ];

    /// The lower-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Method::Hockney => "hockney",
            Method::LogGp => "loggp",
            Method::HcLogP => "hclogp",
            Method::Rivera => "rivera",
            Method::Overlap => "overlap",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A method name that is none of [`Method::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown method {0:?}: expected hockney, loggp, hclogp, rivera or overlap")]
pub struct UnknownMethod(pub String);

impl FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMethod(s.to_owned()))
    }
}

/// Where a prediction's halo-exchange time comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExchangeTime {
    /// Each method's own formula over the run's link class.
    Links,
    /// One phase time for every device that exchanges, seconds per
    /// iteration: a learned model's prediction for the run's features
    /// (`learned::CommModel` over `halo_features::halo_features`).
    Phase(f64),
}

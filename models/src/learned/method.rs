//! Which learned model, by its command-line name.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which learned model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Best single-feature regression over transformed terms.
    LinRegSv,
    /// Robust multi-feature regression.
    LinRegMv,
    /// Gradient-boosted regression trees, absolute-deviation loss.
    Gbrt,
    /// A random forest: bootstrap samples, a third of the features per split.
    RandomForest,
    /// Extremely randomised trees: random thresholds, every feature.
    ExtraTrees,
    /// The study's semi-empirical baseline ([`crate::semi_empirical`]).
    SemiEmpirical,
}

impl Method {
    /// Every method, by its command-line name.
    pub const ALL: [(Method, &'static str); 6] = [
        (Method::LinRegSv, "linreg-sv"),
        (Method::LinRegMv, "linreg-mv"),
        (Method::Gbrt, "gbrt"),
        (Method::RandomForest, "random-forest"),
        (Method::ExtraTrees, "extra-trees"),
        (Method::SemiEmpirical, "semi-empirical"),
    ];
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Method::ALL
            .iter()
            .find(|(m, _)| m == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// A name that is no [`Method`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown learned method '{0}': use linreg-sv, linreg-mv, gbrt, random-forest, extra-trees \
     or semi-empirical"
)]
pub struct UnknownMethod(pub String);

impl FromStr for Method {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<Method, UnknownMethod> {
        Method::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(m, _)| *m)
            .ok_or_else(|| UnknownMethod(s.to_string()))
    }
}

//! Stencil descriptions: extents, weights and a factor, validated.

use crate::error::{ParseReason, SpecError};
use crate::limits::{MAX_DIMS, MAX_EXTENT};
use crate::toml_error::TomlError;
use hitmap::{Footprint, Shape};
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

/// Errors unless `low` and `high` give one extent each per dimension, for
/// 1 to [`MAX_DIMS`] dimensions, each at most [`MAX_EXTENT`].
pub(crate) fn check_extents(low: &[usize], high: &[usize]) -> Result<(), SpecError> {
    if low.len() != high.len() {
        return Err(SpecError::ExtentRank {
            low: low.len(),
            high: high.len(),
        });
    }
    if low.is_empty() {
        return Err(SpecError::NoDims);
    }
    if low.len() > MAX_DIMS {
        return Err(SpecError::TooManyDims(low.len()));
    }
    if let Some(&extent) = low.iter().chain(high).find(|&&e| e > MAX_EXTENT) {
        return Err(SpecError::ExtentTooLarge { extent });
    }
    Ok(())
}

/// A stencil spec file of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum AnySpec {
    /// `weights` and `factor`.
    Weighted(StencilSpec),
    /// An `update` expression (see [`crate::expr`]).
    Expr(crate::ExprSpec),
}

impl AnySpec {
    /// Parses TOML text of either kind (an `update` key makes it an
    /// expression); `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<AnySpec, SpecError> {
        let table = text.parse::<toml::Table>().ok();
        let has = |key| table.as_ref().is_some_and(|t| t.contains_key(key));
        let has_update = has("update");
        if has_update && has("weights") {
            return Err(SpecError::Parse {
                path: origin.to_string(),
                reason: ParseReason::Spec(Box::new(SpecError::WeightsAndUpdate)),
            });
        }
        if has_update {
            crate::ExprSpec::from_toml(text, origin).map(AnySpec::Expr)
        } else {
            StencilSpec::from_toml(text, origin).map(AnySpec::Weighted)
        }
    }

    /// Reads and parses a spec file.
    pub fn load(path: &Path) -> Result<AnySpec, SpecError> {
        AnySpec::from_toml(&read(path)?, &path.display().to_string())
    }

    pub fn ndims(&self) -> usize {
        match self {
            AnySpec::Weighted(s) => s.ndims(),
            AnySpec::Expr(s) => s.ndims(),
        }
    }

    /// Cells of the global array's boundary per dimension (low + high
    /// reach): a run never updates them.
    pub fn boundary(&self) -> Vec<usize> {
        match self {
            AnySpec::Weighted(s) => boundary(&s.low, &s.high),
            AnySpec::Expr(s) => boundary(&s.low, &s.high),
        }
    }

    /// The spec for a run on a global array of `size`: an expression's
    /// `n[d]` bound (see [`crate::ExprSpec::for_domain`]).
    pub fn for_domain(&self, size: &[usize]) -> Result<AnySpec, SpecError> {
        match self {
            AnySpec::Weighted(s) => Ok(AnySpec::Weighted(s.clone())),
            AnySpec::Expr(s) => s.for_domain(size).map(AnySpec::Expr),
        }
    }
}

fn boundary(low: &[usize], high: &[usize]) -> Vec<usize> {
    low.iter().zip(high).map(|(l, h)| l + h).collect()
}

fn read(path: &Path) -> Result<String, SpecError> {
    crate::input_file::read_text(path).map_err(|e| SpecError::Io {
        path: path.display().to_string(),
        source: Arc::new(e),
    })
}

/// A weighted stencil: `new = sum(w[o] * x[o]) / factor` over the offsets `o`
/// of the box `-low[d]..=high[d]`.
///
/// In TOML:
/// ```toml
/// name = "my-2d4"
/// low = [1, 1]
/// high = [1, 1]
/// # row-major over the 3x3 box, offset (-1,-1) first
/// weights = [0, 1, 0,
///            1, 0, 1,
///            0, 1, 0]
/// factor = 4
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StencilSpec {
    pub name: String,
    pub low: Vec<usize>,
    pub high: Vec<usize>,
    pub weights: Vec<f64>,
    pub factor: f64,
}

/// A weighted spec as written: the factor may be left out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeighted {
    name: String,
    low: Vec<usize>,
    high: Vec<usize>,
    weights: Vec<f64>,
    factor: Option<f64>,
}

impl StencilSpec {
    /// Builds and validates a spec.
    pub fn new(
        name: &str,
        low: Vec<usize>,
        high: Vec<usize>,
        weights: Vec<f64>,
        factor: f64,
    ) -> Result<StencilSpec, SpecError> {
        let s = StencilSpec {
            name: name.to_string(),
            low,
            high,
            weights,
            factor,
        };
        s.validate()?;
        Ok(s)
    }

    /// A spec whose weights come from a function of the offset.
    pub fn from_fn(
        name: &str,
        low: Vec<usize>,
        high: Vec<usize>,
        factor: f64,
        weight: impl Fn(&[i64]) -> f64,
    ) -> Result<StencilSpec, SpecError> {
        let b = Self::box_shape(&low, &high);
        let weights = b.iter().map(|o| weight(&o)).collect();
        StencilSpec::new(name, low, high, weights, factor)
    }

    fn box_shape(low: &[usize], high: &[usize]) -> Shape {
        Shape::from_ranges(
            &low.iter()
                .zip(high)
                .map(|(&l, &h)| (-(l as i64), h as i64 + 1))
                .collect::<Vec<_>>(),
        )
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        check_extents(&self.low, &self.high)?;
        let expected: usize = self
            .low
            .iter()
            .zip(&self.high)
            .map(|(l, h)| l + h + 1)
            .product();
        if self.weights.len() != expected {
            return Err(SpecError::WeightCount {
                expected,
                got: self.weights.len(),
            });
        }
        if let Some((index, &value)) = self
            .weights
            .iter()
            .enumerate()
            .find(|(_, w)| !w.is_finite())
        {
            return Err(SpecError::BadWeight { index, value });
        }
        if self.weights.iter().all(|&w| w == 0.0) {
            return Err(SpecError::AllZero);
        }
        if !self.factor.is_finite() || self.factor == 0.0 {
            return Err(SpecError::BadFactor(self.factor));
        }
        Ok(())
    }

    /// Parses and validates TOML text; `origin` names it in errors. Without
    /// a `factor`, the factor is the sum of the weights (as EPSILOD's DSL
    /// divides by default).
    pub fn from_toml(text: &str, origin: &str) -> Result<StencilSpec, SpecError> {
        let raw: RawWeighted = toml::from_str(text).map_err(|e| SpecError::Parse {
            path: origin.to_string(),
            reason: ParseReason::Toml(TomlError::new(text, e)),
        })?;
        let s = StencilSpec {
            factor: raw.factor.unwrap_or_else(|| raw.weights.iter().sum()),
            name: raw.name,
            low: raw.low,
            high: raw.high,
            weights: raw.weights,
        };
        s.validate().map_err(|e| match e {
            SpecError::Parse { .. } => e,
            other => SpecError::Parse {
                path: origin.to_string(),
                reason: ParseReason::Spec(Box::new(other)),
            },
        })?;
        Ok(s)
    }

    pub fn load(path: &Path) -> Result<StencilSpec, SpecError> {
        StencilSpec::from_toml(&read(path)?, &path.display().to_string())
    }

    pub fn ndims(&self) -> usize {
        self.low.len()
    }

    /// Cells of the global array's boundary per dimension (low + high
    /// reach).
    pub fn boundary(&self) -> Vec<usize> {
        boundary(&self.low, &self.high)
    }

    /// `(offset, weight)` for every non-zero weight, in lexicographic offset order.
    pub fn terms(&self) -> Vec<(Vec<i64>, f64)> {
        Self::box_shape(&self.low, &self.high)
            .iter()
            .zip(&self.weights)
            .filter(|(_, &w)| w != 0.0)
            .map(|(o, &w)| (o, w))
            .collect()
    }

    /// The offsets the stencil reads.
    pub fn footprint(&self) -> Footprint {
        Footprint::new(
            self.ndims(),
            self.terms().into_iter().map(|(o, _)| o).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0, 1]\nfactor = 2\n";

    #[test]
    fn parses_and_lists_terms() {
        let s = StencilSpec::from_toml(GOOD, "t.toml").unwrap();
        assert_eq!(s.terms(), vec![(vec![-1], 1.0), (vec![1], 1.0)]);
        assert_eq!(s.footprint().low(), vec![1]);
    }

    #[test]
    fn the_factor_defaults_to_the_sum_of_the_weights() {
        let s = StencilSpec::from_toml(
            "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0.5, 2]\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(s.factor, 3.5);
        let any = AnySpec::from_toml(GOOD, "t.toml").unwrap();
        assert_eq!(
            any,
            AnySpec::Weighted(StencilSpec::from_toml(GOOD, "t.toml").unwrap())
        );
        let e = AnySpec::from_toml(
            "name = \"x\"\nlow = [1]\nhigh = [1]\nupdate = \"u[1] - u[-1]\"\n",
            "t.toml",
        )
        .unwrap();
        assert!(matches!(e, AnySpec::Expr(ref x) if x.offsets() == vec![vec![-1], vec![1]]));
        assert_eq!(e.ndims(), 1);
    }

    #[test]
    fn each_bad_spec_has_its_error() {
        let cases = [
            (
                "name = \"x\"\nlow = [1, 1]\nhigh = [1]\nweights = [1]\nfactor = 2\n",
                "2 low extent(s) but 1 high",
            ),
            (
                "name = \"x\"\nlow = []\nhigh = []\nweights = [1]\nfactor = 2\n",
                "no dimensions",
            ),
            (
                "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0]\nfactor = 2\n",
                "needs 3 weights",
            ),
            (
                "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [0, 0, 0]\nfactor = 2\n",
                "all zero",
            ),
            (
                "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0, 1]\nfactor = 0\n",
                "factor is 0",
            ),
            (
                "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0, -1]\n",
                "factor is 0",
            ),
            (
                "name = \"x\"\nlow = [1]\nhigh = [1]\nweights = [1, 0, 1]\nfactor = 2\nextra = 1\n",
                "unknown field `extra`",
            ),
            (
                "name = \"x\"\nlow = [-1]\nhigh = [1]\nweights = [1, 0, 1]\nfactor = 2\n",
                "invalid value",
            ),
            (
                "name = \"x\"\nlow = [65]\nhigh = [0]\nweights = [1]\nfactor = 1\n",
                "extent 65 is too large: extents of at most 64",
            ),
        ];
        for (text, want) in cases {
            let e = StencilSpec::from_toml(text, "bad.toml")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("bad.toml") && e.contains(want),
                "{e:?} should mention {want:?}"
            );
        }
        let e = StencilSpec::load(Path::new("/nonexistent/s.toml")).unwrap_err();
        // The system's error is kept, typed, as the cause.
        match &e {
            SpecError::Io { path, source } => {
                assert_eq!(path, "/nonexistent/s.toml");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other}"),
        }
        assert!(std::error::Error::source(&e).is_some());
        assert!(e
            .to_string()
            .starts_with("cannot read stencil spec /nonexistent/s.toml: "));
    }
}

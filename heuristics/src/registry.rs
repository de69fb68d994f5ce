//! The built-in heuristics, one table row each, and the `name:key=value,...`
//! syntax that picks one and sets its parameters.
//!
//! Adding a built-in is adding a row to [`BUILTIN`]: [`NAMES`], [`by_name`],
//! the parser and every error message that lists names read the table.

use crate::PRIOR_COST_ITERATIONS;
use crate::{ConstIters, CostAware, DoubleIters, ExpIters, Heuristic, NextAlb, NoAlb, Welch};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// What values a parameter accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A whole number of at least 1 (a [`Value::Count`]).
    Count,
    /// A finite real number of at least 0 (a [`Value::Real`]).
    NonNegative,
    /// A real number strictly between 0 and 1 (a [`Value::Real`]).
    Probability,
}

impl ParamKind {
    /// What a value of this kind must be, as error messages say it.
    pub fn expected(self) -> &'static str {
        match self {
            ParamKind::Count => "a whole number of at least 1",
            ParamKind::NonNegative => "a finite number of at least 0",
            ParamKind::Probability => "a number strictly between 0 and 1",
        }
    }

    /// Parses `text` as a value of this kind.
    fn parse(self, text: &str) -> Option<Value> {
        let v = match self {
            ParamKind::Count => Value::Count(text.parse().ok()?),
            ParamKind::NonNegative | ParamKind::Probability => Value::Real(text.parse().ok()?),
        };
        self.accepts(v).then_some(v)
    }

    /// Whether `v` is a valid value of this kind.
    pub fn accepts(self, v: Value) -> bool {
        match (self, v) {
            (ParamKind::Count, Value::Count(n)) => n >= 1,
            (ParamKind::NonNegative, Value::Real(x)) => x.is_finite() && x >= 0.0,
            (ParamKind::Probability, Value::Real(x)) => x > 0.0 && x < 1.0,
            _ => false,
        }
    }
}

/// A parameter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A whole number (iterations).
    Count(u64),
    /// A real number.
    Real(f64),
}

impl fmt::Display for Value {
    /// The shortest text that parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Real(x) => write!(f, "{x}"),
        }
    }
}

/// One parameter of a built-in heuristic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    /// Its key in `name:key=value`.
    pub key: &'static str,
    /// What it means, in one line.
    pub about: &'static str,
    /// The values it accepts.
    pub kind: ParamKind,
    /// Its value when not given.
    pub default: Value,
}

/// A built-in heuristic: one row of [`BUILTIN`].
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// Its command-line name, also what the heuristic's `name()` returns.
    pub name: &'static str,
    /// What it does, in one line.
    pub about: &'static str,
    /// Its parameters, in canonical order.
    pub params: &'static [Param],
    /// Makes a fresh heuristic from the parameters' values.
    pub make: fn(&Args<'_>) -> Box<dyn Heuristic>,
}

impl Builtin {
    /// The parameter with key `key`.
    pub fn param(&self, key: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.key == key)
    }

    /// The parameters' keys, comma-separated (or "none"), for messages.
    fn keys(&self) -> String {
        if self.params.is_empty() {
            "none".to_string()
        } else {
            self.params
                .iter()
                .map(|p| p.key)
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

const fn count(key: &'static str, default: u64, about: &'static str) -> Param {
    Param {
        key,
        about,
        kind: ParamKind::Count,
        default: Value::Count(default),
    }
}

const fn real(key: &'static str, kind: ParamKind, default: f64, about: &'static str) -> Param {
    Param {
        key,
        about,
        kind,
        default: Value::Real(default),
    }
}

// The settings both cost heuristics take, with `CostAware`'s defaults.
const MARGIN: Param = real(
    "margin",
    ParamKind::NonNegative,
    CostAware::MARGIN,
    "how many times over the predicted saving must pay for a rebalance",
);
const MIN_GAIN: Param = real(
    "min-gain",
    ParamKind::NonNegative,
    CostAware::MIN_GAIN,
    "smallest imbalance worth acting on, as a fraction of an iteration",
);
const PRIOR: Param = real(
    "prior",
    ParamKind::NonNegative,
    PRIOR_COST_ITERATIONS,
    "assumed cost of a rebalance until one is measured, in iterations",
);

/// A `CostAware` of the settings [`MARGIN`], [`MIN_GAIN`] and [`PRIOR`].
fn cost_aware(a: &Args<'_>) -> CostAware {
    let mut h = CostAware::default();
    h.margin = a.real("margin");
    h.min_gain = a.real("min-gain");
    h.prior_cost = a.real("prior");
    h
}

/// Every built-in heuristic, in the order help texts list them.
pub const BUILTIN: &[Builtin] = &[
    Builtin {
        name: "none",
        about: "never rebalance",
        params: &[],
        make: |_| Box::new(NoAlb),
    },
    Builtin {
        name: "const-iters",
        about: "rebalance every `every` iterations (EPSILOD)",
        params: &[count(
            "every",
            ConstIters::PERIOD,
            "iterations between rebalances, the first at `every`",
        )],
        make: |a| Box::new(ConstIters::new(a.count("every"))),
    },
    Builtin {
        name: "exp-iters",
        about: "rebalance 2^n iterations after the n-th (EPSILOD)",
        params: &[],
        make: |_| Box::new(ExpIters::default()),
    },
    Builtin {
        name: "double-iters",
        about: "rebalance at twice the iteration of the last (EPSILOD)",
        params: &[],
        make: |_| Box::new(DoubleIters::default()),
    },
    Builtin {
        name: "next-alb",
        about: "rebalance once the time lost to imbalance would have paid for one (EPSILOD)",
        params: &[],
        make: |_| Box::new(NextAlb::default()),
    },
    Builtin {
        name: "cost-aware",
        about: "rebalance when the saving over the remaining iterations pays for it (ours)",
        params: &[MARGIN, MIN_GAIN, PRIOR],
        make: |a| Box::new(cost_aware(a)),
    },
    Builtin {
        name: "welch",
        about:
            "like cost-aware, and only when a Welch t-test finds the imbalance significant (ours)",
        params: &[
            real(
                "alpha",
                ParamKind::Probability,
                Welch::ALPHA,
                "significance level of the one-sided Welch t-test",
            ),
            MIN_GAIN,
            MARGIN,
            PRIOR,
        ],
        make: |a| {
            Box::new(Welch {
                alpha: a.real("alpha"),
                cost: cost_aware(a),
            })
        },
    },
];

/// Every built-in heuristic's name, in [`BUILTIN`] order.
pub const NAMES: [&str; BUILTIN.len()] = {
    let mut names = [""; BUILTIN.len()];
    let mut i = 0;
    while i < BUILTIN.len() {
        names[i] = BUILTIN[i].name;
        i += 1;
    }
    names
};

/// The built-in heuristic called `name`.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTIN.iter().find(|b| b.name == name)
}

/// A fresh built-in heuristic with its default parameters, by name alone
/// (`HeuristicSpec` also takes parameters).
pub fn by_name(name: &str) -> Result<Box<dyn Heuristic>, UnknownHeuristic> {
    Ok(HeuristicSpec::named(name)?.build())
}

/// A name that is not in [`BUILTIN`]; the message lists every name there.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("unknown ALB heuristic '{0}': use {list}", list = NAMES.join(", "))]
pub struct UnknownHeuristic(pub String);

/// Why a heuristic's text did not parse.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SpecError {
    /// The name is not a built-in one.
    #[error(transparent)]
    UnknownName(#[from] UnknownHeuristic),
    /// The heuristic has no parameter with this key.
    #[error("ALB heuristic '{heuristic}' has no parameter '{key}': its parameters are {known}")]
    UnknownParam {
        /// The heuristic's name.
        heuristic: &'static str,
        /// The key given.
        key: String,
        /// Its parameters' keys, comma-separated, or "none".
        known: String,
    },
    /// A parameter's value is not one it accepts.
    #[error("bad value '{value}' for '{key}' of ALB heuristic '{heuristic}': expected {expected}")]
    BadValue {
        /// The heuristic's name.
        heuristic: &'static str,
        /// The parameter's key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// A parameter without `=value`.
    #[error("parameter '{item}' of ALB heuristic '{heuristic}' has no value: write key=value")]
    NoValue {
        /// The heuristic's name.
        heuristic: &'static str,
        /// The text between commas.
        item: String,
    },
    /// The same parameter twice.
    #[error("parameter '{key}' of ALB heuristic '{heuristic}' is given twice")]
    Repeated {
        /// The heuristic's name.
        heuristic: &'static str,
        /// The parameter's key.
        key: &'static str,
    },
}

/// A built-in heuristic with its parameters' values: parsed from
/// `name[:key=value,...]` and printed back in canonical form (the name, then
/// the parameters that differ from their defaults, in table order).
///
/// Cloneable and `Send + Sync`: one spec makes every virtual process's own
/// heuristic through [`HeuristicSpec::build`].
///
/// ```
/// use heuristics::HeuristicSpec;
/// let spec: HeuristicSpec = "welch:margin=3,alpha=0.01".parse().unwrap();
/// assert_eq!(spec.to_string(), "welch:alpha=0.01,margin=3");
/// assert_eq!(spec.build().name(), "welch");
/// assert_eq!("welch:alpha=0.001".parse::<HeuristicSpec>().unwrap().to_string(), "welch");
/// ```
#[derive(Clone, Debug)]
pub struct HeuristicSpec {
    builtin: &'static Builtin,
    /// One per parameter, in table order.
    values: Vec<Value>,
}

impl HeuristicSpec {
    /// The built-in `name` with default parameters.
    pub fn named(name: &str) -> Result<HeuristicSpec, UnknownHeuristic> {
        let builtin = builtin(name).ok_or_else(|| UnknownHeuristic(name.to_string()))?;
        Ok(HeuristicSpec {
            builtin,
            values: builtin.params.iter().map(|p| p.default).collect(),
        })
    }

    /// Parses `name` or `name:key=value,key=value`.
    pub fn parse(text: &str) -> Result<HeuristicSpec, SpecError> {
        let (name, params) = match text.split_once(':') {
            Some((name, params)) => (name, Some(params)),
            None => (text, None),
        };
        let mut spec = HeuristicSpec::named(name)?;
        let heuristic = spec.builtin.name;
        let mut seen = Vec::new();
        for item in params.into_iter().flat_map(|p| p.split(',')) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(SpecError::NoValue {
                    heuristic,
                    item: item.to_string(),
                });
            };
            let i = spec.index(key)?;
            let param = &spec.builtin.params[i];
            if seen.contains(&i) {
                return Err(SpecError::Repeated {
                    heuristic,
                    key: param.key,
                });
            }
            seen.push(i);
            spec.values[i] = param.kind.parse(value).ok_or_else(|| SpecError::BadValue {
                heuristic,
                key: param.key,
                value: value.to_string(),
                expected: param.kind.expected(),
            })?;
        }
        Ok(spec)
    }

    /// Sets parameter `key` to `value`, checked as parsing would.
    pub fn with(mut self, key: &str, value: Value) -> Result<HeuristicSpec, SpecError> {
        let i = self.index(key)?;
        let param = &self.builtin.params[i];
        if !param.kind.accepts(value) {
            return Err(SpecError::BadValue {
                heuristic: self.builtin.name,
                key: param.key,
                value: value.to_string(),
                expected: param.kind.expected(),
            });
        }
        self.values[i] = value;
        Ok(self)
    }

    /// The heuristic's name.
    pub fn name(&self) -> &'static str {
        self.builtin.name
    }

    /// Its row in [`BUILTIN`].
    pub fn builtin(&self) -> &'static Builtin {
        self.builtin
    }

    /// The value of parameter `key`, if the heuristic has one.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.index(key).ok().map(|i| self.values[i])
    }

    /// Every parameter with its value, in table order.
    pub fn params(&self) -> impl Iterator<Item = (&'static Param, Value)> + '_ {
        self.builtin.params.iter().zip(self.values.iter().copied())
    }

    /// A fresh heuristic with these parameters (each call a new one: every
    /// virtual process runs its own).
    pub fn build(&self) -> Box<dyn Heuristic> {
        (self.builtin.make)(&Args { spec: self })
    }

    fn index(&self, key: &str) -> Result<usize, SpecError> {
        let params = self.builtin.params;
        params
            .iter()
            .position(|p| p.key == key)
            .ok_or_else(|| SpecError::UnknownParam {
                heuristic: self.builtin.name,
                key: key.to_string(),
                known: self.builtin.keys(),
            })
    }
}

impl PartialEq for HeuristicSpec {
    fn eq(&self, other: &HeuristicSpec) -> bool {
        self.builtin.name == other.builtin.name && self.values == other.values
    }
}

impl FromStr for HeuristicSpec {
    type Err = SpecError;
    fn from_str(text: &str) -> Result<HeuristicSpec, SpecError> {
        HeuristicSpec::parse(text)
    }
}

impl fmt::Display for HeuristicSpec {
    /// The canonical text: the name, then `:key=value,...` for the
    /// parameters that differ from their defaults, in table order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.builtin.name)?;
        let mut sep = ':';
        for (p, v) in self.params().filter(|(p, v)| *v != p.default) {
            write!(f, "{sep}{}={v}", p.key)?;
            sep = ',';
        }
        Ok(())
    }
}

/// The parameters' values, as a [`Builtin`]'s constructor reads them.
pub struct Args<'a> {
    spec: &'a HeuristicSpec,
}

impl Args<'_> {
    /// The value of the `Count` parameter `key`.
    ///
    /// # Panics
    /// If the row has no such `Count` parameter: a bug in the table, which
    /// the test building every row catches.
    pub fn count(&self, key: &str) -> u64 {
        match self.spec.get(key) {
            Some(Value::Count(n)) => n,
            other => panic!(
                "{}: no count parameter '{key}' ({other:?})",
                self.spec.name()
            ),
        }
    }

    /// The value of the real parameter `key`.
    ///
    /// # Panics
    /// If the row has no such real parameter (see [`Args::count`]).
    pub fn real(&self, key: &str) -> f64 {
        match self.spec.get(key) {
            Some(Value::Real(x)) => x,
            other => panic!(
                "{}: no real parameter '{key}' ({other:?})",
                self.spec.name()
            ),
        }
    }
}

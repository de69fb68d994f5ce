//! The file route to an [`ExprSpec`]: a spec's TOML text, its update(s),
//! `let`s, parameters and `aux` fields parsed in scope, every mistake a
//! [`SpecError`] that says where it is.

use super::error::{ExprError, Part};
use super::parse::{self, Expr, Kind, Scope};
use super::spec::{bad, ExprSpec, MAX_COMPONENTS};
use crate::error::{ParseReason, SpecError};
use crate::spec::check_extents;
use crate::toml_error::TomlError;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The TOML form, before parsing the expressions.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    low: Vec<usize>,
    high: Vec<usize>,
    #[serde(default)]
    params: BTreeMap<String, f64>,
    #[serde(default, rename = "let")]
    lets: Vec<String>,
    /// Components per cell; scalar cells where absent.
    cell: Option<usize>,
    /// A string, or with `cell` a list of one string per component.
    update: toml::Value,
    /// Auxiliary fields: name = expression of the global index.
    #[serde(default)]
    aux: BTreeMap<String, String>,
}

/// The update's text: one string for scalar cells, a list of one string
/// per component for cells of `components`.
fn update_texts(value: &toml::Value, components: Option<usize>) -> Result<Vec<String>, SpecError> {
    match (value, components) {
        (toml::Value::String(s), None) => Ok(vec![s.clone()]),
        (toml::Value::Array(items), Some(n)) => {
            let texts: Option<Vec<String>> = items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect();
            match texts {
                Some(t) if t.len() == n => Ok(t),
                Some(t) => Err(bad(
                    Part::Update,
                    0,
                    ExprError::UpdateCount {
                        components: n,
                        got: t.len(),
                    },
                )),
                None => Err(bad(Part::Update, 0, ExprError::UpdatesNotStrings)),
            }
        }
        (_, None) => Err(bad(Part::Update, 0, ExprError::UpdateNotString)),
        (_, Some(n)) => Err(bad(Part::Update, 0, ExprError::UpdateNotList(n))),
    }
}

/// The spec's `aux` definitions, parsed: names that are no parameter or
/// built-in, values that read only the global index, sizes and
/// parameters (a field computed once cannot depend on the grid).
fn aux_fields(
    raw: &Raw,
    ndims: usize,
    components: Option<usize>,
) -> Result<Vec<(String, Expr)>, SpecError> {
    const BUILT_IN: [&str; 10] = [
        "u", "g", "n", "old2", "inf", "select", "sqrt", "abs", "min", "max",
    ];
    let mut out = Vec::new();
    for (name, text) in &raw.aux {
        let part = || Part::Aux(name.clone());
        if components.is_some() {
            return Err(bad(part(), 0, ExprError::AuxNeedsScalar));
        }
        let ident = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident || BUILT_IN.contains(&name.as_str()) || raw.params.contains_key(name) {
            return Err(bad(part(), 0, ExprError::AuxName(name.clone())));
        }
        let scope = Scope {
            params: &raw.params,
            lets: &[],
            ndims,
            components,
            aux: &[],
        };
        let (e, kind) =
            parse::expression(text, &scope).map_err(|e| bad(part(), e.at, e.why.into()))?;
        if kind != Kind::Real {
            return Err(bad(part(), 0, ExprError::AuxCondition));
        }
        let mut reads_grid = false;
        e.visit(&mut |x| reads_grid |= matches!(x, Expr::Cell(..) | Expr::Old2(_)));
        if reads_grid {
            return Err(bad(part(), 0, ExprError::AuxReadsGrid));
        }
        out.push((name.clone(), e));
    }
    Ok(out)
}

impl ExprSpec {
    /// Parses the spec's TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<ExprSpec, SpecError> {
        let in_file = |e: SpecError| SpecError::Parse {
            path: origin.to_string(),
            reason: ParseReason::Spec(Box::new(e)),
        };
        let raw: Raw = toml::from_str(text).map_err(|e| SpecError::Parse {
            path: origin.to_string(),
            reason: ParseReason::Toml(TomlError::new(text, e)),
        })?;
        ExprSpec::new(raw).map_err(in_file)
    }

    fn new(raw: Raw) -> Result<ExprSpec, SpecError> {
        check_extents(&raw.low, &raw.high)?;
        const RESERVED: [&str; 9] = [
            "u", "g", "old2", "inf", "select", "sqrt", "abs", "min", "max",
        ];
        if let Some(name) = raw.params.keys().find(|n| RESERVED.contains(&n.as_str())) {
            return Err(bad(Part::Params, 0, ExprError::ReservedParam(name.clone())));
        }
        if let Some((name, v)) = raw.params.iter().find(|(_, v)| !v.is_finite()) {
            return Err(bad(
                Part::Params,
                0,
                ExprError::ParamNotFinite {
                    name: name.clone(),
                    value: *v,
                },
            ));
        }
        let ndims = raw.low.len();
        let components = match raw.cell {
            None => None,
            Some(n) if (1..=MAX_COMPONENTS).contains(&n) => Some(n),
            Some(n) => {
                return Err(bad(
                    Part::Cell,
                    0,
                    ExprError::Components {
                        components: n,
                        max: MAX_COMPONENTS,
                    },
                ))
            }
        };
        let updates = update_texts(&raw.update, components)?;
        let aux_names: Vec<String> = raw.aux.keys().cloned().collect();
        let aux = aux_fields(&raw, ndims, components)?;
        let mut names: Vec<(String, Kind)> = Vec::new();
        let mut lets = Vec::new();
        for (i, text) in raw.lets.iter().enumerate() {
            let part = Part::Let(i + 1);
            let (name, expr) =
                parse::binding(text).map_err(|e| bad(part.clone(), e.at, e.why.into()))?;
            if raw.params.contains_key(name)
                || raw.aux.contains_key(name)
                || name == "u"
                || name == "inf"
            {
                return Err(bad(part, 0, ExprError::LetShadows(name.to_string())));
            }
            let scope = Scope {
                params: &raw.params,
                lets: &names,
                ndims,
                components,
                aux: &aux_names,
            };
            let offset = text.len() - expr.len();
            let (e, k) = parse::expression(expr, &scope)
                .map_err(|e| bad(part, e.at + offset, e.why.into()))?;
            names.push((name.to_string(), k));
            lets.push((name.to_string(), e, k == Kind::Bool));
        }
        let scope = Scope {
            params: &raw.params,
            lets: &names,
            ndims,
            components,
            aux: &aux_names,
        };
        let mut update = Vec::new();
        for (k, text) in updates.iter().enumerate() {
            let part = match components {
                None => Part::Update,
                Some(_) => Part::UpdateComponent(k),
            };
            let (e, kind) = parse::expression(text, &scope)
                .map_err(|e| bad(part.clone(), e.at, e.why.into()))?;
            if kind != Kind::Real {
                return Err(bad(part, 0, ExprError::UpdateCondition));
            }
            update.push(e);
        }
        let spec = ExprSpec {
            name: raw.name,
            low: raw.low,
            high: raw.high,
            params: raw.params,
            lets,
            components,
            update,
            aux,
        };
        spec.check_reads()?;
        Ok(spec)
    }
}

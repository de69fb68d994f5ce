//! The Rust route to an [`ExprSpec`]: an update built with [`build`] and
//! its auxiliary fields, checked as a spec file is.

use super::build;
use super::error::{ExprError, Part};
use super::parse::Expr;
use super::spec::{bad, ExprSpec};
use crate::error::SpecError;
use crate::spec::check_extents;
use std::collections::BTreeMap;

impl ExprSpec {
    /// A spec from an expression built in Rust ([`build`]), checked like
    /// a spec file.
    pub fn from_rust(
        name: &str,
        low: Vec<usize>,
        high: Vec<usize>,
        update: build::E,
    ) -> Result<ExprSpec, SpecError> {
        check_extents(&low, &high)?;
        let spec = ExprSpec {
            name: name.to_string(),
            low,
            high,
            params: BTreeMap::new(),
            lets: Vec::new(),
            components: None,
            update: vec![update.expr()],
            aux: Vec::new(),
        };
        spec.check_reads()?;
        Ok(spec)
    }

    /// The spec with auxiliary fields, read in the update as
    /// [`build::aux`]`(i, offset)` for the `i`-th of `fields`: each a name
    /// and an expression of the global index, sizes and numbers (no grid
    /// reads). The Rust route to what a spec file's `aux` declares.
    pub fn with_aux(mut self, fields: Vec<(&str, build::E)>) -> Result<ExprSpec, SpecError> {
        if !fields.is_empty() && self.components.is_some() {
            return Err(bad(Part::AuxFields, 0, ExprError::AuxNeedsScalar));
        }
        self.aux = Vec::new();
        for (name, e) in fields {
            let e = e.expr();
            let mut reads_grid = false;
            e.visit(&mut |x| {
                reads_grid |= matches!(
                    x,
                    Expr::Cell(..) | Expr::Old2(_) | Expr::Aux(..) | Expr::Let(_)
                )
            });
            if reads_grid {
                return Err(bad(
                    Part::Aux(name.to_string()),
                    0,
                    ExprError::BuiltAuxReadsGrid,
                ));
            }
            self.aux.push((name.to_string(), e));
        }
        if let Some(i) = self.undeclared_aux() {
            return Err(bad(
                Part::Update,
                0,
                ExprError::UndeclaredAux {
                    read: i,
                    given: self.aux.len(),
                },
            ));
        }
        self.check_reads()?;
        Ok(self)
    }
}

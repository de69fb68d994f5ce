//! [`ExprSpec`]: a stencil whose update is an expression, validated, and
//! what it reads (offsets, footprint, global dimensions); binding the
//! domain size. Both routes in (a file, Rust) build it and check it here.

use super::error::{ExprError, Part};
use super::parse::Expr;
use crate::error::SpecError;
use hitmap::Footprint;
use std::collections::BTreeMap;

/// A stencil whose update is an expression, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprSpec {
    pub name: String,
    pub low: Vec<usize>,
    pub high: Vec<usize>,
    /// Named constants.
    pub params: BTreeMap<String, f64>,
    /// `let` bindings in order: name, value, and whether it is a condition.
    pub lets: Vec<(String, Expr, bool)>,
    /// `None` for scalar cells; the component count of array cells
    /// (`cell = N`).
    pub components: Option<usize>,
    /// The new cell: one expression, or one per component.
    pub update: Vec<Expr>,
    /// Auxiliary read-only fields, by name (sorted): each a function of
    /// the global index (`g[d]`, `n[d]`, parameters), computed once per
    /// cell where a device holds it and read as `name[o0, ...]`.
    pub aux: Vec<(String, Expr)>,
}

/// Most components a cell may have: far more than any lattice model needs
/// (D3Q27 has 27), few enough that a cell stays a handful of cache lines.
pub const MAX_COMPONENTS: usize = 256;

pub(super) fn bad(part: Part, at: usize, why: ExprError) -> SpecError {
    SpecError::Expr { part, at, why }
}

impl ExprSpec {
    /// The first auxiliary field read that the spec does not declare.
    pub(super) fn undeclared_aux(&self) -> Option<usize> {
        let fields = self.aux.len();
        self.leaves().iter().find_map(|e| match e {
            Expr::Aux(i, _) if *i >= fields => Some(*i),
            _ => None,
        })
    }

    /// Errors unless the kernel reads some cell, each read with one offset
    /// per dimension and inside `low`/`high`.
    pub(super) fn check_reads(&self) -> Result<(), SpecError> {
        let fp = self.offsets();
        if fp.is_empty() {
            return Err(bad(Part::Update, 0, ExprError::ReadsNoCell));
        }
        if let Some(d) = self.global_dims().into_iter().find(|&d| d >= self.ndims()) {
            return Err(bad(
                Part::Update,
                0,
                ExprError::GlobalDim {
                    dim: d,
                    ndims: self.ndims(),
                },
            ));
        }
        for o in &fp {
            if o.len() != self.ndims() {
                return Err(bad(
                    Part::Update,
                    0,
                    ExprError::ReadOffsets {
                        offsets: o.clone(),
                        ndims: self.ndims(),
                    },
                ));
            }
            let inside = o
                .iter()
                .enumerate()
                .all(|(d, &x)| -(self.low[d] as i64) <= x && x <= self.high[d] as i64);
            if !inside {
                return Err(bad(
                    Part::Update,
                    0,
                    ExprError::ReadOutside {
                        offsets: o.clone(),
                        low: self.low.clone(),
                        high: self.high.clone(),
                    },
                ));
            }
        }
        Ok(())
    }

    pub fn ndims(&self) -> usize {
        self.low.len()
    }

    /// Whether the kernel reads the domain size (`n[d]`), which
    /// [`for_domain`](Self::for_domain) must bind before it runs.
    pub fn uses_domain(&self) -> bool {
        self.leaves().iter().any(|e| matches!(e, Expr::Size(_)))
    }

    /// The spec for a run on a global array of `size` (boundary
    /// included): every `n[d]` becomes the number `size[d]`, a constant of
    /// the run on the CPU and a literal in device code.
    pub fn for_domain(&self, size: &[usize]) -> Result<ExprSpec, SpecError> {
        if size.len() != self.ndims() {
            return Err(bad(
                Part::Update,
                0,
                ExprError::DomainDims {
                    domain: size.len(),
                    stencil: self.ndims(),
                },
            ));
        }
        fn bind(e: &Expr, size: &[usize]) -> Expr {
            let b = |x: &Expr| Box::new(bind(x, size));
            match e {
                Expr::Size(d) => Expr::Num(size[*d] as f64),
                Expr::Num(_) | Expr::Cell(..) | Expr::Let(_) | Expr::Global(_) | Expr::Old2(_) => {
                    e.clone()
                }
                Expr::Neg(a) => Expr::Neg(b(a)),
                Expr::Not(a) => Expr::Not(b(a)),
                Expr::Arith(op, x, y) => Expr::Arith(*op, b(x), b(y)),
                Expr::Compare(op, x, y) => Expr::Compare(*op, b(x), b(y)),
                Expr::And(x, y) => Expr::And(b(x), b(y)),
                Expr::Or(x, y) => Expr::Or(b(x), b(y)),
                Expr::Select(c, x, y) => Expr::Select(b(c), b(x), b(y)),
                Expr::Call(f, args) => Expr::Call(*f, args.iter().map(|a| bind(a, size)).collect()),
                Expr::Aux(..) => e.clone(),
            }
        }
        let mut out = self.clone();
        for (_, e) in &mut out.aux {
            *e = bind(e, size);
        }
        for (_, e, _) in &mut out.lets {
            *e = bind(e, size);
        }
        for e in &mut out.update {
            *e = bind(e, size);
        }
        Ok(out)
    }

    /// Whether the update reads `old2`, the level before the current one.
    pub fn reads_previous(&self) -> bool {
        self.leaves().iter().any(|e| matches!(e, Expr::Old2(_)))
    }

    /// The dimensions whose global index the kernel uses.
    pub(super) fn global_dims(&self) -> Vec<usize> {
        self.leaves()
            .iter()
            .filter_map(|e| match e {
                Expr::Global(d) | Expr::Size(d) => Some(*d),
                _ => None,
            })
            .collect()
    }

    /// Every leaf of the lets and the update.
    pub(super) fn leaves(&self) -> Vec<Expr> {
        fn walk(e: &Expr, out: &mut Vec<Expr>) {
            match e {
                Expr::Global(_)
                | Expr::Size(_)
                | Expr::Old2(_)
                | Expr::Num(_)
                | Expr::Cell(..)
                | Expr::Aux(..) => out.push(e.clone()),
                Expr::Let(_) => {}
                Expr::Neg(a) | Expr::Not(a) => walk(a, out),
                Expr::Arith(_, a, b)
                | Expr::Compare(_, a, b)
                | Expr::And(a, b)
                | Expr::Or(a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Select(c, a, b) => {
                    walk(c, out);
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut out = Vec::new();
        for (_, e) in &self.aux {
            walk(e, &mut out);
        }
        for (_, e, _) in &self.lets {
            walk(e, &mut out);
        }
        for e in &self.update {
            walk(e, &mut out);
        }
        out
    }

    /// The offsets read, sorted: of the grid and of the auxiliary fields
    /// (a device's tile must hold every cell either is read at).
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        let mut out: Vec<Vec<i64>> = self
            .leaves()
            .into_iter()
            .filter_map(|e| match e {
                Expr::Cell(o, _) | Expr::Aux(_, o) => Some(o),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    pub fn footprint(&self) -> Footprint {
        Footprint::new(self.ndims(), self.offsets())
    }
}

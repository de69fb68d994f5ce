//! Kernels written once as expressions in a stencil spec, run on the CPU
//! (row operations, [`rows`]) and on devices (C in every dialect), with
//! the same operations in the same order, so bit-identical:
//!
//! ```toml
//! name = "damped-2d4"
//! low = [1, 1]
//! high = [1, 1]
//! params = { k = 0.25, floor = 0.0 }
//! let = ["s = u[-1,0] + u[1,0] + u[0,-1] + u[0,1]"]
//! update = "max(s * k, floor)"
//! ```
//!
//! The language: numbers (rounded to the cell type), `u[o0, o1, ...]` (the
//! old cell at that offset, within `low`/`high`), `g[d]` (the cell's global
//! index along dimension d), `n[d]` (the global domain's size along d,
//! boundary included: a constant of the run, bound by
//! [`ExprSpec::for_domain`]), parameters, earlier
//! `let`s, `+ - * /` (left to right, parentheses kept), unary `-`,
//! comparisons `< <= > >= == !=`, `&& || !` on them, `select(condition,
//! a, b)`, `sqrt`, `abs`, `min`, `max`, `inf`. Nothing is contracted into
//! fused multiply-adds on either side.
//!
//! A spec with `cell = N` has cells of N components (`[f32; N]` in Rust,
//! a struct of `d[N]` in device code): `update` is a list of N
//! expressions, and reads pick a component, `u[o0, ...][k]`, `old2[k]`.
//!
//! The spec (`spec`) is made from a file (`from_toml`) or from Rust
//! (`from_rust`, with [`build`]), and runs as a kernel (`kernel`) over
//! cells of [`ExprCell`]s (`math`).

pub mod build;
pub mod error;
mod eval;
mod from_rust;
mod from_toml;
mod fused;
mod kernel;
mod math;
mod op;
pub(crate) mod parse;
mod rows;
mod segment;
mod spec;
#[cfg(test)]
mod tests;

pub use kernel::ExprKernel;
pub use math::{ExprCell, Math};
pub use parse::Expr;
pub use rows::Program;
pub use spec::{ExprSpec, MAX_COMPONENTS};

//! Device kernels: C-family source for device backends, in any [`Dialect`].
//!
//! A [`DeviceKernel`] is a dialect-free body (statements computing `dst[c]`
//! from `src`), the cell's C declaration and read-only tables. [`source`]
//! wraps it in one dialect: preamble, tables, the signature written from the
//! ABI ([`abi::ARGS`]) and a prologue that finds the thread's cell `c`. In
//! dialects whose grids are rounded up to whole blocks (CUDA) the prologue
//! returns early outside the launch region; OpenCL launches are exact and
//! go unguarded ([`Dialect::bounds_guard`]). All of this C, bodies
//! included, is written by one emitter, [`emit`]; [`exprs`] gives the
//! library stencils' kernels from their [`Formula`](crate::Formula)s.
//!
//! Names a body can use: `cell` (the cell type; an array cell's components
//! are `.d[i]`), `index_t` (a 64-bit signed integer), the arguments of
//! [`abi::ARGS`] (`src`, `dst`, `base`, `s0..s2`, `n0..n3`, `o0..o3`, `np`; `s3` is the constant 1), `c` (the cell's
//! element index), `i3`, `i2`, `z` (the thread's grid position) and the
//! tables. A dimension `d` of a `k`-dimensional kernel is normalised
//! dimension `4 - k + d`, so a 3-D kernel steps with `s1`, `s2`, `s3`.
//!
//! Array cells can also be read and written through accessors:
//! `CELL_AT(src, i)` (a whole cell), `PART_AT(src, i, q)` (component `q`)
//! and `CELL_PUT(dst, c, v)`. A body that touches cells only through them
//! ([`DeviceKernel::with_planes`]) compiles for either [`CellLayout`]: as an
//! array of cells, or as one plane per component, where consecutive cells'
//! components are contiguous and a GPU's loads of them coalesce.
//!
//! [`source`]: DeviceKernel::source

pub mod abi;
pub mod dialect;
pub mod emit;
pub mod exprs;
pub mod fused;
mod kernel;
mod scalar;

pub use abi::{LaunchArgs, KERNEL_NAME};
pub use dialect::Dialect;
pub use fused::{FusedArgs, FusedShape, FUSED_KERNEL_NAME, MAX_FUSED_STEPS};
pub use kernel::{CellDecl, CellLayout, DeviceKernel, Table};
pub use scalar::DeviceScalar;

//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod common;
mod dsl_specs;
mod gas;
mod gaussian;
mod laplace;
mod limits;
mod opencl;
mod poisson;
mod registry;
mod row_kernels;
mod wavesim;

//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod conformance;
mod cpu_time;
mod cuda;
mod fused;
mod opencl;

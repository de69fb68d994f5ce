//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod checkpoint;
mod cli;
mod common;
mod limits;
mod modelling;
mod mpi;
mod scale;
mod specs;

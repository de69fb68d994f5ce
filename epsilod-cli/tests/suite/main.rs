//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod checkpoint;
mod checkpoint_bounds;
mod cli;
mod cluster;
mod common;
mod hostile;
mod limits;
mod memory_limits;
mod modelling;
mod mpi;
mod npy_headers;
mod output;
mod plan_choice;
mod reference;
mod reliability;
mod scale;
mod seeded_tiles;
mod specs;
mod trace_depth;
mod zero_sizes;

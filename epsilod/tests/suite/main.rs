//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod alb;
mod checkpoint;
mod common;
mod custom_heuristic;
mod decision_log;
mod deep_halos;
mod devices;
mod launch;
mod many_devices;
mod mpi_placement;
mod parsers;
mod skeleton;
mod spells;

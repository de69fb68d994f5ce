//! The integration tests, one binary: each module is a suite of its own
//! (one link of the whole crate graph, not one per suite).

mod common;
mod registry;
mod schedules;

//! Applications beyond the stencil library, runnable as `epsilod run <app>`.

pub mod gas;

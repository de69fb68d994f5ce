//! Which devices, network and layout to run on: HCLogP's scheduler
//! (Soares 2017, ch. 4) over a device inventory, Rivera's configuration
//! sweep, and the Pareto front of (devices, time).
//!
//! A choice is a number of devices from each class of the inventory and one
//! network between hosts. The devices form the skeleton's chain of slabs,
//! grouped by host (only the chain's host boundaries cross the network),
//! `per_rank` consecutive devices of a host in one MPI rank. Its time per
//! iteration, by [`Estimate`]:
//! - `Additive` (HCLogP, Eq. 3.5): balanced compute (`cells / Σ 1/s_d`
//!   without fixed costs; with them each device's `a_d + s_d · cells_d`
//!   of the seeded split) plus the slowest device's messages, `Σ_neighbours (α + β·M)` over the
//!   link each neighbour is on;
//! - `Overlap` (this skeleton): `max_d border_d + max(inner_d, exchange_d)`.
//!
//! [`branch_and_bound`] finds the best choice; it is exact (tested against
//! [`exhaustive`]): it tries classes fastest first, every count from all to
//! none, and prunes a branch once even the balanced compute of everything
//! still open cannot beat the best found.
//!
//! The files, each importing only those listed before it:
//! - `choice`: the [`Problem`], its [`Estimate`], and a [`Choice`];
//! - `inventory`: what can be booked ([`Inventory`]) and its checks;
//! - `estimate`: a choice's loop time, as slabs or as blocks;
//! - `search`: the branch and bound, the exhaustive search, the front;
//! - `sweep`: Rivera's sweep of one choice's layouts, and the ranking.

mod choice;
mod estimate;
mod inventory;
mod search;
mod sweep;
#[cfg(test)]
mod tests;

pub use choice::{Choice, Estimate, Problem, Weights};
pub use inventory::{
    DeviceClass, Inventory, LinkSpec, Network, PlanError, MAX_CHOICES, MAX_DEVICES,
};
pub use search::{branch_and_bound, exhaustive, front, pareto, per_count};
pub use sweep::{ranked, runner_up, sweep};

//! Run settings the command line takes from the environment rather than
//! from options: read here, in the binary, and handed to the library typed.

/// `EPSILOD_HOST_HALOS=1` sends every halo through the host, even between
/// devices that share memory: to compare, or to rule the device path out
/// when a result looks wrong.
pub fn host_halos() -> bool {
    std::env::var("EPSILOD_HOST_HALOS").is_ok_and(|v| v == "1")
}

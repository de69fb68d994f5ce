//! Host staging: which copies go through a device's page-locked buffer, and how large it grows.

/// The largest copy staged through a device's pinned host buffer; larger
/// ones (a rebalance's bulk rows) go straight from the caller's memory.
pub const STAGING_BYTES: usize = 16 << 20;

/// The smallest staging buffer allocated: halos of a few rows fit at once.
const MIN_STAGING: usize = 64 << 10;

/// What a copy of some bytes needs of the staging buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Too large to stage: straight from the caller's memory.
    Direct,
    /// Through the staging buffer as it is.
    Held,
    /// Through a staging buffer of this many bytes, allocated first.
    Grow(usize),
}

/// How a copy of `bytes` is staged, the staging buffer holding `held` bytes
/// (`None`: not allocated yet). Pieces up to [`STAGING_BYTES`] (halos, small
/// moves) are staged: drivers copy pageable memory in pieces they stage
/// themselves, synchronously.
pub fn stage(bytes: usize, held: Option<usize>) -> Stage {
    if bytes > STAGING_BYTES {
        Stage::Direct
    } else if held.is_none_or(|len| len < bytes) {
        Stage::Grow(bytes.next_power_of_two().max(MIN_STAGING))
    } else {
        Stage::Held
    }
}

#[cfg(test)]
mod tests {
    use super::{stage, Stage, STAGING_BYTES};

    #[test]
    fn small_copies_are_staged_in_a_buffer_grown_by_powers_of_two() {
        assert_eq!(stage(100, None), Stage::Grow(64 << 10));
        assert_eq!(stage(100, Some(64 << 10)), Stage::Held);
        assert_eq!(
            stage((64 << 10) + 1, Some(64 << 10)),
            Stage::Grow(128 << 10)
        );
        assert_eq!(stage(STAGING_BYTES, None), Stage::Grow(STAGING_BYTES));
        assert_eq!(stage(STAGING_BYTES + 1, Some(STAGING_BYTES)), Stage::Direct);
    }
}

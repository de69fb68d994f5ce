//! Which iterations a run records one by one, shared by the skeleton
//! (its report) and the simulator (its report of a simulated run), so a
//! long run's records fit in memory and both sample alike.

/// The most iterations a run records one by one by default, with at most
/// [`RECORD_BUDGET`] records of devices in all, so a long run's records
/// and report fit in memory.
pub const RECORDED_ITERATIONS: u64 = 1 << 20;

/// Device-iterations recorded at most by default: a report well under what
/// one MPI message can carry.
pub const RECORD_BUDGET: u64 = 1 << 22;

/// Iterations recorded one by one by default on `devices` devices.
pub fn default_records(devices: usize) -> u64 {
    (RECORD_BUDGET / devices.max(1) as u64).clamp(1, RECORDED_ITERATIONS)
}

/// Every how many iterations a run of `ran` iterations records one, to
/// record at most `max`: 1 up to `max`.
pub fn record_every(ran: u64, max: u64) -> u64 {
    ran.div_ceil(max.max(1)).max(1)
}

/// The iteration (from the run's start) recorded in block `b` of `every`
/// iterations: a place within the block that varies from block to block,
/// so that the sample never lines up with periodic events (ALB windows,
/// checkpoints, exchange periods) and its mean is not biased by them.
pub fn recorded_in_block(b: u64, every: u64) -> u64 {
    if every == 1 {
        return b;
    }
    // SplitMix64's finaliser: any fixed scramble of `b` does.
    let mut z = b.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    b * every + (z ^ (z >> 31)) % every
}

/// Whether iteration `i` (from the run's start) is recorded, one a block of
/// `every`.
pub fn is_recorded(i: u64, every: u64) -> bool {
    recorded_in_block(i / every, every) == i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_record_at_most_a_bounded_number_of_iterations() {
        for max in [1, 10, RECORDED_ITERATIONS] {
            for ran in [0, 1, 9, 10, 11, 1000, max, max + 1, 10_000_000, u64::MAX] {
                let every = record_every(ran, max);
                assert!(ran.div_ceil(every) <= max, "{ran} {max}");
                assert_eq!(every == 1, ran <= max, "{ran} {max}");
                // The smallest such step.
                assert!(every == 1 || ran.div_ceil(every - 1) > max, "{ran} {max}");
            }
        }
        assert_eq!(default_records(1), RECORDED_ITERATIONS);
        assert_eq!(default_records(16), RECORD_BUDGET / 16);
        assert_eq!(default_records(usize::MAX), 1);
    }

    #[test]
    fn one_iteration_a_block_is_recorded_at_places_that_vary() {
        for every in [1, 2, 7, 10] {
            let recorded: Vec<u64> = (0..1000).filter(|&i| is_recorded(i, every)).collect();
            let blocks: Vec<u64> = recorded.iter().map(|i| i / every).collect();
            assert_eq!(
                blocks,
                (0..recorded.len() as u64).collect::<Vec<_>>(),
                "{every}"
            );
            for (b, &i) in recorded.iter().enumerate() {
                assert_eq!(recorded_in_block(b as u64, every), i);
            }
            let places: std::collections::BTreeSet<u64> =
                recorded.iter().map(|i| i % every).collect();
            assert_eq!(places.len() as u64, every, "every place is used: {every}");
        }
    }
}

//! Temporal blocking on GPU devices: the tile a fused kernel
//! (`kernels::device::fused`) gets on a device, from its work-group memory
//! and the kernel's reach. Device-free.
//!
//! A work group holds two arrays of its tile plus `steps` reaches each side,
//! and recomputes, at each step but the last, the ring of the cone its
//! neighbours also compute. Wider tiles recompute less but need more
//! memory; the plan takes the tile, within the memory, whose cones cost the
//! least compute per final cell and step (counting the work-items a row
//! leaves idle), and refuses step counts whose
//! best tile costs more than [`FusedLimits::max_overhead`] times one step's
//! compute (the caller then fuses fewer steps).

use kernels::device::{FusedShape, MAX_FUSED_STEPS};

/// Work-group memory per fused kernel on CPU implementations (PoCL), whose
/// "local" memory is ordinary memory: a tile's two arrays within a
/// second-level cache, and tiles small enough that a grid has a work group
/// for every core.
pub const CPU_LOCAL_BYTES: usize = 256 << 10;

/// The default bound on a plan's compute per final cell and step against a
/// step-by-step launch's (1). Fusing saves memory traffic; a stencil on a GPU
/// is memory-bound, so some recomputation pays, and twice the arithmetic is
/// taken as the most that does until measurements say otherwise.
pub const MAX_OVERHEAD: f64 = 2.0;

/// What a device allows fused kernels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusedLimits {
    /// Work-group (OpenCL local, CUDA shared) memory a kernel may declare,
    /// in bytes.
    pub local_bytes: usize,
    /// The largest work group, in work-items (0: unknown).
    pub max_group: usize,
    /// A GPU: rows of tiles in multiples of 32 cells (coalesced loads, whole
    /// warps); a CPU implementation gets any width.
    pub gpu: bool,
    /// The most compute per final cell and step a plan may cost, against 1
    /// for step-by-step launches.
    pub max_overhead: f64,
}

/// Work-items per group: 256, or fewer where the device or kernel allows
/// fewer (a power of two, so rows split evenly).
fn group_size(max_group: usize) -> usize {
    let cap = if max_group == 0 {
        256
    } else {
        max_group.min(256)
    };
    1 << cap.max(1).ilog2()
}

/// Compute per final cell and step of a tile of `tile` final cells fused
/// `steps` times by a kernel of this reach: every step's cone, against
/// `steps` times the tile.
pub fn overhead(tile: &[usize], low: &[usize], high: &[usize], steps: usize) -> f64 {
    let cells: f64 = (0..steps)
        .map(|j| {
            let reach = steps - 1 - j;
            (0..tile.len())
                .map(|d| (tile[d] + reach * (low[d] + high[d])) as f64)
                .product::<f64>()
        })
        .sum();
    cells / (steps as f64 * tile.iter().map(|&t| t as f64).product::<f64>())
}

/// The fused kernel's shape for `steps` steps of a kernel of this reach over
/// cells of `cell_bytes`, or `None` where no tile fits the memory within the
/// overhead bound (or `steps` is out of 2..=[`MAX_FUSED_STEPS`]).
pub fn plan(
    low: &[usize],
    high: &[usize],
    cell_bytes: usize,
    steps: usize,
    limits: &FusedLimits,
) -> Option<FusedShape> {
    let nd = low.len();
    if !(2..=MAX_FUSED_STEPS).contains(&steps) || nd == 0 || high.len() != nd || cell_bytes == 0 {
        return None;
    }
    let budget = if limits.gpu {
        limits.local_bytes
    } else {
        limits.local_bytes.min(CPU_LOCAL_BYTES)
    };
    let cells = budget / (2 * cell_bytes);
    let halo: Vec<usize> = (0..nd).map(|d| steps * (low[d] + high[d])).collect();
    let last = nd - 1;
    // Row lengths (the last dimension's array extent) worth trying: any
    // below 32, then whole warps on GPUs and multiples of 16 on CPUs.
    let unit = if limits.gpu { 32 } else { 16 };
    let rows = (halo[last] + 1..=cells.min(1024)).filter(|&l| l < 32 || l % unit == 0);
    // A CPU implementation gets one work-item per group: its loops over
    // the tile are then plain loop nests the compiler vectorises along the
    // rows. PoCL ran groups of 256 work-items 3 to 5 times slower than
    // step-by-step launches (2d4 2050^2: 3.5 ms against 1.2 ms an
    // iteration at 8 steps) and one work-item 1.3 to 1.6 times faster.
    let g = if limits.gpu {
        group_size(limits.max_group)
    } else {
        1
    };
    let mut best: Option<(f64, Vec<usize>)> = None;
    for l_last in rows {
        let rest = cells / l_last;
        // The other dimensions' array extent: the largest cube that fits.
        let l_other = if nd == 1 {
            1
        } else {
            let mut e = (rest as f64).powf(1.0 / (nd - 1) as f64).floor() as usize + 1;
            while e > 0 && e.checked_pow((nd - 1) as u32).is_none_or(|c| c > rest) {
                e -= 1;
            }
            e.min(1024)
        };
        let extents: Vec<usize> = (0..nd)
            .map(|d| if d == last { l_last } else { l_other })
            .collect();
        if (0..nd).any(|d| extents[d] <= halo[d]) {
            continue;
        }
        let tile: Vec<usize> = (0..nd).map(|d| extents[d] - halo[d]).collect();
        // Work-items past a row's end idle through its last pass: a row of
        // 176 cells in groups 256 wide keeps 69% of them busy.
        let gx = g.min(l_last.next_power_of_two());
        let busy = l_last as f64 / (gx * l_last.div_ceil(gx)) as f64;
        let cost = overhead(&tile, low, high, steps) / busy;
        // Ties go to the longer rows, tried later.
        if best.as_ref().is_none_or(|(c, _)| cost <= *c) {
            best = Some((cost, tile));
        }
    }
    let (cost, tile) = best?;
    if cost > limits.max_overhead {
        return None;
    }
    let row = tile[last] + halo[last];
    let gx = g.min(row.next_power_of_two());
    Some(FusedShape {
        steps,
        tile,
        low: low.to_vec(),
        high: high.to_vec(),
        group: [gx, g / gx],
    })
}

/// The most steps, up to `steps`, that [`plan`] fuses, with their shape;
/// `None` when not even two do.
pub fn plan_at_most(
    low: &[usize],
    high: &[usize],
    cell_bytes: usize,
    steps: usize,
    limits: &FusedLimits,
) -> Option<FusedShape> {
    (2..=steps.min(MAX_FUSED_STEPS))
        .rev()
        .find_map(|k| plan(low, high, cell_bytes, k, limits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(local_bytes: usize, gpu: bool) -> FusedLimits {
        FusedLimits {
            local_bytes,
            max_group: 1024,
            gpu,
            max_overhead: MAX_OVERHEAD,
        }
    }

    #[test]
    fn a_2d_jacobi_fuses_eight_steps_in_48_kib_of_shared_memory() {
        let s = plan(&[1, 1], &[1, 1], 4, 8, &limits(48 << 10, true)).unwrap();
        assert!(s.local_bytes(4) <= 48 << 10, "{s:?}");
        assert_eq!(s.local_extents()[1] % 32, 0, "whole warps: {s:?}");
        assert!(overhead(&s.tile, &s.low, &s.high, 8) < 1.5, "{s:?}");
        assert_eq!(s.group_size(), 256);
        assert!(s.group[0] >= 32 && s.group[0] <= s.local_extents()[1].next_power_of_two());
    }

    #[test]
    fn what_does_not_fit_fuses_fewer_steps() {
        // A 3-d star in 48 KiB: eight steps would recompute too much.
        let l = limits(48 << 10, true);
        assert_eq!(plan(&[1; 3], &[1; 3], 4, 8, &l), None);
        let s = plan_at_most(&[1; 3], &[1; 3], 4, 8, &l).expect("some steps fuse");
        assert!((2..8).contains(&s.steps), "{s:?}");
        assert!(s.local_bytes(4) <= 48 << 10);
        // A cell of 19 floats in 2 KiB: none.
        assert_eq!(
            plan_at_most(&[1; 3], &[1; 3], 76, 8, &limits(2048, true)),
            None
        );
        // Without an overhead bound, anything with one final cell a tile fits.
        let free = FusedLimits {
            max_overhead: f64::INFINITY,
            ..limits(2048, false)
        };
        let s = plan(&[2, 2], &[2, 2], 8, 2, &free).unwrap();
        assert!(
            s.local_bytes(8) <= 2048 && s.tile.iter().all(|&t| t >= 1),
            "{s:?}"
        );
        assert_eq!(plan(&[2, 2], &[2, 2], 8, 3, &free), None);
    }

    #[test]
    fn cpu_implementations_cap_their_arrays() {
        let s = plan(&[1, 1], &[1, 1], 4, 4, &limits(64 << 20, false)).unwrap();
        assert!(s.local_bytes(4) <= CPU_LOCAL_BYTES, "{s:?}");
        assert_eq!(s.group, [1, 1], "one work-item loops over the tile");
        assert!(s.tile.iter().all(|&t| t >= 100), "{s:?}");
    }

    #[test]
    fn plans_stay_within_their_memory_for_every_reach() {
        for nd in 1..=4 {
            for reach in 1..=2 {
                for steps in 2..=MAX_FUSED_STEPS {
                    for bytes in [4, 8, 76] {
                        for gpu in [false, true] {
                            let l = FusedLimits {
                                max_overhead: f64::INFINITY,
                                ..limits(48 << 10, gpu)
                            };
                            let (lo, hi) = (vec![reach; nd], vec![reach - 1; nd]);
                            if let Some(s) = plan(&lo, &hi, bytes, steps, &l) {
                                assert!(s.local_bytes(bytes) <= 48 << 10, "{s:?}");
                                assert!(s.tile.iter().all(|&t| t >= 1));
                                assert!(s.group_size() <= 256 && s.group_size() >= 1);
                                assert_eq!(s.steps, steps);
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(group_size(0), 256);
        assert_eq!(group_size(96), 64);
        assert_eq!(group_size(1), 1);
    }
}

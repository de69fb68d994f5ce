//! Launch geometry: a local region of a row-major allocation as the kernel's
//! scalar arguments, a 3-D grid of work-items and, where it helps, a work-group
//! shape. Device-free.

use super::copy_plan::strides;
use crate::error::DeviceError;
use kernels::device::abi::{ArgKind, LaunchArgs, LongArg, ARGS};
use std::ops::Range;

/// What a compiled kernel tells the geometry about group sizes on its device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupHints {
    /// The device's preferred work-group multiple for this kernel (warp or
    /// wavefront size); 0 when unknown.
    pub multiple: usize,
    /// The largest work group this kernel may launch with; 0 when unknown.
    pub max: usize,
}

/// One launch, ready for [`super::DeviceRuntime::launch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchGeometry {
    /// The kernel's integer arguments in ABI order, after the two buffers.
    pub index_args: Vec<i64>,
    /// Work-items along the contiguous dimension, the next, and the two
    /// outermost folded together.
    pub grid: [usize; 3],
    /// The work-group shape, or `None` to let the runtime choose.
    pub group: Option<[usize; 3]>,
}

/// The inverse of the kernel ABI's [`LaunchArgs`], with the allocation's
/// element count: its extents and the local region of an `nd`-dimensional
/// launch. For runtimes that run kernels on the host (the tests' mock).
pub fn region_from_index_args(
    index_args: &[i64],
    nd: usize,
    alloc_cells: usize,
) -> (Vec<usize>, Vec<Range<usize>>) {
    let mut args = LaunchArgs {
        base: 0,
        // The innermost stride is not an argument: it is always 1.
        strides: [0, 0, 0, 1],
        extents: [1; 4],
        origin: [0; 4],
        plane: alloc_cells as i64,
    };
    let kinds = ARGS.iter().filter_map(|(_, k)| match k {
        ArgKind::Long(l) => Some(*l),
        ArgKind::Buffer(_) => None,
    });
    for (kind, &v) in kinds.zip(index_args) {
        match kind {
            LongArg::Base => args.base = v,
            LongArg::Stride(d) => args.strides[d] = v,
            LongArg::Extent(d) => args.extents[d] = v,
            LongArg::Origin(d) => args.origin[d] = v,
            LongArg::Plane => args.plane = v,
        }
    }
    let st: Vec<usize> = (0..nd).map(|d| args.strides[4 - nd + d] as usize).collect();
    let ext: Vec<usize> = (0..nd)
        .map(|d| {
            if d == 0 {
                alloc_cells / st[0].max(1)
            } else {
                st[d - 1] / st[d].max(1)
            }
        })
        .collect();
    let base = args.base as usize;
    let local = (0..nd)
        .map(|d| {
            let start = if d == 0 {
                base / st[0]
            } else {
                (base / st[d]) % ext[d]
            };
            start..start + args.extents[4 - nd + d] as usize
        })
        .collect();
    (ext, local)
}

/// Work-items per group along the contiguous dimension: the largest multiple
/// of the device's preferred multiple, up to 256 and the kernel's maximum,
/// that divides `n` (OpenCL 1.2 needs groups to tile the range); `None` lets
/// the runtime choose when nothing fits.
pub fn work_group(n: usize, multiple: usize, max: usize) -> Option<usize> {
    if multiple == 0 {
        return None;
    }
    let cap = max.min(256);
    (1..=cap / multiple)
        .rev()
        .map(|k| k * multiple)
        .find(|&g| n.is_multiple_of(g))
}

/// Work-items per group along the contiguous dimension on a CPU
/// implementation (PoCL): the whole row when the kernel allows it, else the
/// largest divisor of it from 64 up; `None` for rows too narrow or with no
/// such divisor. PoCL vectorises a group's row as one loop, and its own
/// choice for a 2048x1022 range (two devices split by rows) ran 4x slower
/// than whole-row groups (2d4 2050^2, one device: 1.24-1.36 ms against
/// 2.8-3.0 ms with its choice).
pub fn row_group(n: usize, max: usize) -> Option<usize> {
    (64..=n.min(max)).rev().find(|&g| n.is_multiple_of(g))
}

/// Groups for launches only a few cells wide (a column border strip): left
/// to itself PoCL made one work-group per row there, and waking a thread per
/// group cost ~70 us a row (measured: a 2048-row column strip took longer
/// than the 2048x1022 inner region). Whole rows of the strip, as many as fit
/// in 256 work-items and tile the range. On CPU implementations (`gpu`
/// false) a power of two of them: PoCL compiles a kernel again for every new
/// group shape (70-100 ms, 200 ms for an init kernel), and a strip's rows
/// change with every rebalance, so shapes from a fixed few are compiled once
/// (ten row counts in a row cost ten compilations with groups of their
/// largest divisor). An odd count then gets groups of one row; measured
/// since the fixes above, a one-column strip of 1717 to 3001 rows so
/// launched in 0.04-0.06 ms, as with larger groups. GPUs keep the largest
/// divisor: a group's shape costs them no compilation.
pub fn thin_groups(width: usize, rows: usize, max: usize, gpu: bool) -> Option<[usize; 3]> {
    if width == 0 || width >= 64 || rows == 0 {
        return None;
    }
    let most = (max.min(256) / width).max(1).min(rows);
    if gpu {
        let g = (1..=most).rev().find(|&g| rows.is_multiple_of(g))?;
        return (g > 1).then_some([width, g, 1]);
    }
    let mut g = 1usize << most.ilog2();
    while !rows.is_multiple_of(g) {
        g /= 2;
    }
    Some([width, g, 1])
}

/// The launch of a non-empty `local` region (whose first cell has global
/// index `origin`) of an allocation of these extents. `gpu`: GPUs get groups
/// of [`work_group`] along the row, CPU implementations (PoCL) whole rows
/// ([`row_group`]), and thin launches on either several rows a group
/// ([`thin_groups`]).
///
/// Errors for regions of more dimensions than the kernel ABI normalises to.
pub fn plan_launch(
    alloc_extents: &[usize],
    local: &[Range<usize>],
    origin: &[i64],
    hints: GroupHints,
    gpu: bool,
) -> Result<LaunchGeometry, DeviceError> {
    let args = LaunchArgs::new(&strides(alloc_extents), local)?
        .with_origin(origin)
        .with_plane(alloc_extents.iter().product());
    let grid = args.grid();
    let n = [grid[2], grid[1], grid[0]];
    let wide = if gpu {
        work_group(n[2], hints.multiple, hints.max)
    } else {
        row_group(n[2], hints.max)
    };
    let group = match (wide, thin_groups(n[2], n[1], hints.max, gpu)) {
        (Some(g), _) => Some([g, 1, 1]),
        (None, thin) => thin,
    };
    Ok(LaunchGeometry {
        index_args: args.index_args().to_vec(),
        grid,
        group,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn thin_launches_group_whole_rows() {
        // (width, rows, max, gpu) and the groups: powers of two of whole
        // rows on CPU implementations, the largest divisor on GPUs.
        let cases = [
            ((1, 2048, 4096, false), Some([1, 256, 1])),
            ((2, 2047, 4096, false), Some([2, 1, 1])),
            ((2, 2426, 4096, false), Some([2, 2, 1])),
            ((3, 24, 4096, false), Some([3, 8, 1])),
            ((3, 7, 4096, false), Some([3, 1, 1])),
            ((1, 1, 4096, false), Some([1, 1, 1])),
            ((64, 2048, 4096, false), None),
            ((0, 2048, 4096, false), None),
            ((1, 2048, 64, false), Some([1, 64, 1])),
            ((40, 2048, 0, false), Some([40, 1, 1])),
            ((2, 2047, 4096, true), Some([2, 89, 1])),
            ((3, 7, 4096, true), Some([3, 7, 1])),
            ((1, 1, 4096, true), None),
            ((1, 2039, 4096, true), None),
        ];
        for ((width, rows, max, gpu), want) in cases {
            assert_eq!(
                thin_groups(width, rows, max, gpu),
                want,
                "{width} x {rows}, max {max}, gpu {gpu}"
            );
        }
    }

    #[test]
    fn work_groups_tile_the_range() {
        assert_eq!(work_group(1024, 32, 1024), Some(256));
        assert_eq!(work_group(96, 32, 1024), Some(96));
        assert_eq!(work_group(100, 8, 1024), None);
        assert_eq!(work_group(100, 4, 1024), Some(100));
        assert_eq!(work_group(64, 32, 32), Some(32));
        assert_eq!(work_group(64, 0, 32), None);
    }

    #[test]
    fn cpu_implementations_get_whole_rows() {
        assert_eq!(row_group(2048, 4096), Some(2048));
        assert_eq!(row_group(4096, 1024), Some(1024));
        assert_eq!(row_group(2047, 4096), Some(2047));
        assert_eq!(row_group(2 * 1021, 1024), Some(1021));
        assert_eq!(row_group(2 * 2039, 1024), None);
        assert_eq!(row_group(63, 4096), None);
        assert_eq!(row_group(2048, 0), None);
    }

    #[test]
    fn index_args_follow_the_kernel_abi() {
        // A 2-D region 2..5 x 1..7 of a 10x8 allocation, at global (7, 3):
        // base, s0..s2, n0..n3, o0..o3, np (the allocation's cells).
        let g = plan_launch(
            &[10, 8],
            &[2..5, 1..7],
            &[7, 3],
            GroupHints::default(),
            false,
        )
        .unwrap();
        assert_eq!(
            g.index_args,
            vec![2 * 8 + 1, 0, 0, 8, 1, 1, 3, 6, 0, 0, 7, 3, 80]
        );
        assert_eq!(g.grid, [6, 3, 1]);
    }

    #[test]
    fn five_dimensions_are_an_error() {
        let r = plan_launch(
            &[2; 5],
            &vec![0..1; 5],
            &[0; 5],
            GroupHints::default(),
            false,
        );
        assert!(matches!(r, Err(DeviceError::Kernel(_))), "{r:?}");
    }

    /// An allocation of 1 to 4 dimensions and a non-empty region in it.
    fn launch() -> impl Strategy<Value = (Vec<usize>, Vec<Range<usize>>)> {
        prop::collection::vec(1usize..40, 1..=4).prop_flat_map(|ext| {
            let ranges: Vec<_> = ext
                .iter()
                .map(|&e| (0..e).prop_flat_map(move |lo| (Just(lo), lo + 1..=e)))
                .collect();
            (
                Just(ext),
                ranges.prop_map(|v| v.into_iter().map(|(a, b)| a..b).collect()),
            )
        })
    }

    proptest! {
        #[test]
        fn groups_tile_the_grid_or_are_left_to_the_runtime(
            (ext, local) in launch(),
            multiple in prop_oneof![Just(0usize), Just(1), Just(8), Just(32), Just(64)],
            max in prop_oneof![Just(0usize), Just(64), Just(256), Just(1024)],
            gpu in any::<bool>(),
        ) {
            let g = plan_launch(&ext, &local, &vec![0; ext.len()], GroupHints { multiple, max }, gpu).unwrap();
            let cells: usize = local.iter().map(|r| r.len()).product();
            prop_assert_eq!(g.grid.iter().product::<usize>(), cells);
            if let Some(group) = g.group {
                for (gr, gs) in g.grid.iter().zip(group) {
                    prop_assert!(gs >= 1 && gr % gs == 0, "{:?} does not tile {:?}", group, g.grid);
                }
                let size = group.iter().product::<usize>();
                prop_assert!(size <= max.max(group[0]), "{:?} over the kernel's {}", group, max);
                if gpu {
                    prop_assert!(size <= 256);
                }
            }
        }

        #[test]
        fn index_args_round_trip((ext, local) in launch()) {
            let g = plan_launch(&ext, &local, &vec![0; ext.len()], GroupHints::default(), false).unwrap();
            let cells: usize = ext.iter().product();
            let (e, l) = region_from_index_args(&g.index_args, ext.len(), cells);
            prop_assert_eq!(e, ext);
            prop_assert_eq!(l, local);
        }
    }
}

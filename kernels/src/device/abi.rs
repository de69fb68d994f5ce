//! The kernel ABI: the one definition of a device kernel's name and
//! arguments. The generator writes signatures from [`ARGS`]; controllers set
//! arguments by walking it, so neither side spells out positions.
//!
//! Every launch is normalised to four dimensions: a region of fewer
//! dimensions gets leading dimensions of extent 1 and stride 0. The launch
//! grid is 3-D: x runs along dimension 3 (contiguous), y along dimension 2,
//! z over dimensions 0 and 1 together (`z = i0 * n1 + i1`).

use crate::error::KernelError;
use std::ops::Range;

/// The name of every device kernel's entry point.
pub const KERNEL_NAME: &str = "epsilod_stencil";

/// Dimensions of the normalised launch.
pub const DIMS: usize = crate::limits::DEVICE_DIMS;

/// Which buffer a buffer argument is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferArg {
    /// The previous grid, read only.
    Src,
    /// The next grid; a kernel writes only its own cell.
    Dst,
}

/// Which value an integer argument carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongArg {
    /// Element offset of the region's first cell in the allocation.
    Base,
    /// Element stride of a normalised dimension.
    Stride(usize),
    /// Extent of the region along a normalised dimension.
    Extent(usize),
    /// Global index of the region's first cell along a normalised
    /// dimension (0 for the padding dimensions).
    Origin(usize),
    /// Cells of the allocation: how far apart one component of a cell and
    /// the next lie where cells are laid out in planes ([`super::CellLayout`]).
    Plane,
}

/// An argument's kind: a cell buffer or a 64-bit integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A buffer of cells.
    Buffer(BufferArg),
    /// A signed 64-bit integer.
    Long(LongArg),
}

/// The kernel arguments in order, with the names kernel bodies see. There is
/// no `s3`: the innermost dimension is contiguous in every allocation, and
/// the prologue declares `s3 = 1` as a constant, so compilers see unit-stride
/// neighbours (PoCL vectorised a runtime `s3` into gathers and scatters,
/// 10x slower than contiguous loads).
pub const ARGS: &[(&str, ArgKind)] = &[
    ("src", ArgKind::Buffer(BufferArg::Src)),
    ("dst", ArgKind::Buffer(BufferArg::Dst)),
    ("base", ArgKind::Long(LongArg::Base)),
    ("s0", ArgKind::Long(LongArg::Stride(0))),
    ("s1", ArgKind::Long(LongArg::Stride(1))),
    ("s2", ArgKind::Long(LongArg::Stride(2))),
    ("n0", ArgKind::Long(LongArg::Extent(0))),
    ("n1", ArgKind::Long(LongArg::Extent(1))),
    ("n2", ArgKind::Long(LongArg::Extent(2))),
    ("n3", ArgKind::Long(LongArg::Extent(3))),
    ("o0", ArgKind::Long(LongArg::Origin(0))),
    ("o1", ArgKind::Long(LongArg::Origin(1))),
    ("o2", ArgKind::Long(LongArg::Origin(2))),
    ("o3", ArgKind::Long(LongArg::Origin(3))),
    ("np", ArgKind::Long(LongArg::Plane)),
];

/// How many of [`ARGS`] are integers.
pub const LONG_ARGS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < ARGS.len() {
        if let ArgKind::Long(_) = ARGS[i].1 {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The integer arguments of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchArgs {
    /// Element offset of the region's first cell.
    pub base: i64,
    /// Element strides of the normalised dimensions.
    pub strides: [i64; DIMS],
    /// Extents of the region along the normalised dimensions.
    pub extents: [i64; DIMS],
    /// Global index of the region's first cell, normalised.
    pub origin: [i64; DIMS],
    /// Cells of the allocation (one plane, where cells lie in planes).
    pub plane: i64,
}

impl LaunchArgs {
    /// The launch of `region` (local indices, one range per dimension) in an
    /// allocation with row-major element `strides`.
    pub fn new(strides: &[usize], region: &[Range<usize>]) -> Result<LaunchArgs, KernelError> {
        let nd = region.len();
        if strides.len() != nd {
            return Err(KernelError::LaunchRank {
                strides: strides.len(),
                region: nd,
            });
        }
        if nd == 0 || nd > DIMS {
            return Err(KernelError::DeviceDims(nd));
        }
        if strides[nd - 1] != 1 {
            return Err(KernelError::InnerStride(strides[nd - 1]));
        }
        let mut args = LaunchArgs {
            base: 0,
            strides: [0; DIMS],
            extents: [1; DIMS],
            origin: [0; DIMS],
            plane: 0,
        };
        for d in 0..nd {
            args.strides[DIMS - nd + d] = strides[d] as i64;
            args.extents[DIMS - nd + d] = region[d].len() as i64;
            args.base += (region[d].start * strides[d]) as i64;
        }
        Ok(args)
    }

    /// The same launch of a region whose first cell has global index
    /// `origin` (one per region dimension).
    pub fn with_origin(mut self, origin: &[i64]) -> LaunchArgs {
        let nd = origin.len().min(DIMS);
        for d in 0..nd {
            self.origin[DIMS - nd + d] = origin[origin.len() - nd + d];
        }
        self
    }

    /// The same launch in an allocation of `cells` cells.
    pub fn with_plane(mut self, cells: usize) -> LaunchArgs {
        self.plane = cells as i64;
        self
    }

    /// The value of one integer argument.
    pub fn value(&self, arg: LongArg) -> i64 {
        match arg {
            LongArg::Base => self.base,
            LongArg::Stride(d) => self.strides[d],
            LongArg::Extent(d) => self.extents[d],
            LongArg::Origin(d) => self.origin[d],
            LongArg::Plane => self.plane,
        }
    }

    /// The integer arguments in ABI order (for APIs that take them packed).
    pub fn index_args(&self) -> [i64; LONG_ARGS] {
        let mut out = [0; LONG_ARGS];
        let integers = ARGS.iter().filter_map(|(_, k)| match k {
            ArgKind::Long(l) => Some(self.value(*l)),
            ArgKind::Buffer(_) => None,
        });
        for (o, v) in out.iter_mut().zip(integers) {
            *o = v;
        }
        out
    }

    /// The global grid covering the region exactly: x along dimension 3,
    /// y along dimension 2, z over dimensions 0 and 1. A grid rounded up
    /// from it is legal only in dialects with a
    /// [`bounds_guard`](super::Dialect::bounds_guard).
    pub fn grid(&self) -> [usize; 3] {
        let n = self.extents.map(|e| e as usize);
        [n[3], n[2], n[0] * n[1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The cells the kernel computes, in launch order, as a device walks the
    /// grid: the prologue's index arithmetic done on the host.
    fn walked(a: &LaunchArgs) -> Vec<i64> {
        let [gx, gy, gz] = a.grid();
        let (s, n) = (a.strides, a.extents);
        let mut out = Vec::new();
        for z in 0..gz as i64 {
            for i2 in 0..gy as i64 {
                for i3 in 0..gx as i64 {
                    out.push(
                        a.base + (z / n[1]) * s[0] + (z % n[1]) * s[1] + i2 * s[2] + i3 * s[3],
                    );
                }
            }
        }
        out
    }

    /// The region's cells in row-major order, counted one by one.
    fn brute(dims: &[usize], region: &[Range<usize>]) -> Vec<i64> {
        let mut out = Vec::new();
        let mut idx: Vec<usize> = region.iter().map(|r| r.start).collect();
        if region.iter().any(|r| r.is_empty()) {
            return out;
        }
        loop {
            let mut lin = 0;
            for (d, &i) in idx.iter().enumerate() {
                lin = lin * dims[d] + i;
            }
            out.push(lin as i64);
            let mut d = idx.len();
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < region[d].end {
                    break;
                }
                idx[d] = region[d].start;
            }
        }
    }

    fn row_major(dims: &[usize]) -> Vec<usize> {
        let mut s = vec![1; dims.len()];
        for d in (0..dims.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * dims[d + 1];
        }
        s
    }

    fn case() -> impl Strategy<Value = (Vec<usize>, Vec<Range<usize>>)> {
        prop::collection::vec((1usize..7, 0usize..7, 0usize..7), 1..=4).prop_map(|v| {
            let dims: Vec<usize> = v.iter().map(|t| t.0).collect();
            let region = v
                .iter()
                .map(|&(n, a, b)| {
                    let (a, b) = (a % (n + 1), b % (n + 1));
                    a.min(b)..a.max(b)
                })
                .collect();
            (dims, region)
        })
    }

    proptest! {
        #[test]
        fn normalised_launch_visits_the_region_in_row_major_order((dims, region) in case()) {
            let a = LaunchArgs::new(&row_major(&dims), &region).unwrap();
            let nd = dims.len();
            for d in 0..DIMS - nd {
                prop_assert_eq!((a.extents[d], a.strides[d]), (1, 0));
            }
            prop_assert_eq!(walked(&a), brute(&dims, &region));
        }
    }

    #[test]
    fn index_args_follow_the_abi_order() {
        let a = LaunchArgs::new(&[20, 5, 1], &[1..3, 2..4, 0..5])
            .unwrap()
            .with_origin(&[4, 5, 6])
            .with_plane(7 * 4 * 5);
        assert_eq!(
            a.index_args(),
            [20 + 10, 0, 20, 5, 1, 2, 2, 5, 0, 4, 5, 6, 140]
        );
        let names: Vec<&str> = ARGS.iter().map(|a| a.0).collect();
        assert_eq!(
            names,
            [
                "src", "dst", "base", "s0", "s1", "s2", "n0", "n1", "n2", "n3", "o0", "o1", "o2",
                "o3", "np"
            ]
        );
        assert_eq!(a.grid(), [5, 2, 2]);
    }

    #[test]
    fn launches_the_abi_cannot_express_are_errors() {
        let r = [0..1, 0..1, 0..1, 0..1, 0..1];
        assert_eq!(
            LaunchArgs::new(&[1; 5], &r),
            Err(KernelError::DeviceDims(5))
        );
        assert_eq!(
            LaunchArgs::new(&[6, 2], &r[..2]),
            Err(KernelError::InnerStride(2))
        );
        assert_eq!(
            LaunchArgs::new(&[1; 2], &r[..3]),
            Err(KernelError::LaunchRank {
                strides: 2,
                region: 3
            })
        );
    }
}

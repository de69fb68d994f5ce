//! Which halo depth a run goes at, and why: the depth given, `auto`'s
//! trials, or (the default, [`HaloDepth::Cache`]) temporal blocking where
//! it pays, decided before the first iteration from the devices, the
//! tiles and the cores' second-level cache.

use crate::devices::{share_cores, DeviceKind, DeviceSpec};
use crate::options::HaloDepth;
use crate::report::DepthReason;
use hitmap::Layout;

/// The depth [`HaloDepth::Cache`] runs at where blocking pays: fused CPU
/// launches of 4 steps read and write memory once per 4 iterations
/// (docs/benchmarks.md, "By default (`--halo-depth cache`)").
pub const CACHE_DEPTH: usize = 4;

/// How many times its cores' second-level caches a CPU device's two
/// buffers must exceed for [`HaloDepth::Cache`] to block: below it a
/// sweep is served from the caches, and fusing saves no memory traffic.
pub const BEYOND_L2: usize = 4;

/// The fewest cells a block must be across, per stencil reach and depth,
/// along every dimension the layout cuts: the ring of ghost cells both
/// neighbours compute then stays under a few percent of the block.
const THIN: usize = 16;

/// A run's halo depth, decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DepthChoice {
    /// The depth the run starts at.
    pub(crate) depth: usize,
    /// Whether `auto`'s trials run first (and may change it).
    pub(crate) trials: bool,
    pub(crate) reason: DepthReason,
}

/// What the decision looks at, gathered from a run's plan.
pub(crate) struct DepthFacts<'a> {
    pub(crate) setting: HaloDepth,
    pub(crate) reads_previous: bool,
    pub(crate) aux_fields: bool,
    /// Iterations this run computes (after a restart, those left).
    pub(crate) iters: u64,
    pub(crate) ranks: usize,
    pub(crate) balanced: bool,
    pub(crate) devices: &'a [DeviceSpec],
    /// Cores the process's devices share.
    pub(crate) cores: usize,
    pub(crate) layout: &'a Layout,
    /// The stencil's widest reach.
    pub(crate) reach: usize,
    pub(crate) cell_bytes: usize,
    /// One core's second-level cache.
    pub(crate) l2_bytes: usize,
}

impl DepthFacts<'_> {
    /// The depth and why. A given depth over 1 on a kernel reading the
    /// previous level is refused before (`SetupError::HaloDepth`).
    pub(crate) fn choose(&self) -> DepthChoice {
        let fixed = |depth, reason| DepthChoice {
            depth,
            trials: false,
            reason,
        };
        match self.setting {
            HaloDepth::Depth(k) => fixed(k.max(1), DepthReason::Given),
            _ if self.reads_previous => fixed(1, DepthReason::ReadsPrevious),
            HaloDepth::Auto if self.iters >= crate::depth_trials::Trials::MIN_ITERS => {
                DepthChoice {
                    depth: 1,
                    trials: true,
                    reason: DepthReason::Measured,
                }
            }
            HaloDepth::Auto => fixed(1, DepthReason::ShortRun),
            HaloDepth::Cache => match self.why_not_block() {
                Some(reason) => fixed(1, reason),
                None => fixed(CACHE_DEPTH, DepthReason::TilesBeyondL2),
            },
        }
    }

    /// Why the default keeps depth 1, if it does.
    fn why_not_block(&self) -> Option<DepthReason> {
        let plain = |d: &DeviceSpec| {
            matches!(d.kind, DeviceKind::Cpu { .. }) && d.slowdown.is_none() && d.fail.is_none()
        };
        if self.ranks > 1 {
            return Some(DepthReason::SeveralRanks);
        }
        if !self.devices.iter().all(plain) {
            return Some(DepthReason::NotPlainCpu);
        }
        if self.aux_fields {
            return Some(DepthReason::StepByStep);
        }
        if self.balanced {
            return Some(DepthReason::Balanced);
        }
        // Fused launches of 3-d and 4-d grids measured slower than single
        // steps at most sizes tried (docs/benchmarks.md, "By default on 3-d
        // and 4-d grids").
        if self.layout.domain().ndims() >= 3 {
            return Some(DepthReason::ThreeOrMoreDims);
        }
        let devices = share_cores(self.devices, self.cores);
        let domain = self.layout.domain();
        let least = THIN * CACHE_DEPTH * self.reach.max(1);
        let mut tiles = 0;
        for (p, d) in devices.iter().enumerate() {
            let block = self.layout.block(p);
            if block.is_empty() {
                continue;
            }
            tiles += 1;
            let threads = match d.kind {
                DeviceKind::Cpu { threads } => threads.unwrap_or(1).max(1),
                DeviceKind::Gpu(_) => 1,
            };
            let bytes = 2 * block.card() * self.cell_bytes;
            if bytes <= BEYOND_L2 * threads * self.l2_bytes {
                return Some(DepthReason::TilesInCache);
            }
            let (mine, all) = (block.extents(), domain.extents());
            if mine
                .iter()
                .zip(&all)
                .any(|(&w, &whole)| w < whole && w < least)
            {
                return Some(DepthReason::ThinBlocks);
            }
        }
        (tiles == 0).then_some(DepthReason::TilesInCache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hitmap::{Partition, Shape};

    fn facts<'a>(devices: &'a [DeviceSpec], layout: &'a Layout) -> DepthFacts<'a> {
        DepthFacts {
            setting: HaloDepth::Cache,
            reads_previous: false,
            aux_fields: false,
            iters: 100,
            ranks: 1,
            balanced: false,
            devices,
            cores: 2,
            layout,
            reach: 1,
            cell_bytes: 4,
            l2_bytes: 1 << 20,
        }
    }

    fn layout(n: i64, devices: usize) -> Layout {
        let domain = Shape::from_ranges(&[(1, n - 1), (1, n - 1)]);
        Layout::new(&domain, Partition::Single(0), devices, None).unwrap()
    }

    /// The default blocks one process's CPU tiles beyond 4x their cores'
    /// L2 and keeps depth 1 for tiles in cache, several ranks, GPUs,
    /// emulated devices, auxiliary fields, balancing and thin blocks.
    #[test]
    fn the_default_blocks_only_large_plain_cpu_tiles_in_one_process() {
        let one = [DeviceSpec::cpu_share()];
        let (big, small) = (layout(4098, 1), layout(1026, 1));
        let choose = |f: DepthFacts<'_>| {
            let c = f.choose();
            (c.depth, c.reason)
        };
        assert_eq!(
            choose(facts(&one, &big)),
            (CACHE_DEPTH, DepthReason::TilesBeyondL2)
        );
        // 1024^2 cells, 8 MiB in two buffers: exactly 4 x 2 cores' 1 MiB.
        assert_eq!(choose(facts(&one, &small)), (1, DepthReason::TilesInCache));
        let l2 = |b| DepthFacts {
            l2_bytes: b,
            ..facts(&one, &small)
        };
        assert_eq!(choose(l2(1 << 19)).0, CACHE_DEPTH);
        let ranks = DepthFacts {
            ranks: 2,
            ..facts(&one, &big)
        };
        assert_eq!(choose(ranks), (1, DepthReason::SeveralRanks));
        let gpu = [DeviceSpec::parse("opencl").unwrap()];
        assert_eq!(choose(facts(&gpu, &big)), (1, DepthReason::NotPlainCpu));
        let slow = [DeviceSpec::parse("cpu:slowdown=2").unwrap()];
        assert_eq!(choose(facts(&slow, &big)), (1, DepthReason::NotPlainCpu));
        let aux = DepthFacts {
            aux_fields: true,
            ..facts(&one, &big)
        };
        assert_eq!(choose(aux), (1, DepthReason::StepByStep));
        let alb = DepthFacts {
            balanced: true,
            ..facts(&one, &big)
        };
        assert_eq!(choose(alb), (1, DepthReason::Balanced));
        let old2 = DepthFacts {
            reads_previous: true,
            ..facts(&one, &big)
        };
        assert_eq!(choose(old2), (1, DepthReason::ReadsPrevious));
        // 64 blocks of 64 rows, 2 MiB each, beyond 4 x a 64 KiB L2; but 64
        // rows are under 16 x depth 4 x reach 2.
        let (many, sixty_four) = (vec![DeviceSpec::cpu(1); 64], layout(4098, 64));
        let thin = DepthFacts {
            reach: 2,
            l2_bytes: 1 << 16,
            ..facts(&many, &sixty_four)
        };
        assert_eq!(choose(thin), (1, DepthReason::ThinBlocks));
        let wide = DepthFacts {
            reach: 1,
            l2_bytes: 1 << 16,
            ..facts(&many, &sixty_four)
        };
        assert_eq!(choose(wide).0, CACHE_DEPTH);
    }

    /// The default keeps depth 1 on grids of three or more dimensions,
    /// however large their tiles.
    #[test]
    fn the_default_keeps_three_dimensional_grids_at_depth_one() {
        let one = [DeviceSpec::cpu_share()];
        let grid = |dims: usize| {
            let n = if dims == 2 { 4097 } else { 513 };
            let domain = Shape::from_ranges(&vec![(1, n); dims]);
            Layout::new(&domain, Partition::Single(0), 1, None).unwrap()
        };
        let choose = |layout: &Layout| {
            let c = facts(&one, layout).choose();
            (c.depth, c.reason)
        };
        assert_eq!(choose(&grid(2)), (CACHE_DEPTH, DepthReason::TilesBeyondL2));
        assert_eq!(choose(&grid(3)), (1, DepthReason::ThreeOrMoreDims));
        assert_eq!(choose(&grid(4)), (1, DepthReason::ThreeOrMoreDims));
    }

    /// A depth given and `auto` keep their meaning.
    #[test]
    fn given_depths_and_auto_keep_their_meaning() {
        let one = [DeviceSpec::cpu_share()];
        let big = layout(4098, 1);
        let with = |setting, iters| {
            DepthFacts {
                setting,
                iters,
                ..facts(&one, &big)
            }
            .choose()
        };
        let c = with(HaloDepth::Depth(1), 100);
        assert_eq!(
            (c.depth, c.trials, c.reason),
            (1, false, DepthReason::Given)
        );
        assert_eq!(with(HaloDepth::Depth(7), 100).depth, 7);
        let c = with(HaloDepth::Auto, 100);
        assert_eq!(
            (c.depth, c.trials, c.reason),
            (1, false, DepthReason::ShortRun)
        );
        let c = with(HaloDepth::Auto, 126);
        assert_eq!(
            (c.depth, c.trials, c.reason),
            (1, true, DepthReason::Measured)
        );
    }
}

//! Where a virtual process stands in a layout: its block, the extent its
//! tile holds (ghost cells as deep as the halo depth), its part of the
//! halo plan, and the border strips computed before the inner region.

use crate::alb::Alb;
use hitmap::{split_border, Layout, Partition, Shape, VpHalo};

/// Where this process stands in the current layout.
pub(super) struct Geometry {
    pub(super) layout: Layout,
    /// Its own exchanges only: planned from its neighbours, so that a run
    /// of thousands of processes does not plan every one's in each.
    pub(super) halo: VpHalo,
    pub(super) block: Shape,
    pub(super) extent: Shape,
    pub(super) strips: Vec<Shape>,
    pub(super) inner: Shape,
}

pub(super) fn geometry(
    layout: Layout,
    fp: &hitmap::Footprint,
    p: usize,
    reach_low: &[i64],
    reach_high: &[i64],
    global: &Shape,
    depth: usize,
) -> Result<Geometry, hitmap::HitmapError> {
    // The halo `depth` steps read (`Footprint::deepened`).
    let halo = VpHalo::new(&layout, &fp.deepened(depth), p)?;
    let block = layout.block(p).clone();
    let k = depth.max(1) as i64;
    let deep_low: Vec<i64> = reach_low.iter().map(|r| r * k).collect();
    let deep_high: Vec<i64> = reach_high.iter().map(|r| r * k).collect();
    let extent = if block.is_empty() {
        Shape::empty(block.ndims())
    } else {
        block.expand(&deep_low, &deep_high).intersect(global)
    };
    // Border strips only along axes with neighbours: elsewhere they would
    // split the work into thin launches for nothing.
    let cut = layout.split_along();
    // Neighbours below read up to `high` rows (K times that with deep
    // halos) into this block, those above `low`; a side where no cell is
    // sent (the domain's edge, a neighbour dropped by ALB) needs no strip.
    let (low, high) = halo.send_widths(&block, &deep_high, &deep_low);
    let (strips, inner) = split_border(&block, &low, &high, &cut);
    Ok(Geometry {
        layout,
        halo,
        block,
        extent,
        strips,
        inner,
    })
}

/// Spare rows each side along the balanced dimension (none without ALB).
pub(super) fn spare_rows(alb: Option<&Alb>, geo: &Geometry) -> Vec<i64> {
    let mut spare = vec![0i64; geo.block.ndims()];
    if let (Some(a), Partition::Weighted(d)) = (alb, geo.layout.partition()) {
        spare[d] = ((geo.block.sig(d).card() as f64 * a.spare).ceil() as i64).max(4);
    }
    spare
}

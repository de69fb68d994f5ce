//! The per-layout geometry the simulator and the planner share.

use hitmap::{split_border, Footprint, HaloPlan, Layout, Shape};

use super::SimError;

/// The per-layout geometry: rows, cells, border share and halo messages
/// of each live device (also the planner's, for block partitions).
pub(crate) struct Geometry {
    pub(super) layout: Layout,
    pub(super) rows: Vec<usize>,
    pub(crate) cells: Vec<f64>,
    /// Cells of the border strips, computed before the halos leave.
    pub(crate) border: Vec<f64>,
    /// `(to, bytes)` per live device.
    pub(crate) sends: Vec<Vec<(usize, f64)>>,
}

impl Geometry {
    pub(crate) fn new(
        layout: Layout,
        fp: &Footprint,
        cell_bytes: f64,
    ) -> Result<Geometry, SimError> {
        let plan = HaloPlan::new(&layout, fp)?;
        let (low, high) = (fp.low(), fp.high());
        let (wl, wh): (Vec<i64>, Vec<i64>) = (
            high.iter().map(|&x| x as i64).collect(),
            low.iter().map(|&x| x as i64).collect(),
        );
        let cut = layout.split_along();
        let along = layout.cut_dims().first().copied().unwrap_or(0);
        let mut g = Geometry {
            rows: Vec::with_capacity(layout.procs()),
            cells: Vec::with_capacity(layout.procs()),
            border: Vec::with_capacity(layout.procs()),
            sends: Vec::with_capacity(layout.procs()),
            layout: layout.clone(),
        };
        for (p, b) in layout.blocks().iter().enumerate() {
            let (lo, hi) = plan.vp(p).send_widths(b, &wl, &wh);
            let (strips, _) = split_border(b, &lo, &hi, &cut);
            g.rows.push(b.sig(along).card());
            g.cells.push(b.card() as f64);
            g.border
                .push(strips.iter().map(Shape::card).sum::<usize>() as f64);
            g.sends.push(
                plan.vp(p)
                    .sends
                    .iter()
                    .map(|x| (x.peer, x.card() as f64 * cell_bytes))
                    .collect(),
            );
        }
        Ok(g)
    }
}

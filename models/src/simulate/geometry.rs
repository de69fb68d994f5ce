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
    /// Each device's border strips and inner region, the launches of a
    /// period (the skeleton's `Vp::exchange`).
    regions: Vec<(Vec<Shape>, Shape)>,
    reach_low: Vec<i64>,
    reach_high: Vec<i64>,
}

impl Geometry {
    pub(crate) fn new(
        layout: Layout,
        fp: &Footprint,
        cell_bytes: f64,
    ) -> Result<Geometry, SimError> {
        Geometry::deep(layout, fp, cell_bytes, 1)
    }

    /// The geometry at halo depth `depth`: halos and border strips `depth`
    /// reaches deep, exchanged once per `depth` iterations.
    pub(crate) fn deep(
        layout: Layout,
        fp: &Footprint,
        cell_bytes: f64,
        depth: usize,
    ) -> Result<Geometry, SimError> {
        let k = depth.max(1);
        // The halo `k` steps read, as the skeleton's `vp::geometry` plans it.
        let plan = HaloPlan::new(&layout, &fp.deepened(k))?;
        let (low, high) = (fp.low(), fp.high());
        let (wl, wh): (Vec<i64>, Vec<i64>) = (
            high.iter().map(|&x| (x * k) as i64).collect(),
            low.iter().map(|&x| (x * k) as i64).collect(),
        );
        let cut = layout.split_along();
        let along = layout.cut_dims().first().copied().unwrap_or(0);
        let mut g = Geometry {
            rows: Vec::with_capacity(layout.procs()),
            cells: Vec::with_capacity(layout.procs()),
            border: Vec::with_capacity(layout.procs()),
            sends: Vec::with_capacity(layout.procs()),
            regions: Vec::with_capacity(layout.procs()),
            reach_low: low.iter().map(|&x| x as i64).collect(),
            reach_high: high.iter().map(|&x| x as i64).collect(),
            layout: layout.clone(),
        };
        for (p, b) in layout.blocks().iter().enumerate() {
            let (lo, hi) = plan.vp(p).send_widths(b, &wl, &wh);
            let (strips, inner) = split_border(b, &lo, &hi, &cut);
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
            g.regions.push((strips, inner));
        }
        Ok(g)
    }

    /// Cells each device computes in a period of `len` iterations, and of
    /// those the border strips': each launch a cone, step `j` its region
    /// widened by the reach of the `len - 1 - j` steps after it within the
    /// domain (the skeleton's `Vp::cones`), so the ghost rows both
    /// neighbours compute count twice.
    pub(crate) fn period_cells(&self, len: usize) -> (Vec<f64>, Vec<f64>) {
        if len <= 1 {
            return (self.cells.clone(), self.border.clone());
        }
        let domain = self.layout.domain();
        let cone = |region: &Shape| -> f64 {
            (0..len)
                .map(|j| {
                    let n = (len - 1 - j) as i64;
                    let lo: Vec<i64> = self.reach_low.iter().map(|r| r * n).collect();
                    let hi: Vec<i64> = self.reach_high.iter().map(|r| r * n).collect();
                    region.expand(&lo, &hi).intersect(domain).card() as f64
                })
                .sum()
        };
        self.regions
            .iter()
            .map(|(strips, inner)| {
                let border: f64 = strips.iter().map(cone).sum();
                (border + cone(inner), border)
            })
            .unzip()
    }
}

//! EPSILOD's poisson (apps.md §1.2): 2-d Jacobi for ∇²u = b with two point
//! sources, translated from Devito. Written once in Rust
//! ([`epsilod::expr`]): the sources are found by the global index,
//! so the kernel runs, with the same bits, on any device and partition.

use crate::row_kernel::{at, Rows};
use crate::{App, AppOutcome};
use epsilod::expr::{g, num, select, u, E};
use epsilod::{Cluster, ExprSpec, Frame, RunOptions, Skeleton, Stencil};

/// `(dx, dy)` computed in f32 as the original does: `(2 - 0) / (S0 - 1)`
/// along dimension 0, `(1 - 0) / (S1 - 1)` along dimension 1.
pub fn spacing(size: &[usize]) -> (f32, f32) {
    (
        (2.0f32 - 0.0) / (size[0] - 1) as f32,
        (1.0f32 - 0.0) / (size[1] - 1) as f32,
    )
}

/// The update: `b` is 2500 at `(S0/4, S1/4)`, -2500 at `(3 S0/4, 3 S1/4)`
/// (integer division, global indices) and 0 elsewhere; then
/// `((dy² (u[i-1] + u[i+1]) + dx² (u[j-1] + u[j+1])) - (b dx²) dy²) / (2 (dx² + dy²))`.
pub fn update(size: &[usize]) -> E {
    let (dx, dy) = spacing(size);
    let (dx2, dy2) = (dx * dx, dy * dy);
    let at = |i: usize, j: usize| g(0).eq_to(i as f64).and(g(1).eq_to(j as f64));
    let (s0, s1) = (size[0], size[1]);
    let b = select(
        at(s0 / 4, s1 / 4),
        2500.0,
        select(at(3 * s0 / 4, 3 * s1 / 4), -2500.0, 0.0),
    );
    let (dx2, dy2) = (num(f64::from(dx2)), num(f64::from(dy2)));
    let sum = (dy2 * (u(&[-1, 0]) + u(&[1, 0]))) + (dx2 * (u(&[0, -1]) + u(&[0, 1])));
    (sum - ((b * dx2) * dy2)) / (2.0 * (dx2 + dy2))
}

/// The update as an expression spec (device code, and the definition the
/// CPU row kernel keeps).
pub fn spec(size: &[usize]) -> ExprSpec {
    ExprSpec::from_rust("poisson", vec![1; 2], vec![1; 2], update(size))
        .expect("the update reads the 4-point star, inside a boundary of 1")
}

/// The stencil for a grid of `size` (boundary included): [`update`] on
/// devices, and on the CPU as one pass per row ([`PoissonRows`]).
pub fn stencil(size: &[usize]) -> Stencil<f32> {
    let (dx, dy) = spacing(size);
    let (s0, s1) = (size[0] as i64, size[1] as i64);
    let rows = PoissonRows {
        dx2: dx * dx,
        dy2: dy * dy,
        sources: [
            (s0 / 4, s1 / 4, 2500.0),
            ((3 * s0) / 4, (3 * s1) / 4, -2500.0),
        ],
    };
    crate::row_kernel::stencil(&spec(size), rows)
}

/// [`update`] a row at a time: every cell with `b = 0`, then the source
/// cells the row holds again with their `b`.
struct PoissonRows {
    dx2: f32,
    dy2: f32,
    /// Each source's global index and `b`, the first one winning where
    /// both are the same cell (as the nested selects).
    sources: [(i64, i64, f32); 2],
}

impl PoissonRows {
    /// One cell of [`update`], in its order.
    #[inline(always)]
    fn cell(&self, [im, ip, jm, jp]: [f32; 4], b: f32) -> f32 {
        let (dx2, dy2) = (self.dx2, self.dy2);
        let sum = (dy2 * (im + ip)) + (dx2 * (jm + jp));
        (sum - ((b * dx2) * dy2)) / (2.0 * (dx2 + dy2))
    }
}

impl Rows for PoissonRows {
    fn row(&self, frame: &Frame, src: &[f32], s: usize, g: &[i64], out: &mut [f32]) {
        let n = out.len();
        let p = frame.strides()[0] as isize;
        let nb = [-p, p, -1, 1].map(|o| at(src, s, o, n));
        row(self, out, nb);
        for (k, &(s0, s1, b)) in self.sources.iter().enumerate() {
            let first = self.sources[..k]
                .iter()
                .any(|&(a, c, _)| (a, c) == (s0, s1));
            let j = s1 - g[1];
            if g[0] == s0 && (0..n as i64).contains(&j) && !first {
                let j = j as usize;
                out[j] = self.cell(nb.map(|r| r[j]), b);
            }
        }
    }
}

/// One row of [`update`] with `b = 0`: `nb` the rows at i-1, i+1, j-1, j+1.
#[inline(never)]
fn row(p: &PoissonRows, out: &mut [f32], nb: [&[f32]; 4]) {
    let n = out.len();
    let [im, ip, jm, jp] = nb.map(|r| &r[..n]);
    for j in 0..n {
        out[j] = p.cell([im[j], ip[j], jm[j], jp[j]], 0.0);
    }
}

/// The initial value at global `(i, j)`, as the original's boundary loops
/// leave it (columns first, then rows): the last row `j / (S1 - 1)`, the
/// first row 0, the last column `i / (S0 - 1)`, the first column and the
/// interior 0. (The original wrote tile-local indices; a one-process run's
/// values, the global index, are the intended ones.)
pub fn init(size: &[usize]) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    let (s0, s1) = (size[0] as i64, size[1] as i64);
    move |x: &[i64]| {
        let (i, j) = (x[0], x[1]);
        if i == s0 - 1 {
            j as f32 / (s1 - 1) as f32
        } else if i == 0 {
            0.0
        } else if j == s1 - 1 {
            i as f32 / (s0 - 1) as f32
        } else {
            0.0
        }
    }
}

/// `epsilod run poisson --size IxJ`.
pub struct Poisson;

impl App for Poisson {
    fn name(&self) -> &'static str {
        "poisson"
    }
    fn about(&self) -> &'static str {
        "2-d  Jacobi for the Poisson equation with two point sources (EPSILOD's); f32"
    }
    fn ndims(&self) -> usize {
        2
    }
    fn run(
        &self,
        size: &[usize],
        _params: &crate::Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, crate::AppError> {
        let skeleton = Skeleton::new(size, stencil(size)).init(init(size));
        crate::run_to_output(skeleton, options, cluster, None)
    }
}

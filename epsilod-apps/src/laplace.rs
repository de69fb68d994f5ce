//! EPSILOD's laplace (apps.md §1.3): 3-d Jacobi for ∇²u = 0 with
//! anisotropic spacing, in Devito's order. The kernel is written once, in
//! Rust ([`epsilod::expr`]), and runs with the same bits on CPU,
//! OpenCL and CUDA devices.

use crate::row_kernel::{at, Rows};
use crate::{App, AppOutcome};
use epsilod::expr::{num, u, E};
use epsilod::{Cluster, ExprSpec, Frame, RunOptions, Skeleton, Stencil};

/// The coefficients, computed in f32 as EPSILOD computes them from the
/// global size (boundary included): `h = 1/(S-1)` per dimension,
/// `r1..r3 = h²`, `r0 = 1 / ((r1 r2 + r1 r3) + r2 r3)`.
pub fn coefficients(size: &[usize]) -> [f32; 4] {
    let h = |d: usize| 1.0f32 / (size[d] - 1) as f32;
    let (r1, r2, r3) = (h(0) * h(0), h(1) * h(1), h(2) * h(2));
    let r0 = 1.0f32 / (((r1 * r2) + (r1 * r3)) + (r2 * r3));
    [r0, r1, r2, r3]
}

/// The update, in laplace_kernels.c's order: `(0.5 r0) * (r2 ((r3 u[i-1]) +
/// (r3 u[i+1])) + r1 ((((r2 u[k-1]) + (r2 u[k+1])) + (r3 u[j-1])) + (r3
/// u[j+1])))`.
pub fn update(size: &[usize]) -> E {
    let [r0, r1, r2, r3] = coefficients(size).map(|r| num(f64::from(r)));
    let i = (r3 * u(&[-1, 0, 0])) + (r3 * u(&[1, 0, 0]));
    let jk = (((r2 * u(&[0, 0, -1])) + (r2 * u(&[0, 0, 1]))) + (r3 * u(&[0, -1, 0])))
        + (r3 * u(&[0, 1, 0]));
    (0.5 * r0) * ((r2 * i) + (r1 * jk))
}

/// The update as an expression spec (device code, and the definition the
/// CPU row kernel keeps).
pub fn spec(size: &[usize]) -> ExprSpec {
    ExprSpec::from_rust("laplace", vec![1; 3], vec![1; 3], update(size))
        .expect("the update reads the 6-point star, inside a boundary of 1")
}

/// The stencil for a grid of `size`: [`update`] on devices, and on the
/// CPU as one pass per row ([`row`]).
pub fn stencil(size: &[usize]) -> Stencil<f32> {
    crate::row_kernel::stencil(&spec(size), LaplaceRows(coefficients(size)))
}

/// [`update`] a row at a time.
struct LaplaceRows([f32; 4]);

impl Rows for LaplaceRows {
    const GLOBAL: bool = false;

    fn row(&self, frame: &Frame, src: &[f32], s: usize, _g: &[i64], out: &mut [f32]) {
        let n = out.len();
        let (p, q) = (frame.strides()[0] as isize, frame.strides()[1] as isize);
        let nb = [-p, p, -1, 1, -q, q].map(|o| at(src, s, o, n));
        row(out, nb, self.0);
    }
}

/// One row of [`update`]: `nb` the rows at i-1, i+1, k-1, k+1, j-1, j+1,
/// each cell's operations in the expression's order, in AVX2's vectors
/// where the CPU has them.
fn row(out: &mut [f32], nb: [&[f32]; 6], [r0, r1, r2, r3]: [f32; 4]) {
    let h = 0.5 * r0;
    epsilod::neighbour_row(out, nb, |[im, ip, km, kp, jm, jp]| {
        let i = (r3 * im) + (r3 * ip);
        let jk = (((r2 * km) + (r2 * kp)) + (r3 * jm)) + (r3 * jp);
        h * ((r2 * i) + (r1 * jk))
    });
}

/// The initial value at global `(i, j, k)`: the j and k faces get 3, 4, 5,
/// 6 (j first), everything else 0; the i faces get nothing special (the
/// original "imitates Devito" there).
pub fn init(size: &[usize]) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    let (s1, s2) = (size[1] as i64, size[2] as i64);
    move |g: &[i64]| {
        if g[1] == 0 {
            3.0
        } else if g[1] == s1 - 1 {
            4.0
        } else if g[2] == 0 {
            5.0
        } else if g[2] == s2 - 1 {
            6.0
        } else {
            0.0
        }
    }
}

/// `epsilod run laplace --size IxJxK`.
pub struct Laplace;

impl App for Laplace {
    fn name(&self) -> &'static str {
        "laplace"
    }
    fn about(&self) -> &'static str {
        "3-d  Jacobi for the Laplace equation, anisotropic spacing (EPSILOD's); f32"
    }
    fn ndims(&self) -> usize {
        3
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

//! EPSILOD's wavesim (apps.md §1.1, translated from Celerity): the 2-d wave
//! equation with three time levels in two buffers. The update reads the
//! level before the current one (`old2`: the value the destination still
//! holds), clamps the Laplacian at the domain's edge by the global index,
//! and is one Rust expression for every device. Unlike EPSILOD, load
//! balancing moves both levels, so a rebalanced run keeps its bits.

use crate::row_kernel::{at, Rows};
use crate::{App, AppError, AppOutcome, ParamError};
use epsilod::expr::{g, num, old2, select, u, E};
use epsilod::{Cluster, ExprSpec, Frame, RunOptions, Shape, Skeleton, Stencil};

/// Celerity's and EPSILOD's default time step.
pub const DT: f32 = 0.25;

/// EPSILOD's iteration count for the simulated time `t` (read with `atoi`:
/// an int) at the time step `dt`: `(int)((float)T / dt)`, the int made a
/// float, divided in float and truncated toward zero (T=100, dt=0.25:
/// 400). `None` where the C is undefined or the count negative: a quotient
/// that is not finite or truncates outside 0 to `i32::MAX`.
pub fn iterations(t: i32, dt: f32) -> Option<u64> {
    let q = (t as f32 / dt).trunc();
    // 2^31 is the first float past int's range.
    (q.is_finite() && (0.0..2_147_483_648.0).contains(&q)).then_some(q as u64)
}

/// The wave's parameters for a global array of `size` (user domain + 2):
/// centre `(sx/4, sy/4)`, sigma `(sx/8, sy/8)` (x along dimension 1, each
/// computed in f32), amplitude 1, `dx = dy = 1`.
struct Wave {
    sy: i64,
    sx: i64,
    centre: (f32, f32),
    sigma: (f32, f32),
}

impl Wave {
    fn new(size: &[usize]) -> Wave {
        let (sy, sx) = (size[0] - 2, size[1] - 2);
        Wave {
            sy: sy as i64,
            sx: sx as i64,
            centre: (sx as f32 / 4.0, sy as f32 / 4.0),
            sigma: (sx as f32 / 8.0, sy as f32 / 8.0),
        }
    }

    /// The initial wave at global `(g0, g1)`, every cell (boundary too).
    fn u0(&self, g: &[i64]) -> f32 {
        let (y, x) = (g[0] - 1, g[1] - 1);
        let dx = x as f32 - self.centre.0;
        let dy = y as f32 - self.centre.1;
        let (s_x, s_y) = self.sigma;
        // `exp` of a run-time value: glibc's expf, as EPSILOD's host would.
        1.0f32 * (-((dx * dx) / ((2.0 * s_x) * s_x) + (dy * dy) / ((2.0 * s_y) * s_y))).exp()
    }

    /// The clamped Laplacian of `f` at global `(g0, g1)`, as
    /// wavesim_kernels.c computes it in f32.
    fn lap(&self, f: &dyn Fn(i64, i64) -> f32, g0: i64, g1: i64, dt: f32) -> f32 {
        let (y, x) = (g0 - 1, g1 - 1);
        let c = f(g0, g1);
        let up = if y < self.sy - 1 { f(g0 + 1, g1) } else { c };
        let um = if y > 0 { f(g0 - 1, g1) } else { c };
        let rp = if x < self.sx - 1 { f(g0, g1 + 1) } else { c };
        let rm = if x > 0 { f(g0, g1 - 1) } else { c };
        let k = (dt / 1.0) * (dt / 1.0);
        k * ((up - c) - (c - um)) + k * ((rp - c) - (c - rm))
    }
}

/// The update `((2 c) - old2) + lap`, with the Laplacian clamped at the
/// edge of the user domain (the missing neighbour is the centre).
pub fn update(size: &[usize], dt: f32) -> E {
    let w = Wave::new(size);
    let c = u(&[0, 0]);
    let up = select(g(0).lt((w.sy) as f64), u(&[1, 0]), c);
    let um = select(g(0).gt(1.0), u(&[-1, 0]), c);
    let rp = select(g(1).lt((w.sx) as f64), u(&[0, 1]), c);
    let rm = select(g(1).gt(1.0), u(&[0, -1]), c);
    let k = num(f64::from((dt / 1.0) * (dt / 1.0)));
    let lap = (k * ((up - c) - (c - um))) + (k * ((rp - c) - (c - rm)));
    ((2.0 * c) - old2()) + lap
}

/// The update as an expression spec (device code, and the definition the
/// CPU row kernel keeps).
pub fn spec(size: &[usize], dt: f32) -> ExprSpec {
    ExprSpec::from_rust("wavesim", vec![1; 2], vec![1; 2], update(size, dt))
        .expect("the update reads the 4-point star, inside a boundary of 1")
}

/// The stencil for a global array of `size` with time step `dt`:
/// [`update`] on devices, and on the CPU as one pass per row
/// ([`WaveRows`]).
pub fn stencil(size: &[usize], dt: f32) -> Stencil<f32> {
    let w = Wave::new(size);
    let rows = WaveRows {
        sy: w.sy,
        sx: w.sx,
        k: (dt / 1.0) * (dt / 1.0),
    };
    crate::row_kernel::stencil(&spec(size, dt), rows)
}

/// [`update`] a row at a time: the clamp of dimension 0 picks the rows,
/// and the cells between the clamped ones of dimension 1 run as one loop.
struct WaveRows {
    sy: i64,
    sx: i64,
    k: f32,
}

/// One cell of [`update`] (`c`, the neighbours up, down, right, left as
/// clamped, and the level before), in its order.
#[inline(always)]
fn cell(k: f32, c: f32, [up, um, rp, rm]: [f32; 4], old: f32) -> f32 {
    let lap = (k * ((up - c) - (c - um))) + (k * ((rp - c) - (c - rm)));
    ((2.0 * c) - old) + lap
}

impl Rows for WaveRows {
    fn row(&self, frame: &Frame, src: &[f32], s: usize, g: &[i64], out: &mut [f32]) {
        let n = out.len();
        let p = frame.strides()[0] as isize;
        let c = at(src, s, 0, n);
        // A clamped neighbour is the centre itself.
        let up = if g[0] < self.sy { at(src, s, p, n) } else { c };
        let um = if g[0] > 1 { at(src, s, -p, n) } else { c };
        let (rp, rm) = (at(src, s, 1, n), at(src, s, -1, n));
        // Cells `lo..hi` clamp neither side of dimension 1.
        let lo = (2 - g[1]).clamp(0, n as i64) as usize;
        let hi = (self.sx - g[1]).clamp(lo as i64, n as i64) as usize;
        for j in (0..lo).chain(hi..n) {
            let g1 = g[1] + j as i64;
            let r = if g1 < self.sx { rp[j] } else { c[j] };
            let l = if g1 > 1 { rm[j] } else { c[j] };
            out[j] = cell(self.k, c[j], [up[j], um[j], r, l], out[j]);
        }
        row(
            self.k,
            &mut out[lo..hi],
            [
                &c[lo..hi],
                &up[lo..hi],
                &um[lo..hi],
                &rp[lo..hi],
                &rm[lo..hi],
            ],
        );
    }
}

/// [`cell`] over a row none of whose cells clamps in dimension 1: `nb` the
/// rows of the centre, up, down, right and left.
#[inline(never)]
fn row(k: f32, out: &mut [f32], nb: [&[f32]; 5]) {
    let n = out.len();
    let [c, up, um, rp, rm] = nb.map(|r| &r[..n]);
    for j in 0..n {
        out[j] = cell(k, c[j], [up[j], um[j], rp[j], rm[j]], out[j]);
    }
}

/// The first level, on every cell.
pub fn init(size: &[usize]) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    let w = Wave::new(size);
    move |g| w.u0(g)
}

/// The level before the first, on interior cells: `u0 + 0.5 lap(u0)`,
/// with the double literal of the original (added in f64, rounded once).
pub fn init_previous(size: &[usize], dt: f32) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    let w = Wave::new(size);
    move |g| {
        let u0 = |a: i64, b: i64| w.u0(&[a, b]);
        let lap = w.lap(&u0, g[0], g[1], dt);
        (f64::from(u0(g[0], g[1])) + 0.5 * f64::from(lap)) as f32
    }
}

/// The user domain (the array without its 1-cell boundary), which is the
/// output.
pub fn user_domain(size: &[usize]) -> Shape {
    Shape::from_ranges(&[(1, size[0] as i64 - 1), (1, size[1] as i64 - 1)])
}

/// `T` where given, and the iterations it gives at the run's `dt`; an
/// error naming `T` where it is no int or gives no count of iterations.
fn iterations_of_t(params: &crate::Params) -> Result<Option<(i32, u64)>, ParamError> {
    let dt = params.get_f32("dt")?.unwrap_or(DT);
    let Some(t) = params.given("T")? else {
        return Ok(None);
    };
    if t.fract() != 0.0 || !(0.0..=f64::from(i32::MAX)).contains(&t) {
        return Err(ParamError::OutOfRange {
            name: "T",
            value: crate::shown(t),
            want: "T is a whole number from 0 to 2147483647 (EPSILOD reads an int)",
        });
    }
    let t = t as i32;
    let n = iterations(t, dt).ok_or_else(|| ParamError::OutOfRange {
        name: "T",
        value: t.to_string(),
        want: "(int)((float)T/dt), the iterations EPSILOD runs, must be a whole number from 0 to 2147483647: give a dt above 0 that makes it one",
    })?;
    Ok(Some((t, n)))
}

/// `epsilod run wavesim --size (rows+2)x(cols+2)`, time step [`DT`].
pub struct WaveSim;

impl App for WaveSim {
    fn name(&self) -> &'static str {
        "wavesim"
    }
    fn about(&self) -> &'static str {
        "2-d  wave equation, three time levels in two buffers (EPSILOD's); --size is the user domain + 2; EPSILOD's T runs (int)((float)T/dt) iterations"
    }
    fn ndims(&self) -> usize {
        2
    }
    fn params(&self) -> &'static [crate::Param] {
        &[
            crate::Param {
                name: "dt",
                default: Some(DT as f64),
                about: "time step, in f32",
            },
            crate::Param {
                name: "T",
                default: None,
                about: "EPSILOD's simulated time, a whole number: --iters must be (int)((float)T/dt), its iteration count (T=100 at dt=0.25: --iters 400)",
            },
        ]
    }
    fn check_params(&self, params: &crate::Params) -> Result<(), ParamError> {
        iterations_of_t(params).map(|_| ())
    }
    fn run(
        &self,
        size: &[usize],
        params: &crate::Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, AppError> {
        // As the original reads it: decimal to double, then to float.
        let dt = params.get_f32("dt")?.unwrap_or(DT);
        if let Some((t, want)) = iterations_of_t(params)? {
            if want != options.iters {
                return Err(AppError::Iterations {
                    t,
                    dt,
                    want,
                    iters: options.iters,
                });
            }
        }
        let skeleton = Skeleton::new(size, stencil(size, dt))
            .init(init(size))
            .init_previous(init_previous(size, dt));
        crate::run_to_output(skeleton, options, cluster, Some(user_domain(size)))
    }
}

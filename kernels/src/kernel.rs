//! The `Kernel` trait: one stencil update over a region of a buffer.

use crate::error::KernelError;
use crate::frame::Frame;
use hitmap::Footprint;
use std::ops::Range;
use std::sync::Arc;

/// A read-only field a kernel reads beside the grid, one value per cell of
/// the global domain as a function of the cell's global index. Devices
/// compute it where they hold cells (halos included), so it needs no
/// messages, and a rebalance computes the rows a device gains.
pub type AuxField<T> = Arc<dyn Fn(&[i64]) -> T + Send + Sync>;

/// Computes new cells of a region from the old buffer.
///
/// `apply` writes every cell of `region` (local indices of `frame`) into
/// `dst_slab`, the part of the destination buffer that starts at dimension-0
/// index `region[0].start` and spans `region[0].len()` planes; it reads `src`,
/// the whole source buffer. Callers check the launch with [`check_launch`]
/// first, and may split a region along dimension 0 to run the pieces in
/// parallel.
pub trait Kernel<T>: Send + Sync {
    fn name(&self) -> &str;
    /// The offsets read (drives halo plans and the launch check).
    fn footprint(&self) -> &Footprint;
    fn apply(&self, src: &[T], dst_slab: &mut [T], frame: &Frame, region: &[Range<usize>]);
    /// The kernel as device code, for device backends; `None` for kernels
    /// that exist only in Rust.
    fn device_kernel(&self) -> Option<crate::DeviceKernel> {
        None
    }
    /// Whether the update also reads the level before the current one: the
    /// value `dst_slab` holds at its own cell before it is written (the
    /// buffers swap each step, so that is level t-1). The skeleton then
    /// keeps both buffers' rows when it rebalances.
    fn reads_previous(&self) -> bool {
        false
    }
    /// The auxiliary fields the kernel reads, in the order
    /// [`Kernel::apply_aux`] takes their buffers (device code: `aux0`,
    /// `aux1`, ...).
    fn aux_fields(&self) -> &[AuxField<T>] {
        &[]
    }
    /// As [`Kernel::apply`], with the auxiliary fields' buffers (one per
    /// [`Kernel::aux_fields`], each with `src`'s geometry). Controllers
    /// call this one.
    fn apply_aux(
        &self,
        src: &[T],
        aux: &[&[T]],
        dst_slab: &mut [T],
        frame: &Frame,
        region: &[Range<usize>],
    ) {
        let _ = aux;
        self.apply(src, dst_slab, frame, region)
    }
}

/// Errors unless `region` and every cell the kernel reads from it lie inside
/// a buffer of `frame`'s geometry.
pub fn check_launch<T>(
    kernel: &dyn Kernel<T>,
    frame: &Frame,
    region: &[Range<usize>],
) -> Result<(), KernelError> {
    let fp = kernel.footprint();
    if fp.ndims() != frame.ndims() || region.len() != frame.ndims() {
        return Err(KernelError::Rank {
            kernel: kernel.name().to_string(),
            kernel_dims: fp.ndims(),
            grid_dims: frame.ndims(),
        });
    }
    if region.iter().any(|r| r.is_empty()) {
        return Ok(());
    }
    let (low, high) = (fp.low(), fp.high());
    let fits = (0..frame.ndims())
        .all(|d| region[d].start >= low[d] && region[d].end + high[d] <= frame.dims()[d]);
    if fits {
        Ok(())
    } else {
        Err(KernelError::OutOfBuffer {
            region: region.to_vec(),
            dims: frame.dims().to_vec(),
        })
    }
}

/// Runs `f` on the `K` neighbours of every cell of `region`, `lin` their
/// linear offsets in the order `f` expects.
#[inline(always)]
pub(crate) fn sweep<T: Copy, const K: usize>(
    src: &[T],
    dst: &mut [T],
    frame: &Frame,
    region: &[Range<usize>],
    lin: [isize; K],
    f: impl Fn([T; K]) -> T + Copy,
) {
    crate::frame::for_each_row(frame, region, |s, d, len| {
        let mut nb: [&[T]; K] = [&[]; K];
        for k in 0..K {
            let start = (s as isize + lin[k]) as usize;
            nb[k] = &src[start..start + len];
        }
        row(&mut dst[d..d + len], nb, f);
    });
}

/// One row: `out[j] = f(the K neighbours' j-th cells)`, the neighbours `K`
/// slices at least the row's length, so the loop has no index arithmetic;
/// compiled for AVX2 where the CPU has it (the same bits: no fused
/// multiply-add). `out` is a separate argument on purpose: as a function
/// argument it is known not to alias the neighbour slices, which is what
/// lets the compiler vectorise (measured: 3x slower when this loop sat
/// inside the row-walking closure). Hand-written row kernels (the apps')
/// use it for the vector width.
#[inline(never)]
pub fn row<T: Copy, const K: usize>(out: &mut [T], nb: [&[T]; K], f: impl Fn([T; K]) -> T) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: `row_avx2` only requires AVX2, which the CPU was just found to have.
        return unsafe { row_avx2(out, nb, f) };
    }
    row_body(out, nb, f)
}

/// The same loop compiled for AVX2 (8 lanes instead of SSE2's 4): measured
/// 0.82 -> 0.88 of the copy roofline on 2d4. AVX2 brings no fused
/// multiply-add (that is the separate FMA feature), so results are unchanged.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn row_avx2<T: Copy, const K: usize>(out: &mut [T], nb: [&[T]; K], f: impl Fn([T; K]) -> T) {
    row_body(out, nb, f)
}

#[inline(always)]
fn row_body<T: Copy, const K: usize>(out: &mut [T], nb: [&[T]; K], f: impl Fn([T; K]) -> T) {
    let len = out.len();
    // Plain loops rather than `array::map`/`from_fn`: with K = 27 those stop
    // being inlined, and a call per cell made 3d27 8x slower (measured).
    let mut rows = nb;
    for r in rows.iter_mut() {
        *r = &r[..len];
    }
    for (j, o) in out.iter_mut().enumerate() {
        *o = f(gather(&rows, j));
    }
}

#[inline(always)]
fn gather<T: Copy, const K: usize>(rows: &[&[T]; K], j: usize) -> [T; K] {
    let mut x = [rows[0][j]; K];
    for k in 1..K {
        x[k] = rows[k][j];
    }
    x
}

/// Checks and runs `kernel` over `region` on one thread; its auxiliary
/// fields, if any, computed over the whole frame first (global indices
/// from the frame's origin).
pub fn launch_serial<T>(
    kernel: &dyn Kernel<T>,
    src: &[T],
    dst: &mut [T],
    frame: &Frame,
    region: &[Range<usize>],
) -> Result<(), KernelError> {
    check_launch(kernel, frame, region)?;
    if region.iter().any(|r| r.is_empty()) {
        return Ok(());
    }
    let fields: Vec<Vec<T>> = kernel
        .aux_fields()
        .iter()
        .map(|f| {
            (0..frame.len())
                .map(|at| {
                    let g: Vec<i64> = frame
                        .index_of(at)
                        .iter()
                        .zip(frame.origin())
                        .map(|(&i, &o)| o + i as i64)
                        .collect();
                    f(&g)
                })
                .collect()
        })
        .collect();
    let aux: Vec<&[T]> = fields.iter().map(Vec::as_slice).collect();
    let p = frame.plane();
    kernel.apply_aux(
        src,
        &aux,
        &mut dst[region[0].start * p..region[0].end * p],
        frame,
        region,
    );
    Ok(())
}

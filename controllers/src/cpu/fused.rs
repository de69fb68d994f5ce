//! Temporal blocking on the CPU: several iterations in one pass over memory.
//!
//! One step of a stencil reads and writes every cell, so a loop of steps is
//! bound by memory bandwidth. Here a task walks its planes (indices of
//! dimension 0) as a wavefront: step 0 computes a few planes from the source
//! buffer, step 1 the planes behind them as soon as their neighbours exist,
//! and so on; each step's planes live in a small window that stays in cache
//! until the next step has read them, and only the last step writes the
//! destination. The source is read once and the destination written once,
//! whatever the number of steps.
//!
//! A task computes a cone: its final planes and, at each earlier step, as
//! many more planes each side as the later steps read. Neighbouring tasks
//! compute the planes their cones share twice, which is what lets them run
//! independently. Every cell is computed by the same kernel from the same
//! neighbour values as in a step-by-step run, so the bits are the same.
//!
//! On 2-d grids a task may also cut its columns into bands and run the
//! wavefront band by band, each step's columns a cone too: a band's rows are
//! short enough that the rows a row of the kernel reads stay in the
//! first-level cache, and more of them fit the windows.

use kernels::{Cell, Frame, Kernel};
use smallvec::SmallVec;
use std::ops::Range;

/// One fused launch, in local indices of the source allocation.
pub(super) struct Fused<'a, T> {
    pub kernel: &'a dyn Kernel<T>,
    pub src: &'a [T],
    /// The allocation's geometry (with its global origin).
    pub frame: &'a Frame,
    /// Each step's region, nested: every one within the one before.
    pub steps: &'a [Vec<Range<usize>>],
    /// Planes the kernel reads below and above a cell.
    pub reach: (usize, usize),
    /// Planes each step advances per wave: the windows hold a few more.
    pub wave: usize,
    /// Columns of the last region a band of a 2-d launch spans (the last
    /// band may be narrower); 0 for whole rows.
    pub band: usize,
    /// Columns the kernel reads left and right of a cell (2-d).
    pub cross: (usize, usize),
}

/// What each step of a task computes in one band: its planes (the task's
/// cone) and columns, and for each step but the last the columns the next
/// step reads (all of a row without bands).
struct Cut<'c> {
    planes: &'c [Range<usize>],
    cols: Ranges,
    span: Ranges,
}

/// One range per step (or per dimension), inline: a launch on a small
/// grid is a few microseconds, and allocations showed in its profile.
type Ranges = SmallVec<[Range<usize>; 8]>;

/// The cells of one step kept for the next: planes `base..` of the
/// allocation, in a buffer of whole planes.
struct Window<T> {
    data: Vec<T>,
    base: usize,
    /// The next plane to produce (planes `base..next` are ready).
    next: usize,
    /// `data` as a buffer of its own whose origin is plane `base`.
    frame: Frame,
}

impl<T> Window<T> {
    fn reframe(&mut self, outer: &Frame) {
        let plane = outer.plane();
        let mut dims: SmallVec<[usize; 4]> = SmallVec::from_slice(outer.dims());
        dims[0] = self.data.len() / plane;
        let mut origin: SmallVec<[i64; 4]> = SmallVec::from_slice(outer.origin());
        origin[0] += self.base as i64;
        self.frame = Frame::row_major(&dims).with_origin(&origin);
    }
}

impl<T: Cell> Fused<'_, T> {
    fn plane(&self) -> usize {
        self.frame.plane()
    }

    /// Planes of step `j` that the task ending at `planes` computes: its
    /// final planes widened by what the steps after `j` read, within the
    /// step's region.
    fn cone(&self, j: usize, planes: &Range<usize>) -> Range<usize> {
        let n = self.steps.len() - 1 - j;
        let region = &self.steps[j][0];
        let lo = planes
            .start
            .saturating_sub(n * self.reach.0)
            .max(region.start);
        let hi = (planes.end + n * self.reach.1).min(region.end);
        lo..hi.max(lo)
    }

    /// Computes the last step over `planes` (within the last region) into
    /// `out`, the destination's slab of those planes; `windows` is scratch
    /// kept between launches.
    pub fn run(&self, planes: Range<usize>, out: &mut [T], windows: &mut Vec<Vec<T>>) {
        let s = self.steps.len();
        let dims = self.frame.dims();
        let last = dims.len() - 1;
        let cols = self.steps[s - 1][last].clone();
        let cones: Ranges = (0..s).map(|j| self.cone(j, &planes)).collect();
        if dims.len() != 2 || self.band == 0 || cols.len() <= self.band {
            let cut = Cut {
                planes: &cones,
                cols: self.steps.iter().map(|r| r[last].clone()).collect(),
                span: (0..s - 1).map(|_| 0..dims[last]).collect(),
            };
            return self.sweep(planes, out, windows, &cut);
        }
        let (cl, ch) = self.cross;
        let mut start = cols.start;
        while start < cols.end {
            let end = (start + self.band).min(cols.end);
            let band: Ranges = (0..s)
                .map(|j| {
                    let (n, region) = (s - 1 - j, &self.steps[j][1]);
                    start.saturating_sub(n * cl).max(region.start)..(end + n * ch).min(region.end)
                })
                .collect();
            let span = (0..s - 1)
                .map(|j| band[j + 1].start.saturating_sub(cl)..(band[j + 1].end + ch).min(dims[1]))
                .collect();
            let cut = Cut {
                planes: &cones,
                cols: band,
                span,
            };
            self.sweep(planes.clone(), out, windows, &cut);
            start = end;
        }
    }

    /// [`Fused::run`] over the columns of one cut.
    fn sweep(&self, planes: Range<usize>, out: &mut [T], windows: &mut Vec<Vec<T>>, cut: &Cut) {
        let s = self.steps.len();
        let (rl, rh) = self.reach;
        let plane = self.plane();
        let depth = self.frame.dims()[0];
        let cones = cut.planes;
        // Planes of step j that step j + 1 reads.
        let reads: Ranges = (0..s - 1)
            .map(|j| cones[j + 1].start.saturating_sub(rl)..(cones[j + 1].end + rh).min(depth))
            .collect();
        let capacity = self.wave + rl + rh + 1;
        windows.resize_with(s - 1, Vec::new);
        let mut win: Vec<Window<T>> = windows
            .drain(..)
            .zip(&reads)
            .map(|(mut data, r)| {
                if data.len() < capacity * plane {
                    data.resize(capacity * plane, T::zeroed());
                }
                let mut w = Window {
                    data,
                    base: r.start,
                    next: r.start,
                    frame: self.frame.clone(),
                };
                w.reframe(self.frame);
                w
            })
            .collect();
        let mut region: Ranges = self.steps[0].iter().cloned().collect();
        let mut done = planes.start;
        let mut front = reads.first().map_or(planes.start, |r| r.start);
        while done < planes.end {
            front += self.wave;
            for j in 0..s - 1 {
                let target = front.saturating_sub(j * rh).min(reads[j].end);
                if target > win[j].next {
                    let keep = self.still_read(j + 1, &win, cones, done);
                    self.produce(j, target, keep, cut, &mut win, &mut region);
                }
            }
            let target = front.saturating_sub((s - 1) * rh).min(planes.end);
            if target > done {
                let w = &win[s - 2];
                let slab = &mut out[(done - planes.start) * plane..(target - planes.start) * plane];
                self.compute(s - 1, done..target, &cut.cols[s - 1], w, slab, &mut region);
                done = target;
            }
        }
        windows.extend(win.into_iter().map(|w| w.data));
    }

    /// The first plane of step `k - 1` that step `k` may still read: the
    /// step's next computed plane less the reach (none once it is done).
    fn still_read(
        &self,
        k: usize,
        win: &[Window<T>],
        cones: &[Range<usize>],
        done: usize,
    ) -> Option<usize> {
        let next = if k == self.steps.len() - 1 {
            done
        } else {
            win[k].next.max(cones[k].start)
        };
        (next < cones[k].end).then(|| next.saturating_sub(self.reach.0))
    }

    /// Fills window `j` up to plane `target`: planes in the step's cone are
    /// computed, the others (boundary planes) copied from the source.
    fn produce(
        &self,
        j: usize,
        target: usize,
        keep: Option<usize>,
        cut: &Cut,
        win: &mut [Window<T>],
        region: &mut [Range<usize>],
    ) {
        let plane = self.plane();
        let (cone, span) = (&cut.planes[j], &cut.span[j]);
        let whole = self.frame.ndims() != 2 || span.len() == plane;
        let w = &mut win[j];
        // Make room: drop the planes the next step no longer reads.
        if target - w.base > w.data.len() / plane {
            let from = keep.unwrap_or(w.next).clamp(w.base, w.next);
            if whole {
                w.data
                    .copy_within((from - w.base) * plane..(w.next - w.base) * plane, 0);
            } else {
                // A band's columns only: the rest of each row is not read.
                for (to, p) in (from..w.next).enumerate() {
                    let at = (p - w.base) * plane;
                    w.data
                        .copy_within(at + span.start..at + span.end, to * plane + span.start);
                }
            }
            w.base = from;
            if target - w.base > w.data.len() / plane {
                w.data.resize((target - w.base) * plane, T::zeroed());
            }
            w.reframe(self.frame);
        }
        let start = w.next;
        let inside = start.max(cone.start).min(target)..target.min(cone.end).max(start);
        let copy = |w: &mut Window<T>, r: Range<usize>| {
            if r.is_empty() {
                return;
            }
            if whole {
                w.data[(r.start - w.base) * plane..(r.end - w.base) * plane]
                    .copy_from_slice(&self.src[r.start * plane..r.end * plane]);
            } else {
                for p in r {
                    let (at, row) = ((p - w.base) * plane, p * plane);
                    w.data[at + span.start..at + span.end]
                        .copy_from_slice(&self.src[row + span.start..row + span.end]);
                }
            }
        };
        copy(&mut win[j], start..inside.start);
        if !inside.is_empty() {
            let (before, after) = win.split_at_mut(j);
            let w = &mut after[0];
            let slab = &mut w.data[(inside.start - w.base) * plane..(inside.end - w.base) * plane];
            let cols = &cut.cols[j];
            if j == 0 {
                self.compute_from_src(inside.clone(), cols, slab, region);
            } else {
                self.compute(j, inside.clone(), cols, &before[j - 1], slab, region);
            }
            self.copy_outside(j, inside.clone(), span, w);
        }
        let tail = inside.end.max(start)..target;
        copy(&mut win[j], tail);
        win[j].next = target;
    }

    /// Step 0 over `planes` (and `cols` of the last dimension), reading the
    /// source; `region` is scratch.
    fn compute_from_src(
        &self,
        planes: Range<usize>,
        cols: &Range<usize>,
        slab: &mut [T],
        region: &mut [Range<usize>],
    ) {
        region.clone_from_slice(&self.steps[0]);
        region[0] = planes;
        if region.len() == 2 {
            region[1] = cols.clone();
        }
        self.kernel.apply(self.src, slab, self.frame, region);
    }

    /// Step `j` (after the first) over `planes` (and `cols` of the last
    /// dimension), reading the window of the step before; `region` is
    /// scratch.
    fn compute(
        &self,
        j: usize,
        planes: Range<usize>,
        cols: &Range<usize>,
        input: &Window<T>,
        slab: &mut [T],
        region: &mut [Range<usize>],
    ) {
        region.clone_from_slice(&self.steps[j]);
        region[0] = planes.start - input.base..planes.end - input.base;
        if region.len() == 2 {
            region[1] = cols.clone();
        }
        self.kernel.apply(&input.data, slab, &input.frame, region);
    }

    /// The cells of `planes` outside step `j`'s region in the other
    /// dimensions (boundary cells the next step reads) from the source; on
    /// 2-d grids only those of `span`, the columns the next step reads.
    fn copy_outside(&self, j: usize, planes: Range<usize>, span: &Range<usize>, w: &mut Window<T>) {
        let dims = self.frame.dims();
        let nd = dims.len();
        if nd < 2 {
            return;
        }
        let strides = self.frame.strides();
        let region = &self.steps[j];
        let last = nd - 1;
        let width = dims[last];
        if nd == 2 {
            // A plane is one row: the cells before and after the region.
            for p in planes {
                let (row, at) = (p * strides[0], (p - w.base) * strides[0]);
                let before = span.start..region[1].start.max(span.start);
                let after = region[1].end.min(span.end)..span.end;
                for r in [before, after].into_iter().filter(|r| !r.is_empty()) {
                    copy_cells(
                        &mut w.data[at + r.start..at + r.end],
                        &self.src[row + r.start..row + r.end],
                    );
                }
            }
            return;
        }
        // An odometer over the dimensions between the first and the last.
        let mut idx = vec![0usize; nd];
        for p in planes {
            idx.iter_mut().for_each(|i| *i = 0);
            'rows: loop {
                let row = p * strides[0] + (1..last).map(|d| idx[d] * strides[d]).sum::<usize>();
                let at = row - w.base * strides[0];
                let runs = if (1..last).any(|d| !region[d].contains(&idx[d])) {
                    [0..width, 0..0]
                } else {
                    [0..region[last].start, region[last].end..width]
                };
                for r in runs.into_iter().filter(|r| !r.is_empty()) {
                    copy_cells(
                        &mut w.data[at + r.start..at + r.end],
                        &self.src[row + r.start..row + r.end],
                    );
                }
                let mut d = last;
                loop {
                    if d == 1 {
                        break 'rows;
                    }
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < dims[d] {
                        continue 'rows;
                    }
                    idx[d] = 0;
                }
            }
        }
    }
}

/// `dst.copy_from_slice(src)`, without a call into `memmove` for the one
/// or two boundary cells a row has each side: called twice per plane per
/// step, those calls were 6% of a fused launch on 2d4 130².
#[inline(always)]
fn copy_cells<T: Copy>(dst: &mut [T], src: &[T]) {
    match (dst, src) {
        ([], []) => {}
        ([d], [s]) => *d = *s,
        ([d0, d1], [s0, s1]) => (*d0, *d1) = (*s0, *s1),
        (d, s) => d.copy_from_slice(s),
    }
}

//! A runtime in host memory, so the GPU controller (plans, geometry,
//! bookkeeping) passes the conformance suite without a device, and the
//! `mock` backend ([`super::mock_register`]) runs whole skeletons: copies apply
//! each piece's spans, and "compiling" finds the Rust kernel whose generated
//! source is that text, which launches then run with `Kernel::apply` on the
//! region decoded back from the kernel arguments. Fused kernels run as
//! their device code does, tile by tile: each tile's cone through two
//! host arrays of the tile's extents, only the tile stored.

use super::copy_plan::CopyPiece;
use super::fused::{FusedLimits, MAX_OVERHEAD};
use super::geometry::{region_from_index_args, GroupHints};
use super::runtime::{Compiled, DeviceRuntime, Lane};
use crate::error::{BackendError, DeviceError};
use hitmap::Shape;
use kernels::device::abi::{ArgKind, LongArg, ARGS};
use kernels::device::{FusedArgs, FusedShape};
use kernels::{library_kernel, Cell, Dialect, Frame, Kernel, KernelChoice, Library, Real};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

type Mem<T> = Arc<Mutex<Vec<T>>>;

/// The Rust kernel of each device source the mock can "compile", shared
/// so a kernel can be taught through `&self` (the controller owns the
/// runtime).
type Known<T> = Arc<Mutex<HashMap<String, Arc<dyn Kernel<T>>>>>;

/// Host memory posing as a device that knows every kernel it was taught.
pub struct MockRuntime<T> {
    known: Known<T>,
    /// Pretend to be a GPU, so launches get the groups GPUs get, and
    /// copy within the device (a CPU-like one goes through the host).
    gpu: bool,
    /// Pieces copied within the device so far.
    pub copies_within: usize,
    /// The lane of every launch so far, in order.
    pub lanes: Vec<Lane>,
    /// Fused kernels compiled so far.
    pub fused_compiles: usize,
    /// Device memory: an allocation that would take the buffers alive
    /// beyond it fails, as on a full GPU (`None`: no limit).
    pub memory: Option<usize>,
    /// The most bytes alive at once so far.
    pub peak_bytes: usize,
    /// Every buffer allocated, to count those still alive.
    buffers: Vec<Weak<Mutex<Vec<T>>>>,
}

impl<T: Real> MockRuntime<T> {
    /// A mock that compiles the library's kernels, of both kinds.
    pub fn new(gpu: bool) -> MockRuntime<T> {
        let mock = MockRuntime::taught_nothing(gpu);
        for lib in Library::ALL {
            for choice in [KernelChoice::Specialized, KernelChoice::Generic] {
                mock.learn(&Arc::from(library_kernel::<T>(lib, choice)));
            }
        }
        mock
    }
}

impl<T: Cell> MockRuntime<T> {
    /// A mock that compiles only the kernels it is then taught
    /// ([`MockRuntime::learn`]): any cell type, not only reals.
    pub fn taught_nothing(gpu: bool) -> MockRuntime<T> {
        MockRuntime {
            known: Known::default(),
            gpu,
            copies_within: 0,
            lanes: Vec::new(),
            fused_compiles: 0,
            memory: None,
            peak_bytes: 0,
            buffers: Vec::new(),
        }
    }

    /// The same mock, also compiling `kernel`'s device code.
    pub fn knowing(self, kernel: Arc<dyn Kernel<T>>) -> MockRuntime<T> {
        self.learn(&kernel);
        self
    }

    /// Compiles `kernel`'s device code from now on, as whole cells: its
    /// launches run the Rust kernel, which reads cells whole.
    pub fn learn(&self, kernel: &Arc<dyn Kernel<T>>) {
        if let Some(device) = kernel.device_kernel() {
            lock(&self.known).insert(device.source(Self::DIALECT), kernel.clone());
        }
    }

    /// The bytes of the buffers alive now.
    pub fn live_bytes(&self) -> usize {
        self.buffers
            .iter()
            .filter_map(Weak::upgrade)
            .map(|b| lock(&b).len() * std::mem::size_of::<T>())
            .sum()
    }
}

/// A compiled kernel: the Rust kernel, and the shape of a fused one.
#[derive(Clone)]
pub struct MockKernel<T> {
    kernel: Arc<dyn Kernel<T>>,
    fused: Option<FusedShape>,
}

impl<T> MockKernel<T> {
    /// `kernel` compiled, fused to `fused` where given, with the group
    /// hints of a GPU.
    fn compiled(kernel: Arc<dyn Kernel<T>>, fused: Option<FusedShape>) -> Compiled<MockKernel<T>> {
        Compiled {
            kernel: MockKernel { kernel, fused },
            hints: GroupHints {
                multiple: 32,
                max: 1024,
            },
        }
    }
}

/// What a fused kernel of `shape` computes from `src` into `dst` (an
/// allocation of `cells` cells) for these arguments, tile by tile as the
/// device code does: load the tile's cone into two arrays, compute each
/// step's region within the cone from one into the other, store the tile.
fn run_fused<T: Cell>(
    kernel: &dyn Kernel<T>,
    shape: &FusedShape,
    args: &FusedArgs,
    src: &[T],
    dst: &mut [T],
) {
    let nd = shape.ndims();
    let k = shape.steps;
    let ext = shape.local_extents();
    let fin: &[Range<usize>] = &args.steps[k - 1];
    let tiles: Vec<usize> = (0..nd)
        .map(|d| fin[d].len().div_ceil(shape.tile[d]))
        .collect();
    let at = |x: &[i64]| -> usize {
        x.iter()
            .zip(&args.strides)
            .map(|(&i, &s)| i as usize * s)
            .sum()
    };
    let local = Frame::row_major(&ext);
    let plane = local.plane();
    let mut t = vec![0usize; nd];
    loop {
        let ob: Vec<i64> = (0..nd)
            .map(|d| (fin[d].start + t[d] * shape.tile[d]) as i64)
            .collect();
        let oe: Vec<i64> = (0..nd)
            .map(|d| (ob[d] + shape.tile[d] as i64).min(fin[d].end as i64))
            .collect();
        let la: Vec<i64> = (0..nd).map(|d| ob[d] - (k * shape.low[d]) as i64).collect();
        let origin: Vec<i64> = (0..nd).map(|d| args.origin[d] + la[d]).collect();
        let frame = local.clone().with_origin(&origin);
        // A box of allocation indices, as ranges of the arrays' indices.
        let boxed = |b: &[i64], e: &[i64]| -> Vec<Range<usize>> {
            (0..nd)
                .map(|d| {
                    let (lo, hi) = ((b[d] - la[d]) as usize, (e[d] - la[d]) as usize);
                    lo..hi.max(lo)
                })
                .collect()
        };
        let r0 = &args.steps[0];
        let lb: Vec<i64> = (0..nd)
            .map(|d| la[d].max(r0[d].start as i64 - shape.low[d] as i64))
            .collect();
        let le: Vec<i64> = (0..nd)
            .map(|d| (oe[d] + (k * shape.high[d]) as i64).min((r0[d].end + shape.high[d]) as i64))
            .collect();
        let mut a = vec![T::zeroed(); local.len()];
        Shape::from_ranges(
            &boxed(&lb, &le)
                .iter()
                .map(|r| (r.start as i64, r.end as i64))
                .collect::<Vec<_>>(),
        )
        .for_each_index(|i| {
            let g: Vec<i64> = (0..nd).map(|d| i[d] + la[d]).collect();
            a[local.linear(i) as usize] = src[at(&g)];
        });
        let mut b = a.clone();
        for (j, step) in args.steps.iter().enumerate() {
            let reach = (k - 1 - j) as i64;
            let sb: Vec<i64> = (0..nd)
                .map(|d| (step[d].start as i64).max(ob[d] - reach * shape.low[d] as i64))
                .collect();
            let se: Vec<i64> = (0..nd)
                .map(|d| (step[d].end as i64).min(oe[d] + reach * shape.high[d] as i64))
                .collect();
            let region = boxed(&sb, &se);
            let (from, to) = if j % 2 == 0 {
                (&a, &mut b)
            } else {
                (&b, &mut a)
            };
            if region.iter().all(|r| !r.is_empty()) {
                let slab = &mut to[region[0].start * plane..region[0].end * plane];
                kernel.apply(from, slab, &frame, &region);
            }
            if j == k - 1 {
                Shape::from_ranges(
                    &region
                        .iter()
                        .map(|r| (r.start as i64, r.end as i64))
                        .collect::<Vec<_>>(),
                )
                .for_each_index(|i| {
                    let g: Vec<i64> = (0..nd).map(|d| i[d] + la[d]).collect();
                    dst[at(&g)] = to[local.linear(i) as usize];
                });
            }
        }
        // The next tile, the last dimension fastest.
        let mut d = nd;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            t[d] += 1;
            if t[d] < tiles[d] {
                break;
            }
            t[d] = 0;
        }
    }
}

/// The global index of a launch's first cell, from its kernel arguments
/// (what [`region_from_index_args`] leaves out).
fn origin_from_index_args(index_args: &[i64], nd: usize) -> Vec<i64> {
    let mut origin = [0i64; 4];
    let kinds = ARGS.iter().filter_map(|(_, k)| match k {
        ArgKind::Long(l) => Some(*l),
        ArgKind::Buffer(_) => None,
    });
    for (kind, &v) in kinds.zip(index_args) {
        if let LongArg::Origin(d) = kind {
            origin[d] = v;
        }
    }
    origin[4 - nd..].to_vec()
}

fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: Cell> DeviceRuntime for MockRuntime<T> {
    type Buffer = Mem<T>;
    type Kernel = MockKernel<T>;
    type Timing = f64;
    const API: &'static str = "mock";
    const DIALECT: Dialect = Dialect::OpenCl;

    fn describe(&self) -> String {
        "mock".into()
    }

    fn is_gpu(&self) -> bool {
        self.gpu
    }

    fn alloc(&mut self, bytes: usize) -> Result<Mem<T>, DeviceError> {
        let cells = bytes / std::mem::size_of::<T>();
        // Memory is only ever taken here, so the peak is reached at an
        // allocation.
        self.buffers.retain(|b| b.strong_count() > 0);
        let live = self.live_bytes() + cells * std::mem::size_of::<T>();
        if self.memory.is_some_and(|m| live > m) {
            return Err(BackendError::OutOfMemory { bytes, live }.into());
        }
        self.peak_bytes = self.peak_bytes.max(live);
        let buf = Arc::new(Mutex::new(vec![T::zeroed(); cells]));
        self.buffers.push(Arc::downgrade(&buf));
        Ok(buf)
    }

    fn write(&mut self, buf: &Mem<T>, piece: &CopyPiece, host: &[u8]) -> Result<(), DeviceError> {
        let mut mem = lock(buf);
        let dev = bytemuck::cast_slice_mut::<T, u8>(&mut mem);
        for (d, h, n) in piece.spans() {
            dev[d..d + n].copy_from_slice(&host[h..h + n]);
        }
        Ok(())
    }

    fn read(
        &mut self,
        buf: &Mem<T>,
        piece: &CopyPiece,
        host: &mut [u8],
    ) -> Result<(), DeviceError> {
        let mem = lock(buf);
        let dev = bytemuck::cast_slice::<T, u8>(&mem);
        for (d, h, n) in piece.spans() {
            host[h..h + n].copy_from_slice(&dev[d..d + n]);
        }
        Ok(())
    }

    fn copy_within(
        &mut self,
        from: &Mem<T>,
        from_piece: &CopyPiece,
        to: &Mem<T>,
        to_piece: &CopyPiece,
    ) -> Result<bool, DeviceError> {
        if !self.gpu || from_piece.bytes() != to_piece.bytes() {
            return Ok(false);
        }
        let mut staged = vec![0u8; from_piece.bytes()];
        self.read(from, from_piece, &mut staged)?;
        self.write(to, to_piece, &staged)?;
        self.copies_within += 1;
        Ok(true)
    }

    fn compiles_any(&self) -> bool {
        false
    }

    fn peer_domain(&self) -> Option<u64> {
        // Host memory: any mock that copies within the device can copy
        // another's buffers.
        self.gpu.then_some(0)
    }

    fn compile(&mut self, source: &str) -> Result<Compiled<Self::Kernel>, DeviceError> {
        let kernel = lock(&self.known)
            .get(source)
            .cloned()
            .ok_or(BackendError::NotLibraryKernel)?;
        Ok(MockKernel::compiled(kernel, None))
    }

    fn fused_limits(&self) -> Option<FusedLimits> {
        Some(FusedLimits {
            local_bytes: 48 << 10,
            max_group: 1024,
            gpu: self.gpu,
            max_overhead: MAX_OVERHEAD,
        })
    }

    fn compile_fused(
        &mut self,
        source: &str,
        index_arg_count: usize,
    ) -> Result<Compiled<Self::Kernel>, DeviceError> {
        self.fused_compiles += 1;
        let shape = FusedShape::from_source(source).ok_or(BackendError::NotFusedKernel)?;
        let kernel = lock(&self.known)
            .values()
            .find(|k| {
                k.device_kernel()
                    .and_then(|d| d.fused_source(Self::DIALECT, &shape))
                    .is_some_and(|s| s == source)
            })
            .cloned()
            .ok_or(BackendError::NotLibraryKernelFused)?;
        assert_eq!(
            index_arg_count,
            FusedArgs::arg_count(shape.ndims(), shape.steps)
        );
        Ok(MockKernel::compiled(kernel, Some(shape)))
    }

    unsafe fn launch_fused(
        &mut self,
        lane: Lane,
        kernel: &Self::Kernel,
        src: &Mem<T>,
        dst: &Mem<T>,
        index_args: &[i64],
        groups: [usize; 3],
        group: usize,
    ) -> Result<f64, DeviceError> {
        self.lanes.push(lane);
        let started = Instant::now();
        let shape = kernel.fused.as_ref().expect("a fused kernel");
        assert_eq!(group, shape.group_size(), "the group it was generated for");
        let args = FusedArgs::from_index_args(index_args, shape.ndims()).expect("fused arguments");
        assert_eq!(args.steps.len(), shape.steps);
        let last: Vec<usize> = args.steps[shape.steps - 1]
            .iter()
            .map(|r| r.len())
            .collect();
        assert_eq!(groups, shape.groups(&last), "a group per tile");
        let (s, mut d) = (lock(src), lock(dst));
        run_fused(kernel.kernel.as_ref(), shape, &args, &s, &mut d);
        Ok(started.elapsed().as_secs_f64().max(1e-9))
    }

    unsafe fn launch(
        &mut self,
        lane: Lane,
        kernel: &Self::Kernel,
        src: &Mem<T>,
        dst: &Mem<T>,
        index_args: &[i64],
        aux: &[&Mem<T>],
        grid: [usize; 3],
        group: Option<[usize; 3]>,
    ) -> Result<f64, DeviceError> {
        if let Some(g) = group {
            assert!(
                grid.iter().zip(g).all(|(n, g)| g > 0 && n % g == 0),
                "groups {g:?} do not tile the grid {grid:?}"
            );
        }
        self.lanes.push(lane);
        let started = Instant::now();
        let (s, mut d) = (lock(src), lock(dst));
        let kernel = &kernel.kernel;
        let nd = kernel.footprint().ndims();
        let (ext, local) = region_from_index_args(index_args, nd, s.len());
        // Kernels that read the global index need the allocation's.
        let region_origin = origin_from_index_args(index_args, nd);
        let origin: Vec<i64> = (0..nd)
            .map(|d| region_origin[d] - local[d].start as i64)
            .collect();
        let frame = Frame::row_major(&ext).with_origin(&origin);
        let plane = frame.plane();
        let slab = &mut d[local[0].start * plane..local[0].end * plane];
        let aux: Vec<_> = aux.iter().map(|a| lock(a)).collect();
        let aux: Vec<&[T]> = aux.iter().map(|a| &a[..]).collect();
        kernel.apply_aux(&s, &aux, slab, &frame, &local);
        Ok(started.elapsed().as_secs_f64().max(1e-9))
    }

    fn finish(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }

    fn elapsed_seconds(&mut self, timings: Vec<f64>) -> f64 {
        timings.iter().sum()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::MockRuntime;
    use crate::gpu::GpuController;
    use crate::{Controller, FusedSteps};
    use hitmap::Shape;

    #[test]
    fn a_reallocated_tile_keeps_its_cells_by_device_copies() {
        for gpu in [false, true] {
            let mut c = GpuController::<_, f32>::with_runtime(MockRuntime::<f32>::new(gpu));
            let ext = Shape::from_ranges(&[(10, 20), (0, 6), (0, 3)]);
            let b = c.alloc(&ext, &ext).unwrap();
            c.fill(b, &ext, &|i| (i[0] * 100 + i[1] * 10 + i[2]) as f32)
                .unwrap();
            let grown = Shape::from_ranges(&[(12, 30), (0, 6), (0, 3)]);
            assert!(c.resize(b, &grown, &[2, 0, 0]).unwrap(), "a new allocation");
            let kept = Shape::from_ranges(&[(12, 20), (0, 6), (0, 3)]);
            let mut got = Vec::new();
            c.read(b, &kept, &mut got).unwrap();
            let want: Vec<f32> = kept
                .iter()
                .map(|i| (i[0] * 100 + i[1] * 10 + i[2]) as f32)
                .collect();
            assert_eq!(got, want);
            assert_eq!(c.runtime().copies_within > 0, gpu);
        }
    }

    type MockGpu = GpuController<MockRuntime<f32>, f32>;

    fn cell(i: &[i64]) -> f32 {
        (i[0] * 100 + i[1]) as f32
    }

    /// Errors unless `b` holds `cell` over `r`.
    fn holds_cells(c: &mut MockGpu, b: crate::BufferId, r: &Shape) {
        let mut got = Vec::new();
        c.read(b, r, &mut got).unwrap();
        assert!(got.into_iter().eq(r.iter().map(|i| cell(&i))), "{r}");
    }

    /// A mock GPU of `memory` bytes holding a 40 x 8 f32 tile (1280 bytes)
    /// of known cells.
    fn full_gpu(memory: usize) -> (MockGpu, crate::BufferId) {
        let mut rt = MockRuntime::<f32>::new(true);
        rt.memory = Some(memory);
        let mut c = GpuController::<_, f32>::with_runtime(rt);
        let ext = Shape::from_ranges(&[(0, 40), (0, 8)]);
        let b = c.alloc(&ext, &ext).unwrap();
        c.fill(b, &ext, &cell).unwrap();
        holds_cells(&mut c, b, &ext);
        (c, b)
    }

    /// A tile load balancing emptied, then given rows beyond its
    /// allocation, frees its memory before taking the new: on a GPU with
    /// room for one of the two buffers only, the move succeeds.
    #[test]
    fn an_emptied_tile_frees_its_memory_before_growing_again() {
        let (mut c, b) = full_gpu(2000);
        assert!(!c.resize(b, &Shape::empty(2), &[0, 0]).unwrap());
        let far = Shape::from_ranges(&[(100, 150), (0, 8)]);
        assert!(c.resize(b, &far, &[0, 0]).unwrap(), "a new allocation");
        assert_eq!(c.runtime().peak_bytes, 1600, "never both buffers");
        c.fill(b, &far, &cell).unwrap();
        holds_cells(&mut c, b, &far);
    }

    /// An allocation that fails leaves the buffer known: whole where it
    /// kept cells, empty where its memory had already gone, and usable.
    #[test]
    fn a_failed_allocation_leaves_the_buffer_usable() {
        let (mut c, b) = full_gpu(2000);
        let grown = Shape::from_ranges(&[(20, 80), (0, 8)]);
        let err = c.resize(b, &grown, &[0, 0]).unwrap_err();
        assert!(err.to_string().contains("out of memory"), "{err}");
        let ext = Shape::from_ranges(&[(0, 40), (0, 8)]);
        assert_eq!(c.extent(b).unwrap(), ext, "the old tile stays");
        holds_cells(&mut c, b, &ext);

        assert!(!c.resize(b, &Shape::empty(2), &[0, 0]).unwrap());
        let too_far = Shape::from_ranges(&[(100, 170), (0, 8)]);
        assert!(c.resize(b, &too_far, &[0, 0]).is_err(), "2240 bytes");
        assert_eq!(c.extent(b).unwrap().card(), 0, "emptied, still known");
        let far = Shape::from_ranges(&[(100, 150), (0, 8)]);
        assert!(c.resize(b, &far, &[0, 0]).unwrap());
        c.fill(b, &far, &cell).unwrap();
        holds_cells(&mut c, b, &far);
    }

    #[test]
    fn mock_gpu_controller_passes_the_conformance_suite() {
        for gpu in [false, true] {
            crate::conformance::run_all(&mut || {
                Box::new(GpuController::<_, f32>::with_runtime(
                    MockRuntime::<f32>::new(gpu).knowing(crate::conformance::aux_kernel::<f32>()),
                ))
            });
        }
    }

    /// Fused kernels in 2 KiB of work-group memory: many tiles a launch,
    /// partial tiles at the region's ends, and step counts that do not fit
    /// run as several launches through scratch levels.
    #[test]
    fn small_tiles_and_split_launches_pass_the_fused_checks() {
        for gpu in [false, true] {
            let mut c = GpuController::<_, f64>::with_runtime(MockRuntime::<f64>::new(gpu))
                .with_fused_limits(2048, f64::INFINITY);
            assert_eq!(c.fused_steps(), kernels::device::MAX_FUSED_STEPS);
            crate::conformance::fused_launches(&mut c);
            crate::conformance::fused_against_single_steps(&mut c);
        }
    }

    /// A mock GPU with `bytes` of work-group memory and 2d4 loaded.
    pub(crate) fn mock_2d4(
        bytes: usize,
    ) -> (GpuController<MockRuntime<f32>, f32>, crate::KernelId) {
        use kernels::{library_kernel, KernelChoice, Library};
        let mut c = GpuController::<_, f32>::with_runtime(MockRuntime::<f32>::new(true))
            .with_fused_limits(bytes, f64::INFINITY);
        let kernel = c
            .load(library_kernel(Library::S2d4, KernelChoice::Specialized).into())
            .unwrap();
        (c, kernel)
    }

    /// Four nested steps over a 40 x 36 tile.
    pub(crate) fn four_steps() -> Vec<Shape> {
        (1..=4)
            .map(|k| Shape::from_ranges(&[(k, 40 - k), (k, 36 - k)]))
            .collect()
    }

    /// Fused launches of the inner region (`launch_steps_overlapped`) go on
    /// the side lane, in one launch or split through scratch levels, and
    /// compute what the same steps on the main lane compute.
    #[test]
    fn overlapped_steps_run_on_the_side_lane() {
        use crate::gpu::Lane;
        for bytes in [48 << 10, 600] {
            let (mut c, kernel) = mock_2d4(bytes);
            let ext = Shape::from_sizes(&[40, 36]);
            let [src, a, b] = [0; 3].map(|_| c.alloc(&ext, &ext).unwrap());
            c.fill(src, &ext, &crate::conformance::probe_value).unwrap();
            let steps = four_steps();
            let last = steps[3].clone();
            let mut lanes = Vec::new();
            for (dst, overlapped) in [(a, false), (b, true)] {
                c.fill(dst, &ext, &|_| 0.0).unwrap();
                let before = c.runtime().lanes.len();
                if overlapped {
                    c.launch_steps_overlapped(kernel, src, dst, &steps).unwrap();
                } else {
                    c.launch_steps(kernel, src, dst, &steps).unwrap();
                }
                c.wait().unwrap();
                lanes.push(c.runtime().lanes[before..].to_vec());
            }
            let launches = lanes[0].len();
            assert!(launches >= 1 && lanes[1].len() == launches, "{lanes:?}");
            assert!(lanes[0].iter().all(|l| *l == Lane::Main), "{lanes:?}");
            assert!(lanes[1].iter().all(|l| *l == Lane::Side), "{lanes:?}");
            if bytes == 600 {
                assert!(
                    launches > 1,
                    "600 bytes hold the cones of three steps, not four"
                );
            }
            let (mut x, mut y) = (Vec::new(), Vec::new());
            c.read(a, &last, &mut x).unwrap();
            c.read(b, &last, &mut y).unwrap();
            assert_eq!(x, y);
            assert!(x.iter().any(|v| *v != 0.0));
        }
    }

    /// `prepare_steps` compiles every fused kernel a launch of that many
    /// steps takes (one, or several where the cones do not fit), so the
    /// launch compiles nothing; one step needs none. Called through a box,
    /// as the skeleton holds its devices: a box that kept the trait's
    /// do-nothing default left the compile in the loop's first period.
    #[test]
    fn prepared_steps_launch_without_compiling() {
        for bytes in [48 << 10, 600] {
            let (c, kernel) = mock_2d4(bytes);
            let mut c = Box::new(c);
            // The box's own `Controller` impl, as the skeleton calls it.
            fn boxed(
                c: &mut Box<GpuController<MockRuntime<f32>, f32>>,
            ) -> &mut dyn Controller<f32> {
                c
            }
            boxed(&mut c).prepare_steps(kernel, 1).unwrap();
            assert_eq!(c.runtime().fused_compiles, 0);
            boxed(&mut c).prepare_steps(kernel, 4).unwrap();
            let compiled = c.runtime().fused_compiles;
            assert!(compiled >= 1, "{bytes} bytes");
            let ext = Shape::from_sizes(&[40, 36]);
            let [src, dst] = [0; 2].map(|_| c.alloc(&ext, &ext).unwrap());
            c.fill(src, &ext, &crate::conformance::probe_value).unwrap();
            let steps = four_steps();
            boxed(&mut c)
                .launch_steps(kernel, src, dst, &steps)
                .unwrap();
            boxed(&mut c)
                .launch_steps_overlapped(kernel, src, dst, &steps)
                .unwrap();
            c.wait().unwrap();
            assert_eq!(c.runtime().fused_compiles, compiled, "{bytes} bytes");
        }
    }

    #[test]
    fn without_work_group_memory_nothing_fuses() {
        let mut c = GpuController::<_, f32>::with_runtime(MockRuntime::<f32>::new(true))
            .with_fused_limits(0, f64::INFINITY);
        assert_eq!(c.fused_steps(), 1);
        crate::conformance::fused_launches(&mut c);
    }
}

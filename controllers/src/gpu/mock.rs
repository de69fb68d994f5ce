//! A runtime in host memory, so the GPU controller (plans, geometry,
//! bookkeeping) passes the conformance suite without a device: copies apply
//! each piece's spans, and "compiling" finds the Rust kernel whose generated
//! source is that text, which launches then run with `Kernel::apply` on the
//! region decoded back from the kernel arguments.

use super::copy_plan::CopyPiece;
use super::geometry::{region_from_longs, GroupHints};
use super::runtime::{Compiled, DeviceRuntime, Lane};
use crate::error::DeviceError;
use kernels::{library_kernel, Cell, Dialect, Frame, Kernel, KernelChoice, Library, Real};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

type Mem<T> = Arc<Mutex<Vec<T>>>;

/// Host memory posing as a device that knows every library kernel.
pub struct MockRuntime<T> {
    known: HashMap<String, Arc<dyn Kernel<T>>>,
    /// Pretend to be a GPU, so launches get the groups GPUs get, and
    /// copy within the device (a CPU-like one goes through the host).
    gpu: bool,
    /// Pieces copied within the device so far.
    pub copies_within: usize,
}

impl<T: Real> MockRuntime<T> {
    /// A mock that compiles the library's kernels, of both kinds.
    pub fn new(gpu: bool) -> MockRuntime<T> {
        let mut known = HashMap::new();
        for lib in Library::ALL {
            for choice in [KernelChoice::Specialized, KernelChoice::Generic] {
                let k: Arc<dyn Kernel<T>> = Arc::from(library_kernel::<T>(lib, choice));
                if let Some(device) = k.device_kernel() {
                    known.insert(device.source(Self::DIALECT), k);
                }
            }
        }
        MockRuntime {
            known,
            gpu,
            copies_within: 0,
        }
    }

    /// The same mock, also compiling `kernel`'s device code.
    pub fn knowing(mut self, kernel: Arc<dyn Kernel<T>>) -> MockRuntime<T> {
        if let Some(device) = kernel.device_kernel() {
            self.known.insert(device.source(Self::DIALECT), kernel);
        }
        self
    }
}

fn lock<T>(m: &Mem<T>) -> std::sync::MutexGuard<'_, Vec<T>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: Cell> DeviceRuntime for MockRuntime<T> {
    type Buffer = Mem<T>;
    type Kernel = Arc<dyn Kernel<T>>;
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
        Ok(Arc::new(Mutex::new(vec![T::zeroed(); cells])))
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

    fn compile(&mut self, source: &str) -> Result<Compiled<Self::Kernel>, DeviceError> {
        let kernel = self
            .known
            .get(source)
            .cloned()
            .ok_or_else(|| DeviceError::Backend("not a library kernel".into()))?;
        Ok(Compiled {
            kernel,
            hints: GroupHints {
                multiple: 32,
                max: 1024,
            },
        })
    }

    unsafe fn launch(
        &mut self,
        _lane: Lane,
        kernel: &Self::Kernel,
        src: &Mem<T>,
        dst: &Mem<T>,
        longs: &[i64],
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
        let started = Instant::now();
        let (s, mut d) = (lock(src), lock(dst));
        let nd = kernel.footprint().ndims();
        let (ext, local) = region_from_longs(longs, nd, s.len());
        let frame = Frame::row_major(&ext);
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
mod tests {
    use super::MockRuntime;
    use crate::gpu::GpuController;
    use crate::Controller;
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
}

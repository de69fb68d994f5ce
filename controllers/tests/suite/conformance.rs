use controllers::{
    conformance, controller_conformance, BufferId, Controller, CpuController, DeviceError,
    KernelId, Slowdown,
};
use hitmap::Shape;
use kernels::{library_kernel, KernelChoice, Library};
use std::sync::Arc;
use std::time::Instant;

controller_conformance!(cpu_one_thread, <T> CpuController::<T>::new(1).unwrap());
controller_conformance!(cpu_three_threads, <T> CpuController::<T>::new(3).unwrap());
controller_conformance!(slowed_cpu, <T> Slowdown::new(CpuController::<T>::new(2).unwrap(), 1.5, 1).unwrap());
// Windows of one plane: many short waves, every window slid and grown.
controller_conformance!(cpu_tiny_windows, <T> CpuController::<T>::new(3).unwrap().window_bytes(1));
// 2-d fused launches in bands of up to 3 columns (narrower than the cone),
// alone and in windows of a plane.
controller_conformance!(cpu_narrow_bands, <T> CpuController::<T>::new(2).unwrap().band_cols(3));
controller_conformance!(cpu_bands_tiny_windows, <T> CpuController::<T>::new(3).unwrap().band_cols(5).window_bytes(1));
// Tiles filled four rows at a time: every fill in several slabs.
controller_conformance!(cpu_small_fills, <T> CpuController::<T>::new(1).unwrap().fill_slab_cells(1));
// The trait's own copy between buffers (through the host), and its other
// defaults, as a controller written outside this crate has them.
controller_conformance!(trait_defaults, <T> Defaults::of(CpuController::<T>::new(2).unwrap()));
// The mock backend, opened by its device string as a run opens any device.
#[cfg(feature = "mock")]
controller_conformance!(mock, <T> open_mock::<T>());

/// `mock:device=0` through the registry, as a run opens it.
#[cfg(feature = "mock")]
fn open_mock<T: kernels::Cell>() -> Box<dyn Controller<T>> {
    use controllers::registry::{device_kind, open_gpu, BackendOptions, DeviceKind};
    let options = BackendOptions {
        device: Some(0),
        ..BackendOptions::default()
    };
    match device_kind("mock", &options) {
        Ok(DeviceKind::Gpu(d)) => open_gpu(&d, &Default::default()).expect("open mock:device=0"),
        other => panic!("mock:device=0 is a GPU device: {other:?}"),
    }
}

/// A controller implementing only what the trait requires (and auxiliary
/// fields, which the suite checks), by its inner one: every other method
/// is the trait's default. Made by `ten_ms`, its kernels take exactly 10 ms
/// by its own clock.
struct Defaults<C> {
    inner: C,
    ten_ms: bool,
    seconds: f64,
}

impl<C> Defaults<C> {
    fn of(inner: C) -> Self {
        Defaults {
            inner,
            ten_ms: false,
            seconds: 0.0,
        }
    }

    fn ten_ms(inner: C) -> Self {
        Defaults {
            ten_ms: true,
            ..Defaults::of(inner)
        }
    }
}

impl<T, C: Controller<T>> Controller<T> for Defaults<C> {
    fn describe(&self) -> String {
        format!("{} (trait defaults)", self.inner.describe())
    }
    fn alloc(&mut self, extent: &Shape, capacity: &Shape) -> Result<BufferId, DeviceError> {
        self.inner.alloc(extent, capacity)
    }
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        self.inner.free(buf)
    }
    fn extent(&self, buf: BufferId) -> Result<Shape, DeviceError> {
        self.inner.extent(buf)
    }
    fn resize(
        &mut self,
        buf: BufferId,
        extent: &Shape,
        spare: &[i64],
    ) -> Result<bool, DeviceError> {
        self.inner.resize(buf, extent, spare)
    }
    fn write(&mut self, buf: BufferId, region: &Shape, data: &[T]) -> Result<(), DeviceError> {
        self.inner.write(buf, region, data)
    }
    fn read(&mut self, buf: BufferId, region: &Shape, out: &mut Vec<T>) -> Result<(), DeviceError> {
        self.inner.read(buf, region, out)
    }
    fn fill(
        &mut self,
        buf: BufferId,
        region: &Shape,
        f: &(dyn Fn(&[i64]) -> T + Sync),
    ) -> Result<(), DeviceError> {
        self.inner.fill(buf, region, f)
    }
    fn load(&mut self, kernel: Arc<dyn kernels::Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.inner.load(kernel)
    }
    fn bind_aux(&mut self, kernel: KernelId, aux: &[BufferId]) -> Result<(), DeviceError> {
        self.inner.bind_aux(kernel, aux)
    }
    fn launch(
        &mut self,
        kernel: KernelId,
        src: BufferId,
        dst: BufferId,
        region: &Shape,
    ) -> Result<(), DeviceError> {
        self.inner.launch(kernel, src, dst, region)?;
        if self.ten_ms {
            self.seconds += 0.010;
        }
        Ok(())
    }
    fn wait(&mut self) -> Result<(), DeviceError> {
        self.inner.wait()
    }
    fn take_kernel_seconds(&mut self) -> f64 {
        if self.ten_ms {
            std::mem::take(&mut self.seconds)
        } else {
            self.inner.take_kernel_seconds()
        }
    }
}

#[test]
fn zero_threads_is_an_error() {
    assert!(CpuController::<f32>::new(0).is_err());
    assert!(Slowdown::new(CpuController::<f32>::new(1).unwrap(), 0.5, 0).is_err());
    assert!(Slowdown::new(CpuController::<f32>::new(1).unwrap(), f64::NAN, 0).is_err());
}

#[test]
fn parallel_split_covers_large_regions() {
    // Enough rows that a pool splits the region into several tasks (the
    // conformance grids are too small to be split): every thread count must
    // give the serial reference's bits.
    let sizes = [300usize, 130];
    let all = Shape::from_sizes(&sizes);
    let inner = Shape::from_ranges(&[(1, 299), (1, 129)]);
    let lib = Library::S2d4;
    let spec = lib.spec();
    let want: Vec<u32> = kernels::reference::run(
        &sizes,
        &spec.low,
        &spec.high,
        1,
        conformance::probe_value,
        kernels::reference::library_formula(lib),
    )
    .iter()
    .map(|v| v.to_bits())
    .collect();
    let k: Arc<dyn kernels::Kernel<f32>> =
        Arc::from(library_kernel::<f32>(lib, KernelChoice::Specialized));
    for threads in [1, 2, 5] {
        let mut c = CpuController::<f32>::new(threads).unwrap();
        let kid = c.load(k.clone()).unwrap();
        let a = c.alloc(&all, &all).unwrap();
        let b = c.alloc(&all, &all).unwrap();
        c.fill(a, &all, &conformance::probe_value).unwrap();
        c.fill(b, &all, &conformance::probe_value).unwrap();
        c.launch(kid, a, b, &inner).unwrap();
        let mut v = Vec::new();
        c.read(b, &all, &mut v).unwrap();
        assert_eq!(
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want,
            "{threads} threads"
        );
    }
}

#[test]
fn slowdown_stretches_kernel_time_from_its_iteration() {
    let all = Shape::from_sizes(&[8, 8]);
    let inner = Shape::from_ranges(&[(1, 7), (1, 7)]);
    let mut c = Slowdown::new(Defaults::ten_ms(CpuController::new(1).unwrap()), 4.0, 2).unwrap();
    let kid = c
        .load(Arc::from(library_kernel::<f32>(
            Library::S2d4,
            KernelChoice::Specialized,
        )))
        .unwrap();
    let a = c.alloc(&all, &all).unwrap();
    let b = c.alloc(&all, &all).unwrap();
    for it in 0..4 {
        c.set_iteration(it);
        let t = Instant::now();
        c.launch(kid, a, b, &inner).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let reported = c.take_kernel_seconds();
        if it < 2 {
            assert!(
                (reported - 0.010).abs() < 1e-12,
                "iteration {it}: {reported}"
            );
        } else {
            // 10 ms of kernel plus the 30 ms really waited, reported as spent
            // (never less: waits do not return early).
            assert!(
                reported >= 0.040 && wall >= 0.030,
                "iteration {it}: {reported} {wall}"
            );
            assert!(
                reported <= 0.010 + wall + 1e-9,
                "iteration {it}: reported more than was spent"
            );
        }
    }
}

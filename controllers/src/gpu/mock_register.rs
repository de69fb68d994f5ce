//! How the backend registry opens and lists the mock: host memory posing as
//! one GPU, so every layer above the runtime (registry, controller,
//! skeleton) runs on any machine, through the path a real backend takes.

use super::mock::MockRuntime;
use super::GpuController;
use crate::controller::{Controller, KernelId};
use crate::decorator::{sealed, Decorator};
use crate::device_spec::{GpuDevice, GpuOptions, Listing};
use crate::error::{BadOption, DeviceError, Unavailable};
use kernels::{Cell, CellLayout, Kernel};
use std::sync::Arc;

/// Opens the mock's one device for the registry ([`crate::registry`]).
pub(crate) fn open<T: Cell>(
    d: &GpuDevice,
    o: &GpuOptions,
) -> Result<Box<dyn Controller<T>>, DeviceError> {
    if d.device != 0 {
        return Err(DeviceError::Unavailable(Unavailable::NoMockDevice {
            device: d.device,
        }));
    }
    // Its launches run Rust kernels, which read cells whole.
    if o.layout == Some(CellLayout::Planes) {
        return Err(DeviceError::BadOption(BadOption::MockCellsWhole));
    }
    let inner = GpuController::with_runtime(MockRuntime::taught_nothing(true))
        .with_cell_layout(CellLayout::Cells)
        .with_fused_log(o.log_fused);
    Ok(Box::new(MockDevice { inner }))
}

/// The mock's one device, for `epsilod list`.
pub(crate) fn list() -> Listing {
    Listing::Devices(vec![(
        "mock:device=0".into(),
        "host memory posing as a GPU (runs the kernels' Rust code)".into(),
    )])
}

/// The GPU controller on a mock runtime that is taught each kernel as it
/// is loaded: a real runtime compiles any source, the mock only those
/// whose Rust kernel it holds.
struct MockDevice<T: Cell> {
    inner: GpuController<MockRuntime<T>, T>,
}

impl<T: Cell> sealed::Wraps for MockDevice<T> {}
impl<T: Cell> Decorator<T> for MockDevice<T> {
    type Inner = GpuController<MockRuntime<T>, T>;
    fn inner(&self) -> &Self::Inner {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut Self::Inner {
        &mut self.inner
    }
    fn load(&mut self, kernel: Arc<dyn Kernel<T>>) -> Result<KernelId, DeviceError> {
        self.inner.runtime().learn(&kernel);
        self.inner.load(kernel)
    }
}

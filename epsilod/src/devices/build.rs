//! A [`DeviceSpec`] built into its controller: the backend's, pinned where
//! asked, wrapped in its emulated slowdown and failure.

use super::spec::DeviceSpec;
use crate::job::all_cores;
use controllers::registry::{self, DeviceKind, GpuOptions};
use controllers::{Controller, DeviceError, FailAt, Slowdown};
use kernels::Cell;

impl DeviceSpec {
    /// The device's controller, slowed down if asked. A CPU device given no
    /// threads is built as if alone (every core): runs give it its share
    /// first, with [`share_cores`](super::share_cores).
    pub fn build<T: Cell>(&self) -> Result<Box<dyn Controller<T>>, DeviceError> {
        self.build_pinned(&[])
    }

    /// [`build`](Self::build), a CPU device's pool pinned to `cores` (see
    /// [`controllers::CpuController::pinned`]; nothing pinned where empty).
    pub fn build_pinned<T: Cell>(
        &self,
        cores: &[usize],
    ) -> Result<Box<dyn Controller<T>>, DeviceError> {
        let base = match &self.kind {
            DeviceKind::Cpu { threads } => {
                registry::open_cpu(threads.unwrap_or_else(all_cores), cores)?
            }
            DeviceKind::Gpu(device) => registry::open_gpu(
                device,
                &GpuOptions {
                    layout: self.layout.or(self.tuning.layout),
                    ..self.tuning
                },
            )?,
        };
        let slowed: Box<dyn Controller<T>> = match self.slowdown {
            None => base,
            Some(s) => Box::new(Slowdown::new(base, s.factor, s.from_iter)?),
        };
        Ok(match self.fail {
            None => slowed,
            Some(at) => Box::new(FailAt::new(slowed, at)),
        })
    }
}

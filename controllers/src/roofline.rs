//! A device's own copy bandwidth and a stencil's throughput against it,
//! measured in one process on the same buffers (`epsilod list --measure`):
//! every GPU figure is then a fraction of that device's roofline rather than
//! of a datasheet number.

use crate::controller::Controller;
use crate::error::DeviceError;
use hitmap::{Footprint, Shape};
use kernels::{CellDecl, Custom, DeviceKernel, Kernel, Neighbourhood};
use std::sync::Arc;

/// What [`measure`] found, from the device's own kernel timings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roofline {
    /// Cells each launch updated (the grid's interior).
    pub cells: usize,
    /// Bytes per second a copy kernel moved (one read and one write a cell).
    pub copy_bytes_per_second: f64,
    /// Cell updates per second of the stencil, over the same cells.
    pub cells_per_second: f64,
}

impl Roofline {
    /// The stencil's throughput as a fraction of the copy roofline, for a
    /// one-step kernel that moves `bytes_per_cell` (8 for f32: one read,
    /// one write).
    pub fn fraction(&self, bytes_per_cell: f64) -> f64 {
        self.cells_per_second * bytes_per_cell / self.copy_bytes_per_second
    }
}

/// A kernel that copies each cell: the bandwidth every one-step stencil is
/// bounded by, in the device code every backend compiles.
pub fn copy_kernel(ndims: usize) -> Arc<dyn Kernel<f32>> {
    // SAFETY: the body reads `src` only at `c`, the footprint's one
    // (zero) offset, and writes only `dst[c]`; the cell is one f32.
    let device = unsafe { DeviceKernel::new(CellDecl::scalar::<f32>(), "    dst[c] = src[c];\n") };
    let footprint = Footprint::new(ndims, vec![vec![0; ndims]]);
    let copy = Custom::new("copy", footprint, |nb: &Neighbourhood<f32>| nb.centre())
        .with_device_kernel(device);
    Arc::new(copy)
}

/// Times `launches` launches of a copy kernel and of `stencil` over the
/// interior of a grid of `sizes` (one halo cell on each side, enough for
/// every radius-1 stencil) on `device`, after as many untimed ones (which
/// load the kernel and let a runtime choose its launch shape).
/// Contents are left unspecified: throughput does not depend on them.
pub fn measure(
    device: &mut dyn Controller<f32>,
    stencil: Arc<dyn Kernel<f32>>,
    sizes: &[usize],
    launches: usize,
) -> Result<Roofline, DeviceError> {
    let all = Shape::from_sizes(sizes);
    let interior =
        Shape::from_ranges(&sizes.iter().map(|&n| (1, n as i64 - 1)).collect::<Vec<_>>());
    let a = device.alloc(&all, &all)?;
    let b = device.alloc(&all, &all)?;
    let mut seconds = |kernel: Arc<dyn Kernel<f32>>| -> Result<f64, DeviceError> {
        let k = device.load(kernel)?;
        for _ in 0..launches.max(1) {
            device.launch(k, a, b, &interior)?;
        }
        device.wait()?;
        device.take_kernel_seconds();
        for i in 0..launches {
            let (src, dst) = if i % 2 == 0 { (a, b) } else { (b, a) };
            device.launch(k, src, dst, &interior)?;
        }
        device.wait()?;
        Ok(device.take_kernel_seconds().max(f64::MIN_POSITIVE))
    };
    let copy = seconds(copy_kernel(sizes.len()))?;
    let step = seconds(stencil)?;
    device.free(a)?;
    device.free(b)?;
    let cells = interior.card();
    let work = (cells * launches) as f64;
    Ok(Roofline {
        cells,
        copy_bytes_per_second: work * 8.0 / copy,
        cells_per_second: work / step,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuController;
    use kernels::{library_kernel, KernelChoice, Library};

    #[test]
    fn the_copy_kernel_copies_and_measuring_frees_its_buffers() {
        let mut cpu = CpuController::<f32>::new(1).unwrap();
        let all = Shape::from_sizes(&[6, 7]);
        let (a, b) = (
            cpu.alloc(&all, &all).unwrap(),
            cpu.alloc(&all, &all).unwrap(),
        );
        cpu.fill(a, &all, &|i| (i[0] * 10 + i[1]) as f32).unwrap();
        let k = cpu.load(copy_kernel(2)).unwrap();
        let inner = Shape::from_ranges(&[(1, 5), (1, 6)]);
        cpu.launch(k, a, b, &inner).unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        cpu.read(a, &inner, &mut x).unwrap();
        cpu.read(b, &inner, &mut y).unwrap();
        assert_eq!(x, y);

        let stencil: Arc<dyn Kernel<f32>> = Arc::from(library_kernel::<f32>(
            Library::S2d4,
            KernelChoice::Specialized,
        ));
        let r = measure(&mut cpu, stencil, &[34, 66], 3).unwrap();
        assert_eq!(r.cells, 32 * 64);
        assert!(r.copy_bytes_per_second.is_finite() && r.cells_per_second.is_finite());
        // The buffers went back: a second measurement allocates afresh.
        assert!(cpu.extent(crate::BufferId(2)).is_err());
    }
}

//! Kernels written in Rust as a function of a cell's neighbourhood, for any
//! cell type (the gas simulation's 19-float cells, for one).

use crate::cell::Cell;
use crate::frame::{for_each_row, Frame};
use crate::kernel::Kernel;
use hitmap::Footprint;
use std::marker::PhantomData;
use std::ops::Range;

/// Read access to the cells around the one being computed.
pub struct Neighbourhood<'a, T> {
    src: &'a [T],
    centre: usize,
    strides: &'a [usize],
}

impl<T: Copy> Neighbourhood<'_, T> {
    /// The cell at `offset` (one component per dimension) from the centre.
    /// Offsets must lie within the kernel's declared footprint.
    #[inline(always)]
    pub fn get(&self, offset: &[isize]) -> T {
        let mut i = self.centre as isize;
        for (o, &s) in offset.iter().zip(self.strides) {
            i += o * s as isize;
        }
        self.src[i as usize]
    }

    #[inline(always)]
    pub fn centre(&self) -> T {
        self.src[self.centre]
    }
}

/// A kernel from a closure `f(&Neighbourhood) -> new cell`, optionally with
/// the same update as device code (then it runs on device backends too).
pub struct Custom<T, F> {
    name: String,
    footprint: Footprint,
    f: F,
    device: Option<crate::DeviceKernel>,
    _cell: PhantomData<fn() -> T>,
}

impl<T: Cell, F: Fn(&Neighbourhood<T>) -> T + Send + Sync> Custom<T, F> {
    /// `footprint` must list every offset `f` reads: halos and launch checks
    /// are derived from it.
    pub fn new(name: &str, footprint: Footprint, f: F) -> Custom<T, F> {
        Custom {
            name: name.to_string(),
            footprint,
            f,
            device: None,
            _cell: PhantomData,
        }
    }

    /// The same update as device code, for every dialect. It must compute
    /// exactly what `f` does (see [`DeviceKernel::new`](crate::DeviceKernel::new)).
    ///
    /// # Panics
    ///
    /// If the kernel's cell is not the size of `T`: the device would then
    /// read the host's buffers with the wrong layout.
    pub fn with_device_kernel(mut self, kernel: crate::DeviceKernel) -> Self {
        assert_eq!(
            kernel.cell().bytes(),
            std::mem::size_of::<T>(),
            "device kernel of '{}': its cell declaration does not match the Rust cell type",
            self.name
        );
        self.device = Some(kernel);
        self
    }
}

impl<T: Cell, F: Fn(&Neighbourhood<T>) -> T + Send + Sync> Kernel<T> for Custom<T, F> {
    fn name(&self) -> &str {
        &self.name
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn device_kernel(&self) -> Option<crate::DeviceKernel> {
        self.device.clone()
    }

    fn apply(&self, src: &[T], dst: &mut [T], frame: &Frame, region: &[Range<usize>]) {
        for_each_row(frame, region, |s, d, len| {
            for (j, o) in dst[d..d + len].iter_mut().enumerate() {
                let nb = Neighbourhood {
                    src,
                    centre: s + j,
                    strides: frame.strides(),
                };
                *o = (self.f)(&nb);
            }
        });
    }
}

//! OpenCL programs: kernels built from generated OpenCL C with the dialect's options, and their hints.

use crate::error::{backend, DeviceError};
use crate::gpu::{Compiled, GroupHints};
use kernels::device::abi::{ArgKind, ARGS};
use kernels::device::{FUSED_KERNEL_NAME, KERNEL_NAME};
use kernels::Dialect;
use ocl::{Buffer, Context, Device, Program, Queue};

/// Where kernels are built: a device, its context, and the queue they
/// launch on.
pub(super) struct Target<'a> {
    pub(super) device: Device,
    pub(super) context: &'a Context,
    pub(super) queue: &'a Queue,
}

impl Target<'_> {
    /// `source` built for this device with the dialect's options (IEEE
    /// division for results bit-identical to the CPU), falling back to none
    /// only for devices that reject them.
    fn program(&self, source: &str) -> Result<Program, DeviceError> {
        let options = Dialect::OpenCl.compiler_options().join(" ");
        let build = |opts: &str| {
            Program::builder()
                .src(source)
                .devices(self.device)
                .cmplr_opt(opts)
                .build(self.context)
        };
        build(&options)
            .or_else(|_| build(""))
            .map_err(backend("OpenCL"))
    }

    /// A built kernel with its work-group hints on this device.
    fn hinted(&self, k: ocl::Kernel) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        use ocl::enums::{KernelWorkGroupInfo as Wg, KernelWorkGroupInfoResult as WgR};
        let multiple = match k.wg_info(self.device, Wg::PreferredWorkGroupSizeMultiple) {
            Ok(WgR::PreferredWorkGroupSizeMultiple(m)) => m,
            _ => 0,
        };
        let max = match k.wg_info(self.device, Wg::WorkGroupSize) {
            Ok(WgR::WorkGroupSize(m)) => m,
            _ => 0,
        };
        Ok(Compiled {
            kernel: k,
            hints: GroupHints { multiple, max },
        })
    }

    /// A step kernel (`KERNEL_NAME`, the ABI's arguments, then its auxiliary
    /// fields' buffers) built from `source`.
    pub(super) fn step_kernel(&self, source: &str) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        let program = self.program(source)?;
        // The builder wants every argument declared, in the ABI's order.
        let mut b = ocl::Kernel::builder();
        b.program(&program)
            .name(KERNEL_NAME)
            .queue(self.queue.clone());
        for (_, kind) in ARGS {
            match kind {
                ArgKind::Buffer(_) => b.arg(None::<&Buffer<u8>>),
                ArgKind::Long(_) => b.arg(0i64),
            };
        }
        // Auxiliary field buffers follow the ABI's arguments: as many as
        // the compiled kernel declares beyond them.
        let probe = ocl::core::create_kernel(&program, KERNEL_NAME).map_err(backend("OpenCL"))?;
        let declared = match ocl::core::get_kernel_info(&probe, ocl::enums::KernelInfo::NumArgs) {
            Ok(ocl::enums::KernelInfoResult::NumArgs(n)) => n as usize,
            _ => ARGS.len(),
        };
        for _ in ARGS.len()..declared {
            b.arg(None::<&Buffer<u8>>);
        }
        self.hinted(b.build().map_err(backend("OpenCL"))?)
    }

    /// A fused kernel (`FUSED_KERNEL_NAME`: `src`, `dst` and `index_args`
    /// integers) built from `source`.
    pub(super) fn fused_kernel(
        &self,
        source: &str,
        index_arg_count: usize,
    ) -> Result<Compiled<ocl::Kernel>, DeviceError> {
        let program = self.program(source)?;
        let mut b = ocl::Kernel::builder();
        b.program(&program)
            .name(FUSED_KERNEL_NAME)
            .queue(self.queue.clone());
        b.arg(None::<&Buffer<u8>>).arg(None::<&Buffer<u8>>);
        for _ in 0..index_arg_count {
            b.arg(0i64);
        }
        self.hinted(b.build().map_err(backend("OpenCL"))?)
    }
}

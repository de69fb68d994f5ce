//! NVRTC: kernels compiled to PTX or cubin for a device, once per process, and loaded.

use crate::error::{backend, BackendError, DeviceError, ForeignError};
use crate::gpu::module_cache::ModuleCache;
use crate::gpu::{Compiled, GroupHints};
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use kernels::Dialect;
use std::sync::Arc;

/// What NVRTC makes of a kernel for the driver to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeImage {
    /// PTX for the device's virtual architecture, which the driver compiles
    /// on load: the usual choice.
    Ptx,
    /// Machine code for the device itself: for an NVRTC newer than the
    /// driver, whose PTX (of a newer ISA version) the driver would refuse.
    Cubin,
}

impl CodeImage {
    /// PTX unless NVRTC (`(major, minor)`) is newer than the CUDA version
    /// the driver supports (`driver`, e.g. 12080 for 12.8).
    pub fn for_versions(driver: i32, nvrtc: (i32, i32)) -> CodeImage {
        if nvrtc.0 * 1000 + nvrtc.1 * 10 > driver {
            CodeImage::Cubin
        } else {
            CodeImage::Ptx
        }
    }
}

/// Code compiled once per process.
#[derive(Clone)]
enum Code {
    Ptx(String),
    Cubin(Vec<u8>),
}

/// Code already compiled in this process, by (source, compute capability,
/// image): every device of a run compiles the same kernels, and NVRTC takes
/// hundreds of milliseconds per kernel.
static MODULES: ModuleCache<ModuleKey, Code> = ModuleCache::new();

/// A kernel's CUDA C source, the compute capability and the image kind it
/// was compiled for.
type ModuleKey = (String, (i32, i32), CodeImage);

/// Compiles `source` to `image` for a device of compute capability `arch`
/// (the cached code where it was already), loads it in `ctx` and returns
/// its function `name`, with its block hints.
pub(super) fn load(
    ctx: &Arc<CudaContext>,
    (arch, image): ((i32, i32), CodeImage),
    source: &str,
    name: &str,
) -> Result<Compiled<CudaFunction>, DeviceError> {
    let key = (source.to_owned(), arch, image);
    let code = MODULES.get_or_compile(key, || -> Result<Code, DeviceError> {
        let mut options: Vec<String> = Dialect::Cuda
            .compiler_options()
            .iter()
            .map(|s| s.to_string())
            .collect();
        // The device's own architecture: PTX for a newer one would not
        // load, for an older one would lose its instructions.
        let (major, minor) = arch;
        Ok(match image {
            CodeImage::Ptx => {
                options.push(format!("--gpu-architecture=compute_{major}{minor}"));
                let opts = CompileOptions {
                    options,
                    ..Default::default()
                };
                let ptx = compile_ptx_with_opts(source, opts)
                    .map_err(|e| BackendError::Nvrtc {
                        source: ForeignError::new(e),
                    })?
                    .to_src();
                Code::Ptx(ptx)
            }
            CodeImage::Cubin => {
                options.push(format!("--gpu-architecture=sm_{major}{minor}"));
                Code::Cubin(compile_cubin(source, &options)?)
            }
        })
    })?;
    let ptx = match code {
        Code::Ptx(src) => Ptx::from_src(src),
        Code::Cubin(bin) => Ptx::from_binary(bin),
    };
    let module = ctx.load_module(ptx).map_err(backend("CUDA"))?;
    let kernel = module.load_function(name).map_err(backend("CUDA"))?;
    // Register pressure can lower a kernel's block limit below the
    // device's 1024 threads; asking the function is exact.
    let max = kernel
        .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .map_err(backend("CUDA"))?;
    let multiple = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)
        .map_err(backend("CUDA"))?;
    Ok(Compiled {
        kernel,
        hints: GroupHints {
            multiple: multiple.max(1) as usize,
            max: max.max(1) as usize,
        },
    })
}

/// Compiles `source` with `options` (which name an `sm_XY` architecture)
/// to a cubin, through NVRTC's own calls: cudarc's compile gives PTX only.
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, DeviceError> {
    use cudarc::nvrtc::{result, sys as nv};
    let fail = |e: result::NvrtcError| BackendError::Nvrtc {
        source: ForeignError::new(e),
    };
    let src = std::ffi::CString::new(source).map_err(|_| BackendError::NulInSource)?;
    let prog = result::create_program(&src, None).map_err(fail)?;
    // SAFETY: `prog` was just created and is destroyed once, below; the
    // options are plain strings, copied by the call.
    let compiled = unsafe { result::compile_program(prog, options) };
    let out = match compiled {
        Err(e) => {
            // SAFETY: `prog` is live; the log is a NUL-terminated string.
            let log = unsafe { result::get_program_log(prog) }
                .map(|l| {
                    // SAFETY: NVRTC writes the log with its terminating NUL.
                    unsafe { std::ffi::CStr::from_ptr(l.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            Err(BackendError::NvrtcCompile {
                status: ForeignError::new(e),
                log,
            }
            .into())
        }
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: `prog` compiled; `size` is a valid out-pointer.
            let r = unsafe { nv::nvrtcGetCUBINSize(prog, &mut size) };
            r.result().map_err(fail)?;
            let mut bin = vec![0u8; size];
            // SAFETY: `bin` holds the `size` bytes NVRTC said it writes.
            let r = unsafe { nv::nvrtcGetCUBIN(prog, bin.as_mut_ptr().cast()) };
            r.result().map(|()| bin).map_err(|e| fail(e).into())
        }
    };
    // SAFETY: `prog` is live and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

#[cfg(test)]
mod tests {
    use super::CodeImage;

    #[test]
    fn ptx_unless_nvrtc_is_newer_than_the_driver() {
        assert_eq!(CodeImage::for_versions(13000, (13, 0)), CodeImage::Ptx);
        assert_eq!(CodeImage::for_versions(12080, (12, 4)), CodeImage::Ptx);
        assert_eq!(CodeImage::for_versions(12080, (12, 9)), CodeImage::Cubin);
        assert_eq!(CodeImage::for_versions(12080, (13, 0)), CodeImage::Cubin);
    }
}

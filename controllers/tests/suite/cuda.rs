//! The CUDA backend passes the conformance suite where a GPU is present
//! (the tests are ignored otherwise: run them with `--ignored`), and a
//! machine without the driver gets a clear error, never a panic.
#![cfg(feature = "cuda")]

use controllers::cuda::{CodeImage, CudaRuntime};
use controllers::{controller_conformance, CudaController, DeviceError, GpuController};

controller_conformance!(#[ignore = "needs an NVIDIA GPU"] cuda, <T> CudaController::<T>::new(0).unwrap_or_else(|e| {
    panic!("cannot open CUDA device 0: {e}")
}));

// The same suite with kernels compiled to machine code (what a driver
// older than NVRTC gets), so that path is exercised on any GPU.
controller_conformance!(#[ignore = "needs an NVIDIA GPU"] cuda_cubin, <T> {
    let rt = CudaRuntime::new(0)
        .unwrap_or_else(|e| panic!("cannot open CUDA device 0: {e}"))
        .with_image(CodeImage::Cubin);
    GpuController::<_, T>::with_runtime(rt)
});

/// Runs everywhere: without a driver, opening a device is the one-line
/// `Unavailable` error; with one, a device that does not exist is an error.
#[test]
fn no_driver_or_no_device_is_an_error_not_a_panic() {
    match controllers::cuda::devices() {
        Err(e) => {
            assert!(
                matches!(&e, DeviceError::Unavailable(m) if m.to_string().contains("no CUDA driver")),
                "{e}"
            );
            let open = CudaController::<f32>::new(0).err();
            assert_eq!(open, Some(e));
        }
        Ok(_) => assert!(CudaController::<f32>::new(999).is_err()),
    }
}

/// Fused kernels in 2 KiB of shared memory: many blocks a launch, partial
/// tiles, and step counts that do not fit split into several launches.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn small_tiles_and_split_launches_give_the_bits_of_single_steps() {
    use controllers::conformance;
    let mut c = CudaController::<f32>::new(0)
        .unwrap()
        .with_fused_limits(2048, f64::INFINITY);
    conformance::fused_launches(&mut c);
    conformance::fused_against_single_steps(&mut c);
    let mut c = CudaController::<f64>::new(0)
        .unwrap()
        .with_fused_limits(2048, f64::INFINITY);
    conformance::fused_against_single_steps(&mut c);
}

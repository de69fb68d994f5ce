//! The CUDA backend passes the conformance suite where a GPU is present
//! (the tests are ignored otherwise: run them with `--ignored`), and a
//! machine without the driver gets a clear error, never a panic.
#![cfg(feature = "cuda")]

use controllers::{controller_conformance, CudaController, DeviceError};

controller_conformance!(#[ignore = "needs an NVIDIA GPU"] cuda, <T> CudaController::<T>::new(0).unwrap_or_else(|e| {
    panic!("cannot open CUDA device 0: {e}")
}));

/// Runs everywhere: without a driver, opening a device is the one-line
/// `Unavailable` error; with one, a device that does not exist is an error.
#[test]
fn no_driver_or_no_device_is_an_error_not_a_panic() {
    match controllers::cuda::devices() {
        Err(e) => {
            assert!(
                matches!(&e, DeviceError::Unavailable(m) if m.contains("no CUDA driver")),
                "{e}"
            );
            let open = CudaController::<f32>::new(0).err();
            assert_eq!(open, Some(e));
        }
        Ok(_) => assert!(CudaController::<f32>::new(999).is_err()),
    }
}

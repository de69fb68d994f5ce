//! The OpenCL backend passes the conformance suite (on PoCL in CI: the test
//! command installs it). Without any OpenCL platform this fails with the
//! reason, rather than passing without having run.
#![cfg(feature = "opencl")]

use controllers::opencl::OclRuntime;
use controllers::{controller_conformance, GpuController, OpenClController};

controller_conformance!(opencl, <T> OpenClController::<T>::new(0, 0).unwrap_or_else(|e| {
    panic!("cannot open OpenCL platform 0, device 0: {e} (install pocl-opencl-icd)")
}));

#[test]
fn bad_platform_and_device_are_errors() {
    assert!(OpenClController::<f32>::new(99, 0).is_err());
    assert!(OpenClController::<f32>::new(0, 99).is_err());
}

// PoCL is a CPU implementation and gets no explicit groups by default;
// forcing them runs the geometry GPUs get on a real OpenCL.
controller_conformance!(opencl_gpu_groups, <T> GpuController::<_, T>::with_runtime(
    OclRuntime::new(0, 0).unwrap().gpu_groups(true)
));

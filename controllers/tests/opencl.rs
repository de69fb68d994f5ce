//! The OpenCL backend passes the conformance suite (on PoCL in CI: the test
//! command installs it). Without any OpenCL platform this fails with the
//! reason, rather than passing without having run.
#![cfg(feature = "opencl")]

use controllers::opencl::OclRuntime;
use controllers::{conformance, GpuController, OpenClController};

#[test]
fn opencl_conformance() {
    if let Err(e) = OpenClController::<f32>::new(0, 0) {
        panic!("cannot open OpenCL platform 0, device 0: {e} (install pocl-opencl-icd)");
    }
    conformance::run_all(&mut || Box::new(OpenClController::<f32>::new(0, 0).unwrap()));
}

#[test]
fn bad_platform_and_device_are_errors() {
    assert!(OpenClController::<f32>::new(99, 0).is_err());
    assert!(OpenClController::<f32>::new(0, 99).is_err());
}

#[test]
fn gpu_work_groups_conform_on_any_device() {
    // PoCL is a CPU implementation and gets no explicit groups by default;
    // forcing them runs the geometry GPUs get on a real OpenCL.
    conformance::run_all(&mut || {
        let rt = OclRuntime::new(0, 0).unwrap().gpu_groups(true);
        Box::new(GpuController::<_, f32>::with_runtime(rt))
    });
}

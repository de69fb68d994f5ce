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

// PoCL is a CPU implementation and gets whole-row groups; forcing GPU
// groups runs the geometry GPUs get on a real OpenCL.
controller_conformance!(opencl_gpu_groups, <T> GpuController::<_, T>::with_runtime(
    OclRuntime::new(0, 0).unwrap().gpu_groups(true)
));

/// The device timeline of an iteration: a halo-sized write on the main lane
/// can complete while a long kernel on the side lane is still running (the
/// inner region no longer holds up its halos), and always queues behind the
/// same kernel on the main lane (so the check can tell the two apart).
/// PoCL's scheduler sometimes runs the write only after the kernel's last
/// work-group, so the side lane gets up to 20 tries (it overlapped in 6 of
/// 10 on an idle machine, 9 of 10 under load); one queue never overlaps.
#[test]
fn halo_writes_overlap_a_side_lane_kernel() {
    use controllers::gpu::geometry::plan_launch;
    use controllers::gpu::{CopyPiece, DeviceRuntime, Lane};
    use kernels::device::exprs;
    use kernels::{Dialect, Library};

    let mut rt = OclRuntime::new(0, 0).unwrap();
    let source = exprs::library::<f32>(Library::S3d27).source(Dialect::OpenCl);
    let k = rt.compile(&source).unwrap();
    let n = 162usize;
    let bytes = n * n * n * 4;
    let (a, b) = (rt.alloc(bytes).unwrap(), rt.alloc(bytes).unwrap());
    let halo = rt.alloc(4 * n * n).unwrap();
    let row = vec![0u8; 4 * n * n];
    let g = plan_launch(&[n; 3], &vec![1..n - 1; 3], &[1; 3], k.hints, false).unwrap();
    // Warm-up: PoCL compiles for the work-group shape at the first launch.
    // SAFETY: the region 1..n-1 of an n^3 allocation and its 27-point
    // neighbourhood lie inside both buffers.
    let warm = unsafe {
        rt.launch(
            Lane::Main,
            &k.kernel,
            &a,
            &b,
            &g.longs,
            &[],
            g.grid,
            g.group,
        )
    };
    drop(warm.unwrap());
    rt.finish().unwrap();
    let mut write_during_kernel = |lane: Lane| {
        // SAFETY: as above.
        let ev =
            unsafe { rt.launch(lane, &k.kernel, &a, &b, &g.longs, &[], g.grid, g.group) }.unwrap();
        let piece = CopyPiece::Run {
            offset: 0,
            bytes: row.len(),
        };
        rt.write(&halo, &piece, &row).unwrap();
        let overlapped = !ev.is_complete().unwrap();
        rt.finish().unwrap();
        assert!(ev.is_complete().unwrap());
        overlapped
    };
    for _ in 0..3 {
        assert!(
            !write_during_kernel(Lane::Main),
            "a write on the kernel's own queue completed before the kernel"
        );
    }
    assert!(
        (0..20).any(|_| write_during_kernel(Lane::Side)),
        "a write never completed while a side-lane kernel ran: the lanes are not concurrent"
    );
}

/// Fused kernels in 2 KiB of local memory on a real OpenCL: many work
/// groups a launch, partial tiles, and step counts that do not fit split
/// into several launches through scratch levels.
#[test]
fn small_tiles_and_split_launches_give_the_bits_of_single_steps() {
    use controllers::conformance;
    let mut c = OpenClController::<f32>::new(0, 0)
        .unwrap()
        .with_fused_limits(2048, f64::INFINITY);
    conformance::fused_launches(&mut c);
    conformance::fused_against_single_steps(&mut c);
    let mut c = OpenClController::<f64>::new(0, 0)
        .unwrap()
        .with_fused_limits(2048, f64::INFINITY);
    conformance::fused_against_single_steps(&mut c);
}

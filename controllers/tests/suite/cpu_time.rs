//! Kernels' CPU time is measured only while asked for: each measurement is
//! two system calls per launch. In a process of its own, since the switch
//! is process-wide and another test measuring at the same time would turn
//! it on here.

use controllers::{cpu_time, Controller, CpuController, FusedSteps};
use epsilod_testkit::process::in_own_process;
use hitmap::Shape;
use kernels::{library_kernel, KernelChoice, Library};
use std::sync::Arc;

#[test]
#[cfg(target_os = "linux")]
fn cpu_time_is_charged_only_while_a_guard_lives() {
    in_own_process(
        "cpu_time::cpu_time_is_charged_only_while_a_guard_lives",
        &[],
        charged_only_while_a_guard_lives,
    );
}

#[cfg(target_os = "linux")]
fn charged_only_while_a_guard_lives() {
    for threads in [1, 2] {
        let mut cpu = CpuController::<f32>::new(threads).unwrap();
        let all = Shape::from_sizes(&[514, 514]);
        let inner = Shape::from_ranges(&[(1, 513), (1, 513)]);
        let (a, b) = (
            cpu.alloc(&all, &all).unwrap(),
            cpu.alloc(&all, &all).unwrap(),
        );
        let k = cpu
            .load(Arc::from(library_kernel::<f32>(
                Library::S2d4,
                KernelChoice::Specialized,
            )))
            .unwrap();
        let steps = [inner.clone(), Shape::from_ranges(&[(2, 512), (2, 512)])];
        let launch_both = |cpu: &mut CpuController<f32>| {
            cpu.launch(k, a, b, &inner).unwrap();
            cpu.launch_steps(k, a, b, &steps).unwrap();
        };

        assert!(!cpu_time::measuring());
        launch_both(&mut cpu);
        assert_eq!(cpu_time::take_charged(), None, "{threads} threads, off");

        let outer = cpu_time::measure();
        let inner_guard = cpu_time::measure();
        drop(inner_guard);
        assert!(cpu_time::measuring(), "one guard still lives");
        launch_both(&mut cpu);
        let charged = cpu_time::take_charged().expect("Linux has thread CPU clocks");
        assert!(charged.seconds > 0.0, "{threads} threads: {charged:?}");

        drop(outer);
        assert!(!cpu_time::measuring());
        launch_both(&mut cpu);
        assert_eq!(
            cpu_time::take_charged(),
            None,
            "{threads} threads, off again"
        );
    }
}

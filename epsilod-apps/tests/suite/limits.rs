//! Inputs at the edge: a run too large for memory is refused with the
//! run's memory error before an app builds anything (image, tables), and
//! parameters are checked as the kernel will see them, in f32.

use epsilod::error::SetupError;
use epsilod::{Cluster, Library, RunError, RunOptions};
use epsilod_apps::{all, find, wavesim, App, AppError, ParamError, Params, StencilApp};
use std::sync::Mutex;

/// A process joins one cluster at a time: the tests that run apps take
/// turns.
fn in_cluster<R>(f: impl FnOnce(&Cluster) -> R) -> R {
    static JOINED: Mutex<()> = Mutex::new(());
    let _turn = JOINED.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = Cluster::join(epsilod::Launch::ALONE).unwrap();
    f(&cluster)
}

/// Every app, and a library stencil, asked for 10^12 cells (4 TB of f32):
/// the memory error, where the host's memory is known (gaussian built its
/// 4 TB image first and aborted).
#[test]
fn a_run_too_large_for_memory_is_refused_before_anything_is_built() {
    // Elsewhere the host's memory is not known, and the run not refused.
    if !cfg!(target_os = "linux") {
        return;
    }
    let library = StencilApp::library("2d4", Library::by_name("2d4").unwrap());
    let apps: Vec<&dyn App> = all()
        .iter()
        .copied()
        .chain([&library as &dyn App])
        .collect();
    in_cluster(|cluster| {
        for app in apps {
            // 10^12 cells: terabytes, which a host's address space still holds.
            let size = vec![10usize.pow(12 / app.ndims() as u32); app.ndims()];
            let params = Params::parse(app, &[]).unwrap();
            let err = match app.run(&size, &params, &RunOptions::default(), cluster) {
                Err(e) => e,
                Ok(_) => panic!("{} ran on {size:?}", app.name()),
            };
            assert!(
                matches!(
                    err,
                    AppError::Run(RunError::Setup(SetupError::Memory { .. }))
                ),
                "{}: {err}",
                app.name()
            );
            assert!(err.to_string().starts_with("the run needs "), "{err}");
        }
    });
}

/// A number f64 holds and f32 does not is refused as infinity is, naming
/// the type; values within f32 pass, and an app's own words for one of
/// its parameters (gaussian's sigma) stay its own.
#[test]
fn parameters_are_checked_in_f32() {
    let w = find("wavesim").unwrap();
    for (given, why) in [
        ("dt=1e39", "--param dt=1e39: not a finite number in f32"),
        (
            "dt=-3.5e38",
            "--param dt=-3.5e38: not a finite number in f32",
        ),
        ("dt=inf", "--param dt=inf: not a finite number"),
    ] {
        let e = Params::parse(w, &[given.into()]).unwrap_err();
        assert!(e.to_string().starts_with(why), "{given}: {e}");
    }
    assert_eq!(
        Params::parse(w, &["dt=1e39".into()]),
        Err(ParamError::NotF32 {
            name: "dt".into(),
            value: "1e39".into()
        })
    );
    let p = Params::parse(w, &["dt=3.4e38".into()]).unwrap();
    assert_eq!(p.get_f32("dt"), Ok(Some(3.4e38f32)));
    let g = find("gaussian").unwrap();
    assert_eq!(
        Params::parse(g, &["sigma=1e39".into()])
            .unwrap_err()
            .to_string(),
        "--param sigma=1e39: sigma must be a number above 0 that an f32 holds (1.2e-38 to 3.4e38)"
    );
}

/// EPSILOD's wavesim runs `(int)((float)T/dt)` iterations: the int made a
/// float, divided in float, truncated.
#[test]
fn wavesim_iterations_follow_epsilods_t_over_dt() {
    assert_eq!(wavesim::iterations(100, 0.25), Some(400));
    assert_eq!(wavesim::iterations(1, 0.3), Some(3));
    // 9 / 0.09f is 99.99999 in float: 99, where decimal says 100.
    assert_eq!(wavesim::iterations(9, 0.09), Some(99));
    assert_eq!(wavesim::iterations(15, 0.3), Some(49));
    // 16777217 is 16777216 as a float.
    assert_eq!(wavesim::iterations(16_777_217, 1.0), Some(16_777_216));
    assert_eq!(wavesim::iterations(0, 0.25), Some(0));
    assert_eq!(wavesim::iterations(1, -0.5), None);
    assert_eq!(wavesim::iterations(1, 0.0), None);
    assert_eq!(wavesim::iterations(0, 0.0), None);
    assert_eq!(wavesim::iterations(i32::MAX, 0.5), None);
}

/// `--param T` checks the run's iterations against EPSILOD's count, before
/// anything runs; a T that is no int, or gives no count, is refused.
#[test]
fn wavesim_t_checks_the_iterations() {
    let w = find("wavesim").unwrap();
    let parse =
        |given: &[&str]| Params::parse(w, &given.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(parse(&[]).unwrap().given("T"), Ok(None));
    assert_eq!(parse(&["T=100"]).unwrap().given("T"), Ok(Some(100.0)));
    for (given, why) in [
        (
            &["T=1.5"][..],
            "--param T=1.5: T is a whole number from 0 to 2147483647 (EPSILOD reads an int)",
        ),
        (
            &["T=-1"],
            "--param T=-1: T is a whole number from 0 to 2147483647 (EPSILOD reads an int)",
        ),
        (
            &["T=100", "dt=0"],
            "--param T=100: (int)((float)T/dt), the iterations EPSILOD runs, must be a whole number from 0 to 2147483647: give a dt above 0 that makes it one",
        ),
    ] {
        assert_eq!(parse(given).unwrap_err().to_string(), why, "{given:?}");
    }
    let params = parse(&["T=9", "dt=0.09"]).unwrap();
    let options = |iters| RunOptions {
        iters,
        ..RunOptions::default()
    };
    in_cluster(|cluster| {
        let err = w
            .run(&[10, 10], &params, &options(100), cluster)
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "--param T=9 at dt=0.09 is 99 iterations (EPSILOD runs (int)((float)T/dt)), not 100: give --iters 99, or leave T out"
        );
        let out = w.run(&[10, 10], &params, &options(99), cluster).unwrap();
        assert_eq!(out.report.config.iters, 99);
    });
}

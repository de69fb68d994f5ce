//! wavesim's, laplace's and poisson's CPU row kernels (the apps' stencils)
//! give the bits of their update expressions evaluated by the expression
//! kernel, on random cells (so no term is zero by accident), on one device
//! and on two that split the rows (each with its own global origin).

use epsilod::{DeviceSpec, KernelKind, Partition, Skeleton, Stencil};
use epsilod_apps::{laplace, poisson, wavesim};
use epsilod_testkit::bits;

/// A value in -4..4 with a scrambled fraction, from the global index.
fn random(salt: u64) -> impl Fn(&[i64]) -> f32 + Send + Sync + Clone + 'static {
    move |g: &[i64]| {
        let mut h = salt;
        for &x in g {
            h = (h ^ x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^= h >> 29;
        }
        (h >> 40) as f32 / (1u64 << 21) as f32 - 4.0
    }
}

/// The row kernel's run and the expression's, on one device and on two,
/// have the same bits; the row kernel is what the app's stencil runs.
fn same_as_expression(size: &[usize], rows: Stencil<f32>, expr: Stencil<f32>, previous: bool) {
    assert_eq!(
        rows.kind,
        KernelKind::Custom,
        "{}: the row kernel",
        rows.name
    );
    assert_eq!(expr.kind, KernelKind::Expression);
    let run = |stencil: Stencil<f32>, devices: Vec<DeviceSpec>| {
        let mut s = Skeleton::new(size, stencil)
            .iterations(4)
            .init(random(1))
            .devices(devices)
            .partition(Partition::Multi);
        if previous {
            s = s.init_previous(random(2));
        }
        bits(&s.run().unwrap().grid)
    };
    for devices in [vec![DeviceSpec::cpu(1)], vec![DeviceSpec::cpu(1); 2]] {
        let n = devices.len();
        let want = run(expr.clone(), devices.clone());
        assert_eq!(
            run(rows.clone(), devices),
            want,
            "{}, {n} devices",
            rows.name
        );
    }
}

#[test]
fn wavesim_rows_are_its_expression() {
    // A row longer than a vector (both loops run), an interior one cell
    // wide (clamped on both sides) and one two cells wide.
    for size in [[21usize, 37], [9, 3], [6, 4]] {
        let expr = Stencil::from_expr(&wavesim::spec(&size, 0.3));
        same_as_expression(&size, wavesim::stencil(&size, 0.3), expr, true);
    }
}

#[test]
fn laplace_rows_are_its_expression() {
    let size = [9usize, 7, 29];
    let expr = Stencil::from_expr(&laplace::spec(&size));
    same_as_expression(&size, laplace::stencil(&size), expr, false);
}

#[test]
fn poisson_rows_are_its_expression() {
    // Both sources inside the interior, on rows of either device.
    for size in [[21usize, 37], [8, 5]] {
        let expr = Stencil::from_expr(&poisson::spec(&size));
        same_as_expression(&size, poisson::stencil(&size), expr, false);
    }
}

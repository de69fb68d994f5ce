//! The gas simulation: the same bits on any layout, and the physics'
//! conservation laws.

use epsilod::{DeviceSpec, Partition, Skeleton};
use epsilod_apps::gas::{self, GasCell};
use kernels::reference;
use ndarray::{ArrayD, Dimension};

use epsilod_testkit::bits;

fn run(
    user: [usize; 3],
    iters: u64,
    devs: usize,
    part: Partition,
    init: impl Fn(&[i64]) -> GasCell + Send + Sync + 'static,
) -> ArrayD<GasCell> {
    let devices = (0..devs)
        .map(|i| DeviceSpec {
            weight: 1.0 + i as f64,
            ..DeviceSpec::cpu(1)
        })
        .collect();
    Skeleton::new(&gas::global_size(user), gas::stencil())
        .iterations(iters)
        .init(init)
        .devices(devices)
        .partition(part)
        .run()
        .unwrap()
        .grid
}

#[test]
fn same_bits_on_every_layout_and_as_the_serial_reference() {
    // Large enough for the obstacle sphere (centre x = y = 50, z = 8) to matter.
    let user = [64, 60, 18];
    let one = run(user, 12, 1, Partition::Multi, gas::init(user));
    let size = gas::global_size(user);
    let want = reference::run(&size, &[1; 3], &[1; 3], 12, gas::init(user), |x| {
        gas::step_with(|o| x(o))
    });
    assert_eq!(bits(&one), bits(&want), "one device vs serial reference");
    for devs in 2..=4 {
        for part in [
            Partition::Multi,
            Partition::Single(0),
            Partition::Single(2),
            Partition::Weighted(0),
        ] {
            let got = run(user, 12, devs, part, gas::init(user));
            assert_eq!(bits(&got), bits(&one), "{devs} devices, {part}");
        }
    }
    // The flow did something: fluid cells left their initial equilibrium.
    let init = gas::init(user);
    let moved = one.indexed_iter().filter(|(ix, c)| {
        let g: Vec<i64> = ix.slice().iter().map(|&i| i as i64).collect();
        c[0].is_finite() && **c != init(&g)
    });
    assert!(moved.count() > 1000);
}

/// Deep halos carry the 19-float cells and the custom kernel's rings: the
/// bits of depth 1 at depths 2 and 5, blocks and slabs.
#[test]
fn deep_halos_give_the_same_bits() {
    let user = [40, 36, 12];
    let want = run(user, 11, 1, Partition::Multi, gas::init(user));
    for (depth, part) in [(2, Partition::Multi), (5, Partition::Single(0))] {
        let got = Skeleton::new(&gas::global_size(user), gas::stencil())
            .iterations(11)
            .init(gas::init(user))
            .devices(vec![DeviceSpec::cpu(1); 3])
            .partition(part)
            .halo_depth(epsilod::HaloDepth::Depth(depth))
            .run()
            .unwrap()
            .grid;
        assert_eq!(bits(&got), bits(&want), "depth {depth}, {part}");
    }
}

/// Total mass of a closed box: fluid populations, and the moving populations
/// (slots 1..19) of the bounce-back walls.
fn mass(grid: &ArrayD<GasCell>) -> f64 {
    grid.iter()
        .map(|c| {
            let from = if c[0] == f32::NEG_INFINITY { 1 } else { 0 };
            c[from..].iter().map(|&v| v as f64).sum::<f64>()
        })
        .sum()
}

#[test]
fn a_closed_box_conserves_mass() {
    // Bounce-back walls all around, a fluid at rest with a density bump.
    let user = [14, 12, 10];
    let init = move |g: &[i64]| -> GasCell {
        let inside = (0..3).all(|d| g[d] >= 1 && g[d] <= user[d] as i64);
        if !inside {
            return [0.0; 19];
        }
        let wall = (0..3).any(|d| g[d] == 1 || g[d] == user[d] as i64);
        let bump = if g[0] == 6 && g[1] == 6 && g[2] == 5 {
            0.5
        } else {
            0.0
        };
        let mut c: GasCell = std::array::from_fn(|q| gas::feq(q, 1.0 + bump, [0.0; 3]));
        if wall {
            c[0] = f32::NEG_INFINITY;
        }
        c
    };
    // Walls send their outward populations into the border once, on the first
    // step; from then on nothing leaves the box.
    let after1 = mass(&run(user, 1, 2, Partition::Single(0), init));
    let after60 = mass(&run(user, 60, 2, Partition::Single(0), init));
    assert!(
        ((after60 - after1) / after1).abs() < 1e-5,
        "{after1} -> {after60}"
    );
    // And the bump spread: the flow is not standing still.
    let grid = run(user, 60, 2, Partition::Single(0), init);
    let centre: f32 = grid[[6, 6, 5]].iter().sum();
    assert!(centre < 1.4, "{centre}");
}

/// A cell whose neighbours are all itself: streaming changes nothing, so
/// the update is the collision alone.
fn collide(cell: GasCell) -> GasCell {
    gas::step_with(|_| cell)
}

fn moments(c: &GasCell) -> [f64; 4] {
    let mut m = [0.0f64; 4];
    for (q, &f) in c.iter().enumerate() {
        m[0] += f as f64;
        for (a, &e) in gas::E[q].iter().enumerate() {
            m[a + 1] += e as f64 * f as f64;
        }
    }
    m
}

/// Physics checked independently of the update's own code: the collision
/// conserves density and momentum, and equilibrium is its fixed point.
#[test]
fn the_collision_conserves_density_and_momentum_and_keeps_equilibrium() {
    let mut rng = epsilod_testkit::Lcg(11);
    for _ in 0..200 {
        let mut cell = [0.0f32; 19];
        for f in cell.iter_mut() {
            *f = 0.01 + 0.1 * rng.uniform() as f32;
        }
        let (before, after) = (moments(&cell), moments(&collide(cell)));
        for k in 0..4 {
            assert!(
                (before[k] - after[k]).abs() < 2e-6,
                "moment {k}: {} -> {}",
                before[k],
                after[k]
            );
        }
        let p = 0.5 + rng.uniform() as f32;
        let v = [
            0.1 * rng.uniform() as f32,
            -0.05 * rng.uniform() as f32,
            0.02,
        ];
        let eq: GasCell = std::array::from_fn(|q| gas::feq(q, p, v));
        let next = collide(eq);
        for q in 0..19 {
            assert!(
                (next[q] - eq[q]).abs() < 2e-6,
                "population {q}: {} -> {}",
                eq[q],
                next[q]
            );
        }
    }
}

#[test]
fn tables_are_consistent() {
    for q in 0..19 {
        let (a, b) = (gas::E[q], gas::E[gas::OPPOSITE[q]]);
        assert_eq!([a[0] + b[0], a[1] + b[1], a[2] + b[2]], [0, 0, 0]);
    }
    // At rest, feq is each direction's weight times the density.
    let w: f32 = (0..19).map(|q| gas::feq(q, 1.0, [0.0; 3])).sum();
    assert!((w - 1.0).abs() < 1e-6);
    // feq conserves density and momentum (to rounding).
    let v = [0.05, -0.02, 0.01];
    let p: f32 = (0..19).map(|q| gas::feq(q, 1.3, v)).sum();
    assert!((p - 1.3).abs() < 1e-5, "{p}");
    let mx: f32 = (0..19)
        .map(|q| gas::E[q][0] as f32 * gas::feq(q, 1.3, v))
        .sum();
    assert!((mx - 1.3 * 0.05).abs() < 1e-5, "{mx}");
}

#[test]
fn init_geometry() {
    let user = [60, 60, 30];
    let f = gas::init(user);
    assert_eq!(f(&[0, 5, 5]), [0.0; 19], "border");
    assert_eq!(f(&[5, 1, 5])[0], f32::INFINITY, "x = 0: inflow");
    assert_eq!(f(&[5, 59, 5])[0], f32::NEG_INFINITY, "x = s-2: wall");
    assert_eq!(f(&[5, 60, 5])[0], f32::INFINITY, "x = s-1: keep");
    assert_eq!(f(&[51, 51, 9])[0], f32::NEG_INFINITY, "sphere centre");
    let fluid = f(&[20, 20, 20]);
    assert_eq!(fluid[0], gas::feq(0, 1.0, [0.1, 0.0, 0.0]));
}

#[test]
fn the_device_kernel_is_one_body_for_every_dialect() {
    let k = gas::device_kernel();
    for d in epsilod::Dialect::ALL {
        let planes = k.source_in(d, epsilod::CellLayout::Planes).unwrap();
        assert!(planes.contains(k.body()), "{d}: in planes");
        assert!(
            planes.contains("#define PART_AT(p, i, q) ((p)[(i) + (index_t)(q) * np])"),
            "{planes}"
        );
        let s = k.source(d);
        assert!(s.contains(k.body()), "{d}");
        assert!(
            s.contains(
                "int OPP[19] = {0, 2, 1, 4, 3, 6, 5, 10, 9, 8, 7, 14, 13, 12, 11, 18, 17, 16, 15};"
            ),
            "{s}"
        );
        assert!(
            s.contains("float W[19] = {0.33333334f, 0.055555556f,"),
            "{s}"
        );
    }
    assert!(!k.body().contains("__global") && !k.body().contains("long"));
    assert_eq!(k.cell().bytes(), std::mem::size_of::<GasCell>());
}

/// The update as it was first written for the CPU, a cell at a time and
/// `feq` per population, with the reference's operations in their order:
/// what the row kernel's bits are held to.
fn first_written(at: impl Fn(&[i64]) -> GasCell) -> GasCell {
    const C: f32 = 1.0;
    let me = at(&[0, 0, 0]);
    if me[0] == f32::INFINITY {
        return me;
    }
    let mut d = me;
    for (q, dq) in d.iter_mut().enumerate().skip(1) {
        let e = gas::E[q];
        *dq = at(&[e[1], e[0], e[2]])[q];
    }
    if d[0] == f32::NEG_INFINITY {
        let streamed = d;
        for q in 1..19 {
            d[q] = streamed[gas::OPPOSITE[q]];
        }
        return d;
    }
    let feq = |i: usize, p: f32, v: [f32; 3]| {
        let e = gas::E[i];
        let w = match i {
            0 => 1.0f32 / 3.0,
            1..=6 => 1.0f32 / 18.0,
            _ => 1.0f32 / 36.0,
        };
        let d = (C * e[0] as f32) * v[0] + (C * e[1] as f32) * v[1] + (C * e[2] as f32) * v[2];
        let vv = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        w * p * (1.0 + (1.0 / (C * C)) * (3.0 * d + (9.0 / (2.0 * C * C)) * d * d - 1.5 * vv))
    };
    let mut p = 0.0f32;
    for x in d {
        p += x;
    }
    let mut v = [0.0f32; 3];
    for (q, dq) in d.iter().enumerate() {
        for (a, va) in v.iter_mut().enumerate() {
            *va += (C * gas::E[q][a] as f32) * dq;
        }
    }
    if p != 0.0 {
        let r = 1.0 / p;
        v = v.map(|c| c * r);
    }
    let k = 1.0f32 / 0.65;
    for (q, dq) in d.iter_mut().enumerate() {
        *dq += k * (feq(q, p, v) - *dq);
    }
    d
}

/// Cells of every kind at random: fluid of random populations, some
/// -0.0 ones, all-zero cells (density 0), keep (+inf) and bounce-back
/// (-inf) cells; the border zeros.
fn scrambled(user: [usize; 3]) -> impl Fn(&[i64]) -> GasCell + Send + Sync + Clone {
    move |g: &[i64]| {
        if !(0..3).all(|d| g[d] >= 1 && g[d] <= user[d] as i64) {
            return [0.0; 19];
        }
        let mut rng = epsilod_testkit::Lcg((g[0] * 10_007 + g[1] * 101 + g[2]) as u64);
        let mut c: GasCell = std::array::from_fn(|_| 0.2 * rng.uniform() as f32);
        match (rng.uniform() * 8.0) as u32 {
            0 => c[0] = f32::INFINITY,
            1 => c[0] = f32::NEG_INFINITY,
            2 => c = [0.0; 19],
            3 => c[1 + (rng.uniform() * 18.0) as usize] = -0.0,
            _ => {}
        }
        c
    }
}

/// The row kernel (the app's stencil), the same update a cell at a time
/// through a neighbourhood (`gas::step`) and the first-written update run
/// serially give the same bits, on one thread and on devices that split
/// the rows.
#[test]
fn the_row_kernel_has_the_bits_of_the_cell_update_and_the_first_written_one() {
    let user = [11, 9, 21];
    let size = gas::global_size(user);
    let iters = 5;
    let want = reference::run(&size, &[1; 3], &[1; 3], iters, scrambled(user), |x| {
        first_written(|o| x(o))
    });
    let cells = epsilod::Custom::new("gas-cells", gas::footprint(), gas::step);
    let by_cell = epsilod::Stencil::custom(std::sync::Arc::new(cells), vec![1; 3], vec![1; 3]);
    for (stencil, what) in [(gas::stencil(), "rows"), (by_cell, "cells")] {
        for devices in [vec![DeviceSpec::cpu(1)], vec![DeviceSpec::cpu(2); 2]] {
            let n = devices.len();
            let got = Skeleton::new(&size, stencil.clone())
                .iterations(iters as u64)
                .init(scrambled(user))
                .devices(devices)
                .partition(Partition::Multi)
                .run()
                .unwrap()
                .grid;
            assert_eq!(bits(&got), bits(&want), "{what}, {n} devices");
        }
    }
    // Every kind of cell is there, and the fluid moved.
    let init = scrambled(user);
    let any_cell = |f: fn(f32) -> bool| gas::user_domain(user).iter().any(|g| f(init(&g)[0]));
    assert!(any_cell(|x| x == f32::INFINITY) && any_cell(|x| x == f32::NEG_INFINITY));
    assert!(any_cell(|x| x == 0.0));
    assert_ne!(bits(&want), {
        let zero = reference::run(&size, &[1; 3], &[1; 3], 0, scrambled(user), |x| {
            x(&[0, 0, 0])
        });
        bits(&zero)
    });
}

//! Spec expressions against the specialised library kernel, alternated
//! step by step and each timed by its fastest step: on a shared machine
//! the minimum is what the code costs, where criterion's median also
//! measures the neighbours. Prints `expression / specialised` speed.
//!
//! `cargo run --release -p benches --example expr_ratio [steps] [2d4|3d27]`
//! on one thread; `EXPR_RATIO_THREADS=N` launches on a CPU device of N
//! threads instead (as the criterion bench does), `EXPR_RATIO_ONLY=0|1`
//! runs only the specialised or the expression kernel,
//! `EXPR_RATIO_CONTROL=1` the specialised kernel in both places.

use controllers::{Controller, CpuController};
use hitmap::Shape;
use kernels::{launch_serial, ExprKernel, ExprSpec, Frame, Kernel, Library, Specialized};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ratio(lib: Library, sizes: &[usize], update: &str, steps: usize) {
    let spec = lib.spec();
    let expr = ExprSpec::from_toml(
        &format!(
            "name = \"e\"\nlow = {:?}\nhigh = {:?}\nupdate = \"{update}\"\n",
            spec.low, spec.high
        ),
        "bench",
    )
    .expect("the bench's expression parses");
    let kernels: [Arc<dyn Kernel<f32>>; 2] = [
        Arc::new(Specialized::new(lib)),
        if std::env::var_os("EXPR_RATIO_CONTROL").is_some() {
            // The specialised kernel against itself: the harness's own bias.
            Arc::new(Specialized::new(lib))
        } else {
            Arc::new(ExprKernel::<f32>::new(&expr))
        },
    ];
    let threads: Option<usize> = std::env::var("EXPR_RATIO_THREADS")
        .ok()
        .and_then(|t| t.parse().ok());
    let frame = Frame::row_major(sizes);
    let cells: usize = sizes.iter().product();
    let src: Vec<f32> = (0..cells).map(|i| (i % 97) as f32).collect();
    let mut dst = vec![0.0f32; cells];
    let region: Vec<_> = sizes.iter().map(|&n| 1..n - 1).collect();
    let all = Shape::from_sizes(sizes);
    let interior = all.shrink(&vec![1; sizes.len()], &vec![1; sizes.len()]);
    let mut device = threads.map(|n| {
        let mut dev = CpuController::<f32>::new(n).expect("a CPU device");
        let ids = kernels.clone().map(|k| dev.load(k).expect("loads"));
        let (a, b) = (
            dev.alloc(&all, &all).unwrap(),
            dev.alloc(&all, &all).unwrap(),
        );
        dev.write(a, &all, &src).unwrap();
        dev.write(b, &all, &src).unwrap();
        (dev, ids, a, b)
    });
    let mut best = [Duration::MAX; 2];
    for _ in 0..steps {
        for (i, (k, b)) in kernels.iter().zip(&mut best).enumerate().rev() {
            if std::env::var("EXPR_RATIO_ONLY").is_ok_and(|o| o != i.to_string()) {
                continue;
            }
            let t = Instant::now();
            match &mut device {
                Some((dev, ids, a, bb)) => dev.launch(ids[i], *a, *bb, &interior).expect("fits"),
                None => launch_serial(k.as_ref(), &src, &mut dst, &frame, &region).expect("fits"),
            }
            *b = (*b).min(t.elapsed());
        }
    }
    println!(
        "{:?} {sizes:?}: specialised {:.2} ms, expression {:.2} ms, expression/specialised speed {:.3}",
        lib,
        best[0].as_secs_f64() * 1e3,
        best[1].as_secs_f64() * 1e3,
        best[0].as_secs_f64() / best[1].as_secs_f64()
    );
}

fn main() {
    let steps = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let only = std::env::args().nth(2);
    let want = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if want("2d4") {
        ratio(
            Library::S2d4,
            &[4098, 4098],
            "(u[-1,0] + u[1,0] + u[0,-1] + u[0,1]) / 4",
            steps,
        );
    }
    let all27: Vec<String> = (0..27)
        .map(|k| format!("u[{},{},{}]", k / 9 - 1, (k / 3) % 3 - 1, k % 3 - 1))
        .collect();
    if want("3d27") {
        ratio(
            Library::S3d27,
            &[258, 258, 258],
            &format!("({}) / 27", all27.join(" + ")),
            steps,
        );
    }
}

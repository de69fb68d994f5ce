//! K fused steps against K one-step launches on one CPU device, alternated
//! in one process: each repetition runs both over the interior of a cube
//! of a library stencil and prints their cell updates per second of wall
//! time and per second of the process's CPU time. CPU time is what a
//! loaded machine still measures: a thread the OS takes away costs wall
//! time but no CPU time (and a thread left idle the reverse).
//!
//! ```text
//! cargo run --release -p benches --example fused_cpu -- 3d6 514 [--steps 4] [--reps 5] [--threads 2]
//! ```

use controllers::registry::MAX_THREADS;
use controllers::{Controller, CpuController, FusedSteps};
use hitmap::Shape;
use kernels::{library_kernel, KernelChoice, Library};
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

struct Args {
    lib: Library,
    dims: usize,
    n: usize,
    steps: usize,
    reps: usize,
    threads: usize,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let (lib, dims) = match args.first().map(String::as_str) {
        Some("2d4") => (Library::S2d4, 2),
        Some("3d6") => (Library::S3d6, 3),
        Some("3d27") => (Library::S3d27, 3),
        Some("4d8") => (Library::S4d8, 4),
        Some(other) => return Err(format!("'{other}': expected 2d4, 3d6, 3d27 or 4d8")),
        None => return Err("no stencil: expected 2d4, 3d6, 3d27 or 4d8".into()),
    };
    let num = |s: &str| match s.parse::<usize>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("'{s}' is not a whole number > 0")),
    };
    let n = num(args.get(1).ok_or("no size")?)?;
    if n < 3 {
        return Err(format!("size {n}: at least 3"));
    }
    let mut a = Args {
        lib,
        dims,
        n,
        steps: 4,
        reps: 5,
        threads: 2,
    };
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let v = num(rest.next().ok_or(format!("{flag}: no value"))?)?;
        match flag.as_str() {
            "--steps" => a.steps = v,
            "--reps" => a.reps = v,
            "--threads" => a.threads = v,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    // CpuController::new takes any count: the bound a device string has.
    if a.threads > MAX_THREADS {
        return Err(format!("--threads {}: at most {MAX_THREADS}", a.threads));
    }
    // The grid and the device's two levels, each of f32 cells: a size past
    // what can be addressed would panic where it is allocated.
    let bytes = n
        .checked_pow(dims as u32)
        .and_then(|cells| cells.checked_mul(3 * std::mem::size_of::<f32>()));
    if bytes.is_none_or(|b| b > isize::MAX as usize) {
        return Err(format!(
            "size {n}: {n}^{dims} cells are more than memory holds"
        ));
    }
    Ok(a)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let status = program(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(status);
}

/// The program on `args`: the table on `out`, or one line on `err` and
/// status 2 for bad arguments (before anything is printed: a step count
/// the device cannot fuse included), 1 for a device's error.
fn program(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut fail = |status, e: &dyn std::fmt::Display| {
        let _ = writeln!(err, "error: {e}");
        status
    };
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => return fail(2, &e),
    };
    let mut dev = match CpuController::<f32>::new(a.threads) {
        Ok(d) => d,
        Err(e) => return fail(1, &e),
    };
    let most = dev.fused_steps();
    if a.steps > most {
        return fail(
            2,
            &format!(
                "--steps {}: at most {most}, the steps one CPU launch fuses",
                a.steps
            ),
        );
    }
    match run(&a, dev, out) {
        Ok(()) => 0,
        Err(e) => fail(1, &e),
    }
}

fn run(
    a: &Args,
    mut dev: CpuController<f32>,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    let all = Shape::from_sizes(&vec![a.n; a.dims]);
    let interior = all.shrink(&vec![1; a.dims], &vec![1; a.dims]);
    let src: Vec<f32> = (0..all.card()).map(|i| (i % 97) as f32).collect();
    let k = dev.load(Arc::from(library_kernel::<f32>(
        a.lib,
        KernelChoice::Specialized,
    )))?;
    let (x, y) = (dev.alloc(&all, &all)?, dev.alloc(&all, &all)?);
    dev.write(x, &all, &src)?;
    dev.write(y, &all, &src)?;
    drop(src);
    let steps = vec![interior.clone(); a.steps];
    let updates = (interior.card() * a.steps) as f64 / 1e9;
    writeln!(
        out,
        "rep  one-step G/s  (per CPU s)  fused G/s  (per CPU s)"
    )?;
    for rep in 0..a.reps {
        let mut line = format!("{rep:>3}");
        for fused in [false, true] {
            let (t, c) = (Instant::now(), benches::process_cpu_seconds());
            if fused {
                dev.launch_steps(k, x, y, &steps)?;
            } else {
                let (mut p, mut q) = (x, y);
                for s in &steps {
                    dev.launch(k, p, q, s)?;
                    std::mem::swap(&mut p, &mut q);
                }
            }
            let wall = t.elapsed().as_secs_f64();
            let cpu = c
                .zip(benches::process_cpu_seconds())
                .map(|(c0, c1)| c1 - c0);
            line += &format!("  {:>12.3}", updates / wall);
            line += &match cpu {
                Some(s) if s > 0.0 => format!("  {:>11.3}", updates / s),
                _ => format!("  {:>11}", "-"),
            };
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::program;

    /// `program` on `args`: its status, what it printed and its errors.
    fn outcome(args: &str) -> (i32, String, String) {
        let args: Vec<String> = args.split(' ').map(String::from).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = program(&args, &mut out, &mut err);
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (status, text(out), text(err))
    }

    /// A bad argument is one line and nothing else: a step count past what
    /// a CPU launch fuses printed the table's header before its error, a
    /// grid past what can be addressed panicked, and any thread count ran.
    #[test]
    fn bad_arguments_print_one_line_and_nothing_before() {
        for (args, line) in [
            (
                "2d4 8 --steps 17 --threads 1",
                "error: --steps 17: at most 16, the steps one CPU launch fuses\n",
            ),
            ("2d4 8 --reps 0", "error: '0' is not a whole number > 0\n"),
            ("2d4 8 --steps", "error: --steps: no value\n"),
            (
                "4d8 100000",
                "error: size 100000: 100000^4 cells are more than memory holds\n",
            ),
            (
                "2d4 8 --threads 1025",
                "error: --threads 1025: at most 1024\n",
            ),
        ] {
            assert_eq!(
                outcome(args),
                (2, String::new(), line.to_string()),
                "{args}"
            );
        }
    }

    #[test]
    fn good_arguments_print_the_table() {
        let (status, out, err) = outcome("2d4 8 --steps 16 --reps 2 --threads 1");
        assert_eq!((status, err.as_str()), (0, ""));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("rep  one-step G/s"), "{out}");
    }
}

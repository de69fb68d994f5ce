//! `epsilod list`: the library stencils, the apps, the load-balancing
//! heuristics and the devices of every backend (each from its registry).

use crate::args::ListArgs;
use crate::error::CliError;
use crate::json::JsonOut;
use controllers::registry::{self, Listing};
use kernels::Library;
use serde::Serialize;

/// `epsilod list`: the listing, then with `--measure` each CUDA device's
/// figures (after the listing: measuring takes a while).
pub fn list(args: &ListArgs) -> Result<(), CliError> {
    let json = JsonOut::of(args.json.as_ref());
    json.check()?;
    if json.prints_text() {
        print!("{}", listing());
    }
    if args.measure {
        let measured = measure(args.measure_size)?;
        json.write(&measured)?;
        if json.prints_text() {
            print!("{}", measured.text());
        }
    }
    Ok(())
}

/// What `list --measure` prints, as `--json` writes it (docs/json.md).
#[derive(Debug, Serialize)]
pub struct Measured {
    /// The grid, boundary included.
    size: [usize; 2],
    /// Launches timed per kernel (after as many untimed).
    timed_launches: usize,
    /// Bytes a cell update moves, for the roofline fraction.
    bytes_per_cell: f64,
    devices: Vec<DeviceFigures>,
}

/// One device's copy bandwidth and 2d4 throughput.
#[derive(Debug, Serialize)]
struct DeviceFigures {
    device: String,
    copy_bytes_per_second: f64,
    cell_updates_per_second: f64,
    /// The 2d4 kernel's bytes per second over the copy's.
    roofline_fraction: f64,
}

impl Measured {
    fn text(&self) -> String {
        let mut s = format!(
            "measured ({}x{} f32, {} launches each, the last {} timed):\n",
            self.size[0],
            self.size[1],
            2 * self.timed_launches,
            self.timed_launches
        );
        for d in &self.devices {
            s += &format!(
                "  {}  copy {:.1} GB/s; 2d4 {:.1} G cell updates/s = {:.2} of the copy roofline ({} bytes a cell)\n",
                d.device,
                d.copy_bytes_per_second / 1e9,
                d.cell_updates_per_second / 1e9,
                d.roofline_fraction,
                self.bytes_per_cell
            );
        }
        s
    }
}

/// Each CUDA device's copy bandwidth and the 2d4 f32 kernel against it,
/// over a grid of `size` (a GPU figure is only meaningful as a fraction of
/// its own device's roofline).
#[cfg(feature = "cuda")]
fn measure(size: [usize; 2]) -> Result<Measured, CliError> {
    use controllers::registry::GpuDevice;
    use controllers::roofline;
    use kernels::{library_kernel, KernelChoice};
    /// Launches of each kernel timed, after as many untimed.
    const TIMED: usize = 20;
    /// Bytes a one-step f32 stencil moves per cell: read once, written once.
    const BYTES_PER_CELL: f64 = 8.0;
    let cuda = controllers::cuda::devices().map_err(device_error)?;
    // Tuned as a run's devices are (a forced launch shape).
    let tuning = crate::knobs::gpu_options(true)?;
    let gpu = |device| GpuDevice {
        backend: "cuda",
        platform: None,
        device,
    };
    let mut devices = Vec::new();
    for d in cuda {
        let mut c = registry::open_gpu::<f32>(&gpu(d.ordinal), &tuning).map_err(device_error)?;
        let k = library_kernel::<f32>(Library::S2d4, KernelChoice::Specialized);
        let r = roofline::measure(&mut *c, k.into(), &size, TIMED).map_err(device_error)?;
        devices.push(DeviceFigures {
            device: format!("cuda:device={}", d.ordinal),
            copy_bytes_per_second: r.copy_bytes_per_second,
            cell_updates_per_second: r.cells_per_second,
            roofline_fraction: r.fraction(BYTES_PER_CELL),
        });
    }
    Ok(Measured {
        size,
        timed_launches: TIMED,
        bytes_per_cell: BYTES_PER_CELL,
        devices,
    })
}

#[cfg(feature = "cuda")]
fn device_error(e: controllers::DeviceError) -> CliError {
    CliError::Measure(e.to_string())
}

/// Without CUDA there is nothing `--measure` measures yet.
#[cfg(not(feature = "cuda"))]
fn measure(_size: [usize; 2]) -> Result<Measured, CliError> {
    Err(CliError::Measure(
        "list --measure times CUDA devices, and this build has none: rebuild with --features cuda"
            .into(),
    ))
}

/// The text of `epsilod list`.
fn listing() -> String {
    let mut s = String::from("library stencils (f32; global size includes the boundary):\n");
    for lib in Library::ALL {
        let spec = lib.spec();
        let shape = spec
            .low
            .iter()
            .zip(&spec.high)
            .map(|(l, h)| format!("-{l}..{h}"))
            .collect::<Vec<_>>()
            .join(",");
        s += &format!(
            "  {:<7} {}-d  offsets ({shape})  {} terms / {}\n",
            lib.name(),
            lib.ndims(),
            spec.terms().len(),
            spec.factor
        );
    }
    s += "apps:\n";
    for app in epsilod_apps::all() {
        s += &format!("  {:<7} {}\n", app.name(), app.about());
        for p in app.params() {
            s += &match p.default {
                Some(d) => format!("          --param {}={d} ({})\n", p.name, p.about),
                None => format!("          --param {} (no default: {})\n", p.name, p.about),
            };
        }
        if let Some(input) = app.input() {
            s += &format!("          --input FILE ({input})\n");
        }
    }
    s += "load-balancing heuristics (--alb name[:key=value,...]):\n";
    for h in heuristics::BUILTIN {
        s += &format!("  {:<13} {}\n", h.name, h.about);
        for p in h.params {
            s += &format!(
                "      {:<14} {} ({})\n",
                format!("{}={}", p.key, p.default),
                p.about,
                p.kind.expected()
            );
        }
    }
    s += "stencil spec files: epsilod run my-stencil.toml (name, low, high, weights, factor)\n";
    s += "devices:\n";
    for (backend, listing) in registry::list() {
        match listing {
            Listing::Note(note) => s += &format!("  {backend:<7} {note}\n"),
            Listing::Devices(devices) => {
                for (spec, about) in devices {
                    s += &format!("  {spec}  {about}\n");
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    /// A backend left out of the build is listed with the way to add it,
    /// and `--measure` without CUDA is refused with it.
    #[test]
    #[cfg(not(all(feature = "opencl", feature = "cuda")))]
    fn a_backend_left_out_of_the_build_is_listed_with_how_to_add_it() {
        let s = super::listing();
        if !cfg!(feature = "opencl") {
            assert!(
                s.contains("\n  opencl  not in this build (rebuild with --features opencl)\n"),
                "{s}"
            );
        }
        if !cfg!(feature = "cuda") {
            assert!(
                s.ends_with("\n  cuda    not in this build (rebuild with --features cuda)\n"),
                "{s}"
            );
            let e = super::measure([66, 66]).unwrap_err().to_string();
            assert!(e.contains("rebuild with --features cuda"), "{e}");
        }
    }

    /// `--measure`'s text and its JSON hold the same figures: the text's
    /// at its precision.
    #[test]
    fn measurements_print_what_the_json_holds() {
        let m = super::Measured {
            size: [16386, 16386],
            timed_launches: 20,
            bytes_per_cell: 8.0,
            devices: vec![super::DeviceFigures {
                device: "cuda:device=0".into(),
                copy_bytes_per_second: 2.91234e12,
                cell_updates_per_second: 3.21e11,
                roofline_fraction: 0.8817,
            }],
        };
        assert_eq!(
            m.text(),
            "measured (16386x16386 f32, 40 launches each, the last 20 timed):\n  cuda:device=0  \
             copy 2912.3 GB/s; 2d4 321.0 G cell updates/s = 0.88 of the copy roofline (8 bytes \
             a cell)\n"
        );
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["size"], serde_json::json!([16386, 16386]));
        assert_eq!(v["timed_launches"], 20);
        assert_eq!(v["bytes_per_cell"], 8.0);
        let d = &v["devices"][0];
        assert_eq!(d["device"], "cuda:device=0");
        assert_eq!(d["copy_bytes_per_second"], 2.91234e12);
        assert_eq!(d["cell_updates_per_second"], 3.21e11);
        assert_eq!(d["roofline_fraction"], 0.8817);
    }
}

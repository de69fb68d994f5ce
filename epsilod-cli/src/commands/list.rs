//! `epsilod list`: the library stencils, the apps, the load-balancing
//! heuristics and the devices of every backend (each from its registry).

use controllers::registry::{self, Listing};
use kernels::Library;

/// `epsilod list --measure`: each CUDA device's copy bandwidth and the 2d4
/// f32 kernel against it, over a grid of `size` (a GPU figure is only
/// meaningful as a fraction of its own device's roofline).
#[cfg(feature = "cuda")]
pub fn measure(size: [usize; 2]) -> Result<String, crate::error::CliError> {
    use controllers::registry::GpuDevice;
    use controllers::roofline;
    use kernels::{library_kernel, KernelChoice};
    let devices = controllers::cuda::devices().map_err(device_error)?;
    // Tuned as a run's devices are (a forced launch shape).
    let tuning = crate::knobs::gpu_options(true)?;
    let gpu = |device| GpuDevice {
        backend: "cuda",
        platform: None,
        device,
    };
    let mut s = format!(
        "measured ({}x{} f32, 40 launches each, the last 20 timed):\n",
        size[0], size[1]
    );
    for d in devices {
        let mut c = registry::open_gpu::<f32>(&gpu(d.ordinal), &tuning).map_err(device_error)?;
        let k = library_kernel::<f32>(Library::S2d4, KernelChoice::Specialized);
        let r = roofline::measure(&mut *c, k.into(), &size, 20).map_err(device_error)?;
        s += &format!(
            "  cuda:device={}  copy {:.1} GB/s; 2d4 {:.1} G cell updates/s = {:.2} of the copy roofline (8 bytes a cell)\n",
            d.ordinal,
            r.copy_bytes_per_second / 1e9,
            r.cells_per_second / 1e9,
            r.fraction(8.0)
        );
    }
    Ok(s)
}

#[cfg(feature = "cuda")]
fn device_error(e: controllers::DeviceError) -> crate::error::CliError {
    crate::error::CliError::Measure(e.to_string())
}

/// Without CUDA there is nothing `--measure` measures yet.
#[cfg(not(feature = "cuda"))]
pub fn measure(_size: [usize; 2]) -> Result<String, crate::error::CliError> {
    Err(crate::error::CliError::Measure(
        "list --measure times CUDA devices, and this build has none: rebuild with --features cuda"
            .into(),
    ))
}

/// The text of `epsilod list`.
pub fn list() -> String {
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
        let s = super::list();
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
}

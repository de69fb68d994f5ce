//! `epsilod list`: the library stencils, the apps, the load-balancing
//! heuristics (from their registry) and the devices found.

use epsilod::job::all_cores;
use kernels::Library;

#[cfg(feature = "opencl")]
fn opencl_devices() -> String {
    let plats = controllers::opencl::platforms();
    if plats.is_empty() {
        return "  opencl  no platform found (install one, e.g. pocl-opencl-icd)\n".into();
    }
    let mut s = String::new();
    for (p, (name, devs)) in plats.iter().enumerate() {
        for (d, dev) in devs.iter().enumerate() {
            s += &format!("  opencl:platform={p},device={d}  {name}: {dev}\n");
        }
    }
    s
}

#[cfg(not(feature = "opencl"))]
fn opencl_devices() -> String {
    "  opencl  not in this build (rebuild with --features opencl)\n".into()
}

#[cfg(feature = "cuda")]
fn cuda_devices() -> String {
    let devs = match controllers::cuda::devices() {
        Ok(d) => d,
        Err(e) => return format!("  cuda    {e}\n"),
    };
    if devs.is_empty() {
        return "  cuda    the driver reports no CUDA device\n".into();
    }
    let mut s = String::new();
    for d in devs {
        let nvrtc = match d.nvrtc_version {
            Some((major, minor)) => format!("NVRTC {major}.{minor}"),
            None => "no NVRTC (cannot compile kernels)".into(),
        };
        s += &format!(
            "  cuda:device={}  {}: {:.1} GiB, compute {}.{}, driver CUDA {}.{}, {nvrtc}\n",
            d.ordinal,
            d.name,
            d.memory as f64 / (1u64 << 30) as f64,
            d.compute_capability.0,
            d.compute_capability.1,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10,
        );
    }
    s
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices() -> String {
    "  cuda    not in this build (rebuild with --features cuda)\n".into()
}

/// `epsilod list --measure`: each CUDA device's copy bandwidth and the 2d4
/// f32 kernel against it, over a grid of `size` (a GPU figure is only
/// meaningful as a fraction of its own device's roofline).
#[cfg(feature = "cuda")]
pub fn measure(size: [usize; 2]) -> Result<String, crate::error::CliError> {
    use controllers::{roofline, CudaController};
    use kernels::{library_kernel, KernelChoice};
    let devices = controllers::cuda::devices().map_err(device_error)?;
    let mut s = format!(
        "measured ({}x{} f32, 40 launches each, the last 20 timed):\n",
        size[0], size[1]
    );
    for d in devices {
        let mut c = CudaController::<f32>::new(d.ordinal).map_err(device_error)?;
        let k = library_kernel::<f32>(Library::S2d4, KernelChoice::Specialized);
        let r = roofline::measure(&mut c, k.into(), &size, 20).map_err(device_error)?;
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
            s += &format!("          --param {}={} ({})\n", p.name, p.default, p.about);
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
    s += &format!(
        "devices:\n  cpu     {} core(s): cpu, cpu:threads=T\n",
        all_cores()
    );
    s += &opencl_devices();
    s += &cuda_devices();
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

//! OpenCL C for the library stencils and the generic kernel. One kernel
//! signature for every stencil: the launch region is normalised to four
//! dimensions (leading ones of size 1), so the host code never changes.
//! Expressions follow reference.md §1's evaluation order, as the CPU
//! specialised kernels do; with `FP_CONTRACT OFF` and correctly rounded
//! division the results are bit-identical. CUDA C would differ only in the
//! qualifiers and the index lookup (the prologue).

use crate::library::Library;
use crate::spec::StencilSpec;

/// A kernel's device code.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSource {
    /// OpenCL C source of a kernel named [`KERNEL_NAME`].
    pub source: String,
    /// Needs double precision (cl_khr_fp64).
    pub needs_fp64: bool,
}

pub const KERNEL_NAME: &str = "epsilod_stencil";

/// `src[c + o0*s? + ...]`: the neighbour at `off` of an `nd`-dimensional
/// stencil, whose dimension d is the normalised dimension `4 - nd + d`.
fn x(off: &[i64]) -> String {
    let nd = off.len();
    let mut terms = String::new();
    for (d, &o) in off.iter().enumerate() {
        if o != 0 {
            terms += &format!(" + ({o}L) * s{}", 4 - nd + d);
        }
    }
    format!("src[c{terms}]")
}

fn axis(nd: usize, k: i64) -> Vec<String> {
    let mut v = Vec::new();
    for d in 0..nd {
        for s in [-k, k] {
            let mut o = vec![0; nd];
            o[d] = s;
            v.push(x(&o));
        }
    }
    v
}

fn sum(v: &[String]) -> String {
    v.join(" + ")
}

/// A float literal of `v` in type `t` ("float" or "double").
fn lit(v: f64, t: &str) -> String {
    if t == "float" {
        let f = v as f32;
        format!("{f:?}f")
    } else {
        format!("{v:?}")
    }
}

/// The kernel's opening: its signature, the typed views of the two buffers,
/// and `c`, the index of the cell this work-item computes. Every kernel,
/// generated or written by an app, starts with it.
pub fn prologue(t: &str) -> String {
    format!(
        "__kernel void {KERNEL_NAME}(__global const uchar* src_bytes, __global uchar* dst_bytes,\n\
             const long base, const long s0, const long s1, const long s2, const long s3, const long n1)\n\
         {{\n\
             __global const {t}* src = (__global const {t}*)src_bytes;\n\
             __global {t}* dst = (__global {t}*)dst_bytes;\n\
             const long i3 = get_global_id(0);\n\
             const long i2 = get_global_id(1);\n\
             const long z = get_global_id(2);\n\
             const long c = base + (z / n1) * s0 + (z % n1) * s1 + i2 * s2 + i3 * s3;\n"
    )
}

fn wrap(t: &str, expr: &str, needs_fp64: bool) -> DeviceSource {
    let fp64 = if needs_fp64 || t == "double" {
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    } else {
        ""
    };
    let source = format!(
        "{fp64}#pragma OPENCL FP_CONTRACT OFF\n{}    dst[c] = {expr};\n}}\n",
        prologue(t)
    );
    DeviceSource {
        source,
        needs_fp64: needs_fp64 || t == "double",
    }
}

/// The specialised kernel of a library stencil for cell type `t`.
pub fn library_source(lib: Library, t: &str) -> DeviceSource {
    let c = |v: f64| lit(v, t);
    let nd = lib.ndims();
    let expr = match lib {
        Library::S1dc2 | Library::S2d4 | Library::S3d6 | Library::S4d8 => {
            format!("({}) / {}", sum(&axis(nd, 1)), c(2.0 * nd as f64))
        }
        Library::S1dnc4 => {
            let v = format!(
                "(0.5 * (double)({} + {}) + (double){} + (double){}) / 3.0",
                x(&[-2]),
                x(&[2]),
                x(&[-1]),
                x(&[1])
            );
            return wrap(t, &format!("({t})({v})"), true);
        }
        Library::S2d8 => format!(
            "({} * ({}) + ({} + {} + {} + {})) / {}",
            c(4.0),
            sum(&axis(2, 1)),
            x(&[-1, -1]),
            x(&[1, -1]),
            x(&[-1, 1]),
            x(&[1, 1]),
            c(20.0)
        ),
        Library::S2dnc8 => format!(
            "(({}) + {} * ({})) / {}",
            sum(&axis(2, 2)),
            c(4.0),
            sum(&axis(2, 1)),
            c(20.0)
        ),
        Library::S3dnc12 => format!(
            "(({}) + {} * ({})) / {}",
            sum(&axis(3, 2)),
            c(6.0),
            sum(&axis(3, 1)),
            c(42.0)
        ),
        Library::S2df5 => format!(
            "({} * ({} + {}) + ({} + {}) + {} * {}) / {}",
            c(2.0),
            x(&[-1, 0]),
            x(&[0, -1]),
            x(&[-2, 0]),
            x(&[0, -2]),
            c(0.5),
            x(&[-1, -1]),
            c(6.5)
        ),
        Library::S3df7 => format!(
            "({} * ({} + {} + {}) + {} + {} + {} + {} * {}) / {}",
            c(2.0),
            x(&[-1, 0, 0]),
            x(&[0, -1, 0]),
            x(&[0, 0, -1]),
            x(&[-2, 0, 0]),
            x(&[0, -2, 0]),
            x(&[0, 0, -2]),
            c(0.5),
            x(&[-1, -1, -1]),
            c(9.5)
        ),
        Library::S3d27 => {
            let all: Vec<String> = (0..27)
                .map(|k| x(&[k / 9 - 1, (k / 3) % 3 - 1, k % 3 - 1]))
                .collect();
            format!("({}) / {}", sum(&all), c(27.0))
        }
    };
    wrap(t, &expr, false)
}

/// The generic kernel: weights times neighbours in lexicographic order, from
/// the first term, then divided by the factor (as the CPU generic kernel).
pub fn generic_source(spec: &StencilSpec, t: &str) -> DeviceSource {
    let terms: Vec<String> = spec
        .terms()
        .iter()
        .map(|(o, w)| format!("{} * {}", lit(*w, t), x(o)))
        .collect();
    wrap(
        t,
        &format!("({}) / {}", sum(&terms), lit(spec.factor, t)),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_read_the_right_neighbours_in_order() {
        let s = library_source(Library::S2d4, "float").source;
        assert!(s.contains("dst[c] = (src[c + (-1L) * s2] + src[c + (1L) * s2] + src[c + (-1L) * s3] + src[c + (1L) * s3]) / 4.0f;"), "{s}");
        assert!(s.contains("#pragma OPENCL FP_CONTRACT OFF"));
        let s = library_source(Library::S1dnc4, "float");
        assert!(s.needs_fp64 && s.source.contains("cl_khr_fp64"));
        let g = generic_source(&Library::S2df5.spec(), "float").source;
        assert!(
            g.contains("(1.0f * src[c + (-2L) * s2] + 0.5f * src[c + (-1L) * s2 + (-1L) * s3]"),
            "{g}"
        );
        assert!(g.contains(") / 6.5f;"));
    }
}

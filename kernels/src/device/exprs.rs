//! The library stencils and the generic kernel as device kernels, written
//! once for every dialect. Expressions follow reference.md §1's evaluation
//! order, as the CPU specialised kernels do; with contraction off and
//! correctly rounded division the results are bit-identical.

use super::{CellDecl, DeviceKernel, DeviceScalar};
use crate::library::Library;
use crate::spec::StencilSpec;

/// `src[c + (o0L) * s? + ...]`: the neighbour at `off` of an `nd`-dimensional
/// stencil, whose dimension d is the normalised dimension `4 - nd + d`.
pub(crate) fn neighbour(off: &[i64]) -> String {
    x(off)
}

fn x(off: &[i64]) -> String {
    read_at("src", off)
}

/// `buf[c + ...]`: buffer `buf` (`src`, an auxiliary field `aux0`, ...) at
/// `off` from the thread's cell; every buffer has the grid's geometry.
pub(crate) fn read_at(buf: &str, off: &[i64]) -> String {
    format!("{buf}[{}]", index_at(off))
}

/// `c + (o0L) * s? + ...`: the index of the cell at `off` from the
/// thread's cell.
pub(crate) fn index_at(off: &[i64]) -> String {
    let nd = off.len();
    let mut terms = String::new();
    for (d, &o) in off.iter().enumerate() {
        if o != 0 {
            terms += &format!(" + ({o}L) * s{}", super::abi::DIMS - nd + d);
        }
    }
    format!("c{terms}")
}

/// Unit offsets `k` away along every axis: dimension 0 below, above,
/// dimension 1 below, above, ...
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

fn kernel<T: DeviceScalar>(expr: &str, fp64: bool) -> DeviceKernel {
    DeviceKernel::generated(
        CellDecl::scalar::<T>(),
        format!("    dst[c] = {expr};\n"),
        fp64,
    )
}

/// The specialised kernel of a library stencil for cells of type `T`.
pub fn library<T: DeviceScalar>(lib: Library) -> DeviceKernel {
    let c = |v: f64| T::literal_of(v);
    let nd = lib.ndims();
    let expr = match lib {
        Library::S1dc2 | Library::S2d4 | Library::S3d6 | Library::S4d8 => {
            format!("({}) / {}", sum(&axis(nd, 1)), c(2.0 * nd as f64))
        }
        Library::S1dnc4 => {
            // In double whatever the cell type, as the CPU kernel computes it.
            let v = format!(
                "(0.5 * (double)({} + {}) + (double){} + (double){}) / 3.0",
                x(&[-2]),
                x(&[2]),
                x(&[-1]),
                x(&[1])
            );
            return kernel::<T>(&format!("(cell)({v})"), true);
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
    kernel::<T>(&expr, false)
}

/// The generic kernel: weights times neighbours in lexicographic order, from
/// the first term, then divided by the factor (as the CPU generic kernel).
pub fn generic<T: DeviceScalar>(spec: &StencilSpec) -> DeviceKernel {
    let terms: Vec<String> = spec
        .terms()
        .iter()
        .map(|(o, w)| format!("{} * {}", T::literal_of(*w), x(o)))
        .collect();
    kernel::<T>(
        &format!("({}) / {}", sum(&terms), T::literal_of(spec.factor)),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Dialect;

    #[test]
    fn sources_read_the_right_neighbours_in_order() {
        let s = library::<f32>(Library::S2d4).source(Dialect::OpenCl);
        assert!(s.contains("dst[c] = (src[c + (-1L) * s2] + src[c + (1L) * s2] + src[c + (-1L) * s3] + src[c + (1L) * s3]) / 4.0f;"), "{s}");
        assert!(s.contains("#pragma OPENCL FP_CONTRACT OFF"));
        let k = library::<f32>(Library::S1dnc4);
        assert!(k.needs_fp64() && k.source(Dialect::OpenCl).contains("cl_khr_fp64"));
        assert!(library::<f64>(Library::S2d4).needs_fp64());
        assert!(!library::<f32>(Library::S2d4).needs_fp64());
        let g = generic::<f32>(&Library::S2df5.spec()).source(Dialect::OpenCl);
        assert!(
            g.contains("(1.0f * src[c + (-2L) * s2] + 0.5f * src[c + (-1L) * s2 + (-1L) * s3]"),
            "{g}"
        );
        assert!(g.contains(") / 6.5f;"));
        let d = generic::<f64>(&Library::S2df5.spec()).source(Dialect::OpenCl);
        assert!(
            d.contains(") / 6.5;") && d.contains("typedef double cell;"),
            "{d}"
        );
    }

    #[test]
    fn every_dialect_computes_the_same_expression() {
        for lib in Library::ALL {
            for k in [library::<f32>(lib), generic::<f64>(&lib.spec())] {
                assert!(k.body().contains("dst[c] = "), "{lib}");
                for d in Dialect::ALL {
                    assert!(k.source(d).contains(k.body()), "{lib} in {d}");
                }
            }
        }
    }
}

//! The library stencils and the generic kernel as device kernels: their
//! [`Formula`]s, written in C by the [emitter](super::emit). Expressions
//! follow reference.md §1's evaluation order, as the CPU specialised
//! kernels do; with contraction off and correctly rounded division the
//! results are bit-identical.

use super::emit::expression::formula_kernel;
use super::{DeviceKernel, DeviceScalar};
use crate::formula::Formula;
use crate::library::Library;
use crate::spec::StencilSpec;

/// The specialised kernel of a library stencil for cells of type `T`.
pub fn library<T: DeviceScalar>(lib: Library) -> DeviceKernel {
    formula_kernel::<T>(&lib.formula())
}

/// The generic kernel: weights times neighbours in lexicographic order, from
/// the first term, then divided by the factor (as the CPU generic kernel).
pub fn generic<T: DeviceScalar>(spec: &StencilSpec) -> DeviceKernel {
    formula_kernel::<T>(&Formula::weighted(spec))
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

    /// CUDA cannot run here, so the text of the library stencil that steps
    /// into double is pinned in full.
    #[test]
    fn the_cuda_text_of_1dnc4_is_pinned() {
        let pinned = r#"#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
typedef long long index_t;
typedef float cell;
static __device__ __forceinline__ void epsilod_stencil_cell(const cell* __restrict__ src, cell* __restrict__ dst, const index_t base, const index_t s0, const index_t s1, const index_t s2, const index_t n0, const index_t n1, const index_t n2, const index_t n3, const index_t o0, const index_t o1, const index_t o2, const index_t o3, const index_t np, const index_t i3, const index_t i2, const index_t z, const index_t c)
{
    const index_t s3 = 1;
    dst[c] = (cell)((0.5 * (double)(src[c + (-2L) * s3] + src[c + (2L) * s3]) + (double)src[c + (-1L) * s3] + (double)src[c + (1L) * s3]) / 3.0);
}
extern "C" __global__ void epsilod_stencil(const cell* __restrict__ src, cell* __restrict__ dst, const index_t base, const index_t s0, const index_t s1, const index_t s2, const index_t n0, const index_t n1, const index_t n2, const index_t n3, const index_t o0, const index_t o1, const index_t o2, const index_t o3, const index_t np)
{
    const index_t i3 = ((long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x);
    const index_t z = ((long long)blockIdx.z * (long long)blockDim.z + (long long)threadIdx.z);
    if (i3 >= n3 || z >= n0 * n1) return;
    const unsigned int ny = gridDim.y * blockDim.y;
    const unsigned int rows = ((unsigned int)n2 + ny - 1) / ny;
    const index_t first = ((long long)blockIdx.y * (long long)blockDim.y + (long long)threadIdx.y) * (index_t)rows;
    const index_t last = first + (index_t)rows < n2 ? first + (index_t)rows : n2;
    const unsigned int zu = (unsigned int)z, n1u = (unsigned int)n1;
    const index_t column = base + (index_t)(zu / n1u) * s0 + (index_t)(zu % n1u) * s1 + i3;
    #pragma unroll 4
    for (index_t i2 = first; i2 < last; i2++)
        epsilod_stencil_cell(src, dst, base, s0, s1, s2, n0, n1, n2, n3, o0, o1, o2, o3, np, i3, i2, z, column + i2 * s2);
}
"#;
        assert_eq!(
            library::<f32>(Library::S1dnc4).source(Dialect::Cuda),
            pinned
        );
        // A group kept as the reference writes it, redundant or not.
        let s = library::<f32>(Library::S2dnc8).source(Dialect::Cuda);
        assert!(s.contains("dst[c] = ((src[c + (-2L) * s2] + src[c + (2L) * s2] + src[c + (-2L) * s3] + src[c + (2L) * s3]) + 4.0f * (src[c + (-1L) * s2]"), "{s}");
    }
}

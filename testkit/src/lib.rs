//! What the project's tests share. Bit identity is the correctness bar, on
//! irregular data, from reproducible generators.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod process;

use kernels::{basic_init, random_value};
use ndarray::ArrayD;

/// Every cell's bits, in row-major order (a 19-float cell gives 19 words),
/// so `assert_eq!` compares results bit for bit, NaNs and signed zeros
/// included.
pub fn bits<T: bytemuck::Pod>(a: &ArrayD<T>) -> Vec<u32> {
    a.iter()
        .flat_map(|c| {
            bytemuck::bytes_of(c)
                .chunks(4)
                .map(|w| {
                    let mut b = [0u8; 4];
                    b[..w.len()].copy_from_slice(w);
                    u32::from_ne_bytes(b)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A small deterministic generator: runs must be reproducible, and a
/// failing case must fail again.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next value, uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// EPSILOD's boundary values plus a per-cell random value everywhere, so a
/// cell read from the wrong place changes the result.
pub fn irregular_init(
    sizes: Vec<usize>,
    low: Vec<usize>,
    high: Vec<usize>,
    seed: u64,
) -> impl Fn(&[i64]) -> f32 + Send + Sync + Clone + 'static {
    move |i: &[i64]| basic_init(i, &sizes, &low, &high) + random_value(i, seed)
}

/// The bits of library stencil `lib` run serially for `iters` iterations
/// on `sizes` from [`irregular_init`] with `seed`: what every layout,
/// device and schedule must reproduce.
pub fn library_reference(
    lib: kernels::Library,
    sizes: &[usize],
    iters: u64,
    seed: u64,
) -> Vec<u32> {
    let spec = lib.spec();
    let init = irregular_init(sizes.to_vec(), spec.low.clone(), spec.high.clone(), seed);
    bits(&kernels::reference::run(
        sizes,
        &spec.low,
        &spec.high,
        iters as usize,
        init,
        kernels::reference::library_formula(lib),
    ))
}

/// Writes a NumPy `.npy` file (format 1.0, C order) of `values` in the
/// machine's byte order as the type NumPy names `descr` (`"<f4"`, `"<i4"`),
/// so that tests make input files without the reader under test.
pub fn write_npy<T: bytemuck::Pod>(
    path: impl AsRef<std::path::Path>,
    descr: &str,
    shape: &[usize],
    values: &[T],
) {
    let dims: String = shape.iter().map(|d| format!("{d},")).collect();
    write_npy_header(
        path,
        &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"),
        bytemuck::cast_slice::<T, u8>(values),
    );
}

/// Writes a `.npy` file (format 1.0) of `header`, the dict's text as given
/// (a header NumPy would not write, for a test of the reader), and `data`.
pub fn write_npy_header(path: impl AsRef<std::path::Path>, header: &str, data: &[u8]) {
    let header = format!("{header}\n");
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_tell_apart_what_equality_does_not() {
        let a = ArrayD::from_shape_vec(ndarray::IxDyn(&[2]), vec![0.0f32, 1.0]).unwrap();
        let b = ArrayD::from_shape_vec(ndarray::IxDyn(&[2]), vec![-0.0f32, 1.0]).unwrap();
        assert_eq!(a, b);
        assert_ne!(bits(&a), bits(&b));
        let g = ArrayD::from_shape_vec(ndarray::IxDyn(&[1]), vec![[1.0f32; 19]]).unwrap();
        assert_eq!(bits(&g).len(), 19);
    }

    #[test]
    fn the_generator_repeats_and_spreads() {
        let (mut a, mut b) = (Lcg(7), Lcg(7));
        let xs: Vec<f64> = (0..1000).map(|_| a.uniform()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(xs, (0..1000).map(|_| b.uniform()).collect::<Vec<_>>());
        let mean = xs.iter().sum::<f64>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.05, "{mean}");
    }
}

//! Initial states a device computes itself, from each cell's global index:
//! EPSILOD's boundary values ([`basic_init`]) with an interior of 0 or of
//! [`random_value`]s. A GPU tile of 16386^2 cells filled on the host costs
//! a pass over a gigabyte there and its transfer; its own kernel writes it
//! in place.

use crate::device::{CellDecl, DeviceKernel, DeviceScalar};
use crate::library::{basic_init, random_value};

/// EPSILOD's initial values over a grid of `sizes` with a boundary
/// `low`/`high` wide, the interior 0 or, with `random`, uniform in [0, 1)
/// from that seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitSpec {
    pub sizes: Vec<usize>,
    pub low: Vec<usize>,
    pub high: Vec<usize>,
    pub random: Option<u64>,
}

impl InitSpec {
    /// The value at global index `idx`.
    pub fn value(&self, idx: &[i64]) -> f32 {
        let interior = (0..idx.len()).all(|d| {
            idx[d] >= self.low[d] as i64 && idx[d] < (self.sizes[d] - self.high[d]) as i64
        });
        match self.random {
            Some(seed) if interior => random_value(idx, seed),
            _ => basic_init(idx, &self.sizes, &self.low, &self.high),
        }
    }

    /// The same values as a device kernel over cells of `T` (each value
    /// computed in `float`, as [`InitSpec::value`] does, then converted):
    /// launched over a region, it writes `dst` there and reads nothing.
    /// Grids of up to four dimensions.
    pub fn device_kernel<T: DeviceScalar>(&self) -> Option<DeviceKernel> {
        let k = self.sizes.len();
        if k == 0 || k > 4 || self.low.len() != k || self.high.len() != k {
            return None;
        }
        // Normalised dimension 4 - k + d, and the thread's place along it.
        let place = ["z / n1", "z % n1", "i2", "i3"];
        let mut body = String::new();
        for d in 0..k {
            let n = 4 - k + d;
            body += &format!("    const index_t g{d} = o{n} + {};\n", place[n]);
        }
        body += "    float v = 0.0f;\n    ";
        for d in 0..k {
            let top = self.sizes[d] as i64 - self.high[d] as i64;
            body += &format!(
                "if (g{d} < {}) v = {}.0f;\n    else if (g{d} >= {top}) v = {}.0f;\n    else ",
                self.low[d],
                2 * d + 1,
                2 * d + 2
            );
        }
        match self.random {
            // random_value, step for step, in 64-bit unsigned arithmetic
            // (`unsigned long`: 64 bits in OpenCL C and under CUDA on
            // Linux), which wraps as Rust's wrapping_mul does.
            Some(seed) => {
                body += &format!(
                    "{{\n        unsigned long h = {}UL;\n",
                    seed ^ 0x9e37_79b9_7f4a_7c15
                );
                for d in 0..k {
                    body += &format!(
                        "        h = (h ^ (unsigned long)g{d}) * 13787848793156543929UL;\n        h ^= h >> 31;\n"
                    );
                }
                body += "        v = (float)(h >> 40) / 16777216.0f;\n    }\n";
            }
            None => body += "{}\n",
        }
        body += "    dst[c] = (cell)v;\n";
        // SAFETY: the body reads no buffer and writes only `dst[c]`; `cell`
        // is T's own scalar type.
        Some(unsafe { DeviceKernel::new(CellDecl::scalar::<T>(), body) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_epsilods_with_an_optional_random_interior() {
        let spec = InitSpec {
            sizes: vec![6, 5],
            low: vec![1, 2],
            high: vec![2, 1],
            random: None,
        };
        let random = InitSpec {
            random: Some(9),
            ..spec.clone()
        };
        for i in -1..7i64 {
            for j in -1..6i64 {
                let idx = [i, j];
                let b = basic_init(&idx, &spec.sizes, &spec.low, &spec.high);
                assert_eq!(spec.value(&idx), b);
                let interior = (1..4).contains(&i) && (2..4).contains(&j);
                let r = if interior { random_value(&idx, 9) } else { b };
                assert_eq!(random.value(&idx), r, "{idx:?}");
            }
        }
    }

    #[test]
    fn the_multiplier_is_random_values() {
        // The constant written into device code is the one the host uses.
        let one = 0x9e37_79b9_7f4a_7c15u64 ^ 1;
        let h = (one ^ 5).wrapping_mul(13_787_848_793_156_543_929);
        let h = h ^ (h >> 31);
        assert_eq!(
            (h >> 40) as f32 / (1u64 << 24) as f32,
            random_value(&[5], 1)
        );
    }

    #[test]
    fn kernels_only_for_one_to_four_dimensions() {
        let spec = |k: usize| InitSpec {
            sizes: vec![4; k],
            low: vec![1; k],
            high: vec![1; k],
            random: Some(1),
        };
        assert!(spec(0).device_kernel::<f32>().is_none());
        assert!(spec(5).device_kernel::<f32>().is_none());
        for k in 1..=4 {
            let body = spec(k).device_kernel::<f64>().unwrap().body().to_string();
            assert_eq!(body.matches("h ^= h >> 31").count(), k);
            assert!(body.contains(&format!("g{} = o3 + i3", k - 1)), "{body}");
        }
    }
}

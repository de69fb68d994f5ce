//! EPSILOD's basic stencils (reference.md §1) and their boundary values.

use crate::formula::Formula;
use crate::spec::StencilSpec;
use std::fmt;

/// The library stencils, by EPSILOD name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Library {
    S1dc2,
    S1dnc4,
    S2d4,
    S2d8,
    S2dnc8,
    S2df5,
    S3d6,
    S3d27,
    S3dnc12,
    S3df7,
    S4d8,
}

impl Library {
    pub const ALL: [Library; 11] = [
        Library::S1dc2,
        Library::S1dnc4,
        Library::S2d4,
        Library::S2d8,
        Library::S2dnc8,
        Library::S2df5,
        Library::S3d6,
        Library::S3d27,
        Library::S3dnc12,
        Library::S3df7,
        Library::S4d8,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Library::S1dc2 => "1dc2",
            Library::S1dnc4 => "1dnc4",
            Library::S2d4 => "2d4",
            Library::S2d8 => "2d8",
            Library::S2dnc8 => "2dnc8",
            Library::S2df5 => "2df5",
            Library::S3d6 => "3d6",
            Library::S3d27 => "3d27",
            Library::S3dnc12 => "3dnc12",
            Library::S3df7 => "3df7",
            Library::S4d8 => "4d8",
        }
    }

    pub fn by_name(name: &str) -> Option<Library> {
        Library::ALL.into_iter().find(|l| l.name() == name)
    }

    pub fn ndims(self) -> usize {
        match self {
            Library::S1dc2 | Library::S1dnc4 => 1,
            Library::S2d4 | Library::S2d8 | Library::S2dnc8 | Library::S2df5 => 2,
            Library::S3d6 | Library::S3d27 | Library::S3dnc12 | Library::S3df7 => 3,
            Library::S4d8 => 4,
        }
    }

    /// Shape, weights and factor as in reference.md §1: the
    /// [`formula`](Self::formula)'s.
    pub fn spec(self) -> StencilSpec {
        self.formula().spec(self.name())
    }

    /// The update in reference.md §1's evaluation order: the one definition
    /// the weights, the device code and the checks of the specialised
    /// kernels come from.
    pub fn formula(self) -> Formula {
        let nd = self.ndims();
        let at = Formula::at;
        // The unit offsets `k` away along every axis: dimension 0 below,
        // above, dimension 1 below, above, ...
        let axis = |nd: usize, k: i64| {
            Formula::sum((0..2 * nd).map(|i| {
                let mut o = vec![0; nd];
                o[i / 2] = if i % 2 == 0 { -k } else { k };
                Formula::At(o)
            }))
        };
        match self {
            Library::S1dc2 | Library::S2d4 | Library::S3d6 | Library::S4d8 => {
                axis(nd, 1).over(2.0 * nd as f64)
            }
            // In double whatever the cell type, as EPSILOD computes it.
            Library::S1dnc4 => Formula::sum([
                Formula::sum([at(&[-2]), at(&[2])]).in_double().times(0.5),
                at(&[-1]).in_double(),
                at(&[1]).in_double(),
            ])
            .over(3.0),
            Library::S2d8 => Formula::sum([
                axis(2, 1).times(4.0),
                Formula::sum([at(&[-1, -1]), at(&[1, -1]), at(&[-1, 1]), at(&[1, 1])]),
            ])
            .over(20.0),
            Library::S2dnc8 => Formula::sum([axis(2, 2), axis(2, 1).times(4.0)]).over(20.0),
            Library::S3dnc12 => Formula::sum([axis(3, 2), axis(3, 1).times(6.0)]).over(42.0),
            Library::S2df5 => Formula::sum([
                Formula::sum([at(&[-1, 0]), at(&[0, -1])]).times(2.0),
                Formula::sum([at(&[-2, 0]), at(&[0, -2])]),
                at(&[-1, -1]).times(0.5),
            ])
            .over(6.5),
            Library::S3df7 => Formula::sum([
                Formula::sum([at(&[-1, 0, 0]), at(&[0, -1, 0]), at(&[0, 0, -1])]).times(2.0),
                at(&[-2, 0, 0]),
                at(&[0, -2, 0]),
                at(&[0, 0, -2]),
                at(&[-1, -1, -1]).times(0.5),
            ])
            .over(9.5),
            Library::S3d27 => Formula::sum(
                (0..27).map(|k| Formula::At(vec![k / 9 - 1, (k / 3) % 3 - 1, k % 3 - 1])),
            )
            .over(27.0),
        }
    }
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A deterministic value in [0, 1) for each index and seed: the interior of
/// `--init random`, and the irregular data tests use so that any misplaced
/// cell or change of evaluation order shows.
pub fn random_value(idx: &[i64], seed: u64) -> f32 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for &i in idx {
        h = (h ^ i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 31;
    }
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// EPSILOD's initial value at global index `idx` of a grid of `sizes` with a
/// boundary `low`/`high` wide: dimension d's low boundary is `2d+1`, its high
/// boundary `2d+2` (the earlier dimension wins where boundaries meet), the
/// interior 0.
pub fn basic_init(idx: &[i64], sizes: &[usize], low: &[usize], high: &[usize]) -> f32 {
    for d in 0..idx.len() {
        if idx[d] < low[d] as i64 {
            return (2 * d + 1) as f32;
        }
        if idx[d] >= (sizes[d] - high[d]) as i64 {
            return (2 * d + 2) as f32;
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_match_the_reference_table() {
        let t = |l: Library| l.spec().terms();
        assert_eq!(t(Library::S1dc2), vec![(vec![-1], 1.0), (vec![1], 1.0)]);
        assert_eq!(
            Library::S1dnc4.spec().weights,
            vec![0.5, 1.0, 0.0, 1.0, 0.5]
        );
        assert_eq!(
            Library::S2d4.spec().weights,
            vec![0., 1., 0., 1., 0., 1., 0., 1., 0.]
        );
        assert_eq!(
            Library::S2d8.spec().weights,
            vec![1., 4., 1., 4., 0., 4., 1., 4., 1.]
        );
        assert_eq!(
            t(Library::S2df5),
            vec![
                (vec![-2, 0], 1.0),
                (vec![-1, -1], 0.5),
                (vec![-1, 0], 2.0),
                (vec![0, -2], 1.0),
                (vec![0, -1], 2.0)
            ]
        );
        let counts: Vec<usize> = Library::ALL.iter().map(|l| t(*l).len()).collect();
        assert_eq!(counts, vec![2, 4, 4, 8, 8, 5, 6, 27, 12, 7, 8]);
        let sums: Vec<f64> = Library::ALL
            .iter()
            .map(|l| l.spec().weights.iter().sum::<f64>() / l.spec().factor)
            .collect();
        assert!(sums.iter().all(|&s| (s - 1.0).abs() < 1e-12), "{sums:?}");
        assert_eq!(Library::by_name("3dnc12"), Some(Library::S3dnc12));
        assert_eq!(Library::by_name("5d"), None);
    }

    #[test]
    fn boundary_values() {
        let (s, l, h) = ([10, 10], [1, 1], [1, 1]);
        assert_eq!(basic_init(&[0, 5], &s, &l, &h), 1.0);
        assert_eq!(basic_init(&[9, 5], &s, &l, &h), 2.0);
        assert_eq!(basic_init(&[5, 0], &s, &l, &h), 3.0);
        assert_eq!(basic_init(&[5, 9], &s, &l, &h), 4.0);
        assert_eq!(basic_init(&[0, 0], &s, &l, &h), 1.0);
        assert_eq!(basic_init(&[9, 0], &s, &l, &h), 2.0);
        assert_eq!(basic_init(&[5, 5], &s, &l, &h), 0.0);
        // 2df5: no high boundary, two low rows.
        assert_eq!(basic_init(&[9, 9], &s, &[2, 2], &[0, 0]), 0.0);
        assert_eq!(basic_init(&[1, 9], &s, &[2, 2], &[0, 0]), 1.0);
    }
}

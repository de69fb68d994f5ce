//! Grids of virtual processes.

/// A row-major grid of virtual processes; rank `r` sits at `coords(r)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    dims: Vec<usize>,
}

impl Topology {
    /// All `p` processes along one line.
    pub fn line(p: usize) -> Topology {
        Topology { dims: vec![p] }
    }

    /// `p` processes in an `ndims`-d grid as square as the prime factors of `p`
    /// allow: each factor, largest first, goes to the dimension with the fewest
    /// processes so far (the earliest on ties).
    pub fn square(p: usize, ndims: usize) -> Topology {
        let mut dims = vec![1usize; ndims.max(1)];
        for f in prime_factors(p).into_iter().rev() {
            let d = (0..dims.len())
                .min_by_key(|&d| (dims[d], d))
                .expect("at least one dimension");
            dims[d] *= f;
        }
        Topology { dims }
    }

    /// A grid with `dims[d]` processes along dimension `d`.
    pub fn from_dims(dims: Vec<usize>) -> Topology {
        Topology { dims }
    }

    /// Processes per dimension.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        self.dims.iter().product()
    }

    /// Grid coordinates of `rank`.
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for d in (0..self.dims.len()).rev() {
            c[d] = r % self.dims[d];
            r /= self.dims[d];
        }
        c
    }

    /// The rank at grid coordinates `coords`.
    pub fn rank(&self, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(&self.dims)
            .fold(0, |acc, (&c, &n)| acc * n + c)
    }
}

fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut f = Vec::new();
    let mut k = 2;
    while k * k <= n {
        while n.is_multiple_of(k) {
            f.push(k);
            n /= k;
        }
        k += 1;
    }
    if n > 1 {
        f.push(n);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_grids() {
        assert_eq!(Topology::square(4, 2).dims(), &[2, 2]);
        assert_eq!(Topology::square(6, 2).dims(), &[3, 2]);
        assert_eq!(Topology::square(8, 3).dims(), &[2, 2, 2]);
        assert_eq!(Topology::square(12, 2).dims(), &[3, 4]);
        assert_eq!(Topology::square(7, 2).dims(), &[7, 1]);
        assert_eq!(Topology::square(1, 3).dims(), &[1, 1, 1]);
        let t = Topology::square(12, 3);
        assert_eq!(t.size(), 12);
        for r in 0..12 {
            assert_eq!(t.rank(&t.coords(r)), r);
        }
    }
}

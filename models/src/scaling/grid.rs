//! The process grids a run can lay its processes out on as P grows: the
//! rule a pattern's offsets are read against, apart so that errors can name
//! a grid without depending on the pattern.

use std::fmt;

use hitmap::Topology;
use serde::{Deserialize, Serialize};

/// How a run lays its processes out as P grows, as hitmap's layouts do:
/// `s<d>` and `w<d>` on a line, `m` and `m<n>` on a grid as square as P's
/// prime factors allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grid {
    /// P processes in a row.
    Line,
    /// `hitmap::Topology::square(P, n)`.
    Square(usize),
}

impl Grid {
    /// The grids a model tries for an `ndims`-d domain, simplest first.
    pub fn candidates(ndims: usize) -> impl Iterator<Item = Grid> {
        std::iter::once(Grid::Line).chain((2..=ndims).map(Grid::Square))
    }

    /// Its process grid at `p` processes.
    pub fn topology(self, p: usize) -> Topology {
        match self {
            Grid::Line => Topology::line(p),
            Grid::Square(n) => Topology::square(p, n),
        }
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grid::Line => f.write_str("a line of P"),
            Grid::Square(n) => write!(f, "a {n}-d grid as square as P allows"),
        }
    }
}

//! Who talks to whom as equations of P: the grid offsets that explain every
//! signature's messages, inferred by trying each candidate grid.

use std::collections::BTreeSet;

use hitmap::Topology;
use serde::{Deserialize, Serialize};

use super::error::ScalingError;
use super::grid::Grid;
use super::signature::Signature;

/// The communication pattern as equations of P: the grid rule and the
/// neighbours' grid offsets. A process at grid coordinates `c` sends to
/// `c + o` for each offset `o` that stays inside the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    /// The grid rule.
    pub grid: Grid,
    /// Neighbours' offsets in grid coordinates.
    pub offsets: Vec<Vec<i64>>,
}

impl Pattern {
    /// Each rank's peers at `p` processes, with the offset each one is at.
    pub fn peers(&self, p: usize) -> Vec<Vec<(usize, usize)>> {
        let topo = self.grid.topology(p);
        (0..p)
            .map(|rank| neighbours(&topo, &self.offsets, rank))
            .collect()
    }

    /// The rank offsets as equations of P, e.g. `±1, ±n1 where (n0, n1) =
    /// square(P, 2)`.
    pub fn equations(&self) -> String {
        let axes = self.offsets.first().map_or(0, Vec::len);
        let stride = |a: usize| -> String {
            let names: Vec<String> = (a + 1..axes).map(|b| format!("n{b}")).collect();
            if names.is_empty() {
                "1".into()
            } else {
                names.join("·")
            }
        };
        let terms: Vec<String> = self
            .offsets
            .iter()
            .map(|o| {
                let parts: Vec<String> = o
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c != 0)
                    .map(|(a, &c)| format!("{}{}", if c > 0 { "+" } else { "-" }, stride(a)))
                    .collect();
                parts.join("")
            })
            .collect();
        let grid = match self.grid {
            Grid::Line => "P in a line".to_string(),
            Grid::Square(n) => {
                let dims: Vec<String> = (0..n).map(|a| format!("n{a}")).collect();
                format!("({}) = square(P, {n})", dims.join(", "))
            }
        };
        format!(
            "rank {} where {grid}; no partner past the grid's edges",
            terms.join(", ")
        )
    }

    /// The volume feature of offset `k` at `p` processes: the number of
    /// processes sharing each of the axes the offset does not cross, whose
    /// product the message's face shrinks with (1 on a line: constant).
    pub(super) fn face_divisor(&self, k: usize, p: usize) -> f64 {
        let topo = self.grid.topology(p);
        self.offsets[k]
            .iter()
            .zip(topo.dims())
            .filter(|(&o, _)| o == 0)
            .map(|(_, &n)| n as f64)
            .product()
    }
}

/// Grid offsets of `sig`'s messages on `grid`, or `None` when a process
/// messages one neighbour twice (impossible on that grid).
fn offsets_on(sig: &Signature, grid: Grid) -> Option<BTreeSet<Vec<i64>>> {
    let topo = grid.topology(sig.count());
    let mut all = BTreeSet::new();
    for (rank, p) in sig.processes.iter().enumerate() {
        let at = topo.coords(rank);
        let mut mine = BTreeSet::new();
        for m in &p.sends {
            let to = topo.coords(m.peer);
            let d: Vec<i64> = to
                .iter()
                .zip(&at)
                .map(|(&t, &a)| t as i64 - a as i64)
                .collect();
            if !mine.insert(d.clone()) {
                return None;
            }
            all.insert(d);
        }
    }
    Some(all)
}

/// The peers `rank` has on `topo` for grid offsets `offsets`: one per offset
/// that stays inside the grid (no wrap-around), with the offset's index.
fn neighbours(topo: &Topology, offsets: &[Vec<i64>], rank: usize) -> Vec<(usize, usize)> {
    let at = topo.coords(rank);
    offsets
        .iter()
        .enumerate()
        .filter_map(|(k, d)| {
            let to: Option<Vec<usize>> = at
                .iter()
                .zip(d)
                .zip(topo.dims())
                .map(|((&a, &o), &n)| {
                    let c = a as i64 + o;
                    (0..n as i64).contains(&c).then_some(c as usize)
                })
                .collect();
            to.map(|c| (topo.rank(&c), k))
        })
        .collect()
}

/// Whether `sig`'s messages are exactly `offsets` on `grid`, each present
/// wherever it stays inside the grid.
fn explains(sig: &Signature, grid: Grid, offsets: &[Vec<i64>]) -> bool {
    let topo = grid.topology(sig.count());
    sig.processes.iter().enumerate().all(|(rank, p)| {
        let want: BTreeSet<usize> = neighbours(&topo, offsets, rank)
            .into_iter()
            .map(|(q, _)| q)
            .collect();
        let got: BTreeSet<usize> = p.sends.iter().map(|m| m.peer).collect();
        want == got
    })
}

/// The candidate grids that explain all signatures with one set of offsets
/// and, among those, the fewest offsets (a line with diagonal-free
/// neighbours also fits a grid with diagonal ones: the simpler one wins),
/// simplest grid first.
pub(super) fn infer_patterns(
    signatures: &[Signature],
    ndims: usize,
) -> Result<Vec<Pattern>, ScalingError> {
    let mut found: Vec<Pattern> = Vec::new();
    'grids: for grid in Grid::candidates(ndims) {
        let mut offsets = BTreeSet::new();
        for s in signatures {
            match offsets_on(s, grid) {
                Some(o) => offsets.extend(o),
                None => continue 'grids,
            }
        }
        let offsets: Vec<Vec<i64>> = offsets.into_iter().collect();
        if signatures.iter().all(|s| explains(s, grid, &offsets)) {
            found.push(Pattern { grid, offsets });
        }
    }
    let Some(fewest) = found.iter().map(|p| p.offsets.len()).min() else {
        return Err(ScalingError::NoPattern);
    };
    found.retain(|p| p.offsets.len() == fewest);
    Ok(found)
}

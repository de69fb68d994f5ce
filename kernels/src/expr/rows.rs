//! The CPU side of expression kernels: the expression compiled to a list
//! of operations over rows (numexpr style). Each operation runs over a
//! chunk of a row at a time, a loop the compiler vectorises, so the
//! arithmetic stays operation-for-operation what the device code does.

use super::fused::{fused, weighted, Last};
use super::math::Math;
use super::op::Op;
use super::parse::{Arith, Compare, Expr, Func};
use super::segment::Run;
use crate::frame::{for_each_row, Frame};
use std::collections::HashMap;
use std::ops::Range;

/// Cells per chunk: long enough that the per-chunk dispatch does not show
/// (2d4 4098^2 ran at 0.56x the specialised kernel with 512, 0.78x with
/// 4096, no better with 16384), short enough that temporaries stay in L2.
const CHUNK: usize = 4096;

/// What the temporaries of one chunk of array cells may take: they are
/// one row each per operation, so a long program (gas-sim's has hundreds)
/// runs on shorter chunks to keep them in L2.
const ARRAY_TEMPORARIES: usize = 256 * 1024;

/// A row's first cells, and a rest shorter than this at its end, whose
/// conditions on the global index are computed cell by cell.
pub(super) const EDGE: usize = 16;

/// Terms a weighted sum takes (one loop each number of terms).
const MAX_WEIGHTED: usize = 8;

/// Terms a fused sum takes; longer sums nest.
const MAX_SUM: usize = 32;

/// An expression as row operations; identical subexpressions (the same
/// neighbour read twice, a repeated term) are computed once.
#[derive(Clone, Debug)]
pub struct Program<T> {
    pub(super) ops: Vec<Op<T>>,
    /// The operation computing each component of the new cell (one for a
    /// scalar cell).
    pub(super) roots: Vec<usize>,
    /// The offset, component and buffer (0 the grid, `1 + i` auxiliary
    /// field `i`) `Load(i)` reads.
    loads: Vec<(Vec<i64>, usize, usize)>,
    /// `None` for scalar cells; the components of array cells.
    width: Option<usize>,
    /// Cells per chunk.
    chunk: usize,
    /// The terms of each fused sum.
    pub(super) sums: Vec<Vec<usize>>,
    /// The constants of each weighted sum's terms (none for a plain sum).
    pub(super) weights: Vec<Vec<T>>,
    /// The operations that compute something, in order up to the root
    /// (operands come before their users, so nothing after it feeds it).
    steps: Vec<usize>,
    /// Whether conditions on the global index are found per run of cells
    /// (scalar cells) rather than computed cell by cell.
    hoist: bool,
}

/// A hashable key of an operation (constants by their bits).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Load(usize),
    Const(u64),
    Node(String),
}

struct Builder<T> {
    ops: Vec<Op<T>>,
    seen: HashMap<Key, usize>,
    loads: Vec<(Vec<i64>, usize, usize)>,
    lets: Vec<usize>,
    sums: Vec<Vec<usize>>,
    weights: Vec<Vec<T>>,
}

impl<T: Math> Builder<T> {
    /// A fused sum of `terms` (three or more), then `tail`.
    fn sum(&mut self, terms: Vec<usize>, tail: Option<(Arith, usize)>) -> usize {
        let key = Key::Node(format!("Sum{terms:?}{tail:?}"));
        if let Some(&i) = self.seen.get(&key) {
            return i;
        }
        self.sums.push(terms);
        self.weights.push(Vec::new());
        self.push(key, Op::Sum(self.sums.len() - 1, tail))
    }

    /// A weighted sum of `terms` (two or more; a constant and an
    /// expression each), then `tail`.
    fn weighted(&mut self, terms: Vec<(T, &Expr)>, tail: Option<(Arith, usize)>) -> usize {
        let (weights, terms): (Vec<T>, Vec<usize>) =
            terms.into_iter().map(|(w, t)| (w, self.build(t))).unzip();
        let key = Key::Node(format!("Weighted{terms:?}{weights:?}{tail:?}"));
        if let Some(&i) = self.seen.get(&key) {
            return i;
        }
        self.sums.push(terms);
        self.weights.push(weights);
        self.push(key, Op::Weighted(self.sums.len() - 1, tail))
    }

    fn load(&mut self, load: (Vec<i64>, usize, usize)) -> usize {
        let i = match self.loads.iter().position(|x| *x == load) {
            Some(i) => i,
            None => {
                self.loads.push(load);
                self.loads.len() - 1
            }
        };
        self.push(Key::Load(i), Op::Load(i))
    }

    fn push(&mut self, key: Key, op: Op<T>) -> usize {
        if let Some(&i) = self.seen.get(&key) {
            return i;
        }
        self.ops.push(op);
        self.seen.insert(key, self.ops.len() - 1);
        self.ops.len() - 1
    }

    fn node(&mut self, op: Op<T>) -> usize {
        if let Some(v) = self.folded(op) {
            return self.push(Key::Const(v.to_f64().to_bits()), Op::Const(v));
        }
        // Operands are already unique, so the op's text is its identity.
        self.push(Key::Node(format!("{op:?}")), op)
    }

    /// The value of arithmetic on constants, computed now: the same IEEE
    /// operation in `T` the rows would do (`1 / 3`, `dt / tau`).
    fn folded(&self, op: Op<T>) -> Option<T> {
        let value = |i: usize| match self.ops[i] {
            Op::Const(v) => Some(v),
            _ => None,
        };
        match op {
            Op::Neg(a) => Some(-value(a)?),
            Op::Arith(f, a, b) => Some(f.apply(value(a)?, value(b)?)),
            _ => None,
        }
    }

    fn build(&mut self, e: &Expr) -> usize {
        match e {
            Expr::Num(v) => {
                let t = T::from_f64(*v);
                self.push(Key::Const(t.to_f64().to_bits()), Op::Const(t))
            }
            Expr::Cell(o, k) => self.load((o.clone(), *k, 0)),
            Expr::Aux(field, o) => self.load((o.clone(), 0, 1 + field)),
            Expr::Let(i) => self.lets[*i],
            Expr::Global(d) => self.push(Key::Node(format!("Global({d})")), Op::Global(*d)),
            Expr::Old2(k) => self.push(Key::Node(format!("Old2({k})")), Op::Old2(*k)),
            Expr::Size(_) => unreachable!("ExprKernel::new refuses unbound sizes"),
            Expr::Neg(a) => {
                let a = self.build(a);
                self.node(Op::Neg(a))
            }
            // Division by a power of two is multiplication by its exact
            // reciprocal: the same bits, and far cheaper.
            Expr::Arith(Arith::Div, a, b) if reciprocal::<T>(b).is_some() => {
                let r = Expr::Num(reciprocal::<T>(b).expect("checked"));
                self.build(&Expr::Arith(Arith::Mul, a.clone(), Box::new(r)))
            }
            // A sum of constant multiples (Devito's coefficients), then one
            // more operation, or a constant times it (the same bits either
            // side: the constant is no NaN).
            Expr::Arith(Arith::Add, _, _) if weighted_terms::<T>(e).is_some() => {
                let terms = weighted_terms::<T>(e).expect("checked");
                self.weighted(terms, None)
            }
            Expr::Arith(op, a, b) if *op != Arith::Add && weighted_terms::<T>(a).is_some() => {
                let terms = weighted_terms::<T>(a).expect("checked");
                let last = self.build(b);
                self.weighted(terms, Some((*op, last)))
            }
            Expr::Arith(Arith::Mul, a, b)
                if weight::<T>(a).is_some() && weighted_terms::<T>(b).is_some() =>
            {
                let c = self.build(a);
                let terms = weighted_terms::<T>(b).expect("checked");
                self.weighted(terms, Some((Arith::Mul, c)))
            }
            Expr::Arith(op, a, b)
                if *op != Arith::Add
                    && left_spine(a).len() >= 3
                    && left_spine(a).len() <= MAX_SUM =>
            {
                let terms = left_spine(a).into_iter().map(|t| self.build(t)).collect();
                let last = self.build(b);
                self.sum(terms, Some((*op, last)))
            }
            Expr::Arith(Arith::Add, _, _) if left_spine(e).len() >= 3 => {
                let spine = left_spine(e);
                let mut acc = self.build(spine[0]);
                let mut rest: Vec<usize> = spine[1..].iter().map(|t| self.build(t)).collect();
                // Chunks of up to MAX_SUM operands, the running sum first.
                while !rest.is_empty() {
                    if rest.len() == 1 {
                        // Two terms: a plain addition (a fused sum has three or more).
                        acc = self.node(Op::Arith(Arith::Add, acc, rest[0]));
                        break;
                    }
                    let take = rest.len().min(MAX_SUM - 1);
                    let terms = std::iter::once(acc)
                        .chain(rest[..take].iter().copied())
                        .collect();
                    acc = self.sum(terms, None);
                    rest.drain(..take);
                }
                acc
            }
            Expr::Arith(op, a, b) => {
                let (a, b) = (self.build(a), self.build(b));
                self.node(Op::Arith(*op, a, b))
            }
            Expr::Compare(op, a, b) => {
                let (a, b) = (self.build(a), self.build(b));
                self.node(Op::Compare(*op, a, b))
            }
            Expr::And(a, b) => {
                let (a, b) = (self.build(a), self.build(b));
                self.node(Op::And(a, b))
            }
            Expr::Or(a, b) => {
                let (a, b) = (self.build(a), self.build(b));
                self.node(Op::Or(a, b))
            }
            Expr::Not(a) => {
                let a = self.build(a);
                self.node(Op::Not(a))
            }
            Expr::Select(c, a, b) => {
                let (c, a, b) = (self.build(c), self.build(a), self.build(b));
                self.node(Op::Select(c, a, b))
            }
            Expr::Call(f, args) => {
                let ids: Vec<usize> = args.iter().map(|a| self.build(a)).collect();
                match ids[..] {
                    [a] => self.node(Op::Call1(*f, a)),
                    [a, b] => self.node(Op::Call2(*f, a, b)),
                    _ => unreachable!("the parser checks arities"),
                }
            }
        }
    }
}

/// `1 / b` when `b` is a literal whose reciprocal is exact in `T` (a power
/// of two well inside the range).
fn reciprocal<T: Math>(b: &Expr) -> Option<f64> {
    match b {
        Expr::Num(v) if T::from_f64(*v).to_f64() == *v => crate::generic::exact_reciprocal(*v),
        _ => None,
    }
}

/// A literal as a weight: rounded to `T`, and no NaN (so `w x` is `x w`).
fn weight<T: Math>(e: &Expr) -> Option<T> {
    match e {
        Expr::Num(v) if !v.is_nan() => Some(T::from_f64(*v)),
        _ => None,
    }
}

/// The terms of `e` as a weighted sum (two to [`MAX_WEIGHTED`] terms,
/// one of them or more a literal times an expression, or one divided by a
/// power of two): each term's constant (1 where none) and expression.
fn weighted_terms<T: Math>(e: &Expr) -> Option<Vec<(T, &Expr)>> {
    let spine = left_spine(e);
    if !(2..=MAX_WEIGHTED).contains(&spine.len()) {
        return None;
    }
    let one = T::from_f64(1.0);
    let terms: Vec<(T, &Expr)> = spine
        .into_iter()
        .map(|t| match t {
            Expr::Arith(Arith::Mul, a, b) => match (weight::<T>(a), weight::<T>(b)) {
                (Some(w), _) => (w, &**b),
                (None, Some(w)) => (w, &**a),
                _ => (one, t),
            },
            Expr::Arith(Arith::Div, a, b) => match reciprocal::<T>(b) {
                Some(r) => (T::from_f64(r), &**a),
                None => (one, t),
            },
            _ => (one, t),
        })
        .collect();
    // Some term is weighted (`t` is kept whole where none is).
    terms
        .iter()
        .zip(left_spine(e))
        .any(|((_, x), t)| !std::ptr::eq(*x, t))
        .then_some(terms)
}

/// The terms of a left-associated chain of additions, in order:
/// `((a + b) + c) + d` gives a, b, c, d (a right operand that is itself a
/// sum stays one term: its parentheses change the roundings).
fn left_spine(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Arith(Arith::Add, a, b) => {
            let mut v = left_spine(a);
            v.push(b);
            v
        }
        other => vec![other],
    }
}

impl<T: Math> Program<T> {
    /// Compiles `lets` (in order) and `update`, one expression per
    /// component of cells of `width` components (`None`: one expression,
    /// scalar cells).
    pub fn new(lets: &[Expr], update: &[Expr], width: Option<usize>) -> Program<T> {
        assert_eq!(update.len(), width.unwrap_or(1), "one update per component");
        let mut b = Builder {
            ops: Vec::new(),
            seen: HashMap::new(),
            loads: Vec::new(),
            lets: Vec::new(),
            sums: Vec::new(),
            weights: Vec::new(),
        };
        for l in lets {
            let id = b.build(l);
            b.lets.push(id);
        }
        let roots: Vec<usize> = update.iter().map(|e| b.build(e)).collect();
        let last = roots.iter().copied().max().expect("one update or more");
        let steps = (0..=last)
            .filter(|&k| !matches!(b.ops[k], Op::Load(_) | Op::Const(_)))
            .collect();
        let chunk = match width {
            None => CHUNK,
            Some(_) => {
                let rows = b.ops.len() + b.loads.len();
                let fit = ARRAY_TEMPORARIES / (rows * std::mem::size_of::<T>()).max(1);
                // Whole vectors, at least, and no longer than scalar chunks.
                (fit / 16 * 16).clamp(16, CHUNK)
            }
        };
        Program {
            ops: b.ops,
            roots,
            loads: b.loads,
            width,
            chunk,
            sums: b.sums,
            weights: b.weights,
            steps,
            hoist: true,
        }
    }

    /// The same program computing conditions on the global index cell by
    /// cell, as array cells do: what the hoisted runs must equal.
    #[cfg(test)]
    pub(super) fn cell_by_cell(self) -> Program<T> {
        Program {
            hoist: false,
            ..self
        }
    }

    /// Computes `region` into `dst` (the slab from `region[0].start`).
    /// Both buffers hold components: one per cell for scalar cells, the
    /// cell's `width` components side by side for array cells. `aux` are
    /// the auxiliary fields' buffers (scalar cells only), with `src`'s
    /// geometry.
    pub fn apply(
        &self,
        src: &[T],
        aux: &[&[T]],
        dst: &mut [T],
        frame: &Frame,
        region: &[Range<usize>],
    ) {
        let lin: Vec<isize> = self.loads.iter().map(|(o, ..)| frame.linear(o)).collect();
        // The buffer each load reads: the grid, or an auxiliary field.
        let bufs_of: Vec<&[T]> = self
            .loads
            .iter()
            .map(|l| if l.2 == 0 { src } else { aux[l.2 - 1] })
            .collect();
        let chunk = self.chunk;
        let mut bufs: Vec<Vec<T>> = self
            .ops
            .iter()
            .map(|op| match op {
                Op::Const(c) => vec![*c; chunk],
                Op::Load(_) => Vec::new(),
                _ => vec![T::from_f64(0.0); chunk],
            })
            .collect();
        let mut run = Run::new();
        let mut g = vec![0; frame.ndims()];
        // Without the global index every run is the same: planned once.
        let fixed = !self.ops.iter().any(|op| matches!(op, Op::Global(_)));
        let plan = |run: &mut Run<T>, g: &[i64], n: usize, hoist: bool| {
            run.plan(
                &self.ops,
                (&self.sums, &self.weights),
                &self.roots,
                g,
                n,
                hoist,
            )
        };
        if fixed || self.width.is_some() {
            plan(&mut run, &g, chunk, self.hoist && self.width.is_none());
        }
        let Some(width) = self.width else {
            // A row's first cells and a short rest compute their conditions
            // cell by cell: planning them costs more (clamped edges make
            // runs of one cell there), and one plan a row is left.
            let mut edge = Run::new();
            if !fixed {
                plan(&mut edge, &g, chunk, false);
            }
            for_each_row(frame, region, |s, d, len| {
                let mut at = 0;
                while at < len {
                    // Runs of cells over which every condition on the
                    // global index keeps its outcome, in chunks.
                    let mut n = chunk.min(len - at);
                    let short = !fixed && (at == 0 || len - at < EDGE);
                    if short {
                        n = n.min(EDGE);
                    } else if !fixed {
                        global(frame, s + at, &mut g);
                        n = plan(&mut run, &g, n, self.hoist);
                    }
                    let run = if short { &edge } else { &run };
                    let out = &mut dst[d + at..d + at + n];
                    let ch = Chunk {
                        srcs: &bufs_of,
                        lin: &lin,
                        s: s + at,
                        at: s + at,
                        n,
                    };
                    eval(self, frame, ch, run, &mut bufs, Some(out));
                    at += n;
                }
            });
            return;
        };
        // Array cells: each component a chunk reads is gathered into a row
        // of its own, so the operations run on plain rows as for scalar
        // cells; load `j`'s row starts at `j * chunk` of `gathered`.
        let mut gathered = vec![T::from_f64(0.0); self.loads.len() * chunk];
        let rows: Vec<isize> = (0..self.loads.len())
            .map(|j| (j * chunk) as isize)
            .collect();
        // Every gathered row is in the one buffer.
        for_each_row(frame, region, |s, d, len| {
            let mut at = 0;
            while at < len {
                let n = chunk.min(len - at);
                let (s, d) = (s + at, d + at);
                for (j, ((_, k, _), &off)) in self.loads.iter().zip(&lin).enumerate() {
                    let first = (s as isize + off) as usize;
                    let row = &mut gathered[j * chunk..j * chunk + n];
                    for (i, g) in row.iter_mut().enumerate() {
                        *g = src[(first + i) * width + k];
                    }
                }
                for (op, buf) in self.ops.iter().zip(bufs.iter_mut()) {
                    if let Op::Old2(k) = *op {
                        for (i, b) in buf[..n].iter_mut().enumerate() {
                            *b = dst[(d + i) * width + k];
                        }
                    }
                }
                let ch = Chunk {
                    srcs: &vec![&gathered[..]; self.loads.len()],
                    lin: &rows,
                    s: 0,
                    at: s,
                    n,
                };
                eval(self, frame, ch, &run, &mut bufs, None);
                for (k, &root) in self.roots.iter().enumerate() {
                    let root = run.source(root);
                    let value = |i: usize| match (self.ops[root], run.scalar(root)) {
                        (_, Some(v)) => v,
                        (Op::Load(j), _) => gathered[j * chunk + i],
                        _ => bufs[root][i],
                    };
                    for i in 0..n {
                        dst[(d + i) * width + k] = value(i);
                    }
                }
                at += n;
            }
        });
    }
}

/// Where one chunk of `n` cells reads: load `j` at
/// `srcs[j][s + lin[j]..]`; its first cell is at `at` in the frame
/// (for the global index).
#[derive(Clone, Copy)]
struct Chunk<'a, T> {
    srcs: &'a [&'a [T]],
    lin: &'a [isize],
    s: usize,
    at: usize,
    n: usize,
}

/// The global index of the frame's cell `at`, into `g`.
fn global(frame: &Frame, at: usize, g: &mut [i64]) {
    for (d, x) in g.iter_mut().enumerate() {
        *x = frame.origin()[d] + ((at / frame.strides()[d]) % frame.dims()[d]) as i64;
    }
}

/// An operand: a row, or a value the same in every cell (kept in a
/// register rather than read from a row of copies).
#[derive(Clone, Copy)]
enum In<'a, T> {
    Row(&'a [T]),
    Scalar(T),
}

/// `dst = f(a, b)` cell by cell.
#[inline(always)]
fn binary<T: Copy>(dst: &mut [T], a: In<'_, T>, b: In<'_, T>, f: impl Fn(T, T) -> T) {
    match (a, b) {
        (In::Row(x), In::Row(y)) => dst
            .iter_mut()
            .zip(x)
            .zip(y)
            .for_each(|((o, x), y)| *o = f(*x, *y)),
        (In::Row(x), In::Scalar(y)) => dst.iter_mut().zip(x).for_each(|(o, x)| *o = f(*x, y)),
        (In::Scalar(x), In::Row(y)) => dst.iter_mut().zip(y).for_each(|(o, y)| *o = f(x, *y)),
        (In::Scalar(x), In::Scalar(y)) => dst.fill(f(x, y)),
    }
}

/// One run of cells (`run`'s values): the root into `out` for scalar
/// cells; for array cells (`out` is `None`) every operation into `bufs`,
/// `Old2` rows filled in already.
#[inline(never)]
fn eval<T: Math>(
    p: &Program<T>,
    frame: &Frame,
    ch: Chunk<'_, T>,
    run: &Run<T>,
    bufs: &mut [Vec<T>],
    out: Option<&mut [T]>,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: `eval_avx2` only requires AVX2, which the CPU was just found to have.
        return unsafe { eval_avx2(p, frame, ch, run, bufs, out) };
    }
    eval_body(p, frame, ch, run, bufs, out)
}

/// See `kernel::row_avx2`: wider vectors, the same operations (AVX2 has no
/// fused multiply-add, so nothing is contracted).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn eval_avx2<T: Math>(
    p: &Program<T>,
    frame: &Frame,
    ch: Chunk<'_, T>,
    run: &Run<T>,
    bufs: &mut [Vec<T>],
    out: Option<&mut [T]>,
) {
    eval_body(p, frame, ch, run, bufs, out)
}

#[inline(always)]
fn eval_body<T: Math>(
    p: &Program<T>,
    frame: &Frame,
    ch: Chunk<'_, T>,
    run: &Run<T>,
    bufs: &mut [Vec<T>],
    mut out: Option<&mut [T]>,
) {
    let Chunk {
        srcs,
        lin,
        s,
        at,
        n,
    } = ch;
    let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
    let truth = |b: bool| if b { one } else { zero };
    // Scalar cells compute their root straight into `out`.
    let root = if out.is_some() {
        run.source(p.roots[0])
    } else {
        usize::MAX
    };
    // Values known for the run that an operation reads as a row (all but
    // arithmetic and comparisons, which take them as they are).
    for &(i, v) in run.fills() {
        bufs[i][..n].fill(v);
    }
    for &k in &p.steps {
        if !run.computes(k) {
            continue;
        }
        let op = &p.ops[k];
        let (done, rest) = bufs.split_at_mut(k);
        if let Op::Old2(_) = op {
            // Kept before the root overwrites the destination (as the root
            // it is already there).
            if let Some(out) = out.as_deref() {
                if k != root {
                    rest[0][..n].copy_from_slice(out);
                }
            }
            continue;
        }
        let dst: &mut [T] = match out.as_deref_mut() {
            Some(out) if k == root => out,
            _ => &mut rest[0][..n],
        };
        let row = |i: usize| -> &[T] {
            let i = run.source(i);
            match p.ops[i] {
                Op::Load(j) => {
                    let start = (s as isize + lin[j]) as usize;
                    &srcs[j][start..start + n]
                }
                _ => &done[i][..n],
            }
        };
        let get = |i: usize| match run.scalar(i) {
            Some(v) => In::Scalar(v),
            None => In::Row(row(i)),
        };
        match *op {
            Op::Load(_) | Op::Const(_) | Op::Old2(_) => {}
            Op::Global(dim) => {
                // This run's global index: constant along the row except
                // in the last dimension, where it counts up.
                let pos = (at / frame.strides()[dim]) % frame.dims()[dim];
                let first = frame.origin()[dim] + pos as i64;
                if dim + 1 == frame.ndims() {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o = T::from_f64((first + j as i64) as f64);
                    }
                } else {
                    dst.fill(T::from_f64(first as f64));
                }
            }
            Op::Neg(a) => dst.iter_mut().zip(row(a)).for_each(|(o, x)| *o = -*x),
            Op::Not(a) => dst
                .iter_mut()
                .zip(row(a))
                .for_each(|(o, x)| *o = truth(*x == zero)),
            Op::Arith(f, a, b) => {
                let (a, b) = (get(a), get(b));
                match f {
                    Arith::Add => binary(dst, a, b, |x, y| x + y),
                    Arith::Sub => binary(dst, a, b, |x, y| x - y),
                    Arith::Mul => binary(dst, a, b, |x, y| x * y),
                    Arith::Div => binary(dst, a, b, |x, y| x / y),
                }
            }
            Op::Compare(f, a, b) => {
                let (a, b) = (get(a), get(b));
                match f {
                    Compare::Lt => binary(dst, a, b, |x, y| truth(x < y)),
                    Compare::Le => binary(dst, a, b, |x, y| truth(x <= y)),
                    Compare::Gt => binary(dst, a, b, |x, y| truth(x > y)),
                    Compare::Ge => binary(dst, a, b, |x, y| truth(x >= y)),
                    Compare::Eq => binary(dst, a, b, |x, y| truth(x == y)),
                    Compare::Ne => binary(dst, a, b, |x, y| truth(x != y)),
                }
            }
            Op::And(a, b) => dst
                .iter_mut()
                .zip(row(a))
                .zip(row(b))
                .for_each(|((o, x), y)| *o = truth(*x != zero && *y != zero)),
            Op::Or(a, b) => dst
                .iter_mut()
                .zip(row(a))
                .zip(row(b))
                .for_each(|((o, x), y)| *o = truth(*x != zero || *y != zero)),
            Op::Select(c, a, b) => dst
                .iter_mut()
                .zip(row(c))
                .zip(row(a))
                .zip(row(b))
                .for_each(|(((o, c), x), y)| *o = if *c != zero { *x } else { *y }),
            Op::Call1(f, a) => {
                let it = dst.iter_mut().zip(row(a));
                match f {
                    Func::Sqrt => it.for_each(|(o, x)| *o = x.sqrt()),
                    Func::Abs => it.for_each(|(o, x)| *o = x.abs()),
                    Func::Min | Func::Max => unreachable!("two arguments"),
                }
            }
            Op::Sum(i, tail) => {
                let mut terms: [&[T]; MAX_SUM] = [&[]; MAX_SUM];
                // Resolved here rather than through a closure per read: a
                // stencil's sum reads many neighbours, and a call per read
                // per row showed in profiles of 3d27.
                for (t, &op) in terms.iter_mut().zip(&p.sums[i]) {
                    let op = run.source(op);
                    *t = match p.ops[op] {
                        Op::Load(j) => {
                            let start = (s as isize + lin[j]) as usize;
                            &srcs[j][start..start + n]
                        }
                        _ => &done[op][..n],
                    };
                }
                let tail = tail.map(|(f, c)| match get(c) {
                    In::Scalar(v) => (f, Last::Scalar(v)),
                    In::Row(r) => (f, Last::Row(r)),
                });
                fused(dst, &terms[..p.sums[i].len()], tail);
            }
            Op::Weighted(i, tail) => {
                let mut terms: [(T, &[T]); MAX_WEIGHTED] = [(zero, &[]); MAX_WEIGHTED];
                for ((t, &op), &w) in terms.iter_mut().zip(&p.sums[i]).zip(&p.weights[i]) {
                    *t = (w, row(op));
                }
                let tail = tail.map(|(f, c)| match get(c) {
                    In::Scalar(v) => (f, Last::Scalar(v)),
                    In::Row(r) => (f, Last::Row(r)),
                });
                weighted(dst, &terms[..p.sums[i].len()], tail);
            }
            Op::Call2(f, a, b) => {
                let it = dst.iter_mut().zip(row(a)).zip(row(b));
                match f {
                    Func::Min => it.for_each(|((o, x), y)| *o = x.min(*y)),
                    Func::Max => it.for_each(|((o, x), y)| *o = x.max(*y)),
                    Func::Sqrt | Func::Abs => unreachable!("one argument"),
                }
            }
        }
    }
    // A root that is a plain read or a value known for the run computed
    // nothing above.
    let Some(out) = out else { return };
    match (p.ops[root], run.scalar(root)) {
        (_, Some(v)) => out.fill(v),
        (Op::Load(j), _) => {
            let start = (s as isize + lin[j]) as usize;
            out.copy_from_slice(&srcs[j][start..start + n]);
        }
        _ => {}
    }
}

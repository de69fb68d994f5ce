//! The expression kernels against the library's kernels (bit for bit),
//! the spec language's errors, and the device code they make.

use super::parse::{Arith, Compare, Func};
use super::*;
use crate::device::CellDecl;
use crate::device::Dialect;
use crate::error::SpecError;
use crate::frame::Frame;
use crate::kernel::launch_serial;
use crate::kernel::{AuxField, Kernel};
use crate::{Generic, Library, Specialized};

fn spec(body: &str) -> Result<ExprSpec, SpecError> {
    ExprSpec::from_toml(
        &format!("name = \"t\"\nlow = [1, 1]\nhigh = [1, 1]\n{body}"),
        "t.toml",
    )
}

/// Runs `k` once over the interior of a `rows x cols` grid of pseudo-random values.
fn run<T: Math>(k: &dyn Kernel<T>, rows: usize, cols: usize) -> Vec<T> {
    let frame = Frame::row_major(&[rows, cols]);
    let src: Vec<T> = (0..rows * cols)
        .map(|i| T::from_f64(((i * 7919) % 1000) as f64 / 997.0 - 0.3))
        .collect();
    let mut dst = src.clone();
    launch_serial(k, &src, &mut dst, &frame, &[1..rows - 1, 1..cols - 1]).unwrap();
    dst
}

#[test]
fn the_2d4_expression_is_the_specialised_kernel_bit_for_bit() {
    let e = spec("update = \"(u[-1,0] + u[1,0] + u[0,-1] + u[0,1]) / 4\"").unwrap();
    for cols in [3, 17, 600, 1100] {
        let a = run::<f32>(&ExprKernel::new(&e), 9, cols);
        let b = run::<f32>(&Specialized::new(Library::S2d4), 9, cols);
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{cols}"
        );
    }
    let src = ExprKernel::<f32>::new(&e)
        .device_kernel()
        .unwrap()
        .source(Dialect::OpenCl);
    assert!(
        src.contains("dst[c] = ((((src[c + (-1L) * s2] + src[c + (1L) * s2]) + src[c + (-1L) * s3]) + src[c + (1L) * s3]) / 4.0f);"),
        "{src}"
    );
}

#[test]
// The hand-written check mirrors the expression's `!(u[0,0] < 0)`.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn lets_params_conditions_and_functions_compute_as_written() {
    let e = spec(
        "params = { k = 0.3, lim = 0.2 }\nlet = [\"s = u[-1,0] - u[1,-1] * k\", \"hot = s > lim && !(u[0,0] < 0)\"]\nupdate = \"select(hot, sqrt(abs(s)), min(s, -u[0,1]) / max(k, u[1,1]))\"",
    )
    .unwrap();
    assert_eq!(
        e.offsets(),
        vec![vec![-1, 0], vec![0, 0], vec![0, 1], vec![1, -1], vec![1, 1]]
    );
    let got = run::<f64>(&ExprKernel::new(&e), 7, 700);
    // The same arithmetic written by hand, cell by cell.
    let frame = Frame::row_major(&[7, 700]);
    let src: Vec<f64> = (0..7 * 700)
        .map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.3)
        .collect();
    for r in 1..6 {
        for q in 1..699 {
            let at = |dr: i64, dq: i64| src[((r as i64 + dr) * 700 + q as i64 + dq) as usize];
            let s = at(-1, 0) - at(1, -1) * 0.3;
            let hot = s > 0.2 && !(at(0, 0) < 0.0);
            let want = if hot {
                s.abs().sqrt()
            } else {
                s.min(-at(0, 1)) / 0.3f64.max(at(1, 1))
            };
            assert_eq!(
                got[frame.linear(&[r as i64, q as i64]) as usize].to_bits(),
                want.to_bits()
            );
        }
    }
    let src = ExprKernel::<f64>::new(&e)
        .device_kernel()
        .unwrap()
        .source(Dialect::Cuda);
    assert!(src.contains("const double l0 = (src[c + (-1L) * s2] - (src[c + (1L) * s2 + (-1L) * s3] * 0.3)); /* s */"), "{src}");
    assert!(
        src.contains("const int l1 = ((l0 > 0.2) && (!(src[c] < 0.0))); /* hot */"),
        "{src}"
    );
    assert!(src.contains("dst[c] = (l1 ? sqrt(fabs(l0)) : (fmin(l0, (-src[c + (1L) * s3])) / fmax(0.3, src[c + (1L) * s2 + (1L) * s3])));"), "{src}");
}

#[test]
fn an_update_that_is_a_let_or_a_read_works() {
    let e = spec("let = [\"a = u[0,1]\", \"b = a * 2\"]\nupdate = \"a\"").unwrap();
    let got = run::<f32>(&ExprKernel::new(&e), 5, 40);
    let shifted = run::<f32>(
        &ExprKernel::new(&spec("update = \"u[0,1]\"").unwrap()),
        5,
        40,
    );
    assert_eq!(got, shifted);
    let k = spec("update = \"u[0,0] * 0 + 1.5\"").unwrap();
    assert!(run::<f32>(&ExprKernel::new(&k), 4, 4)[5] == 1.5);
}

#[test]
fn weighted_specs_and_expressions_agree_where_the_order_is_the_same() {
    // The generic kernel sums w*x in lexicographic order from the first term.
    let lib = Library::S2d8.spec();
    let terms: Vec<String> = lib
        .terms()
        .iter()
        .map(|(o, w)| format!("{w:?} * u[{},{}]", o[0], o[1]))
        .collect();
    let e = spec(&format!(
        "update = \"({}) / {:?}\"",
        terms.join(" + "),
        lib.factor
    ))
    .unwrap();
    let a = run::<f32>(&ExprKernel::new(&e), 6, 300);
    let b = run::<f32>(&Generic::new(&lib), 6, 300);
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// The expression at one cell, straight from the tree: what the row
/// operations must equal bit for bit. Buffers hold `w` components a
/// cell.
/// `aux` is auxiliary field 0, scalar cells only.
fn at_cell(
    e: &Expr,
    (src, aux, prev): (&[f32], &[f32], &[f32]),
    frame: &Frame,
    c: isize,
    w: usize,
) -> f32 {
    let r = |x: &Expr| at_cell(x, (src, aux, prev), frame, c, w);
    let b = |x: f32| x != 0.0;
    let t = |x: bool| if x { 1.0 } else { 0.0 };
    match e {
        Expr::Num(v) => *v as f32,
        Expr::Cell(o, k) => src[(c + frame.linear(o)) as usize * w + k],
        Expr::Aux(_, o) => aux[(c + frame.linear(o)) as usize],
        Expr::Let(_) => unreachable!("no lets here"),
        Expr::Size(_) => unreachable!("bound before"),
        Expr::Old2(k) => prev[c as usize * w + k],
        Expr::Global(d) => {
            let idx = frame.index_of(c as usize);
            (frame.origin()[*d] + idx[*d] as i64) as f32
        }
        Expr::Neg(a) => -r(a),
        Expr::Not(a) => t(!b(r(a))),
        Expr::Arith(op, a, x) => op.apply(r(a), r(x)),
        Expr::Compare(op, a, x) => t(match op {
            Compare::Lt => r(a) < r(x),
            Compare::Le => r(a) <= r(x),
            Compare::Gt => r(a) > r(x),
            Compare::Ge => r(a) >= r(x),
            Compare::Eq => r(a) == r(x),
            Compare::Ne => r(a) != r(x),
        }),
        Expr::And(a, x) => t(b(r(a)) && b(r(x))),
        Expr::Or(a, x) => t(b(r(a)) || b(r(x))),
        Expr::Select(k, a, x) => {
            if b(r(k)) {
                r(a)
            } else {
                r(x)
            }
        }
        Expr::Call(f, args) => match f {
            Func::Sqrt => r(&args[0]).sqrt(),
            Func::Abs => r(&args[0]).abs(),
            Func::Min => r(&args[0]).min(r(&args[1])),
            Func::Max => r(&args[0]).max(r(&args[1])),
        },
    }
}

/// Expressions over cells of `w` components.
/// With `aux` (scalar cells), also reads of auxiliary field 0.
fn any_expr(w: usize, aux: bool) -> impl proptest::strategy::Strategy<Value = Expr> {
    use proptest::prelude::*;
    let aux = u32::from(aux);
    let leaf = prop_oneof![
        1 => prop::sample::select(vec![0.0, 1.0, -1.5, 0.3, 7.0]).prop_map(Expr::Num),
        1 => (-1i64..=1, -1i64..=1, 0..w).prop_map(|(a, b, k)| Expr::Cell(vec![a, b], k)),
        1 => (0usize..2).prop_map(Expr::Global),
        1 => (0..w).prop_map(Expr::Old2),
        aux => (-1i64..=1, -1i64..=1).prop_map(|(a, b)| Expr::Aux(0, vec![a, b])),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        let arith = prop::sample::select(vec![Arith::Add, Arith::Sub, Arith::Mul, Arith::Div]);
        let cmp = prop::sample::select(vec![Compare::Lt, Compare::Ge, Compare::Eq, Compare::Ne]);
        let bx = |e: Expr| Box::new(e);
        prop_oneof![
            inner.clone().prop_map(move |a| Expr::Neg(bx(a))),
            (arith, inner.clone(), inner.clone()).prop_map(move |(o, a, b)| Expr::Arith(
                o,
                bx(a),
                bx(b)
            )),
            // Long left-to-right sums, with a last operation or not.
            (
                prop::collection::vec(inner.clone(), 3..40),
                prop::option::of((arith_any(), inner.clone()))
            )
                .prop_map(|(terms, tail)| {
                    let mut it = terms.into_iter();
                    let first = it.next().expect("three terms or more");
                    let s = it.fold(first, |acc, t| {
                        Expr::Arith(Arith::Add, Box::new(acc), Box::new(t))
                    });
                    match tail {
                        Some((op, t)) => Expr::Arith(op, Box::new(s), Box::new(t)),
                        None => s,
                    }
                }),
            (
                cmp,
                inner.clone(),
                inner.clone(),
                inner.clone(),
                inner.clone()
            )
                .prop_map(move |(o, a, b, x, y)| {
                    let cond = Expr::Or(
                        bx(Expr::Compare(o, bx(a), bx(b))),
                        bx(Expr::Not(bx(Expr::Compare(
                            Compare::Gt,
                            bx(x.clone()),
                            bx(y.clone()),
                        )))),
                    );
                    Expr::Select(bx(cond), bx(x), bx(y))
                }),
            inner
                .clone()
                .prop_map(move |a| Expr::Call(Func::Sqrt, vec![Expr::Call(Func::Abs, vec![a])])),
            (inner.clone(), inner).prop_map(|(a, b)| Expr::Call(
                Func::Max,
                vec![Expr::Call(Func::Min, vec![a.clone(), b.clone()]), b]
            )),
        ]
    })
}

fn arith_any() -> impl proptest::strategy::Strategy<Value = Arith> {
    proptest::sample::select(vec![Arith::Add, Arith::Sub, Arith::Mul, Arith::Div])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Row operations (fused sums, shared subexpressions, chunks)
    /// equal the expression evaluated cell by cell, bit for bit.
    #[test]
    fn rows_equal_the_tree_cell_by_cell(e in any_expr(1, true), cols in 3usize..1200) {
        rows_equal_the_tree(&[e], None, cols)?;
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// The same for array cells: every component read gathered from
    /// its place in the cell, every component written to its own.
    #[test]
    fn array_cells_equal_the_tree_cell_by_cell(
        es in proptest::strategy::Strategy::prop_flat_map(1usize..4, |w| proptest::collection::vec(any_expr(w, false), w)),
        cols in 3usize..1200,
    ) {
        rows_equal_the_tree(&es, Some(es.len()), cols)?;
    }
}

/// Runs `es` (one per component) as row operations over a 4 x `cols`
/// grid and compares each interior cell with [`at_cell`].
fn rows_equal_the_tree(
    es: &[Expr],
    width: Option<usize>,
    cols: usize,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let program = Program::<f32>::new(&[], es, width);
    let w = width.unwrap_or(1);
    let rows = 4;
    let frame = Frame::row_major(&[rows, cols]).with_origin(&[5, -3]);
    let src: Vec<f32> = (0..rows * cols * w)
        .map(|i| ((i * 7919) % 1000) as f32 / 97.0 - 3.0)
        .collect();
    // The destination holds the level before: what old2 reads.
    let prev: Vec<f32> = (0..rows * cols * w)
        .map(|i| (i % 13) as f32 * 0.7 - 2.0)
        .collect();
    let aux: Vec<f32> = (0..rows * cols)
        .map(|i| (i % 29) as f32 * 0.3 - 4.0)
        .collect();
    let mut dst = prev.clone();
    let auxes: &[&[f32]] = if width.is_none() { &[&aux] } else { &[] };
    program.apply(
        &src,
        auxes,
        &mut dst[cols * w..],
        &frame,
        &[1..rows - 1, 1..cols - 1],
    );
    for r in 1..rows - 1 {
        for q in 1..cols - 1 {
            let c = (r * cols + q) as isize;
            for (k, e) in es.iter().enumerate() {
                let want = at_cell(e, (&src, &aux, &prev), &frame, c, w);
                let got = dst[c as usize * w + k];
                proptest::prop_assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "cell ({r},{q}) component {k}: {got} vs {want} for {e:?}"
                );
            }
        }
    }
    Ok(())
}

/// Updates with `select`s on the global index of the kinds the apps
/// use (point sources, edges clamped by index, a second level) and
/// conditions on either side, nested, combined and choosing the index
/// itself, and sums of constant multiples, over rows longer than a
/// chunk.
fn on_the_global_index() -> Vec<Expr> {
    use build::{g, num, old2, select, u};
    let c = u(&[0, 0]);
    let at = |i: f64, j: f64| g(0).eq_to(i).and(g(1).eq_to(j));
    let source = select(at(6.0, 40.0), 2500.0, select(at(7.0, 4100.0), -2500.0, 0.0));
    let sum = (num(0.3) * (u(&[-1, 0]) + u(&[1, 0]))) + (num(0.7) * (u(&[0, -1]) + u(&[0, 1])));
    let clamped = select(g(1).lt(4095.0), u(&[0, 1]), c) - select(g(1).gt(-1.0), u(&[0, -1]), c);
    vec![
        ((sum - ((source * 0.3) * 0.7)) / 3.0).expr(),
        (((2.0 * c) - old2()) + (0.25 * clamped)).expr(),
        select(g(0).lt(7.0).or(g(1).eq_to(17.0)), g(1), g(0) * 2.0).expr(),
        select(
            num(4200.0).le(g(1)).and(g(1).ne_to(4300.0)),
            c,
            select(g(1).ge(g(0)), 1.0, old2()),
        )
        .expr(),
        laplace_shaped().expr(),
    ]
}

/// Laplace's shape in 2-d: sums of constant multiples, nested, then
/// a constant times the whole.
fn laplace_shaped() -> build::E {
    use build::{num, u};
    let (r1, r2, r3) = (num(0.3), num(1.7), num(-0.9));
    let i = (r3 * u(&[-1, 0])) + (r3 * u(&[1, 0]));
    let j = (((r2 * u(&[0, -1])) + (u(&[0, 1]) * r2)) + (u(&[0, 0]) / 4.0)) + u(&[1, 1]);
    num(0.35) * ((r2 * i) + (r1 * j))
}

#[test]
fn sums_of_constant_multiples_run_in_one_pass_each() {
    let p = Program::<f32>::new(&[], &[laplace_shaped().expr()], None);
    let count = |f: fn(&op::Op<f32>) -> bool| p.ops.iter().filter(|o| f(o)).count();
    assert_eq!(count(|o| matches!(o, op::Op::Weighted(..))), 3);
    assert_eq!(
        count(|o| matches!(o, op::Op::Arith(..) | op::Op::Sum(..))),
        0
    );
}

#[test]
fn conditions_on_the_global_index_found_per_run_equal_the_tree() {
    for e in on_the_global_index() {
        for origin in [[5, -3], [3, -2_000], [6, 16_777_000]] {
            hoisted_and_by_cell_equal_the_tree(&e, (4, 9000), origin);
        }
    }
}

/// `e` over the interior of a `rows` x `cols` grid from `origin`,
/// conditions on the global index found per run and computed cell by
/// cell, against [`at_cell`], bit for bit.
fn hoisted_and_by_cell_equal_the_tree(e: &Expr, (rows, cols): (usize, usize), origin: [i64; 2]) {
    let hoisted = Program::<f32>::new(&[], std::slice::from_ref(e), None);
    let by_cell = hoisted.clone().cell_by_cell();
    let frame = Frame::row_major(&[rows, cols]).with_origin(&origin);
    let src: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f32 / 97.0 - 3.0)
        .collect();
    let prev: Vec<f32> = (0..rows * cols)
        .map(|i| (i % 13) as f32 * 0.7 - 2.0)
        .collect();
    let region = [1..rows - 1, 1..cols - 1];
    let (mut a, mut b) = (prev.clone(), prev.clone());
    hoisted.apply(&src, &[], &mut a[cols..], &frame, &region);
    by_cell.apply(&src, &[], &mut b[cols..], &frame, &region);
    for r in region[0].clone() {
        for q in region[1].clone() {
            let at = r * cols + q;
            let want = at_cell(e, (&src, &[], &prev), &frame, at as isize, 1);
            assert_eq!(
                (a[at].to_bits(), b[at].to_bits()),
                (want.to_bits(), want.to_bits()),
                "cell ({r},{q}) of {cols} columns, {e:?} from {origin:?}"
            );
        }
    }
}

/// A row's first cells and a short rest at its end, computed cell by
/// cell, give the bits of the tree and of a program that computes
/// every cell so, with conditions changing inside them, on both sides
/// of them and between, on rows shorter and longer than they are.
#[test]
fn the_ends_of_a_row_computed_cell_by_cell_equal_the_tree() {
    use build::{g, old2, select, u};
    let c = u(&[0, 0]);
    let e = rows::EDGE as f64;
    // Clamped at columns 1, EDGE - 1, EDGE, EDGE + 1 and 9 from the end.
    let clamp = |at: f64, o: i64| select(g(1).lt(at), u(&[0, o]), c);
    let edges = ((clamp(e - 1.0, 1) - clamp(e, -1)) + (clamp(e + 1.0, 1) - clamp(1.0, -1)))
        - select(g(1).gt(g(0) + 20.0), old2(), 2.0 * c);
    for cols in [3, rows::EDGE + 1, rows::EDGE + 2, 2 * rows::EDGE + 3, 300] {
        let end = cols as f64 - 9.0;
        let ends = (edges * select(g(1).ge(end), 0.5, 3.0)).expr();
        for e in [ends, on_the_global_index()[1].clone()] {
            hoisted_and_by_cell_equal_the_tree(&e, (5, cols), [-1, 0]);
        }
    }
}

/// A row of the first update above: the run up to the source, the
/// source alone, the rest (in chunks); outside the source no condition,
/// `select` or global index is computed cell by cell.
#[test]
fn a_row_runs_in_runs_between_the_conditions_changes() {
    let e = &on_the_global_index()[0];
    let p = Program::<f32>::new(&[], std::slice::from_ref(e), None);
    let mut run = segment::Run::new();
    let mut lens = Vec::new();
    let mut computed = Vec::new();
    let (mut j, end) = (1, 9000);
    while j < end {
        let n = run.plan(
            &p.ops,
            (&p.sums, &p.weights),
            &p.roots,
            &[6, j],
            (end - j).min(4096) as usize,
            true,
        );
        lens.push(n);
        let kinds: Vec<_> = (0..p.ops.len())
            .filter(|&k| run.computes(k))
            .map(|k| p.ops[k])
            .collect();
        computed.push(kinds.iter().any(|op| {
            matches!(
                op,
                op::Op::Compare(..) | op::Op::Select(..) | op::Op::Global(_) | op::Op::And(..)
            )
        }));
        j += n as i64;
    }
    assert_eq!(lens, [39, 1, 4096, 4096, 767]);
    assert_eq!(computed, [false; 5]);
}

#[test]
fn aux_fields_are_computed_once_and_read_at_offsets() {
    let e = spec(
        "params = { h = 0.5 }\naux = { c = \"g[0] * h + g[1] / n[1]\", zz = \"select(g[0] < 2, 1, -1)\" }\nupdate = \"u[0,0] * c[0,1] + zz[-1,0]\"",
    )
    .unwrap()
    .for_domain(&[7, 40])
    .unwrap();
    assert_eq!(e.aux.len(), 2);
    assert_eq!(e.offsets(), vec![vec![-1, 0], vec![0, 0], vec![0, 1]]);
    let k = ExprKernel::<f64>::new(&e);
    let fields = k.aux_fields();
    assert_eq!(fields.len(), 2);
    assert_eq!(
        fields[0](&[3, 8]).to_bits(),
        (3.0f64 * 0.5 + 8.0 / 40.0).to_bits()
    );
    assert_eq!(fields[1](&[1, 0]), 1.0);
    assert_eq!(fields[1](&[2, 0]), -1.0);
    // The kernel over a 7 x 40 grid with origin (0, 0) against the
    // formula cell by cell.
    let frame = Frame::row_major(&[7, 40]);
    let src: Vec<f64> = (0..280).map(|i| (i % 17) as f64 * 0.25 - 1.0).collect();
    let field = |f: &AuxField<f64>| -> Vec<f64> {
        (0..280)
            .map(|i| f(&[(i / 40) as i64, (i % 40) as i64]))
            .collect()
    };
    let (c, zz) = (field(&fields[0]), field(&fields[1]));
    let mut dst = vec![0.0; 280];
    let region = [1..6, 1..39];
    k.apply_aux(&src, &[&c, &zz], &mut dst[40..240], &frame, &region);
    for r in 1..6 {
        for q in 1..39 {
            let i = r * 40 + q;
            let want = src[i] * c[i + 1] + zz[i - 40];
            assert_eq!(dst[i].to_bits(), want.to_bits(), "({r},{q})");
        }
    }
    // launch_serial computes the fields itself, the same values.
    let mut serial = vec![0.0; 280];
    crate::kernel::launch_serial(&k, &src, &mut serial, &frame, &region).unwrap();
    assert_eq!(serial[40..240], dst[40..240]);
    // Device code reads the fields as buffers after the ABI's.
    let dev = k.device_kernel().unwrap();
    assert_eq!(dev.aux(), 2);
    let code = dev.source(Dialect::OpenCl);
    assert!(code.contains("__global const cell* aux1)"), "{code}");
    assert!(
        code.contains("dst[c] = ((src[c] * aux0[c + (1L) * s3]) + aux1[c + (-1L) * s2]);"),
        "{code}"
    );
    let cuda = dev.source(Dialect::Cuda);
    assert!(cuda.contains("o3, np, aux0, aux1, i3, i2, z, "), "{cuda}");
    assert!(cuda.contains("const cell* __restrict__ aux1)"), "{cuda}");
    // A program's own values replace a definition.
    let k = ExprKernel::<f64>::new(&e)
        .with_aux("zz", |g| g[1] as f64)
        .unwrap();
    assert_eq!(k.aux_fields()[1](&[0, 9]), 9.0);
    assert!(ExprKernel::<f64>::new(&e)
        .with_aux("nope", |_| 0.0)
        .is_err());
}

#[test]
fn aux_fields_from_rust() {
    use build::{aux, g, u};
    let update = u(&[0, 0]) * aux(0, &[1, 0]) + aux(1, &[0, -1]);
    let spec = ExprSpec::from_rust("r", vec![1, 1], vec![1, 1], update).unwrap();
    let err = spec.with_aux(vec![("a", g(0))]).unwrap_err();
    assert!(
        err.to_string().contains("aux field 1 read, 1 given"),
        "{err}"
    );
    let spec = ExprSpec::from_rust("r", vec![1, 1], vec![1, 1], aux(0, &[0, 0]) + u(&[0, 0]))
        .unwrap()
        .with_aux(vec![("a", g(0) * 2.0), ("b", g(1) - 1.0)]);
    let k = ExprKernel::<f32>::new(&spec.unwrap());
    assert_eq!(k.aux_fields()[0](&[3, 4]), 6.0);
    assert_eq!(k.aux_fields()[1](&[3, 4]), 3.0);
    let bad = ExprSpec::from_rust("r", vec![1, 1], vec![1, 1], u(&[0, 0]))
        .unwrap()
        .with_aux(vec![("a", u(&[0, 0]))]);
    assert!(bad.unwrap_err().to_string().contains("computed once"));
}

#[test]
fn bad_aux_fields_name_the_part_and_the_reason() {
    for (body, want) in [
        (
            "aux = { c = \"u[0,0]\" }\nupdate = \"c[0,0]\"",
            "in aux c, at character 0: an aux field is computed once",
        ),
        (
            "aux = { u = \"1\" }\nupdate = \"u[0,0]\"",
            "'u' cannot name an aux field",
        ),
        (
            "params = { k = 1 }\naux = { k = \"1\" }\nupdate = \"u[0,0]\"",
            "'k' cannot name an aux field",
        ),
        (
            "aux = { c = \"g[0] < 1\" }\nupdate = \"u[0,0]\"",
            "the field is a condition",
        ),
        (
            "aux = { c = \"1\" }\nupdate = \"c[0]\"",
            "c[...] needs 2 offsets",
        ),
        (
            "aux = { c = \"1\" }\nupdate = \"u[0,0] + c[2,0]\"",
            "reaches past low",
        ),
        (
            "aux = { c = \"1\" }\nlet = [\"c = 2\"]\nupdate = \"u[0,0]\"",
            "'c' is already a parameter, u, inf or an aux field",
        ),
        (
            "cell = 2\naux = { c = \"1\" }\nupdate = [\"u[0,0][0]\", \"u[0,0][1]\"]",
            "auxiliary fields need scalar cells",
        ),
        (
            "aux = { c = \"c[0,0]\" }\nupdate = \"u[0,0]\"",
            "unknown name 'c'",
        ),
    ] {
        let err = spec(body).unwrap_err().to_string();
        assert!(err.contains(want), "{body}\n{err}");
    }
}

#[test]
fn the_domain_size_is_a_constant_of_the_run() {
    let e = spec("let = [\"n = n[1] - 1\"]\nupdate = \"u[0,0] * n[0] + n\"").unwrap();
    assert!(e.uses_domain());
    let bound = e.for_domain(&[7, 700]).unwrap();
    assert!(!bound.uses_domain());
    let literal = spec("let = [\"n = 700 - 1\"]\nupdate = \"u[0,0] * 7 + n\"").unwrap();
    assert_eq!(bound, literal);
    let k = ExprKernel::<f32>::new(&bound);
    assert_eq!(
        run::<f32>(&k, 7, 700),
        run::<f32>(&ExprKernel::new(&literal), 7, 700)
    );
    let src = k.device_kernel().unwrap().source(Dialect::OpenCl);
    assert!(
        src.contains("const float l0 = (700.0f - 1.0f); /* n */"),
        "{src}"
    );
    assert!(src.contains("dst[c] = ((src[c] * 7.0f) + l0);"), "{src}");
    let wrong = e.for_domain(&[7, 700, 3]).unwrap_err().to_string();
    assert!(wrong.contains("a 3-d domain for a 2-d stencil"), "{wrong}");
    let unbound = std::panic::catch_unwind(|| ExprKernel::<f32>::new(&e));
    assert!(unbound.is_err(), "an unbound n[d] cannot run");
    let e = spec("update = \"u[0,0] + n[2]\"").unwrap_err().to_string();
    assert!(e.contains("n[2]: the dimension must be 0 to 1"), "{e}");
}

/// A 2-d stencil on two-component cells, with old2, against the same
/// arithmetic by hand; and its device C.
#[test]
fn array_cells_compute_each_component_as_written() {
    let e = spec(
        "cell = 2\nparams = { h = 0.5 }\nlet = [\"s = u[0,-1][0] * h\"]\nupdate = [\"s - u[0,1][1] + old2[1]\", \"select(u[0,0][0] < inf, u[-1,0][1] + u[1,0][0] * 2, s)\"]",
    )
    .unwrap();
    assert_eq!(e.components, Some(2));
    assert_eq!(
        e.offsets(),
        vec![vec![-1, 0], vec![0, -1], vec![0, 0], vec![0, 1], vec![1, 0]]
    );
    let (rows, cols) = (6, 300);
    let frame = Frame::row_major(&[rows, cols]);
    let src: Vec<[f32; 2]> = (0..rows * cols)
        .map(|i| {
            [
                ((i * 7919) % 1000) as f32 / 97.0 - 3.0,
                (i % 17) as f32 * 0.3 - 1.0,
            ]
        })
        .collect();
    let prev: Vec<[f32; 2]> = (0..rows * cols)
        .map(|i| [i as f32, -(i as f32) * 0.25])
        .collect();
    let mut dst = prev.clone();
    let k = ExprKernel::<[f32; 2]>::new(&e);
    launch_serial(&k, &src, &mut dst, &frame, &[1..rows - 1, 1..cols - 1]).unwrap();
    for r in 1..rows - 1 {
        for q in 1..cols - 1 {
            let at =
                |dr: i64, dq: i64| src[((r as i64 + dr) * cols as i64 + q as i64 + dq) as usize];
            let s = at(0, -1)[0] * 0.5;
            let want = [
                s - at(0, 1)[1] + prev[r * cols + q][1],
                at(-1, 0)[1] + at(1, 0)[0] * 2.0,
            ];
            assert_eq!(
                dst[r * cols + q].map(f32::to_bits),
                want.map(f32::to_bits),
                "({r},{q})"
            );
        }
    }
    let dev = k.device_kernel().unwrap();
    assert_eq!(dev.cell(), &CellDecl::array::<f32>(2));
    assert!(
        dev.runs_in(crate::CellLayout::Planes),
        "array cells through the accessors"
    );
    let src = dev.source(Dialect::OpenCl);
    for line in [
        "typedef struct { float d[2]; } cell;",
        "const cell old2 = CELL_AT(dst, c);",
        "const float l0 = (PART_AT(src, c + (-1L) * s3, 0) * 0.5f); /* s */",
        "out.d[0] = ((l0 - PART_AT(src, c + (1L) * s3, 1)) + old2.d[1]);",
        "out.d[1] = ((PART_AT(src, c, 0) < INFINITY) ? (PART_AT(src, c + (-1L) * s2, 1) + (PART_AT(src, c + (1L) * s2, 0) * 2.0f)) : l0);",
        "CELL_PUT(dst, c, out);",
    ] {
        assert!(src.contains(line), "{line}: {src}");
    }
}

#[test]
fn bad_component_syntax_names_the_part_and_the_place() {
    let two = "cell = 2\nupdate = ";
    let cases = [
        (format!("{two}[\"u[0,0][0]\", \"u[0,0]\"]"), "in update[1], at character 6: u[...] is a cell of 2 components: pick one with u[...][k]"),
        (format!("{two}[\"u[0,0][2]\", \"u[0,0][1]\"]"), "in update[0], at character 6: u[...][2]: the component must be 0 to 1"),
        (format!("{two}[\"u[0,0][0]\", \"u[0,0][-1]\"]"), "in update[1], at character 6: u[...][-1]: the component must be 0 to 1"),
        (format!("{two}[\"u[0,0][0]\", \"u[0,0][x]\"]"), "in update[1], at character 7: expected a whole-number component"),
        (format!("{two}[\"u[0,0][0]\", \"u[0,0][1\"]"), "in update[1], at character 8: expected ']'"),
        (format!("{two}[\"u[0,0][0]\", \"old2 + 1\"]"), "in update[1], at character 5: old2 is a cell of 2 components: pick one with old2[k]"),
        (format!("{two}[\"u[0,0][0]\"]"), "cell = 2 needs 2 updates (one per component), got 1"),
        (format!("{two}[\"u[0,0][0]\", 3]"), "the updates must be strings"),
        (format!("{two}\"u[0,0][0]\""), "cell = 2: the update is a list of 2 strings, one per component"),
        ("update = [\"u[0,0]\"]".to_string(), "the update is one string (a list is for cells with components: cell = N)"),
        ("update = \"u[0,0][0]\"".to_string(), "in update, at character 6: u[...][k]: the cells are scalar (declare cell = N for N components)"),
        ("update = \"u[0,0] + old2[0]\"".to_string(), "in update, at character 13: old2[k]: the cells are scalar"),
        ("cell = 0\nupdate = []".to_string(), "cell = 0: a cell has 1 to 256 components"),
        ("cell = -1\nupdate = []".to_string(), "t.toml"),
        ("let = [\"inf = 2\"]\nupdate = \"u[0,0]\"".to_string(), "'inf' is already a parameter, u, inf or an aux field"),
        ("params = { inf = 1.0 }\nupdate = \"u[0,0]\"".to_string(), "parameter 'inf' has a reserved name"),
    ];
    for (body, want) in cases {
        let e = spec(&body).unwrap_err().to_string();
        assert!(e.contains("t.toml") && e.contains(want), "{body}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn bad_specs_name_the_part_and_the_place() {
    let cases = [
        (
            "update = \"u[0,0] + g[2]\"",
            "g[2]: the dimension must be 0 to 1",
        ),
        (
            "update = \"u[0,0] +\"",
            "in update, at character 8: unexpected end",
        ),
        (
            "let = [\"x = 1\", \"y = x + q\"]\nupdate = \"y\"",
            "in let 2, at character 8: unknown name 'q'",
        ),
        (
            "update = \"u[2,0]\"",
            "u[2, 0] reaches past low = [1, 1], high = [1, 1]",
        ),
        ("update = \"u[0,0] > 1\"", "the update is a condition"),
        ("update = \"1 + 2\"", "reads no cell"),
        (
            "params = { u = 1.0 }\nupdate = \"u[0,0]\"",
            "parameter 'u' has a reserved name",
        ),
        (
            "params = { k = 1.0 }\nlet = [\"k = 2\"]\nupdate = \"u[0,0]\"",
            "'k' is already a parameter",
        ),
        (
            "update = \"u[0,0]\"\nweights = [1]",
            "unknown field `weights`",
        ),
        (
            "let = [\"k == 2\"]\nupdate = \"u[0,0]\"",
            "not a name to bind",
        ),
    ];
    for (body, want) in cases {
        let e = spec(body).unwrap_err().to_string();
        assert!(e.contains("t.toml") && e.contains(want), "{body}: {e}");
    }
}

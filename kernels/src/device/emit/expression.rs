//! Kernel bodies in C: a stencil spec's expressions and a weighted
//! stencil's [`Formula`], the same text in every dialect. Both keep their
//! evaluation order: an expression is written fully parenthesised, a
//! formula with its groups as the reference writes them, and with
//! contraction off and correctly rounded division the device computes the
//! CPU's bits.

use crate::device::abi::DIMS;
use crate::device::kernel::{CellDecl, DeviceKernel};
use crate::device::scalar::DeviceScalar;
use crate::expr::parse::{Arith, Compare, Expr, Func};
use crate::formula::Formula;

/// `c + (o0L) * s? + ...`: the index of the cell at `off` from the
/// thread's cell, whose dimension d is the normalised dimension
/// `4 - nd + d` of an `nd`-dimensional kernel.
pub fn index_at(off: &[i64]) -> String {
    let nd = off.len();
    let mut terms = String::new();
    for (d, &o) in off.iter().enumerate() {
        if o != 0 {
            terms += &format!(" + ({o}L) * s{}", DIMS - nd + d);
        }
    }
    format!("c{terms}")
}

/// `buf[c + ...]`: buffer `buf` (`src`, an auxiliary field `aux0`, ...) at
/// `off` from the thread's cell; every buffer has the grid's geometry.
pub fn read_at(buf: &str, off: &[i64]) -> String {
    format!("{buf}[{}]", index_at(off))
}

fn arith(op: Arith) -> &'static str {
    match op {
        Arith::Add => "+",
        Arith::Sub => "-",
        Arith::Mul => "*",
        Arith::Div => "/",
    }
}

fn compare(op: Compare) -> &'static str {
    match op {
        Compare::Lt => "<",
        Compare::Le => "<=",
        Compare::Gt => ">",
        Compare::Ge => ">=",
        Compare::Eq => "==",
        Compare::Ne => "!=",
    }
}

/// `e` in C, fully parenthesised, computing in `T`, for an `nd`-dimensional
/// kernel whose cells are arrays (`array`, components `.d[k]`) or scalars.
///
/// # Panics
///
/// On an unbound size (`n[d]`): expression kernels bind them first.
pub fn expression<T: DeviceScalar>(e: &Expr, nd: usize, array: bool) -> String {
    let sub = |e: &Expr| expression::<T>(e, nd, array);
    let part = |k: &usize| {
        if array {
            format!(".d[{k}]")
        } else {
            String::new()
        }
    };
    match e {
        Expr::Num(v) => T::literal_of(*v),
        // Array cells through the accessors, so the body runs in planes.
        Expr::Cell(o, k) if array => format!("PART_AT(src, {}, {k})", index_at(o)),
        Expr::Cell(o, k) => read_at("src", o) + &part(k),
        Expr::Let(i) => format!("l{i}"),
        // Read before the body writes `dst[c]`: the level before `src`.
        Expr::Old2(k) => "old2".to_string() + &part(k),
        Expr::Size(_) => unreachable!("ExprKernel::new refuses unbound sizes"),
        Expr::Aux(i, o) => read_at(&format!("aux{i}"), o),
        Expr::Global(d) => {
            // The thread's position along normalised dimension `n`, as the
            // prologue lays the grid out, plus the region's global origin.
            let n = DIMS - nd + d;
            let at = match n {
                3 => "i3",
                2 => "i2",
                1 => "(z % n1)",
                _ => "(z / n1)",
            };
            format!("(({})(o{n} + {at}))", T::C_TYPE)
        }
        Expr::Neg(a) => format!("(-{})", sub(a)),
        Expr::Not(a) => format!("(!{})", sub(a)),
        Expr::Arith(op, a, b) => format!("({} {} {})", sub(a), arith(*op), sub(b)),
        Expr::Compare(op, a, b) => format!("({} {} {})", sub(a), compare(*op), sub(b)),
        Expr::And(a, b) => format!("({} && {})", sub(a), sub(b)),
        Expr::Or(a, b) => format!("({} || {})", sub(a), sub(b)),
        Expr::Select(k, a, b) => format!("({} ? {} : {})", sub(k), sub(a), sub(b)),
        Expr::Call(f, args) => {
            let name = match f {
                Func::Sqrt => "sqrt",
                Func::Abs => "fabs",
                Func::Min => "fmin",
                Func::Max => "fmax",
            };
            let args: Vec<String> = args.iter().map(sub).collect();
            format!("{name}({})", args.join(", "))
        }
    }
}

/// What an expression kernel's body computes: its `let`s (name, value,
/// whether a condition), the new cell's components, and whether it reads
/// the level before `src`.
pub struct SpecBody<'a> {
    pub ndims: usize,
    pub lets: &'a [(String, Expr, bool)],
    pub update: &'a [Expr],
    /// `None` for scalar cells; the components of array cells.
    pub components: Option<usize>,
    pub reads_previous: bool,
    /// Auxiliary field buffers it reads.
    pub aux: usize,
}

/// The device kernel of an expression kernel computing in `T`.
pub fn spec_kernel<T: DeviceScalar>(spec: &SpecBody<'_>) -> DeviceKernel {
    let array = spec.components.is_some();
    let c = |e: &Expr| expression::<T>(e, spec.ndims, array);
    let mut body = String::new();
    if spec.reads_previous {
        body += if array {
            "    const cell old2 = CELL_AT(dst, c);\n"
        } else {
            "    const cell old2 = dst[c];\n"
        };
    }
    for (i, (name, e, cond)) in spec.lets.iter().enumerate() {
        let ty = if *cond { "int" } else { T::C_TYPE };
        body += &format!("    const {ty} l{i} = {}; /* {name} */\n", c(e));
    }
    let cell = match spec.components {
        None => {
            body += &format!("    dst[c] = {};\n", c(&spec.update[0]));
            CellDecl::scalar::<T>()
        }
        Some(n) => {
            // Built in registers and stored as one cell, as the
            // hand-written array-cell bodies do.
            body += "    cell out;\n";
            for (k, e) in spec.update.iter().enumerate() {
                body += &format!("    out.d[{k}] = {};\n", c(e));
            }
            body += "    CELL_PUT(dst, c, out);\n";
            CellDecl::array::<T>(n)
        }
    };
    // Array cells go only through the accessors: in planes on GPUs.
    let kernel = DeviceKernel::generated(cell, body, false).with_aux(spec.aux);
    if array {
        kernel.with_planes()
    } else {
        kernel
    }
}

/// `f` in C for cells of `T`: a sum is one parenthesised group, products
/// and quotients are written bare (their operands are groups, reads and
/// numbers), and a formula that steps into double is rounded back to the
/// cell.
pub fn formula<T: DeviceScalar>(f: &Formula) -> String {
    let text = formula_in::<T>(f, f.is_double());
    if f.is_double() {
        format!("(cell)({text})")
    } else {
        text
    }
}

/// `wide`: the node around `f` computes in double, so a number is a
/// double literal (as [`Formula::value`] computes it).
fn formula_in<T: DeviceScalar>(f: &Formula, wide: bool) -> String {
    let pair = |a: &Formula, b: &Formula, op: &str| {
        let wide = a.is_double() || b.is_double();
        format!(
            "{} {op} {}",
            formula_in::<T>(a, wide),
            formula_in::<T>(b, wide)
        )
    };
    match f {
        Formula::At(o) => read_at("src", o),
        Formula::Num(v) if wide => v.literal(),
        Formula::Num(v) => T::literal_of(*v),
        Formula::Sum(terms) => {
            let terms: Vec<String> = terms
                .iter()
                .map(|t| formula_in::<T>(t, f.is_double()))
                .collect();
            format!("({})", terms.join(" + "))
        }
        Formula::Mul(a, b) => pair(a, b, "*"),
        Formula::Div(a, b) => pair(a, b, "/"),
        Formula::Double(a) => format!("(double){}", formula_in::<T>(a, false)),
    }
}

/// The device kernel computing formula `f` on scalar cells of `T`.
pub fn formula_kernel<T: DeviceScalar>(f: &Formula) -> DeviceKernel {
    DeviceKernel::generated(
        CellDecl::scalar::<T>(),
        format!("    dst[c] = {};\n", formula::<T>(f)),
        f.is_double(),
    )
}

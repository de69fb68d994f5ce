//! The update language: tokens, a precedence-climbing parser, and name
//! resolution. Evaluation order is the parse tree (binary operators
//! associate to the left, parentheses are kept), so CPU and device code
//! round in the same places.

use super::error::{SyntaxError, Token};
use std::collections::BTreeMap;
use std::ops::{Add, Div, Mul, Sub};

/// A binary arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    /// `x op y`: the one reading of an operator every scalar evaluator shares.
    #[inline]
    pub fn apply<T>(self, x: T, y: T) -> T
    where
        T: Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Div<Output = T>,
    {
        match self {
            Arith::Add => x + y,
            Arith::Sub => x - y,
            Arith::Mul => x * y,
            Arith::Div => x / y,
        }
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compare {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Compare {
    /// Whether `x op y` holds (false where either is NaN, but for `!=`).
    pub fn holds<T: PartialOrd>(self, x: T, y: T) -> bool {
        match self {
            Compare::Lt => x < y,
            Compare::Le => x <= y,
            Compare::Gt => x > y,
            Compare::Ge => x >= y,
            Compare::Eq => x == y,
            Compare::Ne => x != y,
        }
    }
}

/// A built-in function of reals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    Sqrt,
    Abs,
    Min,
    Max,
}

impl Func {
    fn by_name(name: &str) -> Option<(Func, usize)> {
        Some(match name {
            "sqrt" => (Func::Sqrt, 1),
            "abs" => (Func::Abs, 1),
            "min" => (Func::Min, 2),
            "max" => (Func::Max, 2),
            _ => return None,
        })
    }
}

/// An expression, names resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal, rounded to the cell type where used.
    Num(f64),
    /// The old cell at an offset, and which component of it (0 for a
    /// scalar cell): `u[-1, 0]`, `u[-1, 0][3]`.
    Cell(Vec<i64>, usize),
    /// The value of `let` number `i`.
    Let(usize),
    /// The cell's global index along dimension `d` (boundary included),
    /// as a number: `g[d]`.
    Global(usize),
    /// The cell one level before `u[0,...]` (level t-1), and which
    /// component (0 for a scalar cell): `old2`, `old2[3]`.
    Old2(usize),
    /// The global domain's size along dimension `d` (boundary included):
    /// `n[d]`. Replaced by the number when the spec meets its domain
    /// (`ExprSpec::for_domain`).
    Size(usize),
    /// Auxiliary field number `i` (the spec's `aux`, by name) at an
    /// offset: `c[0, 1]`. Read-only, the same on every layout.
    Aux(usize, Vec<i64>),
    Neg(Box<Expr>),
    Arith(Arith, Box<Expr>, Box<Expr>),
    Compare(Compare, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `select(condition, if_true, if_false)`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

impl Expr {
    /// Its subexpressions, one level down.
    fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Num(_)
            | Expr::Cell(..)
            | Expr::Let(_)
            | Expr::Global(_)
            | Expr::Old2(_)
            | Expr::Size(_)
            | Expr::Aux(..) => Vec::new(),
            Expr::Neg(a) | Expr::Not(a) => vec![&**a],
            Expr::Arith(_, a, b) | Expr::Compare(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                vec![&**a, &**b]
            }
            Expr::Select(c, a, b) => vec![&**c, &**a, &**b],
            Expr::Call(_, args) => args.iter().collect(),
        }
    }

    /// Levels of the tree, counted without recursion (the tree may be as
    /// deep as the text is long).
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((e, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(e.children().into_iter().map(|c| (c, d + 1)));
        }
        deepest
    }

    /// Calls `f` on this expression and every subexpression, parents first
    /// (children in order), without recursion.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            f(e);
            stack.extend(e.children().into_iter().rev());
        }
    }
}

/// What an expression yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Real,
    Bool,
}

/// A parse or type error: where (byte offset in the text) and what.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub at: usize,
    pub why: SyntaxError,
}

const SYMBOLS: [&str; 19] = [
    "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "(", ")", "[", "]", ",", "<", ">", "!",
    "=",
];

fn lex(text: &str) -> Result<Vec<(usize, Token)>, ParseError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let s = &text[start..i];
            let tok = if s.contains(['.', 'e', 'E']) {
                Token::Num(s.parse().map_err(|_| ParseError {
                    at: start,
                    why: SyntaxError::NotANumber(s.to_string()),
                })?)
            } else {
                Token::Int(s.parse().map_err(|_| ParseError {
                    at: start,
                    why: SyntaxError::TooLarge(s.to_string()),
                })?)
            };
            out.push((start, tok));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, Token::Ident(text[start..i].to_string())));
            continue;
        }
        match SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            Some(s) => {
                out.push((i, Token::Sym(s)));
                i += s.len();
            }
            None => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(ParseError {
                    at: i,
                    why: SyntaxError::Character(ch),
                });
            }
        }
    }
    out.push((text.len(), Token::End));
    Ok(out)
}

/// Names an expression may use: parameters (their values), earlier lets.
pub struct Scope<'a> {
    pub params: &'a BTreeMap<String, f64>,
    pub lets: &'a [(String, Kind)],
    pub ndims: usize,
    /// `None` for scalar cells; the component count of array cells.
    pub components: Option<usize>,
    /// The auxiliary fields' names, read as `name[o0, ...]`.
    pub aux: &'a [String],
}

/// How deep parentheses, function calls and unary operators may nest: the
/// parser descends once per level (a stack of a few thousand levels
/// overflowed), and OpenCL compilers stop at 256 nested brackets.
pub const MAX_NESTING: usize = 64;
/// How deep an expression's tree may be, long chains of `+` included:
/// every pass over it (evaluation, code generation) recurses once per
/// level, and device code writes each level in brackets of its own, which
/// OpenCL compilers stop at 256 deep (a sum of 300 terms failed to build on
/// PoCL).
pub const MAX_DEPTH: usize = 200;

struct Parser<'a> {
    toks: Vec<(usize, Token)>,
    pos: usize,
    scope: &'a Scope<'a>,
    /// Levels of `unary` entered and not yet left.
    nesting: usize,
}

type Parsed = Result<(Expr, Kind), ParseError>;

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.toks[self.pos].1
    }
    fn at(&self) -> usize {
        self.toks[self.pos].0
    }
    fn fail<T>(&self, why: SyntaxError) -> Result<T, ParseError> {
        Err(ParseError { at: self.at(), why })
    }
    fn eat(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Token::Sym(s) if *s == sym) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, sym: &'static str) -> Result<(), ParseError> {
        if self.eat(sym) {
            Ok(())
        } else {
            self.fail(SyntaxError::Expected(sym))
        }
    }
    fn want(&self, got: Kind, want: Kind, at: usize) -> Result<(), ParseError> {
        if got == want {
            Ok(())
        } else {
            Err(ParseError {
                at,
                why: match want {
                    Kind::Real => SyntaxError::WantNumber,
                    Kind::Bool => SyntaxError::WantCondition,
                },
            })
        }
    }

    /// Errors where joining `a` and `b` under one operator would make a
    /// tree deeper than [`MAX_DEPTH`] (checked before it is built, so no
    /// tree deeper than that is ever dropped, which recurses too).
    fn joinable(&self, a: &Expr, b: &Expr, at: usize) -> Result<(), ParseError> {
        if a.depth().max(b.depth()) < MAX_DEPTH {
            return Ok(());
        }
        Err(ParseError {
            at,
            why: SyntaxError::TooDeep(MAX_DEPTH),
        })
    }

    fn or(&mut self) -> Parsed {
        let (mut e, mut k) = self.and()?;
        while self.eat("||") {
            let at = self.at();
            let (r, rk) = self.and()?;
            self.joinable(&e, &r, at)?;
            self.want(k, Kind::Bool, at)?;
            self.want(rk, Kind::Bool, at)?;
            (e, k) = (Expr::Or(Box::new(e), Box::new(r)), Kind::Bool);
        }
        Ok((e, k))
    }

    fn and(&mut self) -> Parsed {
        let (mut e, mut k) = self.compare()?;
        while self.eat("&&") {
            let at = self.at();
            let (r, rk) = self.compare()?;
            self.joinable(&e, &r, at)?;
            self.want(k, Kind::Bool, at)?;
            self.want(rk, Kind::Bool, at)?;
            (e, k) = (Expr::And(Box::new(e), Box::new(r)), Kind::Bool);
        }
        Ok((e, k))
    }

    fn compare(&mut self) -> Parsed {
        let at = self.at();
        let (l, lk) = self.sum()?;
        let op = match self.peek() {
            Token::Sym("<") => Compare::Lt,
            Token::Sym("<=") => Compare::Le,
            Token::Sym(">") => Compare::Gt,
            Token::Sym(">=") => Compare::Ge,
            Token::Sym("==") => Compare::Eq,
            Token::Sym("!=") => Compare::Ne,
            _ => return Ok((l, lk)),
        };
        self.pos += 1;
        let rat = self.at();
        let (r, rk) = self.sum()?;
        self.want(lk, Kind::Real, at)?;
        self.want(rk, Kind::Real, rat)?;
        Ok((Expr::Compare(op, Box::new(l), Box::new(r)), Kind::Bool))
    }

    fn binary(&mut self, ops: &[(&'static str, Arith)], next: fn(&mut Self) -> Parsed) -> Parsed {
        let at = self.at();
        let (mut e, k) = next(self)?;
        loop {
            let Some(&(_, op)) = ops
                .iter()
                .find(|(s, _)| matches!(self.peek(), Token::Sym(t) if t == s))
            else {
                return Ok((e, k));
            };
            self.want(k, Kind::Real, at)?;
            self.pos += 1;
            let rat = self.at();
            let (r, rk) = next(self)?;
            self.want(rk, Kind::Real, rat)?;
            self.joinable(&e, &r, rat)?;
            e = Expr::Arith(op, Box::new(e), Box::new(r));
        }
    }

    fn sum(&mut self) -> Parsed {
        self.binary(&[("+", Arith::Add), ("-", Arith::Sub)], Self::product)
    }

    fn product(&mut self) -> Parsed {
        self.binary(&[("*", Arith::Mul), ("/", Arith::Div)], Self::unary)
    }

    fn unary(&mut self) -> Parsed {
        if self.nesting >= MAX_NESTING {
            return self.fail(SyntaxError::TooNested(MAX_NESTING));
        }
        self.nesting += 1;
        let parsed = self.unary_inner();
        self.nesting -= 1;
        parsed
    }

    fn unary_inner(&mut self) -> Parsed {
        let at = self.at();
        if self.eat("-") {
            let (e, k) = self.unary()?;
            self.want(k, Kind::Real, at)?;
            return Ok((Expr::Neg(Box::new(e)), Kind::Real));
        }
        if self.eat("!") {
            let (e, k) = self.unary()?;
            self.want(k, Kind::Bool, at)?;
            return Ok((Expr::Not(Box::new(e)), Kind::Bool));
        }
        self.primary()
    }

    fn int(&mut self) -> Result<i64, ParseError> {
        let neg = self.eat("-");
        match self.peek().clone() {
            Token::Int(v) => {
                self.pos += 1;
                Ok(if neg { -v } else { v })
            }
            _ => self.fail(SyntaxError::WantOffset),
        }
    }

    /// The component a read picks: `[k]` after `what` where cells have
    /// components (required there), nothing where they are scalar.
    fn component(&mut self, what: &'static str) -> Result<usize, ParseError> {
        let at = self.at();
        let picks = matches!(self.peek(), Token::Sym("["));
        let Some(n) = self.scope.components else {
            if picks {
                return self.fail(SyntaxError::ScalarCells { read: what });
            }
            return Ok(0);
        };
        if !picks {
            return self.fail(SyntaxError::PickComponent {
                read: what,
                components: n,
            });
        }
        self.pos += 1;
        let neg = self.eat("-");
        let Token::Int(k) = *self.peek() else {
            return self.fail(SyntaxError::WantComponent);
        };
        self.pos += 1;
        let k = if neg { -k } else { k };
        self.expect("]")?;
        if k < 0 || k as usize >= n {
            return Err(ParseError {
                at,
                why: SyntaxError::ComponentRange {
                    read: what,
                    k,
                    components: n,
                },
            });
        }
        Ok(k as usize)
    }

    fn primary(&mut self) -> Parsed {
        let at = self.at();
        match self.peek().clone() {
            Token::Num(v) => {
                self.pos += 1;
                Ok((Expr::Num(v), Kind::Real))
            }
            Token::Int(v) => {
                self.pos += 1;
                Ok((Expr::Num(v as f64), Kind::Real))
            }
            Token::Sym("(") => {
                self.pos += 1;
                let e = self.or()?;
                self.expect(")")?;
                Ok(e)
            }
            Token::Ident(name) => {
                self.pos += 1;
                let field = self.scope.aux.iter().position(|a| *a == name);
                if name == "u" || field.is_some() {
                    self.expect("[")?;
                    let mut off = vec![self.int()?];
                    while self.eat(",") {
                        off.push(self.int()?);
                    }
                    self.expect("]")?;
                    if off.len() != self.scope.ndims {
                        return Err(ParseError {
                            at,
                            why: SyntaxError::OffsetCount {
                                name,
                                ndims: self.scope.ndims,
                                got: off.len(),
                            },
                        });
                    }
                    if let Some(i) = field {
                        return Ok((Expr::Aux(i, off), Kind::Real));
                    }
                    let k = self.component("u[...]")?;
                    return Ok((Expr::Cell(off, k), Kind::Real));
                }
                if name == "old2" {
                    let k = self.component("old2")?;
                    return Ok((Expr::Old2(k), Kind::Real));
                }
                if name == "inf" {
                    return Ok((Expr::Num(f64::INFINITY), Kind::Real));
                }
                // `n` alone stays a name (a let or parameter may be called n).
                if (name == "g" || name == "n") && matches!(self.peek(), Token::Sym("[")) {
                    self.pos += 1;
                    let d = self.int()?;
                    self.expect("]")?;
                    if d < 0 || d as usize >= self.scope.ndims {
                        return Err(ParseError {
                            at,
                            why: SyntaxError::DimRange {
                                name,
                                dim: d,
                                ndims: self.scope.ndims,
                            },
                        });
                    }
                    let e = if name == "g" {
                        Expr::Global(d as usize)
                    } else {
                        Expr::Size(d as usize)
                    };
                    return Ok((e, Kind::Real));
                }
                if name == "select" || Func::by_name(&name).is_some() {
                    self.expect("(")?;
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            let aat = self.at();
                            let a = self.or()?;
                            args.push((a, aat));
                            if self.eat(")") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    let arity = if name == "select" {
                        3
                    } else {
                        Func::by_name(&name).map_or(0, |f| f.1)
                    };
                    if args.len() != arity {
                        return Err(ParseError {
                            at,
                            why: SyntaxError::Arity {
                                name,
                                arity,
                                got: args.len(),
                            },
                        });
                    }
                    if name == "select" {
                        let mut it = args.into_iter();
                        let ((c, ck), cat) = it.next().expect("3 arguments");
                        let ((a, ak), aat) = it.next().expect("3 arguments");
                        let ((b, bk), bat) = it.next().expect("3 arguments");
                        self.want(ck, Kind::Bool, cat)?;
                        self.want(ak, Kind::Real, aat)?;
                        self.want(bk, Kind::Real, bat)?;
                        return Ok((
                            Expr::Select(Box::new(c), Box::new(a), Box::new(b)),
                            Kind::Real,
                        ));
                    }
                    let mut exprs = Vec::new();
                    for ((a, k), aat) in args {
                        self.want(k, Kind::Real, aat)?;
                        exprs.push(a);
                    }
                    let f = Func::by_name(&name).expect("a function").0;
                    return Ok((Expr::Call(f, exprs), Kind::Real));
                }
                if let Some(i) = self.scope.lets.iter().rposition(|(n, _)| *n == name) {
                    return Ok((Expr::Let(i), self.scope.lets[i].1));
                }
                if let Some(&v) = self.scope.params.get(&name) {
                    return Ok((Expr::Num(v), Kind::Real));
                }
                Err(ParseError {
                    at,
                    why: SyntaxError::UnknownName(name),
                })
            }
            Token::End => self.fail(SyntaxError::End),
            t => self.fail(SyntaxError::Unexpected(t)),
        }
    }
}

/// Parses one expression of `text` in `scope`.
pub fn expression(text: &str, scope: &Scope) -> Parsed {
    let mut p = Parser {
        toks: lex(text)?,
        pos: 0,
        scope,
        nesting: 0,
    };
    let e = p.or()?;
    if *p.peek() != Token::End {
        return p.fail(SyntaxError::Trailing(p.peek().clone()));
    }
    Ok(e)
}

/// Splits `name = expression` (a let).
pub fn binding(text: &str) -> Result<(&str, &str), ParseError> {
    let (name, expr) = text.split_once('=').ok_or(ParseError {
        at: 0,
        why: SyntaxError::LetForm,
    })?;
    let name = name.trim();
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok || expr.starts_with('=') {
        return Err(ParseError {
            at: 0,
            why: SyntaxError::LetName(name.to_string()),
        });
    }
    Ok((name, expr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Parsed {
        let params = BTreeMap::from([("k".to_string(), 0.5)]);
        let lets = [
            ("h".to_string(), Kind::Real),
            ("wet".to_string(), Kind::Bool),
        ];
        expression(
            text,
            &Scope {
                params: &params,
                lets: &lets,
                ndims: 2,
                components: None,
                aux: &[],
            },
        )
    }

    #[test]
    fn precedence_and_left_association() {
        let (e, k) = parse("u[-1,0] + u[1,0] * k - 2 / h").unwrap();
        assert_eq!(k, Kind::Real);
        let c = |o: &[i64]| Box::new(Expr::Cell(o.to_vec(), 0));
        assert_eq!(
            e,
            Expr::Arith(
                Arith::Sub,
                Box::new(Expr::Arith(
                    Arith::Add,
                    c(&[-1, 0]),
                    Box::new(Expr::Arith(
                        Arith::Mul,
                        c(&[1, 0]),
                        Box::new(Expr::Num(0.5))
                    ))
                )),
                Box::new(Expr::Arith(
                    Arith::Div,
                    Box::new(Expr::Num(2.0)),
                    Box::new(Expr::Let(0))
                ))
            )
        );
        let (s, _) =
            parse("select(wet && u[0,0] > 0.5e-1 || !wet, -u[0,1], max(1, sqrt(h)))").unwrap();
        assert!(matches!(s, Expr::Select(..)));
    }

    #[test]
    fn errors_say_where_and_what() {
        let cases = [
            ("u[1] + 1", 0, "u[...] needs 2 offsets"),
            ("u[0,0] +", 8, "unexpected end"),
            ("u[0,0] + wet", 9, "expected a number, found a condition"),
            ("select(h, 1, 2)", 7, "expected a condition"),
            ("sqrt(1, 2)", 0, "sqrt takes 1 argument(s), got 2"),
            ("v[0,0]", 0, "unknown name 'v'"),
            ("1 $ 2", 2, "unexpected '$'"),
            ("u[0.5,0]", 2, "whole-number offset"),
            ("(1 + 2", 6, "expected ')'"),
            ("1 2", 2, "after the expression"),
        ];
        for (text, at, why) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.why.to_string().contains(why), "{text}: {e:?}");
            assert_eq!(e.at, at, "{text}: {e:?}");
        }
        assert_eq!(binding("a_1 = u[0,0]").unwrap(), ("a_1", " u[0,0]"));
        assert!(binding("1a = 2").is_err() && binding("a == 2").is_err() && binding("x").is_err());
    }

    /// Nesting and depth have limits that are errors, not a stack overflow
    /// (3000 parentheses overflowed the main thread's stack before), and
    /// what lies within them parses.
    #[test]
    fn deep_expressions_are_errors_not_overflows() {
        let nested = |n: usize, open: &str, close: &str| {
            format!("{}u[0,0]{}", open.repeat(n), close.repeat(n))
        };
        let chain = |n: usize| vec!["u[0,0]"; n].join(" + ");
        for text in [
            nested(100_000, "(", ")"),
            nested(MAX_NESTING, "(", ")"),
            nested(MAX_NESTING, "sqrt(", ")"),
            nested(MAX_NESTING, "-", ""),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(
                e.why.to_string().contains("nests more than 64 levels"),
                "{e:?}"
            );
        }
        for text in [chain(100_000), chain(MAX_DEPTH + 1)] {
            let e = parse(&text).unwrap_err();
            assert!(
                e.why.to_string().contains("more than 200 operations deep"),
                "{e:?}"
            );
        }
        assert!(parse(&nested(MAX_NESTING - 1, "(", ")")).is_ok());
        let (e, _) = parse(&chain(MAX_DEPTH)).unwrap();
        assert_eq!(e.depth(), MAX_DEPTH);
    }
}

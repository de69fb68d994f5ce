//! What is wrong with an update expression or a spec's expression parts,
//! each case typed: a spec file's reader sees which, and where.

use std::fmt;
use thiserror::Error;

/// A token of the update language, as an error names what it found.
#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    /// A number with a point or an exponent.
    Num(f64),
    /// A name.
    Ident(String),
    /// A whole number.
    Int(i64),
    /// An operator or bracket.
    Sym(&'static str),
    /// The end of the text.
    End,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Sym(s) => write!(f, "'{s}'"),
            Token::Num(v) => write!(f, "number {v}"),
            Token::Int(v) => write!(f, "number {v}"),
            Token::Ident(n) => write!(f, "'{n}'"),
            Token::End => write!(f, "end"),
        }
    }
}

/// Why an expression's text does not parse, or does not type.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum SyntaxError {
    /// Digits with points that make no number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// A whole number beyond 64 bits.
    #[error("'{0}' is too large")]
    TooLarge(String),
    /// A character of no token.
    #[error("unexpected '{0}'")]
    Character(char),
    /// A symbol missing.
    #[error("expected '{0}'")]
    Expected(&'static str),
    /// A condition where a number belongs.
    #[error("expected a number, found a condition")]
    WantNumber,
    /// A number where a condition belongs.
    #[error("expected a condition (a comparison), found a number")]
    WantCondition,
    /// A tree deeper than evaluation and device compilers take.
    #[error("the expression is more than {0} operations deep: split it with lets")]
    TooDeep(usize),
    /// Brackets, calls and signs nested deeper than the parser descends.
    #[error(
        "the expression nests more than {0} levels deep (parentheses, calls, signs): write it with lets"
    )]
    TooNested(usize),
    /// An offset that is not a whole number.
    #[error("expected a whole-number offset")]
    WantOffset,
    /// A component picked from scalar cells.
    #[error("{read}[k]: the cells are scalar (declare cell = N for N components)")]
    ScalarCells {
        /// The read (`u[...]`, `old2`).
        read: &'static str,
    },
    /// A read of array cells without a component.
    #[error("{read} is a cell of {components} components: pick one with {read}[k]")]
    PickComponent {
        /// The read.
        read: &'static str,
        /// Components per cell.
        components: usize,
    },
    /// A component that is not a whole number.
    #[error("expected a whole-number component")]
    WantComponent,
    /// A component past the cell's.
    #[error("{read}[{k}]: the component must be 0 to {}", .components - 1)]
    ComponentRange {
        /// The read.
        read: &'static str,
        /// The component given.
        k: i64,
        /// Components per cell.
        components: usize,
    },
    /// A read with another count of offsets than dimensions.
    #[error("{name}[...] needs {ndims} offsets (one per dimension), got {got}")]
    OffsetCount {
        /// `u` or the aux field read.
        name: String,
        /// Dimensions.
        ndims: usize,
        /// Offsets given.
        got: usize,
    },
    /// `g[d]` or `n[d]` of a dimension the stencil lacks.
    #[error("{name}[{dim}]: the dimension must be 0 to {}", .ndims - 1)]
    DimRange {
        /// `g` or `n`.
        name: String,
        /// The dimension given.
        dim: i64,
        /// Dimensions.
        ndims: usize,
    },
    /// A call with another count of arguments than the function takes.
    #[error("{name} takes {arity} argument(s), got {got}")]
    Arity {
        /// The function.
        name: String,
        /// Arguments it takes.
        arity: usize,
        /// Arguments given.
        got: usize,
    },
    /// A name that is nothing in scope.
    #[error(
        "unknown name '{0}' (use u[...], g[...], n[...], old2, inf, a parameter, an aux field, an earlier let, select, sqrt, abs, min or max)"
    )]
    UnknownName(String),
    /// The text ends inside an expression.
    #[error("unexpected end of expression")]
    End,
    /// A token where none of its kind belongs.
    #[error("unexpected {0}")]
    Unexpected(Token),
    /// A token after a whole expression.
    #[error("unexpected {0} after the expression")]
    Trailing(Token),
    /// A let without `=`.
    #[error("a let is 'name = expression'")]
    LetForm,
    /// A let binding what is not a name.
    #[error("'{0}' is not a name to bind (a let is 'name = expression')")]
    LetName(String),
}

/// Which part of an expression spec is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The update (of scalar cells, or all of them).
    Update,
    /// The update of one component.
    UpdateComponent(usize),
    /// The `n`-th let, from 1.
    Let(usize),
    /// The auxiliary fields as a whole.
    AuxFields,
    /// One auxiliary field, by name.
    Aux(String),
    /// The parameters.
    Params,
    /// The cell's components.
    Cell,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Update => write!(f, "update"),
            Part::UpdateComponent(k) => write!(f, "update[{k}]"),
            Part::Let(i) => write!(f, "let {i}"),
            Part::AuxFields => write!(f, "aux"),
            Part::Aux(name) => write!(f, "aux {name}"),
            Part::Params => write!(f, "params"),
            Part::Cell => write!(f, "cell"),
        }
    }
}

/// Why an expression spec's part is wrong: its text, or what it means.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ExprError {
    /// The text does not parse or type.
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// Not one update per component.
    #[error("cell = {components} needs {components} updates (one per component), got {got}")]
    UpdateCount {
        /// Components per cell.
        components: usize,
        /// Updates given.
        got: usize,
    },
    /// A list of updates with an item that is no string.
    #[error("the updates must be strings")]
    UpdatesNotStrings,
    /// An update of scalar cells that is no string.
    #[error("the update is one string (a list is for cells with components: cell = N)")]
    UpdateNotString,
    /// An update of array cells that is no list.
    #[error("cell = {0}: the update is a list of {0} strings, one per component")]
    UpdateNotList(usize),
    /// Auxiliary fields with array cells.
    #[error("auxiliary fields need scalar cells (no cell = N)")]
    AuxNeedsScalar,
    /// An aux field named as a built-in or parameter, or not a name.
    #[error("'{0}' cannot name an aux field (a built-in, a parameter, or not a name)")]
    AuxName(String),
    /// An aux field that is a condition.
    #[error("the field is a condition: wrap it in select(...)")]
    AuxCondition,
    /// An update that is a condition.
    #[error("the update is a condition: wrap it in select(...)")]
    UpdateCondition,
    /// A spec file's aux field that reads the grid.
    #[error("an aux field is computed once: it may read g[d], n[d] and parameters, not u or old2")]
    AuxReadsGrid,
    /// A built aux field that reads the grid, a let or another field.
    #[error("an aux field is computed once: it may read g[d], n[d] and numbers only")]
    BuiltAuxReadsGrid,
    /// A parameter named as a built-in.
    #[error("parameter '{0}' has a reserved name")]
    ReservedParam(String),
    /// A parameter that is not finite.
    #[error("parameter '{name}' is {value}: it must be finite")]
    ParamNotFinite {
        /// The parameter.
        name: String,
        /// Its value.
        value: f64,
    },
    /// More components than a cell may have.
    #[error("cell = {components}: a cell has 1 to {max} components")]
    Components {
        /// Components given.
        components: usize,
        /// The most a cell may have.
        max: usize,
    },
    /// A let named as a parameter, `u`, `inf` or an aux field.
    #[error("'{0}' is already a parameter, u, inf or an aux field")]
    LetShadows(String),
    /// An aux field read that the spec does not declare.
    #[error("aux field {read} read, {given} given")]
    UndeclaredAux {
        /// The field read.
        read: usize,
        /// Fields declared.
        given: usize,
    },
    /// A kernel that reads no cell.
    #[error("the kernel reads no cell: use u[...]")]
    ReadsNoCell,
    /// `g[d]` or `n[d]` (built) of a dimension the stencil lacks.
    #[error("g[{dim}] or n[{dim}]: the dimension must be 0 to {}", .ndims - 1)]
    GlobalDim {
        /// The dimension read.
        dim: usize,
        /// Dimensions.
        ndims: usize,
    },
    /// A (built) read with another count of offsets than dimensions.
    #[error("u{offsets:?} needs {ndims} offsets (one per dimension)")]
    ReadOffsets {
        /// The read's offsets.
        offsets: Vec<i64>,
        /// Dimensions.
        ndims: usize,
    },
    /// A read outside the declared extents.
    #[error("u{offsets:?} reaches past low = {low:?}, high = {high:?}")]
    ReadOutside {
        /// The read's offsets.
        offsets: Vec<i64>,
        /// The spec's low extents.
        low: Vec<usize>,
        /// Its high extents.
        high: Vec<usize>,
    },
    /// A domain of other dimensions than the stencil.
    #[error("a {domain}-d domain for a {stencil}-d stencil")]
    DomainDims {
        /// The domain's dimensions.
        domain: usize,
        /// The stencil's.
        stencil: usize,
    },
    /// Data given for an aux field the spec lacks.
    #[error("stencil '{stencil}' has no aux field '{name}'")]
    NoAuxField {
        /// The stencil.
        stencil: String,
        /// The field asked for.
        name: String,
    },
}

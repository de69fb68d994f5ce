//! NumPy's `.npy` format: results written (version 1.0), and user files
//! of versions 1.0 to 3.0 read (gaussian's image, a spec's `--aux` fields,
//! `epsilod view`'s fields) without trusting their headers: the shape a
//! header declares is checked against the bytes the file holds before
//! anything is allocated, so a damaged or hostile header is an error line
//! and not a 160 GB allocation. Only f32 and f64 arrays, whose header is
//! a Python dict literal of three keys, each once and each value as NumPy
//! writes it (a header NumPy would read otherwise, or not at all, is
//! refused): a few lines here rather than a crate and its Python-literal
//! parser.

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use std::io::{Read, Write};
use std::path::Path;
use thiserror::Error;

/// Why a `.npy` file could not be read.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No NumPy magic at its start.
    #[error("not a .npy file (no NumPy magic at its start)")]
    NotNpy,
    /// The header ends before its length does.
    #[error("its .npy header is cut short")]
    CutShort,
    /// A format version NumPy never wrote (it writes 1.0, 2.0 and 3.0).
    #[error("its .npy format version is {0}.{1}, not 1.0, 2.0 or 3.0")]
    Version(u8, u8),
    /// A header longer than the file.
    #[error("its .npy header says it is {len} bytes long, the file holds {file_bytes} in all")]
    HeaderPastEnd {
        /// The length the header declares.
        len: u64,
        /// The file's bytes.
        file_bytes: u64,
    },
    /// A header length too short for a header.
    #[error("its .npy header says it is {len} bytes long, too short for one")]
    HeaderTooShort {
        /// The length the header declares.
        len: u64,
    },
    /// A shape of more data than the file holds.
    #[error(
        "its header declares shape {shape:?} of {item}-byte values, more than the \
         {data_bytes} bytes of data the file holds (a truncated or damaged file)"
    )]
    DataPastEnd {
        /// The shape declared.
        shape: Vec<u64>,
        /// Bytes a value.
        item: u64,
        /// The bytes after the header.
        data_bytes: u64,
    },
    /// Values of a type other than f32 or f64.
    #[error("its values are '{0}'; give an array of f32 or f64 ('<f4' or '<f8')")]
    Values(String),
    /// A header other than the dict NumPy writes.
    #[error("not a readable .npy array ({0})")]
    Header(#[from] HeaderError),
    /// What the reader found wrong, its first line.
    #[error("not a readable .npy array ({0})")]
    Unreadable(String),
}

/// The array of an f32 or f64 `.npy` file as f32 (f64 values rounded).
pub fn read_as_f32(path: &Path) -> Result<ArrayD<f32>, NpyError> {
    read_as(path, |v| v, |v| v as f32)
}

/// The array of an f32 or f64 `.npy` file as f64 (f32 values exact).
pub fn read_as_f64(path: &Path) -> Result<ArrayD<f64>, NpyError> {
    read_as(path, f64::from, |v| v)
}

/// The file's array, each value turned into `F` from the type it has.
fn read_as<F>(
    path: &Path,
    from_f32: fn(f32) -> F,
    from_f64: fn(f64) -> F,
) -> Result<ArrayD<F>, NpyError> {
    let (header, data) = read(path)?;
    let big = header.big_endian;
    let values: Vec<F> = if header.float_bytes == 4 {
        data.chunks_exact(4)
            .map(|c| {
                let b: [u8; 4] = c.try_into().expect("chunks of 4 bytes");
                from_f32(if big {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                })
            })
            .collect()
    } else {
        data.chunks_exact(8)
            .map(|c| {
                let b: [u8; 8] = c.try_into().expect("chunks of 8 bytes");
                from_f64(if big {
                    f64::from_be_bytes(b)
                } else {
                    f64::from_le_bytes(b)
                })
            })
            .collect()
    };
    shaped(&header, values)
}

/// The shape of an f32 or f64 `.npy` file's array, its header alone read
/// (and checked as [`read_as_f32`] checks it), so that a run can check the
/// memory an array needs before reading it.
pub fn shape(path: &Path) -> Result<Vec<usize>, NpyError> {
    let header = readable(check(path)?)?;
    Ok(header.shape.iter().map(|&d| d as usize).collect())
}

/// Writes `values` (row-major, `shape`'s product of them) as a version 1.0
/// file NumPy reads: little-endian, C order, the header padded with spaces
/// and a newline to a multiple of 64 bytes (the format's alignment).
pub fn write<T: NpyFloat>(path: &Path, shape: &[usize], values: &[T]) -> std::io::Result<()> {
    if shape.iter().product::<usize>() != values.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} values do not fill shape {shape:?}", values.len()),
        ));
    }
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {tuple}}}",
        T::DESCR
    );
    // At least one space, as earlier epsilod versions wrote.
    header.push(' ');
    while !(MAGIC.len() + 4 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let len = u16::try_from(header.len())
        .map_err(|_| std::io::Error::other("a .npy header longer than 65535 bytes"))?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(MAGIC)?;
    out.write_all(&[1, 0])?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    for v in values {
        v.write_le(&mut out)?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// A float type `.npy` files hold.
pub trait NpyFloat: Copy {
    /// NumPy's name of the little-endian type.
    const DESCR: &'static str;
    /// Writes the value's little-endian bytes.
    fn write_le(self, out: &mut impl Write) -> std::io::Result<()>;
}

impl NpyFloat for f32 {
    const DESCR: &'static str = "<f4";
    fn write_le(self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(&self.to_le_bytes())
    }
}

impl NpyFloat for f64 {
    const DESCR: &'static str = "<f8";
    fn write_le(self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(&self.to_le_bytes())
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header, checked readable, and the data bytes its shape declares.
fn read(path: &Path) -> Result<(Readable, Vec<u8>), NpyError> {
    let header = readable(check(path)?)?;
    let mut f = open(path)?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(header.data_at))?;
    let mut data = vec![0u8; header.data_bytes as usize];
    f.read_exact(&mut data)?;
    Ok((header, data))
}

fn shaped<F>(header: &Readable, values: Vec<F>) -> Result<ArrayD<F>, NpyError> {
    let dims: Vec<usize> = header.shape.iter().map(|&d| d as usize).collect();
    let shape = IxDyn(&dims).set_f(header.fortran_order);
    ArrayD::from_shape_vec(shape, values).map_err(|e| NpyError::Unreadable(e.to_string()))
}

fn open(path: &Path) -> Result<std::fs::File, NpyError> {
    Ok(std::fs::File::open(path)?)
}

/// A header this module reads: an f32 or f64 array of a known shape and
/// order.
struct Readable {
    float_bytes: usize,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<u64>,
    data_at: u64,
    data_bytes: u64,
}

fn readable(h: Header) -> Result<Readable, NpyError> {
    let Header { dict, data_at } = h;
    // The reader swaps big-endian values itself.
    let float_bytes = match dict.descr.as_str() {
        "<f4" | "=f4" | ">f4" => 4,
        "<f8" | "=f8" | ">f8" => 8,
        _ => return Err(NpyError::Values(one_line(&dict.descr))),
    };
    Ok(Readable {
        float_bytes,
        big_endian: dict.descr.starts_with('>'),
        fortran_order: dict.fortran_order,
        data_bytes: dict.shape.iter().product::<u64>() * float_bytes as u64,
        shape: dict.shape,
        data_at,
    })
}

/// What a header declares, and where the data starts.
struct Header {
    dict: Dict,
    data_at: u64,
}

/// Reads the header and errors unless it is the dict NumPy writes and the
/// data its shape declares is in the file. Whether the values are floats
/// is [`readable`]'s to say.
fn check(path: &Path) -> Result<Header, NpyError> {
    let mut f = open(path)?;
    let file_bytes = f.metadata()?.len();
    let mut start = [0u8; 12];
    let got = read_up_to(&mut f, &mut start)?;
    if got < 10 || &start[..6] != MAGIC {
        return Err(NpyError::NotNpy);
    }
    let (len, at) = match (start[6], start[7]) {
        (1, 0) => (u64::from(u16::from_le_bytes([start[8], start[9]])), 10u64),
        (2 | 3, 0) if got == 12 => (
            u64::from(u32::from_le_bytes([
                start[8], start[9], start[10], start[11],
            ])),
            12,
        ),
        (2 | 3, 0) => return Err(NpyError::CutShort),
        (major, minor) => return Err(NpyError::Version(major, minor)),
    };
    if at + len > file_bytes {
        return Err(NpyError::HeaderPastEnd { len, file_bytes });
    }
    if at + len < got as u64 {
        return Err(NpyError::HeaderTooShort { len });
    }
    let mut text = vec![0u8; (at + len - got as u64) as usize];
    f.read_exact(&mut text)?;
    let all: Vec<u8> = start[..got].iter().chain(&text).copied().collect();
    let dict = header_dict(&all[at as usize..])?;
    let item: u64 = dict
        .descr
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or(1);
    let data_bytes = file_bytes - (at + len);
    let declared = dict
        .shape
        .iter()
        .try_fold(item, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= data_bytes);
    if declared.is_none() {
        return Err(NpyError::DataPastEnd {
            shape: dict.shape,
            item,
            data_bytes,
        });
    }
    Ok(Header {
        dict,
        data_at: at + len,
    })
}

fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Why a `.npy` header is not the dict NumPy writes.
#[derive(Debug, Error, PartialEq)]
pub enum HeaderError {
    /// Not a Python dict literal of quoted keys.
    #[error("its header is not a dict literal ({0})")]
    Syntax(&'static str),
    /// A key given twice (Python would keep the last, silently).
    #[error("its header gives '{0}' twice")]
    Duplicate(String),
    /// A key NumPy does not write.
    #[error("its header has a key '{0}'; NumPy's are 'descr', 'fortran_order' and 'shape'")]
    Unknown(String),
    /// A key NumPy writes, missing.
    #[error("its header has no '{0}'")]
    Missing(&'static str),
    /// A value other than NumPy writes for its key.
    #[error("its header's '{key}' is {found}, not {want}")]
    Value {
        /// The key.
        key: &'static str,
        /// The value's text, escaped to one line and cut to 40 characters.
        found: String,
        /// What NumPy writes there.
        want: &'static str,
    },
}

/// A header's three values.
#[derive(Debug, PartialEq)]
struct Dict {
    /// The type string (`<f4`), or a structured type's list as written.
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// The dict literal NumPy writes as a header,
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, then
/// spaces and a newline: each of its keys once, each value as NumPy writes
/// it (a tuple's spacing and trailing comma as Python reads them), and
/// nothing else.
fn header_dict(text: &[u8]) -> Result<Dict, HeaderError> {
    let syntax = HeaderError::Syntax;
    let mut p = Cursor { text, at: 0 };
    if !p.eat(b'{') {
        return Err(syntax("it does not start with '{'"));
    }
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    loop {
        if p.eat(b'}') {
            break;
        }
        let key = match p.token() {
            Some(Token::Str(k)) => k,
            Some(_) => return Err(syntax("a key is not a quoted string")),
            None => return Err(syntax("it ends before its '}'")),
        };
        if !p.eat(b':') {
            return Err(syntax("a key without ':' after it"));
        }
        let value = p.token().ok_or(syntax("a key without a value"))?;
        let slot_taken = match key.as_str() {
            "descr" => descr.replace(descr_of(value)?).is_some(),
            "fortran_order" => fortran_order.replace(bool_of(value)?).is_some(),
            "shape" => shape.replace(shape_of(value)?).is_some(),
            _ => return Err(HeaderError::Unknown(one_line(&key))),
        };
        if slot_taken {
            return Err(HeaderError::Duplicate(one_line(&key)));
        }
        if !p.eat(b',') && !p.peek(b'}') {
            return Err(syntax("a value not followed by ',' or '}'"));
        }
    }
    if p.text[p.at..].iter().any(|b| !b.is_ascii_whitespace()) {
        return Err(syntax("text follows its '}'"));
    }
    Ok(Dict {
        descr: descr.ok_or(HeaderError::Missing("descr"))?,
        fortran_order: fortran_order.ok_or(HeaderError::Missing("fortran_order"))?,
        shape: shape.ok_or(HeaderError::Missing("shape"))?,
    })
}

/// A value as NumPy may write it: a quoted string, a bracketed group (a
/// tuple, or a structured type's list) or a bare word (`True`, `12`).
enum Token {
    Str(String),
    Group(String),
    Word(String),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Str(s) => one_line(&format!("'{s}'")),
            Token::Group(s) | Token::Word(s) => one_line(s),
        }
    }
}

struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    /// Whether the next non-space byte is `b`, left unread.
    fn peek(&mut self, b: u8) -> bool {
        self.skip_space();
        self.text.get(self.at) == Some(&b)
    }

    /// Reads `b` if it is the next non-space byte.
    fn eat(&mut self, b: u8) -> bool {
        let next = self.peek(b);
        self.at += usize::from(next);
        next
    }

    /// The next value, or `None` at the end or at an unclosed string or
    /// group.
    fn token(&mut self) -> Option<Token> {
        self.skip_space();
        let from = self.at;
        let text =
            |p: &Self, from: usize| String::from_utf8_lossy(&p.text[from..p.at]).into_owned();
        match *self.text.get(from)? {
            q @ (b'\'' | b'"') => {
                self.at += 1;
                self.skip_string(q)?;
                let inside = &self.text[from + 1..self.at - 1];
                Some(Token::Str(String::from_utf8_lossy(inside).into_owned()))
            }
            b'(' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.text.get(self.at)? {
                        q @ (b'\'' | b'"') => {
                            self.at += 1;
                            self.skip_string(q)?;
                            continue;
                        }
                        b'(' | b'[' => depth += 1,
                        b')' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        return Some(Token::Group(text(self, from)));
                    }
                }
            }
            _ => {
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"_+-.".contains(b))
                {
                    self.at += 1;
                }
                (self.at > from).then(|| Token::Word(text(self, from)))
            }
        }
    }

    /// Past the closing `quote` of a string whose opening one is read.
    fn skip_string(&mut self, quote: u8) -> Option<()> {
        loop {
            match *self.text.get(self.at)? {
                b'\\' => self.at += 2,
                b if b == quote => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }
}

/// At most 40 characters of `s`, its control characters escaped: one
/// line, however long or odd the header.
fn one_line(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c.is_control() {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    match out.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &out[..cut]),
        None => out,
    }
}

/// `'<f4'`; a structured type's list is kept as written, for
/// [`readable`] to refuse as values of another type.
fn descr_of(value: Token) -> Result<String, HeaderError> {
    match value {
        Token::Str(s) => Ok(s),
        Token::Group(g) if g.starts_with('[') => Ok(one_line(&g)),
        other => Err(HeaderError::Value {
            key: "descr",
            found: other.text(),
            want: "a quoted type such as '<f4'",
        }),
    }
}

/// `True` or `False`, exactly.
fn bool_of(value: Token) -> Result<bool, HeaderError> {
    match &value {
        Token::Word(w) if w == "True" => Ok(true),
        Token::Word(w) if w == "False" => Ok(false),
        _ => Err(HeaderError::Value {
            key: "fortran_order",
            found: value.text(),
            want: "True or False",
        }),
    }
}

/// A tuple of whole numbers: `(200, 300)`, `(7,)` or `()` (and Python 2's
/// `(7L,)`).
fn shape_of(value: Token) -> Result<Vec<u64>, HeaderError> {
    let bad = |value: &Token| HeaderError::Value {
        key: "shape",
        found: value.text(),
        want: "a tuple of whole numbers such as (2, 3) or (7,)",
    };
    let Token::Group(g) = &value else {
        return Err(bad(&value));
    };
    let inner = g
        .strip_prefix('(')
        .and_then(|g| g.strip_suffix(')'))
        .ok_or_else(|| bad(&value))?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    let trailing_comma = parts.last() == Some(&"");
    if trailing_comma {
        parts.pop();
    }
    // One element needs its trailing comma: `(7)` is a number, not a tuple.
    if parts.len() == 1 && !trailing_comma {
        return Err(bad(&value));
    }
    parts
        .iter()
        .map(|p| {
            let digits = p.strip_suffix('L').unwrap_or(p);
            match digits.bytes().all(|b| b.is_ascii_digit()) {
                true => digits.parse().ok(),
                false => None,
            }
        })
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| bad(&value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any header text is a dict or one error, never a panic (cut
        /// strings and groups, stray backslashes, bytes that are not UTF-8).
        #[test]
        fn headers_never_panic(text in proptest::collection::vec(any::<u8>(), 0..80),
                               dict in "\\{('[a-z_]{0,14}'|[\\[\\](),: 'TrueFals0-9L\\\\]){0,40}\\}?") {
            let _ = header_dict(&text);
            let _ = header_dict(dict.as_bytes());
        }
    }

    fn file(dir: &Path, name: &str, header: &str, data: usize) -> std::path::PathBuf {
        let mut h = header.to_string();
        // Pad to a multiple of 64 with the newline, as NumPy does.
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((h.len() as u16).to_le_bytes());
        bytes.extend(h.as_bytes());
        bytes.extend(vec![0u8; data]);
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// A header declaring more data than the file holds is one line, read
    /// before any allocation; well-formed arrays of both float types read
    /// as either; other element types and damaged headers are refused.
    #[test]
    fn headers_are_checked_against_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let huge = file(
            d,
            "huge.npy",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (200000, 200000), }",
            16,
        );
        let e = read_as_f32(&huge).unwrap_err().to_string();
        assert!(
            e.contains("declares shape [200000, 200000] of 4-byte values"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let overflow = file(
            d,
            "overflow.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
            0,
        );
        assert!(read_as_f64(&overflow)
            .unwrap_err()
            .to_string()
            .contains("declares shape"));
        let f4 = file(
            d,
            "f4.npy",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            24,
        );
        assert_eq!(read_as_f32(&f4).unwrap().shape(), &[2, 3]);
        assert_eq!(shape(&f4).unwrap(), [2, 3]);
        assert_eq!(read_as_f64(&f4).unwrap().shape(), &[2, 3]);
        let f8 = file(
            d,
            "f8.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }",
            32,
        );
        assert_eq!(read_as_f32(&f8).unwrap().shape(), &[4]);
        let i1 = file(
            d,
            "i1.npy",
            "{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }",
            4,
        );
        let e = read_as_f32(&i1).unwrap_err().to_string();
        assert!(
            e.contains("its values are '|i1'; give an array of f32 or f64"),
            "{e}"
        );
        assert_eq!(shape(&i1).unwrap_err().to_string(), e);
        let untyped = file(
            d,
            "untyped.npy",
            "{'fortran_order': False, 'shape': (2,), }",
            8,
        );
        let e = read_as_f32(&untyped).unwrap_err().to_string();
        assert!(
            e.contains("not a readable .npy array") && e.contains("descr"),
            "{e}"
        );
        let damaged = file(d, "bad.npy", "{'descr': '<f4', 'shape': (2, ", 8);
        let e = read_as_f32(&damaged).unwrap_err().to_string();
        assert!(
            e.contains("not a readable .npy array") && !e.contains('\n'),
            "{e}"
        );
        std::fs::write(d.join("short.npy"), b"\x93NUMPY\x01\x00\xff\x7f{").unwrap();
        let e = read_as_f32(&d.join("short.npy")).unwrap_err().to_string();
        assert!(e.contains("header says it is 32767 bytes long"), "{e}");
        std::fs::write(d.join("tiny.npy"), b"\x93NUMPY\x01\x00\x01\x00{}\n").unwrap();
        let e = read_as_f32(&d.join("tiny.npy")).unwrap_err().to_string();
        assert!(e.contains("1 bytes long, too short"), "{e}");
        std::fs::write(d.join("text.npy"), b"hello").unwrap();
        assert!(read_as_f32(&d.join("text.npy"))
            .unwrap_err()
            .to_string()
            .contains("no NumPy magic"));
    }

    /// The header's exact text and padding (to 128 bytes here: at least one
    /// space), then little-endian values; read back bit for bit.
    #[test]
    fn arrays_are_written_as_numpy_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        for (shape, tuple) in [(vec![2, 3], "(2, 3)"), (vec![2], "(2,)"), (vec![], "()")] {
            let p = dir.path().join("a.npy");
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| i as f32 - 0.5).collect();
            write(&p, &shape, &values).unwrap();
            let bytes = std::fs::read(&p).unwrap();
            let mut header =
                format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {tuple}}}");
            header += &" ".repeat(117 - header.len());
            assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00\x76\x00");
            assert_eq!(std::str::from_utf8(&bytes[10..128]).unwrap(), header + "\n");
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(&bytes[128..], &data[..]);
            let back = read_as_f32(&p).unwrap();
            assert_eq!(back.shape(), &shape[..]);
            assert!(back
                .iter()
                .zip(&values)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        let p = dir.path().join("d.npy");
        write(&p, &[3], &[1.0f64 / 3.0, -0.0, f64::MAX]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap()[..64].len(), 64);
        let d = read_as_f64(&p).unwrap();
        assert_eq!(d.as_slice().unwrap(), &[1.0f64 / 3.0, -0.0, f64::MAX]);
        assert!(write(&p, &[2, 2], &[1.0f32; 3]).is_err());
    }

    /// Fortran order and big-endian values, as NumPy may write them, read
    /// into the same logical array.
    #[test]
    fn fortran_order_and_big_endian_files_read_as_their_arrays() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Column-major [[1, 2, 3], [4, 5, 6]] in f4, big-endian f8 [1.5, -2].
        let cols: Vec<u8> = [1f32, 4., 2., 5., 3., 6.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f = file(
            d,
            "f.npy",
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            0,
        );
        let mut bytes = std::fs::read(&f).unwrap();
        bytes.extend(cols);
        std::fs::write(&f, bytes).unwrap();
        let a = read_as_f32(&f).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(
            a.iter().copied().collect::<Vec<_>>(),
            [1., 2., 3., 4., 5., 6.]
        );
        let b = file(
            d,
            "b.npy",
            "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }",
            0,
        );
        let mut bytes = std::fs::read(&b).unwrap();
        bytes.extend(1.5f64.to_be_bytes());
        bytes.extend((-2f64).to_be_bytes());
        std::fs::write(&b, bytes).unwrap();
        assert_eq!(read_as_f64(&b).unwrap().as_slice().unwrap(), &[1.5, -2.0]);
        let odd = file(
            d,
            "o.npy",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
            4,
        );
        let e = read_as_f32(&odd).unwrap_err().to_string();
        assert!(e.contains("'fortran_order'"), "{e}");
    }
    /// A header of version `major` (1: a u16 length, 2 and 3: a u32) and
    /// the little-endian f4 values `data`.
    fn versioned(dir: &Path, major: u8, header: &str, data: &[f32]) -> std::path::PathBuf {
        let long = major > 1;
        let at = if long { 12 } else { 10 };
        let mut h = header.to_string();
        while !(at + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut bytes = b"\x93NUMPY".to_vec();
        bytes.extend([major, 0]);
        match long {
            true => bytes.extend((h.len() as u32).to_le_bytes()),
            false => bytes.extend((h.len() as u16).to_le_bytes()),
        }
        bytes.extend(h.as_bytes());
        bytes.extend(data.iter().flat_map(|v| v.to_le_bytes()));
        let p = dir.join(format!("v{major}.npy"));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// A version NumPy never wrote is refused, naming it, whatever the
    /// header after it.
    #[test]
    fn versions_numpy_never_wrote_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
        for (major, minor) in [(0u8, 0u8), (4, 0), (1, 1), (2, 5), (255, 255)] {
            let p = versioned(dir.path(), 1, h, &[1.]);
            let mut bytes = std::fs::read(&p).unwrap();
            bytes[6..8].copy_from_slice(&[major, minor]);
            std::fs::write(&p, bytes).unwrap();
            assert_eq!(
                read_as_f32(&p).unwrap_err().to_string(),
                format!("its .npy format version is {major}.{minor}, not 1.0, 2.0 or 3.0")
            );
        }
    }

    /// Every header form NumPy writes reads: versions 1 to 3, either
    /// order, the tuple forms Python writes (and Python 2's `7L`, and the
    /// spacing and trailing comma Python reads).
    #[test]
    fn every_header_numpy_writes_reads() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let six = [1f32, 2., 3., 4., 5., 6.];
        for major in [1, 2, 3] {
            for (order, cells) in [("False", six), ("True", [1., 4., 2., 5., 3., 6.])] {
                let h = format!("{{'descr': '<f4', 'fortran_order': {order}, 'shape': (2, 3), }}");
                let a = read_as_f32(&versioned(d, major, &h, &cells)).unwrap();
                assert_eq!(a.shape(), &[2, 3], "{h}");
                assert_eq!(a.iter().copied().collect::<Vec<_>>(), six, "{h}");
            }
        }
        for (tuple, want) in [
            ("(2, 3)", &[2, 3][..]),
            ("(2,3,)", &[2, 3]),
            ("( 6, )", &[6]),
            ("(6L,)", &[6]),
            ("(1, 2L, 3)", &[1, 2, 3]),
        ] {
            let h = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {tuple}, }}");
            let p = versioned(d, 1, &h, &six);
            assert_eq!(shape(&p).unwrap(), want, "{h}");
        }
        let scalar = versioned(
            d,
            1,
            "{\"descr\": \"<f4\", \"shape\": (), \"fortran_order\": False}",
            &[7.],
        );
        assert_eq!(read_as_f32(&scalar).unwrap().iter().next(), Some(&7.));
    }

    /// A header NumPy would read otherwise, or not at all, is refused in
    /// one line that says what is wrong: a key given twice (NumPy takes the
    /// last), `fortran_order` other than exactly True or False, a shape
    /// not a tuple of whole numbers, keys and text NumPy does not write.
    #[test]
    fn headers_other_than_numpy_writes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let six = [0f32; 6];
        let e = |header: &str| {
            let p = versioned(d, 1, header, &six);
            let e = read_as_f32(&p).unwrap_err().to_string();
            assert_eq!(shape(&p).unwrap_err().to_string(), e);
            e
        };
        let why = |w: &str| format!("not a readable .npy array ({w})");
        for (header, want) in [
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,), }",
                "its header gives 'shape' twice",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'fortran_order': True, }",
                "its header gives 'fortran_order' twice",
            ),
            (
                "{'descr': '>f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                "its header gives 'descr' twice",
            ),
            (
                "{'descr': '<f4', 'fortran_order': Truex, 'shape': (2, 3), }",
                "its header's 'fortran_order' is Truex, not True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }",
                "its header's 'fortran_order' is Falsey, not True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 'True', 'shape': (2, 3), }",
                "its header's 'fortran_order' is 'True', not True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3), }",
                "its header's 'fortran_order' is 1, not True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
                "its header's 'shape' is (6), not a tuple of whole numbers such as (2, 3) or (7,)",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }",
                "its header's 'shape' is (2, -3), not a tuple of whole numbers such as (2, 3) or (7,)",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3), }",
                "its header's 'shape' is (2,, 3), not a tuple of whole numbers such as (2, 3) or (7,)",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }",
                "its header's 'shape' is [2, 3], not a tuple of whole numbers such as (2, 3) or (7,)",
            ),
            (
                "{'descr': <f4, 'fortran_order': False, 'shape': (6,), }",
                "its header is not a dict literal (a key without a value)",
            ),
            (
                "{'descr': f4, 'fortran_order': False, 'shape': (6,), }",
                "its header's 'descr' is f4, not a quoted type such as '<f4'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'order': 'C', }",
                "its header has a key 'order'; NumPy's are 'descr', 'fortran_order' and 'shape'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False True, 'shape': (6,), }",
                "its header is not a dict literal (a value not followed by ',' or '}')",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x",
                "its header is not a dict literal (text follows its '}')",
            ),
            (
                "{descr: '<f4', 'fortran_order': False, 'shape': (6,), }",
                "its header is not a dict literal (a key is not a quoted string)",
            ),
            (
                "['descr', '<f4']",
                "its header is not a dict literal (it does not start with '{')",
            ),
            (
                "{'descr': '<f4', 'shape': (6,), }",
                "its header has no 'fortran_order'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, }",
                "its header has no 'shape'",
            ),
        ] {
            assert_eq!(e(header), why(want), "{header}");
        }
        // A structured type is values of another type, not a damaged header.
        assert_eq!(
            e("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (3,), }"),
            "its values are '[('a', '<f4'), ('b', '<f4')]'; give an array of f32 or f64 ('<f4' or '<f8')"
        );
        // A long value is cut, and a newline in it escaped: one line.
        let long = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'k\n{}': 1, }}",
            "k".repeat(60)
        );
        assert_eq!(
            e(&long),
            why(&format!(
                "its header has a key 'k\\n{}...'; NumPy's are 'descr', 'fortran_order' and 'shape'",
                "k".repeat(37)
            ))
        );
    }
}

//! NumPy's `.npy` format, version 1.0: results written, and user files
//! read (gaussian's image, a spec's `--aux` fields, `epsilod view`'s
//! fields) without trusting their headers: the shape a header declares is
//! checked against the bytes the file holds before anything is allocated,
//! so a damaged or hostile header is an error line and not a 160 GB
//! allocation. Only f32 and f64 arrays, whose header is a Python dict
//! literal of three keys: a few lines here rather than a crate and its
//! Python-literal parser.

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
    let values: Vec<F> = if header.float_bytes == Some(4) {
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
    float_bytes: Option<usize>,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<u64>,
    data_at: u64,
    data_bytes: u64,
}

fn readable(h: Header) -> Result<Readable, NpyError> {
    if h.descr.is_empty() {
        return Err(NpyError::Unreadable("its header has no 'descr'".into()));
    }
    if h.float_bytes.is_none() {
        return Err(NpyError::Values(h.descr));
    }
    let shape = h
        .shape
        .ok_or_else(|| NpyError::Unreadable("its header declares no shape".into()))?;
    let fortran_order = h.fortran_order.ok_or_else(|| {
        NpyError::Unreadable("its header has no 'fortran_order' of True or False".into())
    })?;
    Ok(Readable {
        float_bytes: h.float_bytes,
        big_endian: h.descr.starts_with('>'),
        fortran_order,
        data_bytes: shape.iter().product::<u64>() * h.float_bytes.unwrap_or(1) as u64,
        shape,
        data_at: h.data_at,
    })
}

/// What a header declares.
struct Header {
    descr: String,
    /// 4 or 8 for a float of either byte order, else `None`.
    float_bytes: Option<usize>,
    /// The shape, where the header's could be read.
    shape: Option<Vec<u64>>,
    /// `fortran_order`, where it is `True` or `False`.
    fortran_order: Option<bool>,
    /// Where the data starts.
    data_at: u64,
}

/// Reads the header and errors unless the data the shape declares is in
/// the file. What a header lacks is [`readable`]'s to name.
fn check(path: &Path) -> Result<Header, NpyError> {
    let mut f = open(path)?;
    let file_bytes = f.metadata()?.len();
    let mut start = [0u8; 12];
    let got = read_up_to(&mut f, &mut start)?;
    if got < 10 || &start[..6] != MAGIC {
        return Err(NpyError::NotNpy);
    }
    let (len, at) = match start[6] {
        1 => (u64::from(u16::from_le_bytes([start[8], start[9]])), 10u64),
        _ if got == 12 => (
            u64::from(u32::from_le_bytes([
                start[8], start[9], start[10], start[11],
            ])),
            12,
        ),
        _ => return Err(NpyError::CutShort),
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
    let header = String::from_utf8_lossy(&all[at as usize..]).into_owned();
    let descr = quoted_after(&header, "'descr'").unwrap_or_default();
    // The reader swaps big-endian values itself.
    let float_bytes = match descr.as_str() {
        "<f4" | "=f4" | ">f4" => Some(4),
        "<f8" | "=f8" | ">f8" => Some(8),
        _ => None,
    };
    let item: u64 = descr
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or(1);
    let shape = shape_of(&header);
    if let Some(shape) = shape.clone() {
        let declared = shape
            .iter()
            .try_fold(item, |n, &d| n.checked_mul(d))
            .filter(|&n| n <= file_bytes - (at + len));
        if declared.is_none() {
            return Err(NpyError::DataPastEnd {
                shape,
                item,
                data_bytes: file_bytes - (at + len),
            });
        }
    }
    let fortran_order = after(&header, "'fortran_order'").and_then(|rest| {
        if rest.starts_with("True") {
            Some(true)
        } else if rest.starts_with("False") {
            Some(false)
        } else {
            None
        }
    });
    Ok(Header {
        descr,
        float_bytes,
        shape,
        fortran_order,
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

/// What follows `key:` in a Python dict literal, from its first non-space.
fn after<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let rest = &header[header.find(key)? + key.len()..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

/// The string after `key:` in a Python dict literal: `'descr': '<f4'`.
fn quoted_after(header: &str, key: &str) -> Option<String> {
    let rest = after(header, key)?;
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &rest[1..];
    Some(rest[..rest.find(quote)?].to_string())
}

/// The tuple after `'shape':`, `(200, 300)` or `(7,)` or `()`.
fn shape_of(header: &str) -> Option<Vec<u64>> {
    let rest = after(header, "'shape'")?;
    let inner = &rest.strip_prefix('(')?[..rest.find(')')? - 1];
    inner
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('L').parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

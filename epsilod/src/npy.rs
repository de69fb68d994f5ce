//! Reading user `.npy` files (gaussian's image, a spec's `--aux` fields,
//! `epsilod view`'s fields) without trusting their headers: the shape a
//! header declares is checked against the bytes the file holds before
//! anything is allocated, so a damaged or hostile header is an error line
//! and not a 160 GB allocation.

use ndarray::ArrayD;
use ndarray_npy::ReadNpyExt;
use std::io::Read;
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
    let kind = check(path)?;
    if kind.float_bytes == Some(4) {
        return ArrayD::<f32>::read_npy(open(path)?).map_err(|e| unreadable(&e));
    }
    Ok(read_f64(path, &kind)?.mapv(|v| v as f32))
}

/// The array of an f32 or f64 `.npy` file as f64 (f32 values exact).
pub fn read_as_f64(path: &Path) -> Result<ArrayD<f64>, NpyError> {
    let kind = check(path)?;
    if kind.float_bytes == Some(4) {
        let a = ArrayD::<f32>::read_npy(open(path)?).map_err(|e| unreadable(&e))?;
        return Ok(a.mapv(f64::from));
    }
    read_f64(path, &kind)
}

/// The shape of an f32 or f64 `.npy` file's array, its header alone read
/// (and checked as [`read_as_f32`] checks it), so that a run can check the
/// memory an array needs before reading it.
pub fn shape(path: &Path) -> Result<Vec<usize>, NpyError> {
    let kind = check(path)?;
    if kind.float_bytes.is_none() {
        return Err(NpyError::Values(kind.descr));
    }
    let shape = kind
        .shape
        .ok_or_else(|| NpyError::Unreadable("its header declares no shape".into()))?;
    Ok(shape.into_iter().map(|d| d as usize).collect())
}

fn read_f64(path: &Path, kind: &Header) -> Result<ArrayD<f64>, NpyError> {
    // A header without a type this could read is the reader's to name.
    if kind.float_bytes != Some(8) && !kind.descr.is_empty() {
        return Err(NpyError::Values(kind.descr.clone()));
    }
    ArrayD::<f64>::read_npy(open(path)?).map_err(|e| unreadable(&e))
}

fn open(path: &Path) -> Result<std::fs::File, NpyError> {
    Ok(std::fs::File::open(path)?)
}

/// The reader's error on one line (its parser draws the spot in several).
fn unreadable(e: &dyn std::fmt::Display) -> NpyError {
    let text = e.to_string();
    NpyError::Unreadable(text.lines().next().unwrap_or("").trim().to_string())
}

/// What a header declares.
struct Header {
    descr: String,
    /// 4 or 8 for a float of either byte order, else `None`.
    float_bytes: Option<usize>,
    /// The shape, where the header's could be read.
    shape: Option<Vec<u64>>,
}

/// Reads the header and errors unless the data the shape declares is in
/// the file. A header this cannot parse is left to the reader, whose error
/// names it.
fn check(path: &Path) -> Result<Header, NpyError> {
    let mut f = open(path)?;
    let file_bytes = f.metadata()?.len();
    let mut start = [0u8; 12];
    let got = read_up_to(&mut f, &mut start)?;
    if got < 10 || &start[..6] != b"\x93NUMPY" {
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
    Ok(Header {
        descr,
        float_bytes,
        shape,
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

/// The string after `key:` in a Python dict literal: `'descr': '<f4'`.
fn quoted_after(header: &str, key: &str) -> Option<String> {
    let rest = &header[header.find(key)? + key.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &rest[1..];
    Some(rest[..rest.find(quote)?].to_string())
}

/// The tuple after `'shape':`, `(200, 300)` or `(7,)` or `()`.
fn shape_of(header: &str) -> Option<Vec<u64>> {
    let rest = &header[header.find("'shape'")? + "'shape'".len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
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
}

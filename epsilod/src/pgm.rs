//! PGM grey-level images (Netpbm): the gaussian app's input and an output
//! format for any 2-d field.
//!
//! Reading takes both kinds, `P2` (decimal values) and `P5` (one byte per
//! pixel, or two big-endian bytes where the maximum is over 255), with
//! `#` comments anywhere in the header (and between `P2` values). EPSILOD's
//! reader (apps.md §1.4) wanted one `P2` value per line and read `P5`
//! bytes as signed chars; this one reads what the format allows, and
//! pixels are never negative.
//!
//! Two writers, both `P2` with one value a line: [`write_epsilod`] writes
//! what EPSILOD's gaussian writes (each value `%03.0f`, the maximum grey
//! value given, nothing clamped), and [`write`] a grey-level image any
//! viewer reads (values rounded and held to 0..=65535, the maximum grey
//! value from them).

use std::io::Write;
use std::path::Path;
use thiserror::Error;

/// Why an image could not be read or written.
#[derive(Debug, Error)]
pub enum PgmError {
    /// The file could not be opened, read or written.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// The system's reason.
        #[source]
        why: std::io::Error,
    },
    /// The file is not a PGM image as the format defines it.
    #[error("{path} is not a PGM image: {why}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong, and where.
        why: PgmSyntax,
    },
}

/// What makes bytes not a PGM image, and where.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PgmSyntax {
    /// No `P2` or `P5` at the start.
    #[error("it does not start with P2 or P5")]
    Magic,
    /// The magic number runs into what follows.
    #[error("expected white space after the magic number")]
    SpaceAfterMagic,
    /// The file ends before a number of the header or a pixel.
    #[error("the file ends before the {what}")]
    EndsBefore {
        /// The number missing.
        what: String,
    },
    /// Something other than a decimal number where one belongs.
    #[error("expected the {what} at byte {at}, a decimal number")]
    NotANumber {
        /// The number expected.
        what: String,
        /// Where.
        at: usize,
    },
    /// A number over its limit.
    #[error("the {what} at byte {at} is over {max}")]
    Over {
        /// The number.
        what: String,
        /// Where.
        at: usize,
        /// Its limit.
        max: u32,
    },
    /// A width or height of 0.
    #[error("the image is {cols}x{rows}: it has no pixels")]
    NoPixels {
        /// The width.
        cols: usize,
        /// The height.
        rows: usize,
    },
    /// A maximum grey value of 0.
    #[error("the maximum grey value is 0: it must be 1 to 65535")]
    MaxvalZero,
    /// More pixels than are read.
    #[error("{cols}x{rows} pixels is too many")]
    TooMany {
        /// The width.
        cols: usize,
        /// The height.
        rows: usize,
    },
    /// A binary image's header not ended by one white-space byte.
    #[error("expected one white-space byte after the maximum grey value")]
    SpaceAfterMaxval,
    /// A text image longer than its pixels can be.
    #[error("a {cols}x{rows} P2 image holds at most {most} bytes ({} a pixel after the header); this file holds more", P2_BYTES_PER_PIXEL)]
    TooLong {
        /// The width.
        cols: usize,
        /// The height.
        rows: usize,
        /// The most bytes it may hold.
        most: usize,
    },
    /// A binary image with fewer pixel bytes than its size needs.
    #[error("{got} bytes of pixels, {cols}x{rows} need {need}")]
    ShortData {
        /// The bytes there.
        got: usize,
        /// The width.
        cols: usize,
        /// The height.
        rows: usize,
        /// The bytes needed.
        need: usize,
    },
    /// A binary pixel over the maximum grey value.
    #[error("pixel {index} is {value}, over the maximum grey value {maxval}")]
    PixelOver {
        /// The pixel, counted row after row.
        index: usize,
        /// Its value.
        value: u16,
        /// The maximum grey value.
        maxval: u16,
    },
    /// A text pixel that is wrong, with the maximum grey value beside it.
    #[error("{cause} (the maximum grey value is {maxval})")]
    Pixel {
        /// What is wrong with it.
        cause: Box<PgmSyntax>,
        /// The maximum grey value.
        maxval: u16,
    },
}

/// A grey-level image, row-major, `rows x cols` pixels of at most `maxval`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Rows (the PGM height).
    pub rows: usize,
    /// Columns (the PGM width).
    pub cols: usize,
    /// The white level, 1 to 65535.
    pub maxval: u16,
    /// The pixels, row after row.
    pub pixels: Vec<u16>,
}

/// The most bytes a P2 (text) image may spend on a pixel, comments and
/// white space included: a file past its header and this much for each
/// pixel is refused unread. A P5 image is read as far as its pixels go.
pub const P2_BYTES_PER_PIXEL: usize = 64;

/// Reads a PGM file: its header, then no more than the pixels that header
/// declares (a header on a huge or endless file reads no further).
pub fn read(path: &Path) -> Result<Image, PgmError> {
    use std::io::Read;
    let name = || path.display().to_string();
    let io = |e| PgmError::Io {
        path: name(),
        why: e,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let (mut bytes, (header, (binary, at))) = head(&mut file, path)?;
    let pixels = header.rows * header.cols;
    let most = if binary {
        at + 1 + pixels * if header.maxval > 255 { 2 } else { 1 }
    } else {
        at + pixels * P2_BYTES_PER_PIXEL
    };
    let left = most.saturating_sub(bytes.len()) as u64;
    (&mut file)
        .take(left + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if !binary && bytes.len() > most {
        return Err(PgmError::Format {
            path: name(),
            why: PgmSyntax::TooLong {
                cols: header.cols,
                rows: header.rows,
                most,
            },
        });
    }
    parse(&bytes).map_err(|why| PgmError::Format { path: name(), why })
}

/// The tokens of a PGM file, `#` comments skipped.
struct Tokens<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Tokens<'_> {
    fn skip_space(&mut self) {
        while let Some(&b) = self.bytes.get(self.at) {
            if b == b'#' {
                while self.bytes.get(self.at).is_some_and(|&b| b != b'\n') {
                    self.at += 1;
                }
            } else if b.is_ascii_whitespace() {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    /// The next decimal number, at most `max`; `what` names it in errors.
    fn number(&mut self, what: &str, max: u32) -> Result<u32, PgmSyntax> {
        self.skip_space();
        let start = self.at;
        let mut v: u32 = 0;
        while let Some(d) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            v = v.saturating_mul(10).saturating_add(u32::from(d - b'0'));
            self.at += 1;
        }
        if self.at == start {
            let what = what.to_string();
            return Err(match self.bytes.get(self.at) {
                None => PgmSyntax::EndsBefore { what },
                Some(_) => PgmSyntax::NotANumber { what, at: start },
            });
        }
        if v > max {
            return Err(PgmSyntax::Over {
                what: what.to_string(),
                at: start,
                max,
            });
        }
        Ok(v)
    }
}

/// What a PGM file's header declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Rows (the PGM height).
    pub rows: usize,
    /// Columns (the PGM width).
    pub cols: usize,
    /// The white level, 1 to 65535.
    pub maxval: u16,
}

/// Reads a PGM file's header alone, so that a run can check the memory an
/// image needs before its pixels are read.
pub fn read_header(path: &Path) -> Result<Header, PgmError> {
    let mut file = std::fs::File::open(path).map_err(|e| PgmError::Io {
        path: path.display().to_string(),
        why: e,
    })?;
    head(&mut file, path).map(|(_, (h, _))| h)
}

/// The first bytes of `file`, read until they hold its whole header, and
/// that header (as [`parse_header`] gives it).
#[allow(clippy::type_complexity)]
fn head(
    file: &mut std::fs::File,
    path: &Path,
) -> Result<(Vec<u8>, (Header, (bool, usize))), PgmError> {
    use std::io::Read;
    let io = |e| PgmError::Io {
        path: path.display().to_string(),
        why: e,
    };
    let mut bytes = Vec::new();
    // Comments may make a header long: read more until it ends (a number
    // at the end of what was read may go on past it).
    let mut chunk = 4096;
    loop {
        let got = file.take(chunk).read_to_end(&mut bytes).map_err(io)?;
        let more = got as u64 == chunk;
        match parse_header(&bytes) {
            Err(PgmSyntax::EndsBefore { .. }) if more => {}
            Ok((_, (_, at))) if more && at == bytes.len() => {}
            header => {
                return header.map(|h| (bytes, h)).map_err(|why| PgmError::Format {
                    path: path.display().to_string(),
                    why,
                })
            }
        }
        chunk *= 2;
    }
}

/// The header of a PGM file's bytes, and the tokens after it (the binary
/// flag and where the maximum grey value ends).
fn parse_header(bytes: &[u8]) -> Result<(Header, (bool, usize)), PgmSyntax> {
    let binary = match bytes.get(..2) {
        Some(b"P2") => false,
        Some(b"P5") => true,
        _ => return Err(PgmSyntax::Magic),
    };
    let mut t = Tokens { bytes, at: 2 };
    if !t
        .bytes
        .get(2)
        .is_some_and(|b| b.is_ascii_whitespace() || *b == b'#')
    {
        return Err(PgmSyntax::SpaceAfterMagic);
    }
    // Sizes past a billion pixels are refused before allocating.
    const MAX_SIDE: u32 = 1 << 20;
    let cols = t.number("width", MAX_SIDE)? as usize;
    let rows = t.number("height", MAX_SIDE)? as usize;
    let maxval = t.number("maximum grey value", 65535)?;
    if cols == 0 || rows == 0 {
        return Err(PgmSyntax::NoPixels { cols, rows });
    }
    if maxval == 0 {
        return Err(PgmSyntax::MaxvalZero);
    }
    let header = Header {
        rows,
        cols,
        maxval: maxval as u16,
    };
    Ok((header, (binary, t.at)))
}

/// Parses a PGM file's bytes.
pub fn parse(bytes: &[u8]) -> Result<Image, PgmSyntax> {
    let (Header { rows, cols, maxval }, (binary, at)) = parse_header(bytes)?;
    let t = &mut Tokens { bytes, at };
    let count = rows
        .checked_mul(cols)
        .filter(|&n| n <= 1 << 30)
        .ok_or(PgmSyntax::TooMany { cols, rows })?;
    let pixels = if binary {
        // Exactly one white-space byte ends the header.
        if !t.bytes.get(t.at).is_some_and(u8::is_ascii_whitespace) {
            return Err(PgmSyntax::SpaceAfterMaxval);
        }
        let data = &t.bytes[t.at + 1..];
        let wide = maxval > 255;
        let need = count * if wide { 2 } else { 1 };
        if data.len() < need {
            return Err(PgmSyntax::ShortData {
                got: data.len(),
                cols,
                rows,
                need,
            });
        }
        let pixels: Vec<u16> = if wide {
            data[..need]
                .chunks_exact(2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
                .collect()
        } else {
            data[..need].iter().map(|&b| u16::from(b)).collect()
        };
        if let Some(i) = pixels.iter().position(|&p| p > maxval) {
            return Err(PgmSyntax::PixelOver {
                index: i,
                value: pixels[i],
                maxval,
            });
        }
        pixels
    } else {
        let mut pixels = Vec::with_capacity(count);
        for i in 0..count {
            let v = t
                .number(&format!("pixel {i}"), u32::from(maxval))
                .map_err(|e| PgmSyntax::Pixel {
                    cause: Box::new(e),
                    maxval,
                })?;
            pixels.push(v as u16);
        }
        pixels
    };
    Ok(Image {
        rows,
        cols,
        maxval,
        pixels,
    })
}

/// Writes `values` (`rows x cols`, row-major) as EPSILOD's gaussian writes
/// its result (apps.md §1.4): the header `P2\n<cols> <rows>\n<maxval>\n`,
/// then each value on a line of its own as C's `%03.0f` prints it (zero-padded
/// to three characters, rounded half to even, `-05` for -5, `1234` for
/// 1234, `nan` for NaN). Nothing is clamped, so a value below 0 or over
/// `maxval` gives a file that only EPSILOD's format takes.
pub fn write_epsilod(
    path: &Path,
    rows: usize,
    cols: usize,
    maxval: u16,
    values: &[f64],
) -> Result<(), PgmError> {
    assert_eq!(values.len(), rows * cols, "an image of rows x cols values");
    let io = |e: std::io::Error| PgmError::Io {
        path: path.display().to_string(),
        why: e,
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    write!(w, "P2\n{cols} {rows}\n{maxval}\n").map_err(io)?;
    for &v in values {
        writeln!(w, "{}", c_03_0f(v)).map_err(io)?;
    }
    w.flush().map_err(io)
}

/// `v` as glibc's `printf("%03.0f", v)`: Rust's `{:03.0}` rounds and pads
/// the same way (half to even on the exact value, the sign before the
/// zeros), and spells NaN otherwise.
fn c_03_0f(v: f64) -> String {
    match v.is_nan() {
        true if v.is_sign_negative() => "-nan".into(),
        true => "nan".into(),
        false => format!("{v:03.0}"),
    }
}

/// Writes `values` (`rows x cols`, row-major) as a grey-level `P2` image
/// any viewer reads, one value a line: each rounded to the nearest whole
/// number (NaN to 0) and held to 0..=65535; the maximum grey value is 255,
/// or the largest value where that is more.
pub fn write(path: &Path, rows: usize, cols: usize, values: &[f64]) -> Result<(), PgmError> {
    assert_eq!(values.len(), rows * cols, "an image of rows x cols values");
    let io = |e: std::io::Error| PgmError::Io {
        path: path.display().to_string(),
        why: e,
    };
    let grey: Vec<u16> = values
        .iter()
        .map(|&v| {
            if v.is_nan() {
                0
            } else {
                v.round().clamp(0.0, 65535.0) as u16
            }
        })
        .collect();
    let maxval = grey.iter().copied().max().unwrap_or(0).max(255);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    write!(w, "P2\n{cols} {rows}\n{maxval}\n").map_err(io)?;
    for g in grey {
        writeln!(w, "{g}").map_err(io)?;
    }
    w.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_read_with_comments_and_any_white_space() {
        let ascii = b"P2\n# made by hand\n3 2 # width height\n200\n0 1 2\n# a comment between rows\n100\n150 200\n";
        let want = Image {
            rows: 2,
            cols: 3,
            maxval: 200,
            pixels: vec![0, 1, 2, 100, 150, 200],
        };
        assert_eq!(parse(ascii).unwrap(), want);
        let mut binary = b"P5 3 2\n200\n".to_vec();
        binary.extend([0u8, 1, 2, 100, 150, 200]);
        assert_eq!(parse(&binary).unwrap(), want);
        // Bytes over 127 are pixels over 127 (EPSILOD read signed chars).
        let mut high = b"P5\n1 1\n255\n".to_vec();
        high.push(250);
        assert_eq!(parse(&high).unwrap().pixels, vec![250]);
        let mut wide = b"P5\n2 1\n1000\n".to_vec();
        wide.extend([3u8, 0xe8, 0, 7]);
        assert_eq!(parse(&wide).unwrap().pixels, vec![1000, 7]);
    }

    #[test]
    fn bad_images_say_what_is_wrong() {
        for (text, why) in [
            (&b"P6\n1 1\n255\n"[..], "does not start with P2 or P5"),
            (b"P2", "expected white space after the magic number"),
            (b"P2\n", "ends before the width"),
            (b"P2\nx 2", "expected the width at byte 3"),
            (b"P2\n2 2\n255\n1 2 3", "ends before the pixel 3"),
            (b"P2\n1 1\n255\n256", "pixel 0 at byte 11 is over 255"),
            (b"P2\n0 4\n255\n", "it has no pixels"),
            (b"P2\n1 1\n0\n0", "the maximum grey value is 0"),
            (
                b"P2\n1 1\n70000\n0",
                "maximum grey value at byte 7 is over 65535",
            ),
            (b"P2\n99999999 99999999\n255\n", "width at byte 3 is over"),
            (b"P2\n1000000 1000000\n255\n", "too many"),
            (b"P5\n2 2\n255\n\x01\x02", "2 bytes of pixels, 2x2 need 4"),
            (b"P5\n1 1\n255", "one white-space byte after"),
            (
                b"P5\n1 1\n9\n\x0a",
                "pixel 0 is 10, over the maximum grey value 9",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{:?}: {e}", String::from_utf8_lossy(text));
        }
        let e = read(Path::new("/no/such/image.pgm")).unwrap_err();
        assert!(
            matches!(&e, PgmError::Io { path, .. } if path == "/no/such/image.pgm"),
            "{e}"
        );
    }

    /// A header is read alone, however long its comments and however many
    /// pixels it claims (the pixels are another reader's to refuse).
    #[test]
    fn headers_read_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.pgm");
        let comment = format!("# {}\n", "x".repeat(5000));
        std::fs::write(&p, format!("P5\n{comment}1000000 {comment}999999\n65535\n")).unwrap();
        let want = Header {
            rows: 999999,
            cols: 1000000,
            maxval: 65535,
        };
        assert_eq!(read_header(&p).unwrap(), want);
        // Cut inside the maximum grey value: the file ends there.
        std::fs::write(&p, b"P2\n3 2\n25").unwrap();
        assert_eq!(read_header(&p).unwrap().maxval, 25);
        std::fs::write(&p, b"P2\n3").unwrap();
        let e = read_header(&p).unwrap_err().to_string();
        assert!(e.contains("ends before the height"), "{e}");
    }

    /// Byte for byte what EPSILOD's `"%03.0f\n"` records give, checked
    /// against glibc's printf: a negative value, values over 255 and over
    /// 999, halves (to even), NaN and infinities, and the maximum grey
    /// value as given.
    #[test]
    fn epsilod_images_are_written_as_printf_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.pgm");
        let values = [
            0.0,
            7.0,
            -5.0,
            300.0,
            1234.0,
            2.5,
            3.5,
            -0.4,
            254.6,
            255.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            -12.0,
        ];
        write_epsilod(&p, 2, 7, 200, &values).unwrap();
        let want = "P2\n7 2\n200\n000\n007\n-05\n300\n1234\n002\n004\n-00\n255\n255\nnan\n-nan\ninf\n-12\n";
        assert_eq!(std::fs::read_to_string(&p).unwrap(), want);
        // Whole values within 0..=maxval read back as a PGM.
        write_epsilod(&p, 1, 3, 40, &[0.0, 9.0, 40.0]).unwrap();
        let back = read(&p).unwrap();
        assert_eq!((back.maxval, back.pixels), (40, vec![0, 9, 40]));
    }

    #[test]
    fn written_images_read_back_rounded_and_held_in_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.pgm");
        write(&p, 2, 3, &[0.0, 1.4, 2.6, -5.0, f64::NAN, 255.0]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "P2\n3 2\n255\n0\n1\n3\n0\n0\n255\n");
        assert_eq!(read(&p).unwrap().pixels, vec![0, 1, 3, 0, 0, 255]);
        write(&p, 1, 2, &[300.0, 1e9]).unwrap();
        let back = read(&p).unwrap();
        assert_eq!((back.maxval, back.pixels), (65535, vec![300, 65535]));
    }
}

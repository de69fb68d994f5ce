//! Writing result arrays: `.npy`, EPSILOD's `.txt` (one value a line,
//! `%042.40f`), raw little-endian `.dat`, VTK's `.vti` and, for 2-d
//! scalar fields, `.pgm` images ([`crate::pgm`]). Output functions are part of
//! the skeleton's contract (EPSILOD's takes them), so they live here, not
//! in the command line. `.npy` needs the cargo feature `npy` and `.vti` the
//! feature `vtk`; a build without one answers [`OutputError::NotBuilt`].

use hitmap::Shape;
use kernels::Cell;
use ndarray::{ArrayD, ArrayViewD};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use thiserror::Error;

/// Why a result could not be written.
#[derive(Debug, Error)]
pub enum OutputError {
    /// The file name's extension names no format.
    #[error(
        "unknown output format '{0}': use a file name ending in .npy, .txt, .dat, .vti or .pgm"
    )]
    Format(String),
    /// The format's writer is behind a cargo feature this build lacks.
    #[error(
        "writing {} files needs epsilod built with its '{}' feature",
        .0.extension(),
        .0.feature().unwrap_or_default()
    )]
    NotBuilt(Format),
    /// The file could not be created or written.
    #[error("cannot write output {path}: {why}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        #[source]
        why: WriteError,
    },
}

/// Why a result file could not be written in its format.
#[derive(Debug, Error)]
pub enum WriteError {
    /// The system's reason.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `.dat` files are little-endian.
    #[error("raw .dat output is little-endian; this host is big-endian")]
    BigEndian,
    /// A PGM image of other than a 2-d field of scalars.
    #[error(
        "a PGM image holds a 2-d field of one number a cell, not {ndims}-d cells of {components}"
    )]
    PgmShape {
        /// The field's dimensions.
        ndims: usize,
        /// Scalars a cell.
        components: usize,
    },
    /// Values a PGM image cannot hold.
    #[error(transparent)]
    Pgm(crate::pgm::PgmSyntax),
    /// Scalars that are neither f32 nor f64.
    #[error("{0} values: .npy and .vti files hold f32 or f64")]
    NotFloat(&'static str),
    /// The `.vti` writer's reason.
    #[cfg(feature = "vtk")]
    #[error(transparent)]
    Vti(#[from] VtiError),
}

/// Why snapshot files cannot be written where their pattern says.
#[derive(Debug, Error)]
pub enum SnapshotError {
    /// Snapshots every 0 iterations.
    #[error("snapshots every 0 iterations: give --snapshot-every 1 or more")]
    EveryZero,
    /// The pattern has no `{iter}`.
    #[error("snapshot pattern '{0}' has no {{iter}}: every snapshot would overwrite the last (e.g. out/field_{{iter}}.npy)")]
    NoIter(String),
    /// A snapshot's directory could not be made.
    #[error("cannot create snapshot directory {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: std::path::PathBuf,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The first snapshot file could not be created.
    #[error("cannot write snapshot {path}: {why}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        #[source]
        why: WriteError,
    },
    /// The first snapshot file has no known format, or one this build
    /// cannot write.
    #[error(transparent)]
    Output(OutputError),
}

/// A snapshot file's write error is said as a snapshot's, not as the
/// `--output` result's.
impl From<OutputError> for SnapshotError {
    fn from(e: OutputError) -> SnapshotError {
        match e {
            OutputError::Write { path, why } => SnapshotError::Write { path, why },
            other => SnapshotError::Output(other),
        }
    }
}

/// A cell made of `COMPONENTS` scalars that output formats can write.
pub trait OutputCell: Cell {
    /// One component: f32 or f64 for `.npy` and `.vti`.
    type Scalar: Cell + Into<f64>;
    /// Components per cell (a column of its own in `.npy`).
    const COMPONENTS: usize;
}

impl OutputCell for f32 {
    type Scalar = f32;
    const COMPONENTS: usize = 1;
}
impl OutputCell for f64 {
    type Scalar = f64;
    const COMPONENTS: usize = 1;
}
impl<const N: usize> OutputCell for [f32; N] {
    type Scalar = f32;
    const COMPONENTS: usize = N;
}
impl<const N: usize> OutputCell for [f64; N] {
    type Scalar = f64;
    const COMPONENTS: usize = N;
}

/// An output file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NumPy's array file.
    Npy,
    /// EPSILOD's text: one value a line, `%042.40f`.
    Txt,
    /// Raw little-endian scalars.
    Dat,
    /// VTK XML image data, for ParaView: point data named `field`, one
    /// component per scalar of a cell.
    Vti,
    /// A grey-level image (2-d fields of one scalar a cell), values
    /// rounded to whole numbers.
    Pgm,
}

impl Format {
    /// The format a file name's extension names.
    pub fn from_path(path: &Path) -> Result<Format, OutputError> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("npy") => Ok(Format::Npy),
            Some("txt") => Ok(Format::Txt),
            Some("dat") => Ok(Format::Dat),
            Some("vti") => Ok(Format::Vti),
            Some("pgm") => Ok(Format::Pgm),
            _ => Err(OutputError::Format(path.display().to_string())),
        }
    }

    /// The file name extension, with its dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Npy => ".npy",
            Format::Txt => ".txt",
            Format::Dat => ".dat",
            Format::Vti => ".vti",
            Format::Pgm => ".pgm",
        }
    }

    /// The cargo feature of epsilod that builds this format's writer, if
    /// it needs one.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Format::Npy => Some("npy"),
            Format::Vti => Some("vtk"),
            Format::Txt | Format::Dat | Format::Pgm => None,
        }
    }

    /// Whether this build can write the format.
    pub fn is_built(self) -> bool {
        match self {
            Format::Npy => cfg!(feature = "npy"),
            Format::Vti => cfg!(feature = "vtk"),
            Format::Txt | Format::Dat | Format::Pgm => true,
        }
    }

    /// The format a file name's extension names, if this build can write it.
    fn writable(path: &Path) -> Result<Format, OutputError> {
        let f = Format::from_path(path)?;
        if f.is_built() {
            Ok(f)
        } else {
            Err(OutputError::NotBuilt(f))
        }
    }
}

/// Where snapshots go: every `every` iterations, a file named by `pattern`
/// with `{iter}` replaced by the iteration (`out/field_{iter}.npy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshots {
    /// Iterations between snapshots.
    pub every: u64,
    /// The file name pattern; its extension gives the format.
    pub pattern: String,
}

impl Snapshots {
    /// Checks the pattern (it has `{iter}`, a known extension, and its
    /// first file can be created, its directory made if missing) before
    /// the run.
    pub fn check(&self) -> Result<(), SnapshotError> {
        if self.every == 0 {
            return Err(SnapshotError::EveryZero);
        }
        if !self.pattern.contains("{iter}") {
            return Err(SnapshotError::NoIter(self.pattern.clone()));
        }
        let first = self.path(self.every);
        Snapshots::make_dir(&first)?;
        check_writable(&first)?;
        Ok(())
    }

    /// Makes the directory a snapshot file goes in, where missing: a
    /// pattern may put `{iter}` in a directory's name, so each snapshot
    /// may need its own.
    pub fn make_dir(file: &std::path::Path) -> Result<(), SnapshotError> {
        match file.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => std::fs::create_dir_all(dir).map_err(|source| SnapshotError::Dir {
                dir: dir.to_path_buf(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// The file of the snapshot after `iter` iterations.
    pub fn path(&self, iter: u64) -> std::path::PathBuf {
        self.pattern.replace("{iter}", &iter.to_string()).into()
    }
}

/// Errors unless `path` can be created or written, checked before a long run
/// rather than after it; leaves no file behind that was not there.
pub fn check_creatable(path: &Path) -> Result<(), std::io::Error> {
    if path.exists() {
        File::options().append(true).open(path)?;
        return Ok(());
    }
    // Probed under the name a whole write fills first, so that a run
    // stopped here (Ctrl-C) never leaves an empty file under the result's.
    let probe = partial_path(path);
    // A directory (or device) left under that name: said by its name, not
    // as "Is a directory" of a result that is none.
    if std::fs::symlink_metadata(&probe).is_ok_and(|m| !m.is_file()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} is in the way (not a plain file): remove it",
                probe.display()
            ),
        ));
    }
    File::options().append(true).create(true).open(&probe)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Checks that `path` has a known extension this build can write and can
/// be created.
pub fn check_writable(path: &Path) -> Result<Format, OutputError> {
    let f = Format::writable(path)?;
    check_creatable(path).map_err(|e| OutputError::Write {
        path: path.display().to_string(),
        why: e.into(),
    })?;
    Ok(f)
}

/// EPSILOD's text format for one value: `%042.40f`.
pub fn epsilod_text(v: f64) -> String {
    format!("{v:042.40}")
}

/// Writes `grid` (row-major) in the format its extension names, whole or
/// not at all ([`write_whole`]).
pub fn write<T: OutputCell>(path: &Path, grid: ArrayViewD<'_, T>) -> Result<(), OutputError> {
    let err = |why: WriteError| OutputError::Write {
        path: path.display().to_string(),
        why,
    };
    let format = Format::from_path(path)?;
    let cells: Vec<T> = grid.iter().copied().collect();
    let scalars: &[T::Scalar] = bytemuck::cast_slice(&cells);
    match format {
        #[cfg(feature = "npy")]
        Format::Npy => {
            let mut shape = grid.shape().to_vec();
            if T::COMPONENTS > 1 {
                shape.push(T::COMPONENTS);
            }
            let values = floats(scalars).map_err(err)?;
            write_whole(path, |p| write_npy(p, &shape, values)).map_err(err)
        }
        Format::Txt => write_whole(path, |p| {
            let mut w = BufWriter::new(File::create(p)?);
            for &s in scalars {
                writeln!(w, "{}", epsilod_text(s.into()))?;
            }
            Ok(w.flush()?)
        })
        .map_err(err),
        Format::Dat => {
            if cfg!(target_endian = "big") {
                return Err(err(WriteError::BigEndian));
            }
            let bytes = bytemuck::cast_slice::<T::Scalar, u8>(scalars);
            write_whole(path, |p| Ok(std::fs::write(p, bytes)?)).map_err(err)
        }
        #[cfg(not(feature = "npy"))]
        Format::Npy => Err(OutputError::NotBuilt(format)),
        #[cfg(feature = "vtk")]
        Format::Vti => {
            let values = floats(scalars).map_err(err)?;
            write_whole(path, |p| write_vti(p, grid.shape(), T::COMPONENTS, values)).map_err(err)
        }
        #[cfg(not(feature = "vtk"))]
        Format::Vti => Err(OutputError::NotBuilt(format)),
        Format::Pgm => {
            let (rows, cols, values) = pgm_values(path, grid)?;
            write_whole(path, |p| {
                crate::pgm::write(p, rows, cols, &values).map_err(pgm_why)
            })
            .map_err(err)
        }
    }
}

/// Writes the file at `path` whole or not at all: `fill` writes
/// [`partial_path`] beside it, renamed over `path` once complete, so an
/// interrupted run (Ctrl-C) or a failed write never leaves a shorter file
/// that reads as a whole result. A path that exists as other than a plain
/// file (a link, a device, a pipe) is written in place.
pub fn write_whole<E: From<std::io::Error>>(
    path: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file()) {
        return fill(path);
    }
    let partial = partial_path(path);
    let written = fill(&partial).and_then(|()| Ok(std::fs::rename(&partial, path)?));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// Where [`write_whole`] writes `path` until it is complete: its name with
/// `.partial` added.
pub fn partial_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    name.into()
}

/// Writes the 2-d scalar `grid` as EPSILOD's gaussian writes its image
/// ([`crate::pgm::write_epsilod`]: `%03.0f` a line, nothing clamped), with
/// maximum grey value `maxval`, whatever `path`'s extension.
pub fn write_epsilod_pgm<T: OutputCell>(
    path: &Path,
    grid: ArrayViewD<'_, T>,
    maxval: u16,
) -> Result<(), OutputError> {
    let (rows, cols, values) = pgm_values(path, grid)?;
    write_whole(path, |p| {
        crate::pgm::write_epsilod(p, rows, cols, maxval, &values).map_err(pgm_why)
    })
    .map_err(|why| OutputError::Write {
        path: path.display().to_string(),
        why,
    })
}

/// A 2-d field of one scalar a cell as a PGM's rows, columns and values.
fn pgm_values<T: OutputCell>(
    path: &Path,
    grid: ArrayViewD<'_, T>,
) -> Result<(usize, usize, Vec<f64>), OutputError> {
    match grid.shape() {
        &[rows, cols] if T::COMPONENTS == 1 => {
            let cells: Vec<T> = grid.iter().copied().collect();
            let scalars: &[T::Scalar] = bytemuck::cast_slice(&cells);
            Ok((rows, cols, scalars.iter().map(|&s| s.into()).collect()))
        }
        shape => Err(OutputError::Write {
            path: path.display().to_string(),
            why: WriteError::PgmShape {
                ndims: shape.len(),
                components: T::COMPONENTS,
            },
        }),
    }
}

/// A PGM writer's error as an output file's (its path said once, by the
/// caller).
fn pgm_why(e: crate::pgm::PgmError) -> WriteError {
    match e {
        crate::pgm::PgmError::Io { why, .. } => why.into(),
        crate::pgm::PgmError::Format { why, .. } => WriteError::Pgm(why),
    }
}

/// A cell's scalars as the floats they are: `.npy` and `.vti` hold f32 or
/// f64 values.
#[cfg(any(feature = "npy", feature = "vtk"))]
enum Floats<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

#[cfg(any(feature = "npy", feature = "vtk"))]
fn floats<S: Cell>(scalars: &[S]) -> Result<Floats<'_>, WriteError> {
    use std::any::TypeId;
    if TypeId::of::<S>() == TypeId::of::<f32>() {
        Ok(Floats::F32(bytemuck::cast_slice(scalars)))
    } else if TypeId::of::<S>() == TypeId::of::<f64>() {
        Ok(Floats::F64(bytemuck::cast_slice(scalars)))
    } else {
        Err(WriteError::NotFloat(std::any::type_name::<S>()))
    }
}

#[cfg(feature = "npy")]
fn write_npy(path: &Path, shape: &[usize], values: Floats<'_>) -> Result<(), WriteError> {
    match values {
        Floats::F32(v) => crate::npy::write(path, shape, v)?,
        Floats::F64(v) => crate::npy::write(path, shape, v)?,
    }
    Ok(())
}

/// Why a field cannot be written as VTK image data.
#[cfg(feature = "vtk")]
#[derive(Debug, Error)]
pub enum VtiError {
    /// VTK images have 1 to 3 dimensions.
    #[error("VTK image data holds 1- to 3-d fields, not {0}-d")]
    Dims(usize),
    /// More cells along a dimension than VTK counts.
    #[error("{0} cells is too many for VTK")]
    TooMany(usize),
    /// The file's.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// VTK image data: VTK's x runs fastest, so it is the array's last axis.
#[cfg(feature = "vtk")]
fn write_vti(
    path: &Path,
    shape: &[usize],
    components: usize,
    values: Floats<'_>,
) -> Result<(), WriteError> {
    Ok(vti(path, shape, components, values)?)
}

#[cfg(feature = "vtk")]
fn vti(
    path: &Path,
    shape: &[usize],
    components: usize,
    values: Floats<'_>,
) -> Result<(), VtiError> {
    use base64::engine::general_purpose::STANDARD;
    use base64::write::EncoderWriter;
    if shape.is_empty() || shape.len() > 3 {
        return Err(VtiError::Dims(shape.len()));
    }
    let mut last = [0usize; 3];
    for (d, &n) in shape.iter().rev().enumerate() {
        // VTK counts points in 32-bit integers.
        i32::try_from(n).map_err(|_| VtiError::TooMany(n))?;
        last[d] = n - 1;
    }
    u32::try_from(components).map_err(|_| VtiError::TooMany(components))?;
    let (kind, bytes): (&str, &[u8]) = match values {
        Floats::F32(v) => ("Float32", bytemuck::cast_slice(v)),
        Floats::F64(v) => ("Float64", bytemuck::cast_slice(v)),
    };
    let order = if cfg!(target_endian = "big") {
        "BigEndian"
    } else {
        "LittleEndian"
    };
    let extent = format!("0 {} 0 {} 0 {}", last[0], last[1], last[2]);
    let per_point = match components {
        1 => String::new(),
        n => format!(" NumberOfComponents=\"{n}\""),
    };
    let mut w = BufWriter::new(File::create(path)?);
    write!(
        w,
        "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"{order}\" \
         header_type=\"UInt64\"><ImageData WholeExtent=\"{extent}\" Origin=\"0 0 0\" \
         Spacing=\"1 1 1\"><Piece Extent=\"{extent}\"><PointData Scalars=\"field\">\
         <DataArray type=\"{kind}\" Name=\"field\"{per_point} format=\"binary\">"
    )?;
    // VTK's inline binary data: the payload's byte count (the UInt64 the
    // header names), then the payload, base64-encoded as one stream.
    {
        let mut b64 = EncoderWriter::new(&mut w, &STANDARD);
        b64.write_all(&(bytes.len() as u64).to_ne_bytes())?;
        b64.write_all(bytes)?;
        b64.finish()?;
    }
    write!(w, "</DataArray></PointData></Piece></ImageData></VTKFile>")?;
    Ok(w.flush()?)
}

/// A result that can be written without knowing its cell type: what an
/// app hands the command line.
pub trait OutputGrid {
    /// Writes it in the format `path`'s extension names.
    fn write_to(&self, path: &Path) -> Result<(), OutputError>;
}

/// A grid, and optionally the part of it that is the result (an app's user
/// domain within its boundary).
pub struct Region<T> {
    /// The whole grid.
    pub grid: ArrayD<T>,
    /// The part to write; `None` for all of it.
    pub region: Option<Shape>,
}

impl<T> Region<T> {
    /// The part to write.
    pub fn view(&self) -> ArrayViewD<'_, T> {
        match &self.region {
            None => self.grid.view(),
            Some(r) => self.grid.slice_each_axis(|ax| {
                let s = r.sig(ax.axis.index());
                ndarray::Slice::from(s.begin() as isize..s.end() as isize)
            }),
        }
    }
}

impl<T: OutputCell> OutputGrid for Region<T> {
    fn write_to(&self, path: &Path) -> Result<(), OutputError> {
        write(path, self.view())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ParaView would read: the extent (x = the last axis) and the
    /// values in order, for a scalar and a 19-component field, read back by
    /// the layout VTK's XML readers take (the one the vtkio crate, which
    /// wrote these files before, writes, less its optional value ranges).
    #[cfg(feature = "vtk")]
    #[test]
    fn vti_files_read_back_as_written() {
        use base64::Engine;
        use ndarray::IxDyn;
        let dir = tempfile::tempdir().unwrap();
        let attr = |text: &str, name: &str| -> Option<String> {
            let at = text.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(text[at..at + text[at..].find('"')?].to_string())
        };
        let read = |path: &Path| {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text.starts_with("<VTKFile type=\"ImageData\" version=\"1.0\""));
            assert!(text.ends_with("</DataArray></PointData></Piece></ImageData></VTKFile>"));
            assert_eq!(attr(&text, "header_type").unwrap(), "UInt64");
            assert_eq!(attr(&text, "type"), Some("ImageData".into()));
            assert_eq!(attr(&text, "format").unwrap(), "binary");
            let extent = attr(&text, "WholeExtent").unwrap();
            assert_eq!(attr(&text, "Extent").unwrap(), extent);
            let dims: Vec<usize> = extent
                .split(' ')
                .map(|x| x.parse::<usize>().unwrap())
                .collect::<Vec<_>>()
                .chunks(2)
                .map(|r| r[1] - r[0] + 1)
                .collect();
            let components = attr(&text, "NumberOfComponents").map_or(1, |n| n.parse().unwrap());
            let start = text.find("format=\"binary\">").unwrap() + 16;
            let end = text.find("</DataArray>").unwrap();
            let raw = base64::engine::general_purpose::STANDARD
                .decode(&text[start..end])
                .unwrap();
            let (count, payload) = raw.split_at(8);
            assert_eq!(
                u64::from_le_bytes(count.try_into().unwrap()) as usize,
                payload.len()
            );
            let v: Vec<f32> = payload
                .chunks(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect();
            assert_eq!(v.len(), dims.iter().product::<usize>() * components);
            (dims, components, v)
        };
        let grid = ArrayD::from_shape_fn(IxDyn(&[3, 4, 5]), |ix| {
            (ix[0] * 100 + ix[1] * 10 + ix[2]) as f32
        });
        let path = dir.path().join("a.vti");
        write(&path, grid.view()).unwrap();
        let (dims, components, v) = read(&path);
        assert_eq!((dims, components), (vec![5, 4, 3], 1));
        assert_eq!(v, grid.iter().copied().collect::<Vec<_>>());
        let cells = ArrayD::from_shape_fn(IxDyn(&[2, 3]), |ix| {
            let mut c = [0f32; 19];
            c[ix[1]] = (ix[0] + 1) as f32;
            c
        });
        let path = dir.path().join("b.vti");
        write(&path, cells.view()).unwrap();
        let (dims, components, v) = read(&path);
        assert_eq!((dims, components), (vec![3, 2, 1], 19));
        assert_eq!(v.len(), 6 * 19);
        assert_eq!(v[19 * 4 + 1], 2.0);
        // A 2x1 field [1, 2]: its payload, base64 of the byte count 8 and two
        // little-endian floats, encoded apart from this writer.
        let path = dir.path().join("c.vti");
        let two = ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![1.0f32, 2.0]).unwrap();
        write(&path, two.view()).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("WholeExtent=\"0 1 0 0 0 0\" Origin=\"0 0 0\" Spacing=\"1 1 1\"><Piece Extent=\"0 1 0 0 0 0\"><PointData Scalars=\"field\"><DataArray type=\"Float32\" Name=\"field\" format=\"binary\">CAAAAAAAAAAAAIA/AAAAQA==</DataArray>"));
    }

    #[test]
    fn text_format_matches_printf() {
        // printf("%042.40f\n", 0.25f) and friends.
        assert_eq!(
            epsilod_text(0.25),
            "0.2500000000000000000000000000000000000000"
        );
        assert_eq!(epsilod_text(0.25).len() + 1, 43);
        assert_eq!(
            epsilod_text((1.0f32 / 3.0) as f64),
            "0.3333333432674407958984375000000000000000"
        );
        assert_eq!(
            epsilod_text(-1.5),
            "-1.5000000000000000000000000000000000000000"
        );
        assert_eq!(
            epsilod_text(2.0),
            "2.0000000000000000000000000000000000000000"
        );
    }

    /// A format whose writer this build lacks is a typed error naming
    /// the feature, before and at the write, and no file.
    #[test]
    fn formats_without_their_feature_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let grid = ArrayD::from_elem(ndarray::IxDyn(&[2, 3]), 1.0f32);
        for (name, built) in [
            ("a.npy", cfg!(feature = "npy")),
            ("a.vti", cfg!(feature = "vtk")),
        ] {
            let path = dir.path().join(name);
            assert_eq!(check_writable(&path).is_ok(), built, "{name}");
            match write(&path, grid.view()) {
                Ok(()) => assert!(built, "{name}"),
                Err(e @ OutputError::NotBuilt(f)) => {
                    assert!(!built, "{name}");
                    assert!(!path.exists(), "{name}");
                    let feature = f.feature().unwrap();
                    assert!(
                        e.to_string().contains(&format!("'{feature}' feature")),
                        "{e}"
                    );
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
    }

    /// f64 fields read back as written (f32 ones are the command line's
    /// tests').
    #[cfg(feature = "npy")]
    #[test]
    fn npy_files_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let grid = ArrayD::from_shape_fn(ndarray::IxDyn(&[3, 4]), |ix| {
            (ix[0] * 10 + ix[1]) as f64 / 3.0
        });
        let path = dir.path().join("a.npy");
        write(&path, grid.view()).unwrap();
        assert_eq!(crate::npy::read_as_f64(&path).unwrap(), grid);
        let cells = ArrayD::from_shape_fn(ndarray::IxDyn(&[2]), |ix| [ix[0] as f32, 0.5]);
        write(&path, cells.view()).unwrap();
        let back = crate::npy::read_as_f32(&path).unwrap();
        assert_eq!(back.shape(), &[2, 2]);
        assert_eq!(
            back.iter().copied().collect::<Vec<_>>(),
            [0.0, 0.5, 1.0, 0.5]
        );
    }

    #[test]
    fn formats_from_names() {
        assert_eq!(Format::from_path(Path::new("a.npy")).unwrap(), Format::Npy);
        assert!(matches!(
            Format::from_path(Path::new("a.csv")),
            Err(OutputError::Format(_))
        ));
        assert!(matches!(
            check_writable(Path::new("/nonexistent-dir/x.txt")),
            Err(OutputError::Write { .. })
        ));
    }
}

//! EPSILOD's gaussian (apps.md §1.4, from a Muesli example): a grey-level
//! image blurred `iters` times by a kw x kw Gaussian. Each step sums the
//! weighted neighbours in f32 products but accumulates in f64, rounding to
//! f32 after every term, then truncates toward zero, exactly as
//! gaussian_kernels.c; the same arithmetic is the device body, so every
//! device gives the same bits.
//!
//! The array is the image with a border of `kw / 2` zeros each side, a
//! boundary never written. The weights are computed once on the host (its
//! `expf`) and handed to devices as a table. Decisions on the original's
//! quirks (apps.md §5): PGM input is read as the format defines it (any
//! white space, bytes as unsigned pixels, two-byte pixels too, where
//! EPSILOD wanted one value a line and read bytes as signed); the kernel
//! stays centred half a pixel off for odd kw (`mean = kw / 2` as a float,
//! Muesli's); `(float)(int)sum` is written `trunc(sum) + 0`, its value
//! wherever the C is defined (|sum| < 2^31) and defined everywhere. A
//! `.pgm` result is the original's file byte for byte ([`Blurred`]).

use crate::{App, AppError, AppOutcome, Param, ParamError, Params};
use epsilod::error::SetupError;
use epsilod::output::{self, Format, OutputError, OutputGrid, Region};
use epsilod::{
    for_each_row, CellDecl, Cluster, DeviceKernel, DeviceScalar, Footprint, Frame, Kernel,
    RunError, RunOptions, Shape, Skeleton, Stencil, Table,
};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// The original's kernel width (Muesli's example).
pub const KW: usize = 5;
/// The original's sigma.
pub const SIGMA: f32 = 1.0;
/// Kernel widths taken: 2 upwards (a border of at least one cell), up to
/// a 31x31 kernel.
pub const KW_RANGE: std::ops::RangeInclusive<usize> = 2..=31;

/// The border each side: `kw / 2`.
pub fn radius(kw: usize) -> usize {
    kw / 2
}

/// The kw x kw weights, row-major: `expf(-0.5 (dr^2 + dc^2))` with
/// `dr = (r - kw/2) / sigma` in f32 (kw/2 as a float: 2.5 for kw 5).
pub fn weights(kw: usize, sigma: f32) -> Vec<f32> {
    let mean = kw as f32 / 2.0;
    let d = |i: usize| (i as f32 - mean) / sigma;
    let mut w = Vec::with_capacity(kw * kw);
    for r in 0..kw {
        for c in 0..kw {
            let (dr, dc) = (d(r), d(c));
            // `exp` of a run-time value: glibc's expf, as EPSILOD's host.
            w.push((-0.5f32 * (dr * dr + dc * dc)).exp());
        }
    }
    w
}

/// The divisor, `2*M_PI*sigma*sigma` in double as the C computes it.
pub fn norm(sigma: f32) -> f64 {
    ((2.0 * std::f64::consts::PI) * f64::from(sigma)) * f64::from(sigma)
}

/// The global array for a `rows x cols` image: the image and its border.
pub fn global_size(rows: usize, cols: usize, kw: usize) -> [usize; 2] {
    let r = radius(kw);
    // Saturating: an image near usize::MAX is refused as too large by the
    // skeleton, not wrapped round into a small one.
    [rows.saturating_add(2 * r), cols.saturating_add(2 * r)]
}

/// Where the image lies in the global array (the output).
pub fn image_region(rows: usize, cols: usize, kw: usize) -> Shape {
    let r = radius(kw) as i64;
    Shape::from_ranges(&[(r, r + rows as i64), (r, r + cols as i64)])
}

/// The offsets one step reads: rows and columns `-kw/2 .. kw - 1 - kw/2`.
pub fn offsets(kw: usize) -> Vec<[i64; 2]> {
    let off = radius(kw) as i64;
    (0..kw as i64)
        .flat_map(|a| (0..kw as i64).map(move |b| [a - off, b - off]))
        .collect()
}

/// Cells a row is computed in at a time: their running sums stay in L1.
const BLOCK: usize = 256;

/// One step over a row, in the original's order for every cell: `rows[a]`
/// is image row `a - kw/2` from the output's, starting `kw/2` columns to its
/// left and `kw - 1` longer. Each term is added to a block of cells at a
/// time, so the divisions of neighbouring cells run side by side in vector
/// lanes; each cell's sum still takes its terms one by one.
#[inline(never)]
fn row(out: &mut [f32], rows: &[&[f32]], kw: usize, w: &[f32], norm: f64) {
    for (k, o) in out.chunks_mut(BLOCK).enumerate() {
        let mut sum = [0.0f32; BLOCK];
        let sum = &mut sum[..o.len()];
        for (a, r) in rows.iter().enumerate() {
            let r = &r[k * BLOCK..];
            for (b, &wt) in w[a * kw..(a + 1) * kw].iter().enumerate() {
                for (s, &x) in sum.iter_mut().zip(&r[b..b + o.len()]) {
                    let p = x * wt;
                    *s = (f64::from(*s) + f64::from(p) / norm) as f32;
                }
            }
        }
        for (o, s) in o.iter_mut().zip(sum.iter()) {
            *o = s.trunc() + 0.0;
        }
    }
}

/// The blur as a CPU kernel over whole rows (see [`row`]), and as device
/// code ([`device_kernel`]).
struct Blur {
    footprint: Footprint,
    kw: usize,
    w: Vec<f32>,
    norm: f64,
    device: DeviceKernel,
}

impl Kernel<f32> for Blur {
    fn name(&self) -> &str {
        "gaussian"
    }

    fn footprint(&self) -> &Footprint {
        &self.footprint
    }

    fn device_kernel(&self) -> Option<DeviceKernel> {
        Some(self.device.clone())
    }

    fn apply(&self, src: &[f32], dst: &mut [f32], frame: &Frame, region: &[Range<usize>]) {
        let (kw, r) = (self.kw, radius(self.kw));
        let stride = frame.strides()[0];
        let mut rows: Vec<&[f32]> = Vec::with_capacity(kw);
        for_each_row(frame, region, |s, d, len| {
            rows.clear();
            // Row `a - r`, from column `-r`: the footprint's reads.
            for a in 0..kw {
                let start = s + a * stride - r * stride - r;
                rows.push(&src[start..start + len + kw - 1]);
            }
            row(&mut dst[d..d + len], &rows, kw, &self.w, self.norm);
        });
    }
}

/// The step as device code, operation for operation as [`row`] for each cell.
#[allow(unsafe_code)]
pub fn device_kernel(kw: usize, sigma: f32) -> DeviceKernel {
    let body = format!(
        r#"    float sum = 0.0f;
    for (int a = 0; a < {kw}; a++) {{
        for (int b = 0; b < {kw}; b++) {{
            const float p = src[c + (index_t)(a - {off}) * s2 + (index_t)(b - {off}) * s3] * W[a * {kw} + b];
            sum = (float)((double)sum + (double)p / {norm});
        }}
    }}
    dst[c] = trunc(sum) + 0.0f;
"#,
        off = radius(kw),
        norm = norm(sigma).literal(),
    );
    // SAFETY: the body reads `src` at `c` plus (a - off, b - off) for a, b
    // in 0..kw on dimensions 0 and 1 (s2, s3 for a 2-d grid), which is
    // exactly `offsets(kw)`, the kernel's footprint, and writes only
    // `dst[c]`; `cell` is one float like the Rust cell.
    unsafe { DeviceKernel::new(CellDecl::scalar::<f32>(), body) }
        .with_table(Table::reals("W", &weights(kw, sigma)))
        .with_fp64()
}

/// The blur as a skeleton stencil: halos of `kw / 2` each side.
pub fn stencil(kw: usize, sigma: f32) -> Stencil<f32> {
    let kernel = Blur {
        footprint: Footprint::new(2, offsets(kw).iter().map(|o| o.to_vec()).collect()),
        kw,
        w: weights(kw, sigma),
        norm: norm(sigma),
        device: device_kernel(kw, sigma),
    };
    let r = radius(kw);
    Stencil::custom(Arc::new(kernel), vec![r; 2], vec![r; 2])
}

/// The initial array: `pixels` (`rows x cols`) inside a border of zeros.
pub fn init(
    pixels: Vec<f32>,
    rows: usize,
    cols: usize,
    kw: usize,
) -> impl Fn(&[i64]) -> f32 + Send + Sync + 'static {
    assert_eq!(pixels.len(), rows * cols, "a rows x cols image");
    let r = radius(kw) as i64;
    move |g: &[i64]| {
        let (i, j) = (g[0] - r, g[1] - r);
        if (0..rows as i64).contains(&i) && (0..cols as i64).contains(&j) {
            pixels[i as usize * cols + j as usize]
        } else {
            0.0
        }
    }
}

/// The image a run without `--input` blurs: a checkerboard of 16-pixel
/// squares, 0 and 255.
pub fn test_image(rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|k| {
            let (i, j) = (k / cols, k % cols);
            if (i / 16 + j / 16) % 2 == 0 {
                255.0
            } else {
                0.0
            }
        })
        .collect()
}

/// What is wrong with an input image (the caller names the file).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file could not be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// A `.pgm` file that is not a PGM image.
    #[error("not a PGM image: {0}")]
    NotPgm(#[source] epsilod::pgm::PgmSyntax),
    /// A `.npy` file that cannot be read as numbers.
    #[error(transparent)]
    Npy(#[from] epsilod::npy::NpyError),
    /// An array that is not a 2-d image with pixels.
    #[error("an image is a 2-d array with pixels, this one has shape {0:?}")]
    NotTwoD(Vec<usize>),
    /// Neither `.pgm` nor `.npy`.
    #[error("give an image as .pgm or .npy")]
    Extension,
    /// An image of another size than the run's.
    #[error("the image is {rows}x{cols}, the run is for {run_rows}x{run_cols}")]
    Size {
        /// The image's rows.
        rows: usize,
        /// The image's columns.
        cols: usize,
        /// The run's rows.
        run_rows: usize,
        /// The run's columns.
        run_cols: usize,
    },
}

/// An image file: a PGM, or a 2-d `.npy` array of f32 or f64 (rounded to
/// f32). Rows, columns and the pixels, row-major; errors say what is
/// wrong with the file (the caller names it).
pub fn load(path: &Path) -> Result<(usize, usize, Vec<f32>), ImageError> {
    load_image(path).map(|i| (i.rows, i.cols, i.pixels))
}

/// An image file's rows and columns, from its header alone: a run checks
/// the memory it needs before the pixels are read.
pub fn image_size(path: &Path) -> Result<(usize, usize), ImageError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("pgm") => {
            let h = epsilod::pgm::read_header(path).map_err(pgm_error)?;
            Ok((h.rows, h.cols))
        }
        Some("npy") => match *epsilod::npy::shape(path)? {
            [r, c] if r > 0 && c > 0 => Ok((r, c)),
            ref s => Err(ImageError::NotTwoD(s.to_vec())),
        },
        _ => Err(ImageError::Extension),
    }
}

fn pgm_error(e: epsilod::pgm::PgmError) -> ImageError {
    match e {
        epsilod::pgm::PgmError::Io { why, .. } => ImageError::Read(why),
        epsilod::pgm::PgmError::Format { why, .. } => ImageError::NotPgm(why),
    }
}

/// An input image and the maximum grey value its result is written with.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    /// Rows (the PGM height).
    pub rows: usize,
    /// Columns (the PGM width).
    pub cols: usize,
    /// The pixels, row-major.
    pub pixels: Vec<f32>,
    /// A PGM's maximum grey value; [`DEFAULT_MAXVAL`] for an array.
    pub maxval: u16,
}

/// The maximum grey value of a result whose input was no PGM (an array or
/// the test image): 8-bit grey, the only PGM EPSILOD reads.
pub const DEFAULT_MAXVAL: u16 = 255;

/// [`load`], with the PGM's maximum grey value.
pub fn load_image(path: &Path) -> Result<Image, ImageError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("pgm") => {
            let img = epsilod::pgm::read(path).map_err(pgm_error)?;
            Ok(Image {
                rows: img.rows,
                cols: img.cols,
                pixels: img.pixels.iter().map(|&p| f32::from(p)).collect(),
                maxval: img.maxval,
            })
        }
        Some("npy") => {
            let a = epsilod::npy::read_as_f32(path)?;
            let (rows, cols) = match *a.shape() {
                [r, c] if r > 0 && c > 0 => (r, c),
                ref s => return Err(ImageError::NotTwoD(s.to_vec())),
            };
            Ok(Image {
                rows,
                cols,
                pixels: a.iter().copied().collect(),
                maxval: DEFAULT_MAXVAL,
            })
        }
        _ => Err(ImageError::Extension),
    }
}

/// The blurred image of a run's grid: a `.pgm` is written as EPSILOD
/// writes gaussian's result ([`output::write_epsilod_pgm`]: `%03.0f`, the
/// input's maximum grey value, nothing clamped); other formats as every
/// app's result.
pub struct Blurred {
    /// The grid and the image within it.
    pub image: Region<f32>,
    /// The maximum grey value of the `.pgm` header.
    pub maxval: u16,
}

impl OutputGrid for Blurred {
    fn write_to(&self, path: &Path) -> Result<(), OutputError> {
        match Format::from_path(path)? {
            Format::Pgm => output::write_epsilod_pgm(path, self.image.view(), self.maxval),
            _ => self.image.write_to(path),
        }
    }
}

/// `epsilod run gaussian [--input image.pgm | --size ROWSxCOLS]`.
pub struct Gaussian;

impl Gaussian {
    fn kw(params: &Params) -> Result<usize, ParamError> {
        Ok(params.get("kw")? as usize)
    }
    fn sigma(params: &Params) -> Result<f32, ParamError> {
        Ok(params.get("sigma")? as f32)
    }
}

impl App for Gaussian {
    fn name(&self) -> &'static str {
        "gaussian"
    }
    fn about(&self) -> &'static str {
        "2-d  repeated Gaussian blur of a grey-level image (EPSILOD's); --size is the image (rows x cols), or --input image.pgm|.npy; without --input, a checkerboard"
    }
    fn ndims(&self) -> usize {
        2
    }
    fn check_size(&self, _size: &[usize]) -> Result<(), AppError> {
        // Any image of at least one pixel: the border is added to it.
        Ok(())
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "kw",
                default: Some(KW as f64),
                about: "kernel width, a whole number 2 to 31",
            },
            Param {
                name: "sigma",
                default: Some(SIGMA as f64),
                about: "the Gaussian's standard deviation in pixels, > 0",
            },
        ]
    }
    fn check_params(&self, params: &Params) -> Result<(), ParamError> {
        let kw = params.get("kw")?;
        if kw.fract() != 0.0 || !KW_RANGE.contains(&(kw as usize)) || kw < 0.0 {
            return Err(ParamError::OutOfRange {
                name: "kw",
                value: kw.to_string(),
                want: "the kernel width is a whole number 2 to 31",
            });
        }
        let sigma = Gaussian::sigma(params)?;
        if !(sigma > 0.0 && sigma.is_finite()) {
            // As an f32: 1e300 is infinite there and 1e-300 is 0.
            return Err(ParamError::OutOfRange {
                name: "sigma",
                value: crate::shown(params.get("sigma")?),
                want: "sigma must be a number above 0 that an f32 holds (1.2e-38 to 3.4e38)",
            });
        }
        Ok(())
    }
    fn input(&self) -> Option<&'static str> {
        Some("the image to blur, .pgm (P2 or P5) or a 2-d .npy array")
    }
    fn size_of_input(&self, input: &Path) -> Result<Vec<usize>, AppError> {
        let (rows, cols) =
            image_size(input).map_err(|why| AppError::Input { why: Box::new(why) })?;
        Ok(vec![rows, cols])
    }
    fn run(
        &self,
        size: &[usize],
        params: &Params,
        options: &RunOptions,
        cluster: &Cluster,
    ) -> Result<AppOutcome, AppError> {
        let (kw, sigma) = (Gaussian::kw(params)?, Gaussian::sigma(params)?);
        let (rows, cols) = (size[0], size[1]);
        let skeleton =
            Skeleton::new(&global_size(rows, cols, kw), stencil(kw, sigma)).options(options);
        // The image is as large as the grid: a run too large for memory is
        // refused before it is built, as the run would refuse it.
        skeleton.check_memory_in(cluster)?;
        let (pixels, maxval) = match params.input() {
            None => (test_image(rows, cols), DEFAULT_MAXVAL),
            Some(path) => {
                let input = |why: ImageError| {
                    RunError::Setup(SetupError::Input {
                        path: path.display().to_string(),
                        why: Box::new(why),
                    })
                };
                let img = load_image(path).map_err(input)?;
                if (img.rows, img.cols) != (rows, cols) {
                    return Err(input(ImageError::Size {
                        rows: img.rows,
                        cols: img.cols,
                        run_rows: rows,
                        run_cols: cols,
                    })
                    .into());
                }
                (img.pixels, img.maxval)
            }
        };
        let skeleton = skeleton.init(init(pixels, rows, cols, kw));
        let region = Some(image_region(rows, cols, kw));
        crate::run_with(skeleton, options, cluster, |grid| {
            Box::new(Blurred {
                image: Region { grid, region },
                maxval,
            }) as Box<dyn OutputGrid>
        })
    }
}

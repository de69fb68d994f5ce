//! PNG and GIF files of pictures plotters drew into memory (8-bit RGB,
//! row by row): the png and gif crates encode them, where plotters' own
//! file output would bring the whole `image` crate for these two formats.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Bytes of an RGB picture of `(width, height)` pixels.
pub fn rgb_bytes((width, height): (u32, u32)) -> usize {
    width as usize * height as usize * 3
}

/// Writes one RGB picture as a PNG file, whole or not at all (through a
/// `.partial` file); the error is its cause, e.g. "No space left on device".
pub fn write_png(out: &Path, size: (u32, u32), rgb: &[u8]) -> Result<(), String> {
    epsilod::output::write_whole(out, |p| png_file(p, size, rgb)).map_err(|e| e.to_string())
}

fn png_file(out: &Path, (width, height): (u32, u32), rgb: &[u8]) -> std::io::Result<()> {
    // The encoder's own I/O error as it is (its cause, not a wrapper).
    fn io(e: png::EncodingError) -> std::io::Error {
        match e {
            png::EncodingError::IoError(e) => e,
            e => std::io::Error::other(e),
        }
    }
    let mut file = BufWriter::new(File::create(out)?);
    let mut encoder = png::Encoder::new(&mut file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Fast deflate with each row's best filter: plots' flat colours shrink
    // tenfold at little cost (what plotters' encoder chose).
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header().map_err(io)?;
    writer.write_image_data(rgb).map_err(io)?;
    writer.finish().map_err(io)?;
    flushed(file)
}

/// An animated GIF written a frame at a time, looping forever, into a
/// `.partial` file renamed to its name by [`Gif::finish`] (a run that
/// fails halfway leaves no GIF short of frames).
pub struct Gif {
    /// Taken by [`Gif::finish`].
    encoder: Option<gif::Encoder<BufWriter<File>>>,
    out: std::path::PathBuf,
    partial: std::path::PathBuf,
    size: (u16, u16),
    /// Between frames, in hundredths of a second (GIF's unit).
    delay: u16,
}

impl Gif {
    /// Starts `out`, its frames `size` pixels shown `delay_ms` each.
    pub fn create(out: &Path, (width, height): (u32, u32), delay_ms: u32) -> Result<Self, String> {
        let too_wide = |_| format!("a GIF is at most 65535 pixels a side, not {width}x{height}");
        let size = (
            u16::try_from(width).map_err(too_wide)?,
            u16::try_from(height).map_err(too_wide)?,
        );
        // As `write_whole`: a device or pipe is written as it is.
        let direct = std::fs::symlink_metadata(out).is_ok_and(|m| !m.file_type().is_file());
        let partial = if direct {
            out.to_path_buf()
        } else {
            epsilod::output::partial_path(out)
        };
        let file = File::create(&partial).map_err(|e| e.to_string())?;
        let mut encoder = gif::Encoder::new(BufWriter::new(file), size.0, size.1, &[])
            .map_err(|e| e.to_string())?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| e.to_string())?;
        let delay = u16::try_from(delay_ms.saturating_add(5) / 10).unwrap_or(u16::MAX);
        Ok(Gif {
            encoder: Some(encoder),
            out: out.to_path_buf(),
            partial,
            size,
            delay,
        })
    }

    /// Adds one RGB picture of the GIF's size (its colours reduced to 256).
    pub fn frame(&mut self, rgb: &[u8]) -> Result<(), String> {
        let mut frame = gif::Frame::from_rgb_speed(self.size.0, self.size.1, rgb, 10);
        frame.delay = self.delay;
        match self.encoder.as_mut() {
            Some(encoder) => encoder.write_frame(&frame).map_err(|e| e.to_string()),
            None => Err("the GIF is already finished".into()),
        }
    }

    /// Ends the file, its last bytes written, under its own name.
    pub fn finish(mut self) -> Result<(), String> {
        let encoder = self.encoder.take().ok_or("the GIF is already finished")?;
        let file = encoder.into_inner().map_err(|e| e.to_string())?;
        flushed(file).map_err(|e| e.to_string())?;
        if self.partial != self.out {
            std::fs::rename(&self.partial, &self.out).map_err(|e| e.to_string())?;
        }
        // Renamed: nothing for `drop` to remove.
        self.out = std::path::PathBuf::new();
        Ok(())
    }
}

impl Drop for Gif {
    /// A GIF not finished (an error on the way) leaves no file behind.
    fn drop(&mut self) {
        if !self.out.as_os_str().is_empty() && self.partial != self.out {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

fn flushed(out: BufWriter<File>) -> std::io::Result<()> {
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

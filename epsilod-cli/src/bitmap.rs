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

/// Writes one RGB picture as a PNG file; the error is its cause, e.g.
/// "No space left on device".
pub fn write_png(out: &Path, (width, height): (u32, u32), rgb: &[u8]) -> Result<(), String> {
    let mut file = BufWriter::new(File::create(out).map_err(|e| e.to_string())?);
    let mut encoder = png::Encoder::new(&mut file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // Fast deflate with each row's best filter: plots' flat colours shrink
    // tenfold at little cost (what plotters' encoder chose).
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    flushed(file)
}

/// An animated GIF written a frame at a time, looping forever.
pub struct Gif {
    encoder: gif::Encoder<BufWriter<File>>,
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
        let file = File::create(out).map_err(|e| e.to_string())?;
        let mut encoder = gif::Encoder::new(BufWriter::new(file), size.0, size.1, &[])
            .map_err(|e| e.to_string())?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| e.to_string())?;
        let delay = u16::try_from(delay_ms.saturating_add(5) / 10).unwrap_or(u16::MAX);
        Ok(Gif {
            encoder,
            size,
            delay,
        })
    }

    /// Adds one RGB picture of the GIF's size (its colours reduced to 256).
    pub fn frame(&mut self, rgb: &[u8]) -> Result<(), String> {
        let mut frame = gif::Frame::from_rgb_speed(self.size.0, self.size.1, rgb, 10);
        frame.delay = self.delay;
        self.encoder.write_frame(&frame).map_err(|e| e.to_string())
    }

    /// Ends the file, its last bytes written.
    pub fn finish(self) -> Result<(), String> {
        let out = self.encoder.into_inner().map_err(|e| e.to_string())?;
        flushed(out)
    }
}

fn flushed(out: BufWriter<File>) -> Result<(), String> {
    let file = out.into_inner().map_err(|e| e.error().to_string())?;
    file.sync_all().map_err(|e| e.to_string())
}

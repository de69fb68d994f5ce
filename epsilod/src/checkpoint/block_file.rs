//! Writing a checkpoint's block file: checksummed while it is written, with
//! direct I/O where the file system allows it.
//!
//! Why direct I/O: a buffered write spends CPU in the kernel's copy into
//! the page cache (onto fresh pages each time), on a core the stencil
//! wants, and write-back reads the pages once more (docs/benchmarks.md,
//! "Checkpoints");
//! `O_DIRECT` lets the disk take the bytes from the process's own buffer.
//! Direct I/O asks for aligned buffers, file offsets and lengths, so the
//! block goes through one small aligned buffer, where its checksum is taken
//! while each piece is still in cache; the last piece is padded and the
//! file cut back to its length. A file system that refuses direct I/O
//! (`EINVAL`) gets the plain buffered write.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Bytes per write: a piece stays in cache from its copy to its checksum
/// and its write.
const PIECE: usize = 1 << 20;
/// What direct I/O asks of buffer addresses, file offsets and lengths: a
/// page, at least the logical block size of any disk.
#[cfg(target_os = "linux")]
const ALIGN: usize = 4096;

/// Writes the concatenation of `parts` into a new file at `path` and syncs
/// it; returns its CRC-32.
pub(super) fn write(path: &Path, parts: &[&[u8]]) -> io::Result<u32> {
    #[cfg(target_os = "linux")]
    match write_direct(path, parts) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            tracing::debug!(
                "{}: direct I/O refused ({e}); writing through the page cache",
                path.display()
            );
        }
        written => return written,
    }
    write_buffered(path, parts)
}

/// [`write`] with `O_DIRECT`; `EINVAL` where the file system refuses it.
#[cfg(target_os = "linux")]
fn write_direct(path: &Path, parts: &[&[u8]]) -> io::Result<u32> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut storage = vec![0u8; PIECE + ALIGN];
    let off = storage.as_ptr().align_offset(ALIGN);
    if off >= ALIGN {
        // align_offset may decline to answer; then no direct I/O.
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let piece = &mut storage[off..off + PIECE];
    let mut hasher = crc32fast::Hasher::new();
    let (mut filled, mut total) = (0, 0u64);
    for part in parts {
        let mut rest = *part;
        // Straight from the caller's memory while it and the file offset
        // are aligned (see `align_start`): no copy at all.
        while filled == 0 && rest.len() >= ALIGN && rest.as_ptr().align_offset(ALIGN) == 0 {
            let n = (rest.len() - rest.len() % ALIGN).min(PIECE);
            hasher.update(&rest[..n]);
            f.write_all(&rest[..n])?;
            (rest, total) = (&rest[n..], total + n as u64);
        }
        while !rest.is_empty() {
            let n = rest.len().min(PIECE - filled);
            piece[filled..filled + n].copy_from_slice(&rest[..n]);
            (filled, rest) = (filled + n, &rest[n..]);
            if filled == PIECE {
                hasher.update(piece);
                f.write_all(piece)?;
                (filled, total) = (0, total + PIECE as u64);
            }
        }
    }
    if filled > 0 {
        hasher.update(&piece[..filled]);
        let padded = filled.next_multiple_of(ALIGN);
        piece[filled..padded].fill(0);
        f.write_all(&piece[..padded])?;
        f.set_len(total + filled as u64)?;
    }
    f.sync_all()?;
    Ok(hasher.finalize())
}

/// Empties `v` and fills it with zeroed cells up to the first address a
/// block file may be written from without a copy, with room for `cells`
/// more; returns how many. Appending a block after them lets [`write`]
/// hand it to the disk straight from `v` (none where `T`'s size does not
/// divide the alignment: that block goes through the writer's buffer).
pub(crate) fn align_start<T: bytemuck::Pod>(v: &mut Vec<T>, cells: usize) -> usize {
    v.clear();
    #[cfg(target_os = "linux")]
    {
        let size = std::mem::size_of::<T>();
        if size > 0 && ALIGN.is_multiple_of(size) {
            v.reserve(cells + ALIGN / size);
            let pad = v.as_ptr().align_offset(ALIGN);
            if pad < ALIGN / size {
                v.resize(pad, T::zeroed());
                return pad;
            }
        }
    }
    v.reserve(cells);
    0
}

/// Snapshot buffers for `levels` blocks of `cells` cells, their pages
/// already touched: a fresh buffer's page faults would fall on the first
/// checkpoint inside the loop; setup pays them once instead.
/// [`align_start`] then finds the same start and room.
pub(crate) fn prefaulted<T: bytemuck::Pod>(levels: usize, cells: usize) -> Vec<Vec<T>> {
    (0..levels)
        .map(|_| {
            let mut v = Vec::new();
            let pad = align_start(&mut v, cells);
            v.resize(pad + cells, T::zeroed());
            v.truncate(pad);
            v
        })
        .collect()
}

/// [`write`] through the page cache.
fn write_buffered(path: &Path, parts: &[&[u8]]) -> io::Result<u32> {
    let mut f = File::create(path)?;
    let mut hasher = crc32fast::Hasher::new();
    for part in parts {
        // In pieces: one huge write was much slower than 1 MiB ones on an
        // overlay file system.
        for piece in part.chunks(PIECE) {
            hasher.update(piece);
            f.write_all(piece)?;
        }
    }
    f.sync_all()?;
    Ok(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts whose lengths cross every boundary the writer cares about.
    fn cases() -> Vec<Vec<Vec<u8>>> {
        let bytes = |n: usize, seed: u8| -> Vec<u8> {
            (0..n)
                .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
                .collect()
        };
        vec![
            vec![],
            vec![bytes(0, 1)],
            vec![bytes(1, 2)],
            vec![bytes(4095, 3)],
            vec![bytes(4096, 4)],
            vec![bytes(PIECE, 5)],
            vec![bytes(PIECE + 7, 6), bytes(3 * PIECE - 5, 7)],
            vec![bytes(1000, 8), bytes(0, 9), bytes(2 * PIECE, 10)],
        ]
    }

    fn check(writer: fn(&Path, &[&[u8]]) -> io::Result<u32>, name: &str) {
        let dir = tempfile::tempdir().unwrap();
        for (i, parts) in cases().iter().enumerate() {
            let path = dir.path().join(format!("{name}-{i}"));
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let whole = parts.concat();
            match writer(&path, &refs) {
                Ok(crc) => {
                    assert_eq!(std::fs::read(&path).unwrap(), whole, "{name} case {i}");
                    assert_eq!(crc, crc32fast::hash(&whole), "{name} case {i}");
                }
                #[cfg(target_os = "linux")]
                Err(e) if name == "direct" && e.raw_os_error() == Some(libc::EINVAL) => {
                    eprintln!("direct I/O refused by the temporary directory's file system: checked by `write` only");
                    return;
                }
                Err(e) => panic!("{name} case {i}: {e}"),
            }
        }
    }

    #[test]
    fn every_way_of_writing_gives_the_bytes_and_their_checksum() {
        check(write, "write");
        check(write_buffered, "buffered");
        #[cfg(target_os = "linux")]
        check(write_direct, "direct");
    }

    #[test]
    fn aligned_parts_are_written_from_where_they_lie() {
        let dir = tempfile::tempdir().unwrap();
        for (i, n) in [0, 5, 1024, 3 * 262_144 + 17].into_iter().enumerate() {
            let mut a: Vec<f32> = Vec::new();
            let pad = align_start(&mut a, n);
            a.extend((0..n).map(|k| k as f32 * 0.5));
            let mut b: Vec<u64> = Vec::new();
            let pad_b = align_start(&mut b, 7);
            b.extend(0..7u64);
            let parts: [&[u8]; 2] = [
                bytemuck::cast_slice(&a[pad..]),
                bytemuck::cast_slice(&b[pad_b..]),
            ];
            #[cfg(target_os = "linux")]
            assert_eq!(parts[0].as_ptr().align_offset(ALIGN), 0);
            let path = dir.path().join(format!("aligned-{i}"));
            let crc = write(&path, &parts).unwrap();
            let whole = parts.concat();
            assert_eq!(std::fs::read(&path).unwrap(), whole);
            assert_eq!(crc, crc32fast::hash(&whole));
        }
    }

    /// The buffers setup touches are the ones a checkpoint fills: same
    /// memory, room enough, aligned for direct I/O where that applies.
    #[test]
    fn prefaulted_buffers_are_filled_where_they_lie() {
        for n in [0usize, 3, 1024, 262_144 + 5] {
            for mut v in prefaulted::<f64>(2, n) {
                let (at, room) = (v.as_ptr(), v.capacity());
                assert!(room >= v.len() + n, "{n} cells");
                let pad = align_start(&mut v, n);
                v.extend((0..n).map(|k| k as f64));
                assert_eq!(v.as_ptr(), at, "{n} cells: reallocated");
                assert_eq!(v.capacity(), room);
                #[cfg(target_os = "linux")]
                assert_eq!(v[pad..].as_ptr().align_offset(ALIGN), 0);
                let _ = pad;
            }
        }
    }

    #[test]
    fn a_rewrite_replaces_a_longer_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("block");
        write(&path, &[&[7u8; 3 * PIECE]]).unwrap();
        write(&path, &[&[1u8; 10]]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![1u8; 10]);
    }
}

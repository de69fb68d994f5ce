//! CUDA device memory: byte buffers, and copies between them and host memory or each other.

use crate::error::{backend, BackendError, DeviceError};
use crate::gpu::staging::{stage, Stage};
use crate::gpu::CopyPiece;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, PinnedHostSlice};
use std::sync::Arc;

/// A device allocation of bytes.
pub struct CudaBuffer {
    /// Owns the allocation (freed on drop).
    slice: CudaSlice<u8>,
    /// Its device address: the raw copies and launches take it directly.
    pub(super) ptr: sys::CUdeviceptr,
}

impl CudaBuffer {
    /// `bytes` bytes (possibly 0) on `stream`, contents unspecified.
    pub(super) fn new(stream: &Arc<CudaStream>, bytes: usize) -> Result<CudaBuffer, DeviceError> {
        // The driver rejects empty allocations.
        // SAFETY: the contents are unspecified, as the trait allows; `u8`
        // has no invalid bit patterns.
        let slice = unsafe { stream.alloc::<u8>(bytes.max(1)) }.map_err(backend("CUDA"))?;
        let ptr = slice.device_ptr(stream).0;
        Ok(CudaBuffer { slice, ptr })
    }
}

/// Copies between a device's buffers and host memory, on its main stream,
/// through its page-locked staging buffer where [`stage`] says so.
pub(super) struct HostCopies {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Page-locked host memory halos and small moves are staged in.
    pinned: Option<PinnedHostSlice<u8>>,
}

impl HostCopies {
    /// Copies on `stream` of a device of `ctx`, nothing staged yet.
    pub(super) fn new(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> HostCopies {
        HostCopies {
            ctx,
            stream,
            pinned: None,
        }
    }

    /// One 2-D copy per slice of `piece` (a `Run` is one row), between the
    /// device allocation at `dev` and packed host memory at `host` (staged
    /// in the pinned buffer where [`stage`] says); `to_device` chooses the
    /// direction. Then waits for the stream, as the trait wants the
    /// host memory complete on return.
    ///
    /// # Safety
    ///
    /// `host` must point to `piece.bytes()` bytes, writable when reading from
    /// the device, and `piece` must lie inside the allocation at `dev`.
    pub(super) unsafe fn copy(
        &mut self,
        dev: sys::CUdeviceptr,
        piece: &CopyPiece,
        host: *mut u8,
        to_device: bool,
    ) -> Result<(), DeviceError> {
        // A 3-D copy would be one command, but cuMemcpy3D's descriptor has
        // fields (array, height in rows) that 2-D copies per slice avoid, at
        // the cost of one command per slice of the (few-slice) halo regions.
        let (origin, size, row_pitch, slice_pitch) = match *piece {
            CopyPiece::Rect(r) => (r.origin, r.size, r.row_pitch, r.slice_pitch),
            CopyPiece::Run { offset, bytes } => ([offset, 0, 0], [bytes, 1, 1], bytes, bytes),
        };
        if size.contains(&0) {
            return Ok(());
        }
        let bytes = piece.bytes();
        let user = host;
        // Pieces up to STAGING_BYTES (halos, small moves) go through the
        // device's pinned buffer: the driver copies pageable memory in
        // pieces it stages itself, synchronously.
        let staged = match self.staging(bytes)? {
            Some(pinned) => {
                if to_device {
                    // SAFETY: `user` holds `bytes` bytes (the caller's
                    // guarantee) and the staging buffer at least as many;
                    // they are distinct allocations.
                    unsafe { std::ptr::copy_nonoverlapping(user, pinned, bytes) };
                }
                Some(pinned)
            }
            None => None,
        };
        let host = staged.unwrap_or(user);
        let host_slice = size[0] * size[1];
        for z in 0..size[2] {
            let dev_base = dev + ((origin[2] + z) * slice_pitch) as u64;
            // SAFETY: `host` holds the piece packed, `size[2]` slices of
            // `host_slice` bytes, so the offset stays inside it.
            let host_base = unsafe { host.add(z * host_slice) };
            let (mem_dev, mem_host) = (
                sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            );
            let desc = sys::CUDA_MEMCPY2D {
                srcXInBytes: if to_device { 0 } else { origin[0] },
                srcY: if to_device { 0 } else { origin[1] },
                srcMemoryType: if to_device { mem_host } else { mem_dev },
                srcHost: host_base as *const _,
                srcDevice: dev_base,
                srcArray: std::ptr::null_mut(),
                srcPitch: if to_device { size[0] } else { row_pitch },
                dstXInBytes: if to_device { origin[0] } else { 0 },
                dstY: if to_device { origin[1] } else { 0 },
                dstMemoryType: if to_device { mem_dev } else { mem_host },
                dstHost: host_base as *mut _,
                dstDevice: dev_base,
                dstArray: std::ptr::null_mut(),
                dstPitch: if to_device { row_pitch } else { size[0] },
                WidthInBytes: size[0],
                Height: size[1],
            };
            // SAFETY: the caller guarantees the device rectangle lies in the
            // allocation and the host one in `host`; the descriptor names only
            // those (the unused array handles are null, as the driver wants
            // for host and device memory types); the stream is synchronised
            // below before `host` can go.
            let r = unsafe { sys::cuMemcpy2DAsync_v2(&desc, self.stream.cu_stream()) };
            r.result().map_err(backend("CUDA"))?;
        }
        self.stream.synchronize().map_err(backend("CUDA"))?;
        if let (Some(pinned), false) = (staged, to_device) {
            // SAFETY: as above, the other way; the copy into the staging
            // buffer completed with the stream.
            unsafe { std::ptr::copy_nonoverlapping(pinned, user, bytes) };
        }
        Ok(())
    }

    /// The pinned staging buffer, grown to hold `bytes`, or `None` for a
    /// piece larger than [`STAGING_BYTES`](crate::gpu::staging::STAGING_BYTES).
    fn staging(&mut self, bytes: usize) -> Result<Option<*mut u8>, DeviceError> {
        match stage(bytes, self.pinned.as_ref().map(|p| p.len())) {
            Stage::Direct => return Ok(None),
            Stage::Held => {}
            Stage::Grow(len) => {
                // SAFETY: the contents are unspecified until written, and every
                // use writes before it reads. Not write-combined: the host reads
                // halos back from it.
                let p = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(len, 0) }
                    .map_err(backend("CUDA"))?;
                self.pinned = Some(p);
            }
        }
        match self.pinned.as_mut() {
            Some(p) => p.as_mut_ptr().map(Some).map_err(backend("CUDA")),
            None => Ok(None),
        }
    }
}

/// Copies `from_piece` of `from` into `to_piece` of `to` on `stream`
/// ([`crate::gpu::DeviceRuntime::copy_within`]): `false` for pieces of
/// other kinds or sizes.
pub(super) fn copy_device(
    stream: &CudaStream,
    (from, from_piece): (&CudaBuffer, &CopyPiece),
    (to, to_piece): (&CudaBuffer, &CopyPiece),
) -> Result<bool, DeviceError> {
    check_piece(from, from_piece, from_piece.bytes())?;
    check_piece(to, to_piece, to_piece.bytes())?;
    let stream = stream.cu_stream();
    match (*from_piece, *to_piece) {
        (
            CopyPiece::Run { offset: a, bytes },
            CopyPiece::Run {
                offset: b,
                bytes: n,
            },
        ) if bytes == n => {
            // SAFETY: `check_piece` put both runs inside their
            // allocations; the buffers outlive the copy (the controller
            // finishes the stream before freeing either).
            let r = unsafe {
                sys::cuMemcpyDtoDAsync_v2(to.ptr + b as u64, from.ptr + a as u64, bytes, stream)
            };
            r.result().map_err(backend("CUDA"))?;
            Ok(true)
        }
        (CopyPiece::Rect(a), CopyPiece::Rect(b)) if a.size == b.size => {
            let mem = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
            for z in 0..a.size[2] {
                let desc = sys::CUDA_MEMCPY2D {
                    srcXInBytes: a.origin[0],
                    srcY: a.origin[1],
                    srcMemoryType: mem,
                    srcHost: std::ptr::null(),
                    srcDevice: from.ptr + ((a.origin[2] + z) * a.slice_pitch) as u64,
                    srcArray: std::ptr::null_mut(),
                    srcPitch: a.row_pitch,
                    dstXInBytes: b.origin[0],
                    dstY: b.origin[1],
                    dstMemoryType: mem,
                    dstHost: std::ptr::null_mut(),
                    dstDevice: to.ptr + ((b.origin[2] + z) * b.slice_pitch) as u64,
                    dstArray: std::ptr::null_mut(),
                    dstPitch: b.row_pitch,
                    WidthInBytes: a.size[0],
                    Height: a.size[1],
                };
                // SAFETY: `check_piece` put both rectangles inside their
                // allocations; the descriptor names only those (null
                // host and array pointers, as the driver wants for
                // device memory); the buffers outlive the copy.
                let r = unsafe { sys::cuMemcpy2DAsync_v2(&desc, stream) };
                r.result().map_err(backend("CUDA"))?;
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Refuses copies outside the allocation or host buffers of the wrong size:
/// the raw copies would otherwise touch memory they do not own.
pub(super) fn check_piece(
    buf: &CudaBuffer,
    piece: &CopyPiece,
    host: usize,
) -> Result<(), DeviceError> {
    let fits = piece.bytes() == host
        && piece
            .spans()
            .all(|(off, _, len)| off.checked_add(len).is_some_and(|e| e <= buf.slice.len()));
    if fits {
        Ok(())
    } else {
        Err(BackendError::CopyOutside {
            piece: format!("{piece:?}"),
            host,
            bytes: buf.slice.len(),
        }
        .into())
    }
}

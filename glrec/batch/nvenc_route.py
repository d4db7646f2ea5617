"""Per-env files through NVENC: one session per env stream, fed RGBA frames copied on the GPU.

NVENC encodes one stream per session, so ``layout="files"`` with ``encoder="nvenc"``
opens one session for each recorded env. They are all opened when the first batch
arrives: where the GPU (a consumer GeForce's cap, or its memory) refuses one before
every env has its own, the recording is refused then, before anything is written,
saying how many opened and what to do (record fewer envs, the grid, or the CPU
encoders). Sessions are handed to the env streams as they start; an env whose
episodes go to separate files closes its session with each file and opens a new one.

Frames reach NVENC as its ABGR input (``pix_fmt="rgba"``, R in the lowest byte;
NVENC converts to YUV itself, as ``glrec doctor`` measures on a GPU with NVENC):
each env's frame is copied into a slot of a device pool by the copy engine,
rows for 4-channel batches, pixels for 3-channel ones (3 bytes into each 4-byte
pixel, whose alpha byte was set once). A CUDA batch never touches host memory;
a host batch is copied up once per env. The copies of a step finish before
``write()`` returns, so the caller may reuse its batch.

NVENC has not run on NVENC hardware in glrec's development (the GPU machine has
none): the contract test (``tests/encoders/test_nvenc_batch_contract.py``) proves
the sessions, the bytes each one reads and the session-limit refusal against the
real PyNvVideoCodec module and stand-in driver libraries.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cuda.driver import CudaDevice, call, driver
from ..cuda.pool import DeviceFrame, DevicePool
from ..encoders import Encoder
from ..encoders.registry import EncodeRequest, encoder_row
from ..errors import ConfigError, EncoderUnavailableError
from ..layout import PlaneLayout
from .frames import Batch, CudaBatch, HostBatch
from .routes import ChildEncoder, Handed

log = logging.getLogger("glrec")

#: Device slots per env: one being encoded, one filled for the next step, one spare.
SLOTS_PER_ENV = 3


class NvencRoute:
    """Env frames of each step into per-env NVENC sessions (see the module docstring)."""

    name = "nvenc"
    muxes_only = False  # each env stream encodes on its worker
    child_encoder: ChildEncoder | None = None

    def __init__(self, asked: EncodeRequest[Any], device: CudaDevice, streams: int) -> None:
        if asked.facts.pix_fmt != "rgba":
            raise ConfigError(
                f"Per-env NVENC files read RGBA frames (NVENC converts them to YUV itself); pix_fmt "
                f"{asked.facts.pix_fmt!r} needs glrec's GL conversion, which per-env files do not use. Leave pix_fmt "
                "unset (or 'rgba'), or use layout='grid' (converted on the GPU, one session)."
            )
        self.facts = asked.facts
        self._device = device
        self._request = asked
        w, h = asked.facts.encoded_size
        self._layout = PlaneLayout.for_format("rgba", w, h)
        self._pool: DevicePool | None = None
        self._stock: list[Encoder] = []
        try:
            self._open_sessions(streams)
            self._pool = DevicePool(device, self._layout.nbytes, SLOTS_PER_ENV * streams)
            # Alpha (and any padding) once: a 3-channel copy fills the other three bytes of each pixel.
            call("cuMemsetD8", self._pool.base, 255, self._pool.stride * self._pool.count)
        except BaseException:
            self.release()
            raise

    def _open_sessions(self, streams: int) -> None:
        row = encoder_row("nvenc")
        for _ in range(streams):
            try:
                self._stock.append(row.open(self._request))
            except EncoderUnavailableError as exc:
                opened = len(self._stock)
                if not opened:
                    raise
                raise ConfigError(
                    f"NVENC opened {opened} sessions on CUDA device {self._device.ordinal} and refused the next "
                    f"({exc}); per-env files need one per env, {streams} here. Record at most {opened} envs "
                    "(envs=[...]), use layout='grid' (one session for all), or encoder='cpu'."
                ) from exc
        log.info("batch: %d NVENC sessions open on CUDA device %d", streams, self._device.ordinal)

    def stream_encoder(self) -> Encoder:
        """A session for an env stream: one of those opened at the start, then (new files) a new one."""
        if self._stock:
            return self._stock.pop()
        return encoder_row("nvenc").open(self._request)

    def frames(self, batch: Batch, active: Sequence[int], step: int) -> Handed:
        pool = self._pool
        assert pool is not None, "released"
        device = self._device
        if isinstance(batch, CudaBatch) and batch.device != device.ordinal:
            raise ConfigError(f"The batch is on CUDA device {batch.device}; this recording encodes on device "
                              f"{device.ordinal}. Pass cuda_device={batch.device}.")  # fmt: skip
        device.bind()
        stream = device.stream_handle
        if isinstance(batch, CudaBatch) and batch.strides[3] != 1:
            raise ConfigError(
                f"The batch's channels are not adjacent in memory (strides {batch.strides}); pass "
                "frames.contiguous() for NVENC."
            )
        if isinstance(batch, CudaBatch) and batch.stream is not None:
            call("cuStreamSynchronize", batch.stream)  # the producer's work on the frames is done
        out: Handed = []
        kept = []  # host frames copied for the copy engine, alive until the step's copies are done
        for env in active:
            slot = pool.acquire()
            kept.append(self._copy(batch, env, pool.address(slot), stream))
            call("cuEventRecord", pool.events[slot], stream)
            out.append((step, env, DeviceFrame(step, self._layout, pool, slot, pending=True)))
        call("cuStreamSynchronize", stream)  # the caller may reuse its batch when write() returns
        return out

    def _copy(self, batch: Batch, env: int, dst: int, stream: Any) -> np.ndarray | None:
        """Queue env ``env``'s frame into the slot at ``dst``; returns the host array the copy reads, if any."""
        cu = driver()
        _, h, w, c = batch.shape
        copy = cu.CUDA_MEMCPY2D()
        array = None
        if isinstance(batch, HostBatch):
            array = np.ascontiguousarray(batch.frames[env])
            copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_HOST
            src, row_stride, pixel_stride = int(array.ctypes.data), w * c, c
        else:
            copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
            src = batch.ptr + env * batch.strides[0]
            row_stride, pixel_stride = batch.strides[1], batch.strides[2]
        source = "srcHost" if array is not None else "srcDevice"
        copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        ew = self._layout.width
        if c == 4 and pixel_stride == 4:  # rows as they are
            setattr(copy, source, src)
            copy.dstDevice, copy.dstPitch = dst, ew * 4
            copy.srcPitch, copy.WidthInBytes, copy.Height = row_stride, w * 4, h
            call("cuMemcpy2DAsync", copy, stream)
            return array
        # Pixels: 3 bytes of each source pixel into the first 3 of each 4-byte destination pixel, row by row
        # where the rows are padded, else the whole frame as one run of H * W pixels.
        rows = [(0, h * w)] if row_stride == w * pixel_stride and ew == w else [(y, w) for y in range(h)]
        for y, count in rows:
            setattr(copy, source, src + y * row_stride)
            copy.dstDevice, copy.dstPitch = dst + y * ew * 4, 4
            copy.srcPitch, copy.WidthInBytes, copy.Height = pixel_stride, 3, count
            call("cuMemcpy2DAsync", copy, stream)
        return array

    def drain(self) -> Handed:
        return []

    def release(self) -> None:
        """Close the sessions no stream took, and free the slots (after the streams finished)."""
        stock, self._stock = self._stock, []
        for encoder in stock:
            encoder.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.release()
        self._device.release()

"""CUDA handoff, *register* path: GL textures registered with CUDA once, mapped in batches.

Works on any driver with CUDA–GL interop. The convert stage writes into a ring
of ``batch`` plane sets; each texture is registered with
``cuGraphicsGLRegisterImage`` once, when the ring is made. Every ``batch``
frames, all the ring's textures are mapped in **one** ``cuGraphicsMapResources``
call, each frame's planes are copied (array -> linear, on glrec's stream) into a
:class:`~glrec.cuda.pool.DevicePool` slot, and everything is unmapped in one
call. Map/unmap is the expensive part (≈330 µs a call on an H200), so batching
divides it by ``batch``; mapping also orders the copies after the GL commands
that wrote the textures, so no fence or ``glFinish`` is needed. ``batch=1`` is
the naive map/copy/unmap per frame.

The ring works by swapping ``source.planes`` to the next set after each
frame, so the converter (or packer) needs no knowledge of the handoff.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

import moderngl

from ..cuda.driver import CudaDevice, call, driver
from ..cuda.pool import DeviceFrame, DevicePool
from ..errors import ConfigError
from ..layout import PlaneLayout

log = logging.getLogger("glrec")

GL_TEXTURE_2D = 0x0DE1


class RegisterHandoff:
    """Hand converted frames to CUDA through registered textures, mapped ``batch`` at a time.

    ``source`` is a Converter or RgbPacker (anything with ``layout``, ``planes``
    and ``new_planes()``). Same interface as the host readback: :meth:`submit`
    after each conversion returns the frames that completed, :meth:`drain` the rest.

    >>> handoff = RegisterHandoff(converter, device, batch=16)  # doctest: +SKIP
    """

    kind = "register"

    def __init__(self, source: Any, device: CudaDevice, *, batch: int = 16, pool_size: int | None = None) -> None:
        if batch < 1:
            raise ConfigError(f"register handoff batch {batch} must be at least 1 (16 amortises map/unmap well).")
        self.source = source
        self.device = device
        self.layout: PlaneLayout = source.layout
        self.batch = batch
        device.bind()
        self._sets: list[list[moderngl.Texture]] = [list(source.planes)]
        self._resources: list[list[Any]] = []
        self.pool: DevicePool | None = None
        try:
            self._sets += [source.new_planes() for _ in range(batch - 1)]
            flags = driver().CUgraphicsRegisterFlags.CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY
            for planes in self._sets:
                self._resources.append(
                    [call("cuGraphicsGLRegisterImage", tex.glo, GL_TEXTURE_2D, flags) for tex in planes]
                )
            # Enough slots for a whole batch in flight plus one the consumer is still reading.
            self.pool = DevicePool(device, self.layout.nbytes, pool_size or 2 * batch + 2)
        except BaseException:
            self.release()
            raise
        # One copy descriptor per plane, filled in once; only source array and destination change.
        self._copies = [self._copy_descriptor(w * c, h) for w, h, c in self.layout.planes]
        self._pending: list[tuple[int, int]] = []  # (frame index, ring set)
        self._next = 0

    @property
    def depth(self) -> int:
        return self.batch

    @property
    def device_bytes(self) -> int:
        """The pool's CUDA memory (the registered textures are GL's)."""
        return self.pool.stride * self.pool.count if self.pool is not None else 0

    @staticmethod
    def _copy_descriptor(row_bytes: int, rows: int) -> Any:
        cu = driver()
        copy = cu.CUDA_MEMCPY2D()
        copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_ARRAY
        copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.dstPitch = row_bytes  # tightly packed rows: the host path's layout
        copy.WidthInBytes = row_bytes
        copy.Height = rows
        return copy

    def before_frame(self) -> None:
        """Nothing to wait for: a full ring is collected in :meth:`submit`."""

    def submit(self, index: int) -> list[DeviceFrame]:
        """Record that the source's current planes hold frame ``index``; return frames that completed."""
        self._pending.append((index, self._next))
        self._next = (self._next + 1) % len(self._sets)
        # The converter writes the next frame into the next set of the ring.
        self.source.planes = self._sets[self._next]
        if len(self._pending) < self.batch:
            return []
        return self._flush()

    def drain(self) -> list[DeviceFrame]:
        """Hand off the frames of a partial batch."""
        return self._flush() if self._pending else []

    def _flush(self) -> list[DeviceFrame]:
        assert self.pool is not None
        pending, self._pending = self._pending, []
        pool, stream = self.pool, self.device.stream
        slots = [pool.acquire() for _ in pending]  # before mapping: waiting must not hold GL resources
        resources = [r for _, k in pending for r in self._resources[k]]
        # The bindings take an int as the address of a CUgraphicsResource array: one map call for all.
        handles = (ctypes.c_void_p * len(resources))(*(int(r) for r in resources))
        self.device.bind()
        call("cuGraphicsMapResources", len(resources), ctypes.addressof(handles), stream)
        frames = []
        try:
            for (index, k), slot in zip(pending, slots, strict=True):
                dst = pool.address(slot)
                for res, copy, offset in zip(self._resources[k], self._copies, self.layout.offsets, strict=True):
                    copy.srcArray = call("cuGraphicsSubResourceGetMappedArray", res, 0, 0)
                    copy.dstDevice = dst + offset
                    call("cuMemcpy2DAsync", copy, stream)
                call("cuEventRecord", pool.events[slot], stream)
                frames.append(DeviceFrame(index, self.layout, pool, slot, pending=True))
        except BaseException:
            for slot in slots[len(frames) :]:
                pool.give_back(slot)
            raise
        finally:
            call("cuGraphicsUnmapResources", len(resources), ctypes.addressof(handles), stream)
        return frames

    def release(self) -> None:
        """Unregister the textures and free the pool (frames still held become invalid). Safe twice."""
        resources, self._resources = self._resources, []
        if resources:
            self.device.bind()
            self.device.synchronize()
        for group in resources:
            for res in group:
                call("cuGraphicsUnregisterResource", res)
        sets, self._sets = self._sets, []
        if sets:
            self.source.planes = sets[0]  # the source releases its own first set
            for planes in sets[1:]:
                for tex in planes:
                    tex.release()
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.release()

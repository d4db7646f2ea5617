"""CUDA handoff, *shared* path: GL buffers whose storage is CUDA memory, no per-frame map.

The pool is a :class:`~glrec.cuda.vmm.SharedBuffer`: CUDA memory that GL
uses as the storage of one buffer. After converting a frame, a compute shader
writes the planes into the frame's slot of that buffer
(``shaders/planes_to_buffer.comp``; measured much cheaper on NVIDIA than
``glGetTexImage`` into a pixel-pack buffer) and a fence is placed; once the
fence has signalled, CUDA reads the slot at its own address.
There is no ``cuGraphicsMapResources``/``Unmap`` at all, which is what the
register path spends most of its time on.

Needs the NVIDIA driver's ``GL_EXT_memory_object_fd`` (measured working on an
H200, driver 580); :func:`glrec.interop.handoff.open_handoff` falls back to the
register path where it is missing.
"""

from __future__ import annotations

import logging
from typing import Any

import moderngl

from ..cuda.driver import CudaDevice
from ..cuda.pool import DeviceFrame, DevicePool
from ..cuda.vmm import EXTENSION, SharedBuffer
from ..errors import ContextError
from ..gl import glsl
from ..gl.fences import Fence
from ..layout import PlaneLayout
from .batching import FencedBatches, PhaseGate

log = logging.getLogger("glrec")

__all__ = ["EXTENSION", "PlaneWriter", "SharedHandoff"]


class PlaneWriter:
    """Writes a source's current plane textures into a GL buffer at an offset, in the host layout.

    ``offset`` must be a multiple of ``GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT``
    (the shared handoff's slots are 256-byte aligned).
    """

    def __init__(self, ctx: moderngl.Context, source: Any) -> None:
        self.ctx = ctx
        self.source = source
        layout: PlaneLayout = source.layout
        planes = list(source.planes)
        pad = 3 - len(planes)
        self.nbytes = layout.nbytes
        words = all(t.components == 4 for t in planes) and all(o % 4 == 0 for o in layout.offsets)
        self._shader = glsl.compute(ctx, "planes_to_buffer.comp", {"WORDS": int(words)})
        values = {
            "nplanes": len(planes),
            "start": tuple(list(layout.offsets) + [layout.nbytes] * pad),
            "row_bytes": tuple([t.width * t.components for t in planes] + [1] * pad),
            "comps": tuple([t.components for t in planes] + [1] * pad),
            "total": layout.nbytes,
        }
        for name, value in values.items():
            uniform = self._shader.get(name, None)  # the WORDS variant has no use for some
            if uniform is not None:
                uniform.value = value  # type: ignore[union-attr]
        self._groups = (layout.nbytes + 4 * 256 - 1) // (4 * 256)

    def run(self, buffer: moderngl.Buffer, offset: int) -> None:
        """Queue the write of the source's current planes into ``buffer`` at ``offset``."""
        for unit, tex in enumerate(self.source.planes):
            tex.use(unit)
        buffer.bind_to_storage_buffer(0, offset=offset, size=(self.nbytes + 3) // 4 * 4)
        self._shader.run(self._groups)
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)

    def release(self) -> None:
        shader, self._shader = self._shader, None  # type: ignore[assignment]
        if shader is not None:
            shader.release()


class SharedHandoff:
    """Hand converted frames to CUDA through GL buffers backed by CUDA memory.

    Frames are fenced in batches of ``batch`` (one fence per batch) and handed
    out as soon as a batch's fence has signalled; the GL thread waits only when
    more than ``depth`` batches are in flight (:class:`~glrec.interop.batching.FencedBatches`).
    ``phased``: each batch is handed out as it completes, and GL starts the next
    batch only once the consumer has released the previous one
    (:meth:`before_frame`), so GL and CUDA take turns batch by batch. ``slots``
    is the pool size: frames held by the consumer plus those in flight.

    >>> handoff = SharedHandoff(ctx, converter, device, depth=3)  # doctest: +SKIP
    """

    kind = "shared"

    def __init__(self, ctx: moderngl.Context, source: Any, device: CudaDevice, *, depth: int = 3,
                 slots: int | None = None, batch: int = 1, phased: bool = False) -> None:  # fmt: skip
        if EXTENSION not in ctx.extensions:
            raise ContextError(f"This GL driver lacks {EXTENSION}; use the register handoff (handoff='register').")
        self.source = source
        self.device = device
        self.layout: PlaneLayout = source.layout
        self.depth = max(1, depth)
        self.batch = max(1, batch)
        count = slots or (self.depth + 1) * self.batch + 6
        self._shared: SharedBuffer | None = None
        self._writer: PlaneWriter | None = None
        self.pool: DevicePool | None = None
        # (frame index, pool slot) of frames GL was asked to write, fenced per batch.
        self._batches: FencedBatches[tuple[int, int]] = FencedBatches(self.batch, 0 if phased else self.depth, Fence)
        self._gate: PhaseGate | None = None
        try:
            stride = (self.layout.nbytes + 255) // 256 * 256
            self._shared = SharedBuffer(ctx, device, stride * count)
            self.pool = DevicePool(device, self.layout.nbytes, count, base=self._shared.address, stride=stride)
            self._writer = PlaneWriter(ctx, source)
            if phased:
                self._gate = PhaseGate(self.pool.wait_free)
        except BaseException:
            self.release()
            raise

    @property
    def device_bytes(self) -> int:
        """The CUDA memory GL writes frames into and the consumer reads them from."""
        return self.pool.stride * self.pool.count if self.pool is not None else 0

    def before_frame(self) -> None:
        """Call before issuing a frame's GL work: when phased, a new batch waits for the consumer."""
        if self._gate is not None and self._batches.at_batch_start:
            self._gate.before_batch()

    def submit(self, index: int) -> list[DeviceFrame]:
        """Copy the source's planes into a free slot (on the GPU) as frame ``index``; return completed frames."""
        assert self.pool is not None and self._shared is not None and self._shared.buffer is not None
        assert self._writer is not None
        slot = self.pool.acquire()
        self._writer.run(self._shared.buffer, self.pool.address(slot) - self.pool.base)
        return self._hand_out(self._batches.add((index, slot)))

    def drain(self) -> list[DeviceFrame]:
        return self._hand_out(self._batches.drain())

    def _hand_out(self, done: list[tuple[int, int]]) -> list[DeviceFrame]:
        # GL has finished writing these slots (their fence signalled): CUDA may read them now.
        assert self.pool is not None
        if done and self._gate is not None:
            self._gate.handed_out(slot for _, slot in done)
        return [DeviceFrame(index, self.layout, self.pool, slot, pending=False) for index, slot in done]

    def release(self) -> None:
        """Free the GL buffer, the memory object and the CUDA allocation. Safe twice."""
        self._batches.discard()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.release()
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.release()
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.release()

"""The GL side of NVDEC input: the decoder's pool as one GL buffer, unpacked into plane textures per picture.

:class:`~glrec.sources.video.nvdec.NvdecWorker` fills pool slots on its thread and
queues them with a CUDA event behind each copy. Here, on the GL thread, the
event is waited for, the planes are unpacked from the buffer into the same
plane textures the CPU path fills (:class:`~glrec.sources.video.upload.PlaneTextures`,
nearest or linear as ``chroma_filter`` says) and a fence is placed behind the
unpack; a slot goes back to the pool once its fence has signalled.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING

import moderngl

from ...gl.fences import Fence
from .formats import PlaneFormat
from .upload import PlaneTextures, PlaneUploader, unpack

if TYPE_CHECKING:
    from .nvdec import NvdecWorker, NvPicture


@dataclass
class UploadTimes:
    """Seconds the GL thread spent per stage, summed over the pictures it uploaded (for the benchmarks)."""

    ready: float = 0.0  # waiting for the CUDA copy into the slot (decoding is normally far ahead)
    retire: float = 0.0  # waiting for the GL fences of older unpacks before giving their slots back
    unpack: float = 0.0  # issuing the buffer -> texture copies (the GPU runs them later)
    pictures: int = 0


class NvdecUploader(PlaneUploader):
    """GL side of :class:`~glrec.sources.video.nvdec.NvdecWorker`: the pool as a GL buffer, unpacked into textures."""

    def __init__(self, ctx: moderngl.Context, worker: NvdecWorker, *, linear: bool = False) -> None:
        self.ctx = ctx
        self.worker = worker
        self.linear = linear
        self._buffer = worker._memory.attach(ctx)
        self._planes: PlaneTextures | None = None
        self._in_flight: deque[tuple[int, Fence]] = deque()
        self.times = UploadTimes()

    def upload(self, pic: NvPicture) -> PlaneFormat:
        times = self.times
        started = perf_counter()
        self._retire()
        retired = perf_counter()
        self.worker.wait_ready(pic)
        ready = perf_counter()
        sizes = [(p.width, p.height) for p in pic.planes]
        if self._planes is None or self._planes.fmt != pic.fmt or self._planes.sizes != sizes:
            if self._planes is not None:
                self._planes.release()
            self._planes = PlaneTextures(self.ctx, pic.fmt, sizes, linear=self.linear)
        unpack(self._buffer.glo, self._planes.textures, pic.planes, pic.offsets, pic.fmt)
        self._in_flight.append((pic.slot, Fence()))
        times.retire += retired - started
        times.ready += ready - retired
        times.unpack += perf_counter() - ready
        times.pictures += 1
        return pic.fmt

    def _retire(self, keep: int = 1) -> None:
        """Give back every slot but the newest ``keep``, once the GPU has finished unpacking them.

        The newest is the picture shown: it may be unpacked again (when mipmaps are turned on), so it
        stays. The older ones' unpacks were queued a frame or more ago, so the fence wait is short;
        waiting here (not on the decode thread, which cannot touch GL) keeps the slots GL holds at
        two at most, so the decoder never runs out while the GL thread waits for it.
        """
        while len(self._in_flight) > keep:
            slot, fence = self._in_flight[0]
            fence.wait()
            self._in_flight.popleft()
            if self.worker.pool is not None:
                self.worker.pool.give_back(slot)

    def release(self) -> None:
        self._retire(keep=0)
        planes, self._planes = self._planes, None
        if planes is not None:
            planes.release()
        if self.worker._memory is not None:
            self.worker._memory.detach()  # GL lets go first; the worker frees the CUDA memory


__all__ = ["NvdecUploader", "UploadTimes"]

"""Host handoff: asynchronous readback of converted planes through a PBO ring.

Each frame's planes are copied into the next pixel-buffer object with
``glGetTexImage`` into a bound ``GL_PIXEL_PACK_BUFFER`` (which returns at once)
and a fence is placed after it. The host reads a PBO only when it is about to
be reused, by which time the GPU has long finished: no ``glFinish`` per frame,
and rendering of frame i+N-1 overlaps the copy of frame i.
"""

from __future__ import annotations

from collections import deque

import moderngl
import numpy as np

from ..convert import ConvertStage
from ..errors import ConfigError
from ..frame import HostFrame
from ..gl.fences import Fence


class HostReadback:
    """A ring of ``depth`` PBOs; :meth:`submit` queues a frame, completed frames come back in order."""

    kind = "host"

    def __init__(self, ctx: moderngl.Context, converter: ConvertStage, depth: int = 3) -> None:
        if depth < 2:
            raise ConfigError(f"readback ring depth {depth} must be at least 2 for reads to overlap rendering.")
        self.converter = converter
        self.layout = converter.layout
        self._pbos = [ctx.buffer(reserve=self.layout.nbytes) for _ in range(depth)]
        self._pending: deque[tuple[int, int, Fence]] = deque()  # (frame index, pbo slot, fence)
        self._next_slot = 0

    @property
    def depth(self) -> int:
        return len(self._pbos)

    device_bytes = 0  # its ring is in GL memory; no CUDA memory at all

    def before_frame(self) -> None:
        """Nothing to wait for: a full ring is collected in :meth:`submit`."""

    def submit(self, index: int) -> list[HostFrame]:
        """Queue the converter's current planes as frame ``index``; return frames that completed."""
        done = []
        if len(self._pending) == len(self._pbos):
            done.append(self._collect())
        slot = self._next_slot
        self._next_slot = (slot + 1) % len(self._pbos)
        pbo = self._pbos[slot]
        for tex, offset in zip(self.converter.planes, self.layout.offsets, strict=True):
            tex.read_into(pbo, alignment=1, write_offset=offset)
        self._pending.append((index, slot, Fence()))
        return done

    def drain(self) -> list[HostFrame]:
        """Wait for and return every frame still in flight, oldest first."""
        return [self._collect() for _ in range(len(self._pending))]

    def _collect(self) -> HostFrame:
        index, slot, fence = self._pending.popleft()
        fence.wait()
        data = np.empty(self.layout.host_shape, dtype=np.uint8)
        self._pbos[slot].read_into(data)
        return HostFrame(index, self.layout.pix_fmt, self.layout.width, self.layout.height, data)

    def release(self) -> None:
        while self._pending:
            self._pending.popleft()[2].release()
        pbos, self._pbos = self._pbos, []
        for b in pbos:
            b.release()

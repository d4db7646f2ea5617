"""The PNG encoder: each frame a lossless PNG, its deflate on a pool of threads so that every core compresses.

Frames come as packed ``rgb24`` or ``rgba`` (the GL pack stage's rows, top-down,
read back or copied from CUDA), or, for written arrays where GL is software, as
the caller's pixels (:mod:`glrec.sources.frames.direct`): grey, RGB or RGBA,
brought to the stream's format here without touching a value (grey repeated
into R, G and B; an opaque alpha added; alpha dropped for ``rgb24``).

``encode`` filters the frame's rows at once (a new array: the frame's buffer
may be reused as soon as it returns) and hands the deflate, which releases the
GIL, to one pool of threads per process, as many as its cores, that every open
PNG encoder in the process shares (a vectorised recording's env streams too, so
they never hold more threads than cores between them); the last one to close
stops its threads, so no glrec thread outlives a recording. It returns the packets
that are done, in frame order, and waits for the oldest only when twice as many
frames as threads are in flight, or :data:`IN_FLIGHT_BYTES` of filtered rows
(so a machine of many cores recording large frames holds a bounded amount).
The bytes of each PNG depend only on its pixels and the level
(:mod:`glrec.encoders.png.writer`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ..._children import usable_cores
from ...errors import EncoderError
from ...frame import Frame, HostFrame, Packet
from ...layout import PACKED_RGB
from ...video_facts import VideoFacts
from ..encoder import encode_each, host_picture
from .options import PngOptions
from .writer import from_rows, layout, png_rows

log = logging.getLogger("glrec")

#: The most bytes of filtered rows one encoder keeps waiting for the pool (at least one frame).
IN_FLIGHT_BYTES = 256 * 2**20


class _SharedPool:
    """This process's deflate threads while any PNG encoder is open (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._users = 0
        self._pid = 0

    def acquire(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():  # a forked child has none of its parent's threads
                self._pool, self._users, self._pid = ThreadPoolExecutor(usable_cores(), "glrec-png"), 0, os.getpid()
            self._users += 1
            return self._pool

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            pool = self._pool if self._users == 0 else None
            if pool is not None:
                self._pool = None
        if pool is not None:
            pool.shutdown(wait=True)


SHARED_POOL = _SharedPool()


def channels_as(pixels: np.ndarray, channels: int) -> np.ndarray:
    """``pixels`` (``H×W×C`` uint8, C 1, 3 or 4) with ``channels`` (3 or 4), no value changed: grey repeated,
    an opaque alpha added, or alpha left out. A view where nothing changes."""
    have = pixels.shape[2]
    if have == channels:
        return pixels
    if have == 4:
        return pixels[:, :, :3]
    out = np.empty((*pixels.shape[:2], channels), np.uint8)
    out[:, :, :3] = pixels  # one channel broadcasts to three
    if channels == 4:
        out[:, :, 3] = 255
    return out


class PngEncoder:
    """Encode ``rgb24``/``rgba`` host or CUDA frames to PNG (see the module docstring); every packet a keyframe."""

    codec = "png"
    name = "png"

    def __init__(self, facts: VideoFacts, options: PngOptions, device: object = None, raw_output: bool = False) -> None:
        self.facts, self.level = facts, options.level
        self.channels = PACKED_RGB[facts.pix_fmt]
        threads = usable_cores()
        self._pool = SHARED_POOL.acquire()
        self._closed = False
        frame_bytes = facts.size[0] * facts.size[1] * self.channels
        self._window = max(1, min(2 * threads, IN_FLIGHT_BYTES // max(1, frame_bytes)))
        self._pending: deque[tuple[int, Future[bytes]]] = deque()
        log.info("encoder: png %dx%d %s, level %d, %d threads", *facts.size, facts.pix_fmt, self.level, threads)

    def _pixels(self, frame: HostFrame) -> np.ndarray:
        if frame.av_frame is not None:  # a written array swscale made into pix_fmt already
            return np.asarray(frame.av_frame.to_ndarray())
        data = np.asarray(frame.data, np.uint8)
        return channels_as(data.reshape(frame.height, frame.width, -1), self.channels)

    def encode(self, frame: Frame) -> list[Packet]:
        frame = host_picture(frame, "The PNG encoder")  # a CUDA device frame: one copy to the host, here
        pixels = self._pixels(frame)
        rows = png_rows(pixels)  # a new array: the frame's buffer is free once this returns
        kind = layout(pixels)
        self._pending.append((frame.index, self._pool.submit(from_rows, rows, frame.width, kind, self.level)))
        return self._done(wait=len(self._pending) > self._window)

    def encode_batch(self, frames: Sequence[Frame]) -> list[Packet]:
        """Each frame in turn (their deflates overlap on the pool)."""
        return encode_each(self, frames)

    def _done(self, *, wait: bool = False, all_: bool = False) -> list[Packet]:
        """The finished PNGs at the head of the queue, in frame order (``wait``: the oldest at least)."""
        out = []
        while self._pending and (all_ or wait or self._pending[0][1].done()):
            index, future = self._pending.popleft()
            wait = False
            try:
                data = future.result()
            except Exception as exc:
                raise EncoderError(f"PNG of frame {index} failed: {exc}") from exc
            out.append(Packet(data, index, index, True))
        return out

    def flush(self) -> list[Packet]:
        return self._done(all_=True)

    def request_keyframe(self) -> None:
        """Nothing to do: every PNG stands alone."""

    def close(self) -> None:
        """Drop the frames not yet flushed and let go of the pool; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        SHARED_POOL.release()

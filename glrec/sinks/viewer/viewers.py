"""Per-viewer frame queues: bounded, and a viewer that falls behind skips to the next keyframe.

Every viewer has its own queue between the encoder (one producer for all) and
its socket. A slow viewer must neither hold the others back nor make memory
grow, so a queue holds at most ``max_frames`` frames and ``max_bytes`` bytes.
When a frame would not fit, the whole backlog is dropped (frames after a
dropped one cannot be decoded without it) and the viewer waits for the next
keyframe; the server asks the encoder for one at once. A new viewer starts in
that waiting state too, so its first frame is a keyframe.

All methods run on the server's event-loop thread.
"""

from __future__ import annotations

import asyncio
from collections import deque


class ViewerQueue:
    """Frames waiting to be sent to one viewer.

    >>> q = ViewerQueue(max_frames=2)
    >>> q.offer(b"delta", key=False, index=0)  # waits for a keyframe first
    False
    >>> q.offer(b"key", key=True, index=1), q.pop()
    (True, (b'key', 1))
    """

    def __init__(self, max_frames: int = 15, max_bytes: int = 8 * 2**20) -> None:
        if max_frames < 1 or max_bytes < 1:
            raise ValueError("a viewer queue needs room for at least one frame")
        self.max_frames, self.max_bytes = max_frames, max_bytes
        self.waiting_for_key = True
        self.queued_bytes = 0
        self.peak_bytes = 0
        self.accepted = 0
        self.dropped = 0  # frames this viewer never got
        self.overflows = 0  # times the backlog was thrown away
        self._items: deque[tuple[bytes, int]] = deque()
        self._ready: asyncio.Event | None = None

    def __len__(self) -> int:
        return len(self._items)

    def offer(self, item: bytes, *, key: bool, index: int) -> bool:
        """Queue a frame; False if it was dropped. Check :attr:`waiting_for_key` afterwards."""
        if self.waiting_for_key and not key:
            self.dropped += 1
            return False
        if len(self._items) >= self.max_frames or self.queued_bytes + len(item) > self.max_bytes:
            self.overflows += 1
            self.dropped += len(self._items)
            self._items.clear()
            self.queued_bytes = 0
            if not key or len(item) > self.max_bytes:
                self.dropped += 1
                self.waiting_for_key = True
                return False
        self.waiting_for_key = False
        self._items.append((item, index))
        self.queued_bytes += len(item)
        self.peak_bytes = max(self.peak_bytes, self.queued_bytes)
        self.accepted += 1
        if self._ready is not None:
            self._ready.set()
        return True

    def pop(self) -> tuple[bytes, int] | None:
        """The oldest queued frame and its index, or None."""
        if not self._items:
            return None
        item = self._items.popleft()
        self.queued_bytes -= len(item[0])
        return item

    async def get(self) -> tuple[bytes, int]:
        """Wait for and return the oldest frame."""
        if self._ready is None:
            self._ready = asyncio.Event()
        while True:
            item = self.pop()
            if item is not None:
                return item
            self._ready.clear()
            await self._ready.wait()

"""A bounded ring of encoded GOPs per environment: what clips kept by outcome and ``save_last`` are cut from.

Each env encodes without pause; its packets go into whole GOPs (a keyframe and
the packets after it, in decode order), and the oldest GOPs leave once the ring
holds more than ``seconds`` of video or ``max_bytes`` of packets (the GOP being
written always stays). So memory per env is at most ``max_bytes`` plus one GOP,
and a clip cut from the ring starts on a keyframe: every GOP does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from ..frame import Packet


class GopRing:
    """Packets of the last ``frames`` frames (whole GOPs, see the module docstring), at most ``max_bytes``."""

    def __init__(self, frames: int, max_bytes: int) -> None:
        self.frames = max(1, frames)
        self.max_bytes = max_bytes
        self._gops: deque[list[Packet]] = deque()
        self.bytes = 0
        self.peak_bytes = 0

    def add(self, packets: list[Packet]) -> None:
        for packet in packets:
            if packet.keyframe or not self._gops:
                self._gops.append([])
            self._gops[-1].append(packet)
            self.bytes += len(packet.data)
        self._trim()
        self.peak_bytes = max(self.peak_bytes, self.bytes)

    def _trim(self) -> None:
        while len(self._gops) > 1:
            newest = max(p.pts for p in self._gops[-1])
            too_long = newest - self._gops[1][0].pts >= self.frames  # the ring holds ``frames`` without the oldest
            if not (too_long or self.bytes > self.max_bytes):
                break
            self.bytes -= sum(len(p.data) for p in self._gops.popleft())

    def gops(self) -> Iterator[list[Packet]]:
        return iter(self._gops)

    def since(self, first: int, last: int | None = None) -> list[Packet]:
        """The packets of the GOPs that start at frame ``first`` or later (up to frame ``last``), in decode order.

        Where the ring no longer holds frame ``first``, the clip starts at the oldest GOP it holds.
        """
        out: list[Packet] = []
        for gop in self._gops:
            start = gop[0].pts
            if start < first or (last is not None and start > last):
                continue
            out += [p for p in gop if last is None or p.pts <= last]
        return out

    def last(self, frames: int, now: int) -> list[Packet]:
        """The packets from the newest keyframe at or before frame ``now - frames`` (or the oldest held) on."""
        starts = [gop[0].pts for gop in self._gops]
        if not starts:
            return []
        wanted = now - frames
        first = max((s for s in starts if s <= wanted), default=starts[0])
        return self.since(first)

    def drop_before(self, frame: int) -> None:
        """Forget GOPs that end before ``frame`` (a clip was decided on): memory back at once."""
        while len(self._gops) > 1 and self._gops[1][0].pts <= frame:
            self.bytes -= sum(len(p.data) for p in self._gops.popleft())

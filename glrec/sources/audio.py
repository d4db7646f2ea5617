"""Audio of a video input, copied into the output unchanged (no decode, no re-encode).

The decode worker hands every audio packet of the input to an
:class:`AudioPassthrough` as it demuxes them; the output's sink adds one
stream per input audio stream before its first packet and muxes the queued
audio as the video advances, so the file stays interleaved. Timestamps move
by the same amount as the video's (the input's first picture is time 0), so
sound and picture stay in step; audio past the end of the recorded video is
left out, so a shortened recording does not carry a tail of sound.
"""

from __future__ import annotations

import io
import logging
import threading
from collections import deque
from fractions import Fraction
from typing import Any

import av

log = logging.getLogger("glrec")


def muxer_takes(muxer: str, stream: Any) -> bool:
    """True when FFmpeg's ``muxer`` accepts a copy of ``stream`` (it writes a header with it)."""
    try:
        with av.open(io.BytesIO(), "w", format=muxer) as probe:
            probe.add_stream_from_template(stream)
            probe.start_encoding()
        return True
    except (av.FFmpegError, ValueError, OSError):
        return False


class AudioPassthrough:
    """Queued audio packets of ``streams`` (input streams of one container) on their way to an output."""

    def __init__(self, streams: list[Any]) -> None:
        self.streams = list(streams)
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self.origin: float | None = None  # seconds: the input time that is 0 in the output
        self._out: dict[int, Any] = {}  # input stream index -> output stream
        self.packets = 0

    # -- decode thread ---------------------------------------------------------------------------

    def put(self, packet: Any) -> None:
        with self._lock:
            self._queue.append(packet)

    # -- sink (encode thread) --------------------------------------------------------------------

    def add_streams(self, container: Any) -> None:
        """Add an output stream per input audio stream (before the container's first packet)."""
        for s in self.streams:
            self._out[s.index] = container.add_stream_from_template(s)

    def mux_until(self, container: Any, t: float | None) -> None:
        """Mux the queued packets that start before ``t`` seconds of output (all with None)."""
        if self.origin is None or not self._out:
            return
        while True:
            with self._lock:
                if not self._queue:
                    return
                packet = self._queue[0]
                start = self._time(packet)
                if t is not None and start >= t:
                    return
                self._queue.popleft()
            self._mux(container, packet)

    def finish(self, container: Any, end: float) -> None:
        """Mux what belongs before ``end`` (the video's end, seconds) and drop the rest."""
        self.mux_until(container, end)
        with self._lock:
            dropped = len(self._queue)
            self._queue.clear()
        if dropped:
            log.info("audio: left out %d packets past the end of the video (%.3f s)", dropped, end)

    def _time(self, packet: Any) -> float:
        tb = packet.time_base or Fraction(1, 1)
        return float((packet.pts if packet.pts is not None else packet.dts) * tb) - (self.origin or 0.0)

    def _mux(self, container: Any, packet: Any) -> None:
        out = self._out.get(packet.stream.index)
        if out is None:
            return
        tb = packet.time_base
        shift = round(Fraction(self.origin or 0.0) / tb) if tb else 0
        if packet.pts is not None:
            packet.pts -= shift
        if packet.dts is not None:
            packet.dts -= shift
        packet.stream = out
        container.mux(packet)
        self.packets += 1

"""Audio of a video input, copied into the output unchanged (no decode, no re-encode).

The audio is read by a demuxer of its own (a second reader of the same file),
on the output's thread, as far as the video has got: the output's sink adds
one stream per input audio stream before its first packet and, after each
video packet, muxes the audio up to that frame's time, so the file stays
interleaved. Being separate from the video's decoder, it neither waits for
pictures nor makes them wait, and it always reaches the end of the recorded
video, however the file interleaves its streams. Timestamps move by the same
amount as the video's (the input's first picture is time 0), so sound and
picture stay in step; audio past the end of the recorded video is left out.

Network inputs and cameras cannot be read twice, so their audio is not copied.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import av

from .media import InputSpec, open_container

log = logging.getLogger("glrec")


#: Audio codecs a muxer carries as playable streams. FFmpeg's ``mpegts`` muxer writes a header with
#: any codec, but stores those it has no stream type for (PCM, FLAC, Vorbis, ...) as ``bin_data``
#: that no player decodes; so it is asked for what it really maps.
_CARRIED = {"mpegts": frozenset({"aac", "aac_latm", "mp2", "mp3", "ac3", "eac3", "dts", "truehd", "opus", "s302m"})}


def muxer_takes(muxer: str, stream: Any) -> bool:
    """True when FFmpeg's ``muxer`` accepts a copy of ``stream`` as a stream players decode."""
    carried = _CARRIED.get(muxer)
    if carried is not None:
        name = stream.codec_context.name if stream.codec_context is not None else ""
        return name in carried
    try:
        with av.open(io.BytesIO(), "w", format=muxer) as probe:
            probe.add_stream_from_template(stream)
            probe.start_encoding()
        return True
    except (av.FFmpegError, ValueError, OSError):
        return False


class AudioPassthrough:
    """The audio streams (``streams``, of the video's container) of ``spec``, on their way to an output."""

    def __init__(self, spec: InputSpec, streams: list[Any]) -> None:
        self.spec = spec
        self.streams = list(streams)  # the video's container's streams: for templates and checks
        self.origin: float | None = None  # seconds: the input time that is 0 in the output
        self.packets = 0
        self._reader: Any = None
        self._packets: Iterator[Any] | None = None
        self._pending: Any = None  # the packet read past the time muxed up to
        self._out: dict[int, Any] = {}  # input stream index -> output stream

    def add_streams(self, container: Any) -> None:
        """Add an output stream per input audio stream (before the container's first packet)."""
        for s in self.streams:
            self._out[s.index] = container.add_stream_from_template(s)

    def _next(self) -> Any:
        if self._packets is None:
            self._reader = open_container(self.spec)
            wanted = [s for s in self._reader.streams.audio if s.index in self._out]
            self._packets = iter(self._reader.demux(wanted))
        for packet in self._packets:
            if packet.dts is not None and packet.size:
                return packet
        return None

    def mux_until(self, container: Any, t: float | None) -> None:
        """Mux the input's audio packets that start before ``t`` seconds of output (all of them with None)."""
        if self.origin is None or not self._out:
            return
        while True:
            packet = self._pending if self._pending is not None else self._next()
            self._pending = None
            if packet is None:
                return
            if t is not None and self._time(packet) >= t:
                self._pending = packet
                return
            self._mux(container, packet)

    def finish(self, container: Any, end: float) -> None:
        """Mux what belongs before ``end`` (the video's end, seconds) and close the audio reader."""
        try:
            self.mux_until(container, end)
        finally:
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()

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

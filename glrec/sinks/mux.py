"""Muxing packets into an FFmpeg output (file or URL) without re-encoding.

The output stream is described by parsing the encoder's first packet (which
carries the parameter sets in band) with FFmpeg's own parser, so packets from
any encoder (PyAV, NVENC) mux the same way. Both the file sink and the network
sink hold one :class:`Muxer`.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable

import av

from ..frame import Packet
from .stream_info import DescribesStream, StreamInfo

# FFmpeg demuxer that parses one raw packet of each codec (VP9 has no raw form: its packet goes in an IVF file).
_PROBE_FORMAT = {"h264": "h264", "hevc": "hevc", "mjpeg": "mjpeg", "gif": "gif", "vp9": "ivf"}


def _probe_bytes(codec: str, packet: bytes, size: tuple[int, int]) -> bytes:
    """What :data:`_PROBE_FORMAT`'s demuxer reads ``packet`` from: the packet itself, or a one-frame IVF file."""
    if codec != "vp9":
        return packet
    header = b"DKIF" + struct.pack("<HH4sHHIII", 0, 32, b"VP90", *size, 1, 1, 1) + bytes(4)
    return header + struct.pack("<IQ", len(packet), 0) + packet


class Muxer:
    """One video stream in an opened PyAV output container; counts what it muxed."""

    def __init__(
        self, container: av.container.OutputContainer, options: DescribesStream, *, codec_tag: str | None = None
    ) -> None:
        self.container = container
        self.options = options = StreamInfo.of(options)
        self.codec_tag = codec_tag  # the sample entry to write ('hvc1'), where the container's default is wrong
        self.time_base = 1 / options.rate
        self.packets = 0
        self.bytes_written = 0
        self._stream: av.video.stream.VideoStream | None = None
        # Called once the video stream exists, before the first packet: other streams (audio copied
        # from a video input) are added there, while the container header is still unwritten.
        self.after_stream: Callable[[], None] | None = None

    def _make_stream(self, first: Packet) -> av.video.stream.VideoStream:
        codec = self.options.codec
        probe = av.open(
            io.BytesIO(_probe_bytes(codec, first.data, self.options.encoded_size)), format=_PROBE_FORMAT[codec]
        )
        try:
            stream = self.container.add_stream_from_template(probe.streams.video[0])
        finally:
            probe.close()
        stream.time_base = self.time_base
        if self.codec_tag is not None:
            stream.codec_tag = self.codec_tag
        # Tag the stream with the conversion glrec did; bitstreams without colour
        # fields (JPEG) would otherwise leave the container saying "unknown".
        cc = stream.codec_context
        primaries, transfer, matrix = self.options.colour.h273
        cc.color_primaries, cc.color_trc, cc.colorspace = primaries, transfer, matrix
        cc.color_range = self.options.colour.av_range
        return stream

    def mux(self, p: Packet) -> None:
        """Mux one packet (raises PyAV's or the OS's error as is)."""
        if self._stream is None:
            self._stream = self._make_stream(p)
            if self.after_stream is not None:
                self.after_stream()
        pkt = av.Packet(p.data)
        pkt.pts, pkt.dts = p.pts, p.dts
        pkt.time_base = self.time_base
        # Each packet is one frame, shown for one frame time: with the duration a container's
        # length covers the last frame too (Matroska otherwise ends where the last frame starts).
        pkt.duration = 1
        pkt.is_keyframe = p.keyframe
        pkt.stream = self._stream
        self.container.mux(pkt)
        self.packets += 1
        self.bytes_written += len(p.data)

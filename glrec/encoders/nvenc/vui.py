"""Colour tags written into an encoder's own bitstream, for encoders that do not write them.

PyNvVideoCodec fills NVENC's VUI colour values but leaves the "present" flags at 0,
so NVENC writes no colour description into the SPS, and a raw ``.h264``/``.hevc``
file would carry none (the CPU path's x264/x265 write them). For AV1 its only
colour setting also marks the stream full range. glrec therefore leaves NVENC's
colour settings alone and rewrites the parameter sets with FFmpeg's
``h264_metadata`` / ``hevc_metadata`` / ``av1_metadata`` bitstream filters, which
set primaries, transfer, matrix and range and the flags that make them present.
"""

from __future__ import annotations

from typing import Any

from ...colour import ColourSpec
from ...errors import EncoderError
from ...frame import Packet


def filter_spec(codec: str, colour: ColourSpec) -> str:
    """The FFmpeg bitstream-filter string that tags ``codec`` packets with ``colour``."""
    primaries, transfer, matrix = colour.h273
    if codec == "av1":
        rng = "tv" if colour.range == "limited" else "pc"
        return (f"av1_metadata=color_primaries={primaries}:transfer_characteristics={transfer}:"
                f"matrix_coefficients={matrix}:color_range={rng}")  # fmt: skip
    if codec not in ("h264", "hevc"):
        raise EncoderError(f"No colour-tag filter for codec {codec}; expected h264, hevc or av1.")
    full = 1 if colour.range == "full" else 0
    return (f"{codec}_metadata=colour_primaries={primaries}:transfer_characteristics={transfer}:"
            f"matrix_coefficients={matrix}:video_full_range_flag={full}")  # fmt: skip


class VuiWriter:
    """Rewrite the parameter sets (SPS / sequence header) in keyframe packets to carry ``colour``.

    Everything else passes as it is: other units of those packets, and every other packet.

    >>> writer = VuiWriter("h264", ColourSpec())  # doctest: +SKIP
    >>> tagged = writer.write(packets)  # doctest: +SKIP
    """

    def __init__(self, codec: str, colour: ColourSpec) -> None:
        import av.bitstream

        self.spec = filter_spec(codec, colour)
        self._filter: Any = av.bitstream.BitStreamFilterContext(self.spec, codec)

    def write(self, packets: list[Packet]) -> list[Packet]:
        import av

        out = []
        for p in packets:
            if not p.keyframe:  # parameter sets come with keyframes only (NVENC repeats them on every IDR)
                out.append(p)
                continue
            try:
                (filtered,) = self._filter.filter(av.Packet(p.data))
            except (ValueError, av.FFmpegError) as exc:  # one packet in, one out: anything else is a bug here
                raise EncoderError(f"Writing colour tags ({self.spec}) failed on packet {p.pts}: {exc}") from exc
            out.append(Packet(bytes(filtered), p.pts, p.dts, p.keyframe))
        return out

"""What a sink knows of the stream it writes: the part of the stream's facts a container needs, no encoder knobs.

The stream's facts are stated once (:class:`glrec.video_facts.VideoFacts`, what every stage reads);
a sink is handed :meth:`StreamInfo.of` them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from ..colour import ColourSpec
from ..timebase import frame_rate


class DescribesStream(Protocol):
    """Anything a :class:`StreamInfo` can be read from (the stream's facts, the recorder's options, a StreamInfo)."""

    @property
    def codec(self) -> str: ...

    @property
    def encoded_size(self) -> tuple[int, int]: ...

    @property
    def fps(self) -> float: ...

    @property
    def pix_fmt(self) -> str: ...

    @property
    def colour(self) -> ColourSpec: ...

    @property
    def bframes(self) -> int | None: ...


@dataclass(frozen=True)
class StreamInfo:
    """The encoded stream as a sink sees it: codec, encoded size, exact rate, pixel format, colour, B-frames.

    >>> from glrec.options import VideoOptions
    >>> StreamInfo.of(VideoOptions.create((640, 360), 29.97)).rate
    Fraction(30000, 1001)
    """

    codec: str
    encoded_size: tuple[int, int]
    fps: float
    pix_fmt: str
    colour: ColourSpec
    bframes: int | None = None  # None: the encoder's default

    @property
    def rate(self) -> Fraction:
        """The exact frame rate (29.97 is 30000/1001), as the time base of every packet."""
        return frame_rate(self.fps)

    @classmethod
    def of(cls, source: DescribesStream) -> StreamInfo:
        """The description of ``source``'s stream (itself if it is one)."""
        if isinstance(source, StreamInfo):
            return source
        return cls(source.codec, source.encoded_size, source.fps, source.pix_fmt, source.colour, source.bframes)

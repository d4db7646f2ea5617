"""The facts of the stream a recording makes: one frozen description every stage reads (a ground type).

The front door checks the options once (:mod:`glrec.options`) and states the
stream they describe here: its picture size and encoded size, exact rate,
pixel format, colour, codec, whether it is live, and its B-frames. The plan,
the convert stage, the encoders and the sinks read these facts; no stage sees
another stage's options (a sink's own view of them is
:class:`~glrec.sinks.stream_info.StreamInfo`, made from these).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .colour import ColourSpec
from .timebase import frame_rate

#: The pixel formats whose chroma is subsampled 2x2: their encoded size is even.
SUBSAMPLED: frozenset[str] = frozenset({"yuv420p", "nv12"})


@dataclass(frozen=True)
class VideoFacts:
    """The stream as every stage sees it.

    ``size`` is the picture's, ``encoded_size`` the encoded picture's (the picture
    padded to even for 4:2:0 where ``pad`` was asked for; JPEG stores odd sizes as
    they are). ``fps`` is the rate as
    given and :attr:`rate` the exact rational every packet is timed by.

    >>> from glrec.options import VideoOptions
    >>> VideoOptions.create((641, 360), 29.97, pad=True).facts.encoded_size
    (642, 360)
    """

    codec: str
    size: tuple[int, int]
    encoded_size: tuple[int, int]
    fps: float
    pix_fmt: str
    colour: ColourSpec
    live: bool = False
    bframes: int | None = None  # None: the encoder's default

    @property
    def rate(self) -> Fraction:
        """The exact frame rate (29.97 is 30000/1001), as the time base of every packet."""
        return frame_rate(self.fps)

    @property
    def padded(self) -> bool:
        """The encoded picture is larger than the picture (odd sizes padded for 4:2:0)."""
        return self.encoded_size != self.size

    @property
    def plane_size(self) -> tuple[int, int]:
        """The size of the converted picture: the encoded size, even for 4:2:0 planes (2x2 chroma blocks).

        Larger than :attr:`encoded_size` only for a JPEG of odd size, whose chroma covers the odd edge: its
        planes are converted one row/column larger, the edge repeated, and its encoder takes the picture's part.
        """
        w, h = self.encoded_size
        if self.pix_fmt in SUBSAMPLED:
            return w + w % 2, h + h % 2
        return self.encoded_size

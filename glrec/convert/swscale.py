"""The convert stage on the host: packed RGB, RGBA or grey arrays to the CPU encoder's YUV with FFmpeg's swscale.

Where GL is software, written arrays skip GL (:mod:`glrec.sources.frames.direct`) and
this does what the GL convert shader does elsewhere: the matrix and range the
stream is tagged with, chroma averaged over 2x2 blocks (swscale's ``AREA``
filter), rows as they come (arrays are top row first already). The result is a
PyAV frame of its own, so the caller's array may be reused at once.
"""

from __future__ import annotations

import av
import numpy as np
from av.video.reformatter import ColorRange, Colorspace, Interpolation, VideoReformatter

from ..colour import ColourSpec

#: PyAV's names of the packed formats swscale reads, by channel count.
PACKED_FORMATS = {1: "gray", 3: "rgb24", 4: "rgba"}


def readable_in_place(array: np.ndarray) -> bool:
    """Whether swscale can read ``array`` (``H×W×C`` uint8) where it lies: rows forward, pixels packed."""
    c = array.shape[2]
    return array.dtype == np.uint8 and array.strides[0] > 0 and array.strides[1:] == (c, 1)


class SwsConverter:
    """Converts ``H×W×C`` uint8 arrays into ``av_format`` frames; keeps one swscale context between frames."""

    def __init__(self, av_format: str, colour: ColourSpec) -> None:
        self.av_format = av_format
        self._dst_colorspace = Colorspace.ITU709 if colour.matrix == "bt709" else Colorspace.ITU601
        self._dst_range = ColorRange.MPEG if colour.range == "limited" else ColorRange.JPEG
        self._reformatter = VideoReformatter()

    def convert(self, pixels: np.ndarray) -> av.VideoFrame:
        """``pixels`` (see :func:`readable_in_place`) as a new frame; swscale runs without the GIL."""
        c = pixels.shape[2]
        plane = pixels[:, :, 0] if c == 1 else pixels
        source = av.VideoFrame.from_numpy_buffer(plane, format=PACKED_FORMATS[c])  # a view: no copy
        return self._reformatter.reformat(
            source, format=self.av_format, src_color_range=ColorRange.JPEG, dst_colorspace=self._dst_colorspace,
            dst_color_range=self._dst_range, interpolation=Interpolation.AREA,
        )  # fmt: skip

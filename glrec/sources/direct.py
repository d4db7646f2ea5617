"""Host frames straight to the CPU encoder, for recordings where GL is software (Mesa llvmpipe).

There the "GPU" is the same CPU cores as everything else, and the GL convert
costs more than FFmpeg's swscale doing the same conversion, before the upload
and the readback around it (``benchmarks/frames_in.py`` measures both routes).
So with software GL and the CPU encoder reading host frames, ``write()``
converts each frame to the encoder's YUV with swscale
(:mod:`glrec.convert.swscale`) on the caller's thread, reading the caller's
array where it lies: that conversion is the one copy the frame needs (the
caller may reuse its array as soon as ``write()`` returns), and it runs while
the encode thread feeds x264 the frames before it. Frames swscale cannot read
in place (floats, 16-bit values, reversed rows, odd sizes to pad) are first
made 8-bit and padded into a scratch buffer kept between frames.
``array_convert="gl"`` keeps the GL route; ``"cpu"`` asks for this one.
"""

from __future__ import annotations

import logging

import numpy as np

from ..convert.swscale import SwsConverter, readable_in_place
from ..errors import ConfigError
from ..frame import HostFrame
from ..options import VideoOptions
from .frames import HostFrameIn
from .pack import Packer

log = logging.getLogger("glrec")


def direct_route(choice: str, *, cpu_encoder: bool, host_frames: bool, software_gl: bool) -> bool:
    """Whether host array frames skip GL (see the module docstring); ConfigError if ``cpu`` cannot be had."""
    if choice == "gl":
        return False
    possible = cpu_encoder and host_frames
    if choice == "cpu" and not possible:
        raise ConfigError(
            "array_convert 'cpu' hands host frames to the CPU encoder, but this recording encodes from CUDA "
            "frames or not on the CPU; use array_convert 'auto' or 'gl'."
        )
    return possible and (choice == "cpu" or software_gl)


class DirectFrames:
    """Makes encoder-ready frames (``av_format``, the encoded size) from checked host frames."""

    def __init__(self, video: VideoOptions, av_format: str) -> None:
        self.size = video.size
        self.encoded_size = video.encoded_size
        self._sws = SwsConverter(av_format, video.colour)
        self._packer = Packer()
        self._scratch: np.ndarray | None = None
        log.info("array frames: converted to %s by swscale as they are written (software GL)", av_format)

    def frame(self, item: HostFrameIn, index: int) -> HostFrame:
        array = item.array
        h, w = array.shape[:2]
        ew, eh = self.encoded_size
        if (ew, eh) != (w, h) or not readable_in_place(array):
            array = self._packed(array)
        return HostFrame(index, self._sws.av_format, ew, eh, np.empty(0, np.uint8), self._sws.convert(array))

    def _packed(self, array: np.ndarray) -> np.ndarray:
        """``array`` as 8 bits in the scratch buffer, padded to the encoded size by repeating the edge."""
        h, w, c = array.shape
        ew, eh = self.encoded_size
        if self._scratch is None or self._scratch.shape != (eh, ew, c):
            self._scratch = np.empty((eh, ew, c), np.uint8)
        data = self._scratch
        self._packer.into(data[:h, :w], array)
        if eh > h:  # odd sizes padded for 4:2:0 repeat the edge, as the GL convert does
            data[h:, :w] = data[h - 1 : h, :w]
        if ew > w:
            data[:, w:] = data[:, w - 1 : w]
        return data

"""Host frames straight to the CPU encoder, for recordings where GL is software (Mesa llvmpipe).

There the "GPU" is the same CPU cores as everything else, and the GL convert
costs more than FFmpeg's swscale doing the same conversion, before the upload
and the readback around it (``benchmarks/frames_in.py`` measures both routes).
So with software GL and the CPU encoder reading host frames, each frame is
copied once, converted to 8 bits and padded as asked, into a buffer of its own
(the caller may reuse its array as soon as ``write()`` returns), and the encode
thread converts it to YUV with swscale just before encoding: chroma averaged
over 2x2 blocks as the GL shader does, the matrix and range glrec tags.
``array_convert="gl"`` keeps the GL route; ``"cpu"`` asks for this one.
"""

from __future__ import annotations

import logging

import numpy as np

from ..errors import ConfigError
from ..frame import HostFrame
from ..options import VideoOptions
from .frames import HostFrameIn
from .pack import Packer

log = logging.getLogger("glrec")

#: HostFrame pixel formats of unconverted frames, by channel count (PyAV's names).
PACKED_FORMATS = {1: "gray", 3: "rgb24", 4: "rgba"}


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
    """Makes encoder-ready host frames (:data:`PACKED_FORMATS`) of the encoded size from checked frames."""

    def __init__(self, video: VideoOptions) -> None:
        self.size = video.size
        self.encoded_size = video.encoded_size
        self._packer = Packer()
        log.info("array frames: converted to %s by swscale on the encode thread (software GL)", video.pix_fmt)

    def frame(self, item: HostFrameIn, index: int) -> HostFrame:
        h, w, c = item.array.shape
        ew, eh = self.encoded_size
        data = np.empty((eh, ew, c), np.uint8)
        self._packer.into(data[:h, :w], item.array)
        if eh > h:  # odd sizes padded for 4:2:0 repeat the edge, as the GL convert does
            data[h:, :w] = data[h - 1 : h, :w]
        if ew > w:
            data[:, w:] = data[:, w - 1 : w]
        return HostFrame(index, PACKED_FORMATS[c], ew, eh, data)

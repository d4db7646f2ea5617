"""Host frames straight to the CPU encoder, for recordings where GL is software (Mesa llvmpipe).

There the "GPU" is the same CPU cores as everything else, and the GL convert
costs more than FFmpeg's swscale doing the same conversion, before the upload
and the readback around it (``benchmarks/frames_in.py`` measures both routes).
So with software GL and the CPU encoder reading host frames, written frames go
to the encoder as swscale's YUV (:mod:`glrec.convert.swscale`), converted on
whichever side has time for it:

- while the encoder keeps up (the encode queue has room: the caller's own work
  is the slower side), ``write()`` only copies the frame into a buffer of its
  own and the encode thread converts it, so the caller waits least;
- once the encoder is the slower side (the queue is full, so ``write()`` would
  wait for it anyway), ``write()`` converts the frame itself, reading the
  caller's array where it lies: one pass instead of a copy and a conversion.

Either way the caller may reuse its array as soon as ``write()`` returns, and
both give the same bytes. Frames swscale cannot read in place (floats, 16-bit
values, reversed rows, odd sizes to pad) are first made 8-bit and padded.
``array_convert="gl"`` keeps the GL route; ``"cpu"`` asks for this one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ...convert.swscale import PACKED_FORMATS, SwsConverter, readable_in_place
from ...errors import ConfigError
from ...frame import HostFrame
from ...video_facts import VideoFacts
from .to_uint8 import Packer
from .written import HostFrameIn

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
    """Makes encoder-ready frames of the encoded size from checked host frames (see the module docstring).

    ``av_format`` is the encoder's input format (its row's ``input_format``: the CPU encoder's
    :func:`glrec.encoders.cpu.limits.input_format`).
    Until :meth:`pace_by` names the encoder's backlog, every frame is copied for the encoder to convert.
    """

    def __init__(self, facts: VideoFacts, av_format: str) -> None:
        self.size = facts.size
        self.encoded_size = facts.encoded_size
        self._sws = SwsConverter(av_format, facts.colour)
        self._packer = Packer()
        self._scratch: np.ndarray | None = None
        self._encoder_behind: Callable[[], bool] = lambda: False
        log.info("array frames: converted to %s by swscale, no GL stage (software GL)", av_format)

    def pace_by(self, encoder_behind: Callable[[], bool]) -> None:
        """Convert frames in ``write()`` while ``encoder_behind()`` says the encoder is the slower side."""
        self._encoder_behind = encoder_behind

    def frame(self, item: HostFrameIn, index: int) -> HostFrame:
        array = item.array
        h, w, c = array.shape
        ew, eh = self.encoded_size
        fits = (ew, eh) == (w, h) and readable_in_place(array)
        if self._encoder_behind():
            pixels = array if fits else self._packed(array, self._reused(c))
            return HostFrame(index, self._sws.av_format, ew, eh, np.empty(0, np.uint8), self._sws.convert(pixels))
        copy = np.empty((eh, ew, c), np.uint8)  # the frame's own until the encoder has converted it
        if fits:
            np.copyto(copy, array)
        else:
            self._packed(array, copy)
        return HostFrame(index, PACKED_FORMATS[c], ew, eh, copy)

    def _reused(self, channels: int) -> np.ndarray:
        ew, eh = self.encoded_size
        if self._scratch is None or self._scratch.shape != (eh, ew, channels):
            self._scratch = np.empty((eh, ew, channels), np.uint8)
        return self._scratch

    def _packed(self, array: np.ndarray, data: np.ndarray) -> np.ndarray:
        """``array`` as 8 bits in ``data`` (the encoded size), padded by repeating the edge."""
        h, w = array.shape[:2]
        ew, eh = self.encoded_size
        self._packer.into(data[:h, :w], array)
        if eh > h:  # odd sizes padded for 4:2:0 repeat the edge, as the GL convert does
            data[h:, :w] = data[h - 1 : h, :w]
        if ew > w:
            data[:, w:] = data[:, w - 1 : w]
        return data

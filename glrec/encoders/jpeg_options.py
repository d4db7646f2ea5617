"""The JPEG encoders' own option (nvJPEG, the GL JPEG encoder, and the CPU encoder's mjpeg): the JPEG quality.

The table of nvJPEG and of the GL JPEG encoder, and a part of the CPU encoder's;
composed into the front door's keywords by :mod:`glrec.options`. The CPU
encoder refuses it for any other codec, naming the option to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._declare import flag, option
from .._values import _number
from .options import EncoderOptions

#: The JPEG quality when none is given.
DEFAULT_QUALITY = 90


@dataclass(frozen=True)
class JpegOptions(EncoderOptions):
    """JPEG settings (codec ``mjpeg``: nvJPEG, the GL JPEG encoder or the CPU's mjpeg; refused for other codecs)."""

    OWNER: ClassVar[str] = "quality is JPEG quality (codec mjpeg)"

    quality: int | None = option(
        None, f"JPEG quality 1-100 (codec mjpeg only; default {DEFAULT_QUALITY}); for h264/hevc/av1 use crf",
        _number("JPEG quality", 1, 100, integer=True, example="90"), flags=flag("quality"),
    )  # fmt: skip

    @property
    def jpeg_quality(self) -> int:
        return self.quality if self.quality is not None else DEFAULT_QUALITY


def quality_problem(codec: str, quality: int | None) -> str | None:
    """Why ``quality`` cannot apply to ``codec`` (None if it can): it is JPEG's 1-100 scale only.

    imageio's ``quality`` (0-10) has no defined meaning for H.264/HEVC/AV1 encoders, so glrec
    refuses it there and names the option that sets their quality instead.
    """
    if quality is None or codec == "mjpeg":
        return None
    return (f"quality {quality} is JPEG quality (codec mjpeg); {codec} takes crf for its quality "
            "(lower is better, e.g. crf 18 for high quality, 28 for small files), or qp or bitrate")  # fmt: skip

"""The JPEG encoders' own option (nvJPEG, and the CPU encoder's mjpeg): the JPEG quality.

Declared beside the JPEG encoders and composed into the front door's table by
:mod:`glrec.options`; any other codec refuses it, naming the option to use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._declare import OptionTable, flag, option
from .._values import _number

#: The JPEG quality when none is given.
DEFAULT_QUALITY = 90


@dataclass(frozen=True)
class JpegOptions(OptionTable):
    """JPEG settings (codec ``mjpeg``: nvJPEG or the CPU's mjpeg; refused for h264, hevc and av1)."""

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

"""The PNG encoder's own option: its compression level; its table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..._declare import flag, named, option
from ..._values import _number
from ..options import EncoderOptions

#: The level when ``png_compression`` is not set: zlib-ng's level 2. Declared here, not in the writer, so that
#: declaring the options imports no NumPy: the command line's start-up imports stay in the order its Ctrl-C test
#: interrupts (tests/test_signals.py; a KeyboardInterrupt inside a dataclass being declared becomes a RuntimeError).
DEFAULT_LEVEL = 2


@dataclass(frozen=True)
class PngOptions(EncoderOptions):
    """PNG settings (codec ``png``, image sequences such as ``frames_%06d.png``)."""

    OWNER: ClassVar[str] = "png_compression is the PNG encoder's level (codec png)"

    png_compression: int | None = option(
        None, f"PNG compression level 0 (stored) to 9 (smallest), codec png only (default {DEFAULT_LEVEL}: "
        "zlib-ng's fast level; the pixels are the same at every level)",
        _number("png_compression", 0, 9, integer=True, example="2"), flags=flag("png-compression"),
    )  # fmt: skip

    @property
    def level(self) -> int:
        return self.png_compression if self.png_compression is not None else DEFAULT_LEVEL


def png_stream_problem(codec: str, pix_fmt: str, matrix: str | None, colour_range: str | None) -> str | None:
    """Why the stream's format cannot be PNG's, or PNG's format another codec's (None if it fits): PNG keeps the
    rendered RGB as it is, so no YUV format, matrix or range applies to it, and rgb24 is PNG's alone."""
    if codec != "png" and pix_fmt == "rgb24":
        return f"pix_fmt rgb24 is PNG's (codec png); {codec} takes yuv420p, nv12 or yuv444p."
    if codec != "png":
        return None
    if pix_fmt not in ("rgb24", "rgba"):
        return f"PNG holds RGB, not {pix_fmt}: use pix_fmt rgb24 (the default for png) or rgba (alpha)."
    if matrix is not None or colour_range is not None:
        given = named("matrix" if matrix is not None else "colour_range", matrix or colour_range)
        return f"PNG keeps RGB as rendered, so no YUV matrix or range applies; drop {given}."
    return None

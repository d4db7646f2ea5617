"""The CPU encoders' own options (libx264, libx265, SVT-AV1, libvpx-vp9, mjpeg and gif through PyAV): their table.

The rate controls every video encoder has, JPEG quality for mjpeg, and their
own thread count; composed into the front door's keywords by
:mod:`glrec.options`. The registry refuses ``threads`` for any other encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..._declare import flag, option
from ..._values import _number
from ..jpeg_options import JpegOptions
from ..options import RateOptions


@dataclass(frozen=True)
class CpuOptions(RateOptions, JpegOptions):
    """The CPU encoders' settings (``--encoder cpu``; ``threads`` is refused for the other encoders)."""

    OWNER: ClassVar[str] = "threads is a setting of the CPU encoders (libx264, libx265, SVT-AV1, libvpx-vp9)"

    threads: int | None = option(
        None, "CPU encoder threads (default: the encoder picks, x264 1.5 per core)",
        _number("threads", 1, 256, integer=True, example="4"), flags=flag("threads"),
    )  # fmt: skip

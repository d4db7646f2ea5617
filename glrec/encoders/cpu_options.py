"""The CPU encoders' own options (libx264, libx265, SVT-AV1 through PyAV): their thread count.

Declared beside the CPU encoder and composed into the front door's table by
:mod:`glrec.options`; the plan refuses them for any other encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._declare import OptionTable, flag, option
from .._values import _number


@dataclass(frozen=True)
class CpuOptions(OptionTable):
    """The CPU encoders' settings (``--encoder cpu``; refused for the other encoders)."""

    OWNER: ClassVar[str] = "threads is a setting of the CPU encoders (libx264, libx265, SVT-AV1)"

    threads: int | None = option(
        None, "CPU encoder threads (default: the encoder picks, x264 1.5 per core)",
        _number("threads", 1, 256, integer=True, example="4"), flags=flag("threads"),
    )  # fmt: skip

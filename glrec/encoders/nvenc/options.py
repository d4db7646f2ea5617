"""NVENC's own options: its tuning and rate-control mode, and the PyNvVideoCodec keywords ``-x`` may set.

Declared here, beside the NVENC encoder, and composed into the front door's
table by :mod:`glrec.options`; the plan refuses them for any other encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ..._declare import flag, option
from ..._values import _choice
from ..options import RateOptions

Tuning = Literal["hq", "ll", "ull", "lossless"]
RateControl = Literal["vbr", "cbr", "constqp"]

#: ``CreateEncoder`` keywords of PyNvVideoCodec 2.2.4 that ``-x KEY=VALUE`` may set (names read from the
#: wheel's strings; the NVENC contract test sees temporalaq, aq, lookahead and gop, and every keyword
#: glrec sets itself, reach NVENC's configuration). Given after glrec's own settings, they win over them.
#: glrec refuses any other name rather than pass it on to be dropped.
NVENC_KEYS: tuple[str, ...] = (
    "aq", "bf", "bitrate", "constqp", "cq", "fps", "gop", "idrperiod", "initqp", "ldkfs", "lookahead", "maxbitrate",
    "multipass", "numrefl0", "numrefl1", "preset", "qmax", "qmin", "rc", "repeatspspps", "temporalaq", "tuning_info",
    "vbvbufsize", "vbvinit",
)  # fmt: skip


@dataclass(frozen=True)
class NvencOptions(RateOptions):
    """NVENC's settings (``--encoder nvenc``; refused for the other encoders)."""

    OWNER: ClassVar[str] = "tuning and rc are NVENC settings"

    tuning: Tuning | None = option(
        None, "NVENC tuning: hq, ll, ull or lossless", _choice("NVENC tuning", Tuning), flags=flag("tuning")
    )
    rc: RateControl | None = option(
        None, "NVENC rate control: vbr, cbr or constqp", _choice("NVENC rate control", RateControl), flags=flag("rc")
    )


def nvenc_keywords(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """``-x`` pairs as ``CreateEncoder`` keywords (names are case-insensitive), or ValueError naming an unknown one."""
    out = {}
    for key, value in pairs:
        name = key.lower()
        if name not in NVENC_KEYS:
            raise ValueError(f"NVENC has no keyword {key!r} that glrec can pass to PyNvVideoCodec. "
                             f"Valid -x keys for nvenc: {', '.join(NVENC_KEYS)}.")  # fmt: skip
        out[name] = value
    return out

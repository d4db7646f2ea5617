"""The option tables the encoders share: the escape hatch every encoder's table has, and the video rate controls.

An encoder's own table (``cpu/options.py``, ``nvenc/options.py``, and
:mod:`glrec.encoders.jpeg_options` for the JPEG encoders) builds on these; the
front door composes every row's table into one set of keywords
(:mod:`glrec.options`), and the registry refuses an option of a table the
chosen encoder's does not include, in that table's own words (``OWNER``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .._declare import OptionTable, flag, option
from .._values import _number, parse_bitrate, parse_encoder_options
from ..errors import ConfigError

MAX_GOP = 2**31 - 1  # the largest C int: FFmpeg's gop_size and NVENC's gopLength hold it


@dataclass(frozen=True)
class EncoderOptions(OptionTable):
    """What every encoder's table has: the options passed on as they are (an encoder without any refuses them)."""

    encoder_options: tuple[tuple[str, str], ...] = option(
        (), "passed to the encoder as is, after glrec's own settings (PyAV codec options, NVENC keywords)",
        parse_encoder_options, flags=("-x", "--encoder-option"), metavar="KEY=VALUE", repeat=True,
        accepts="Mapping[str, str] | Sequence[str | tuple[str, str]]",
    )  # fmt: skip


@dataclass(frozen=True)
class RateOptions(EncoderOptions):
    """How a video encoder spends its bits and spaces its keyframes (the CPU encoders and NVENC)."""

    OWNER: ClassVar[str] = "crf, qp, bitrate, preset, gop and bframes are settings of the video encoders"

    crf: float | None = option(
        None, "constant quality (x264 default 20, x265 24, SVT-AV1 35; lower is better)",
        _number("crf", 0, 63, example="20; 0 is lossless for h264"), flags=flag("crf"),
    )  # fmt: skip
    qp: int | None = option(
        None, "constant quantiser (0 is lossless for h264)",
        _number("qp", 0, 255, integer=True, example="0 for lossless h264, 20-30 typical"), flags=flag("qp"),
    )  # fmt: skip
    bitrate: int | None = option(
        None, "target bitrate, e.g. 8M or 2500k", parse_bitrate, flags=flag("bitrate"), accepts="int | str | None"
    )
    preset: str | None = option(
        None, "encoder preset (x264/x265 ultrafast..veryslow, default veryfast; SVT-AV1 0-13; NVENC p1-p7)", str,
        flags=flag("preset"),
    )  # fmt: skip
    gop: int | None = option(
        None, "frames between keyframes", _number("gop", 1, None, integer=True, example="60", cap=MAX_GOP),
        flags=flag("gop"),
    )  # fmt: skip
    bframes: int | None = option(
        None, "B-frames between references", _number("bframes", 0, 16, integer=True, example="0 or 2"),
        flags=flag("bframes"),
    )  # fmt: skip

    def check(self) -> None:
        if sum(x is not None for x in (self.crf, self.qp, self.bitrate)) > 1:
            raise ConfigError("Give at most one of crf, qp and bitrate: they are alternative rate controls.")

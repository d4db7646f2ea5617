"""The encoder registry: the list of rows, each in its encoder's own room, and what the plan asks of them.

On the model of the output registry (:mod:`glrec.sinks.registry`): each row
(:class:`~glrec.encoders.row.EncoderRow`) lives beside its encoder
(``cpu/row.py``, ``nvenc/row.py``, ...) and this module only lists them. The
plan (:mod:`glrec.pipeline.plan`) walks :data:`AUTO_ORDER` for
``encoder="auto"`` and uses nothing but the rows, :func:`unfit` and
:func:`request`; the front door composes its keywords from the rows' option
tables (:func:`option_tables`). A new encoder is a room of its own and one line
in :data:`ROWS`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .._declare import named
from ..errors import ConfigError
from ..video_facts import VideoFacts
from .options import EncoderOptions
from .row import EncodeRequest, EncoderRow

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice

#: Every encoder's row, as "module:attribute", in the order ``glrec info`` lists them.
ROWS: tuple[str, ...] = (
    "glrec.encoders.nvenc.row:ROW",
    "glrec.encoders.nvjpeg.row:ROW",
    "glrec.encoders.cpu.row:ROW",
    "glrec.encoders.gl_jpeg.row:ROW",
    "glrec.encoders.png.row:ROW",
)


def _load(spec: str) -> EncoderRow:
    module, _, name = spec.partition(":")
    row: EncoderRow = getattr(importlib.import_module(module), name)
    return row


#: Every encoder by name.
ENCODERS: dict[str, EncoderRow] = {row.name: row for row in map(_load, ROWS)}
#: What ``encoder="auto"`` tries, first to last: the first row that fits the options and runs here is taken.
#: For MJPEG the GL JPEG encoder comes first on hardware GL (it never switches to a CUDA context), nvJPEG next,
#: the CPU last; on software GL auto passes the GL encoder over (its ``auto_problem``). PNG has one encoder.
AUTO_ORDER: tuple[str, ...] = ("nvenc", "gl", "nvjpeg", "cpu", "png")


def encoder_row(name: str) -> EncoderRow:
    """The row of encoder ``name``, or ConfigError listing the encoders."""
    row = ENCODERS.get(name)
    if row is None:
        raise ConfigError(f"Unknown encoder {name!r}. Valid: auto, {', '.join(sorted(ENCODERS))}.")
    return row


def option_tables() -> tuple[type[EncoderOptions], ...]:
    """The rows' own option tables, each once, in row order: what the front door composes."""
    return tuple(dict.fromkeys(row.options for row in ENCODERS.values()))


def _owner(name: str) -> str:
    """Whose option ``name`` is, in the words of the table that declares it."""
    for table in option_tables():
        for cls in table.__mro__:
            if name in inspect.get_annotations(cls):
                return str(cls.__dict__.get("OWNER") or f"{name} is an option of {cls.__name__}")
    return f"{name} is not an encoder option"


def foreign(row: EncoderRow, given: Mapping[str, object]) -> str | None:
    """The first option in ``given`` that ``row``'s table does not hold, named with its owner (None if none)."""
    own = {f.name for f in fields(row.options)}
    for name, value in given.items():
        if name not in own:
            flag = named(name)
            return f"{_owner(name)} ({flag} {value!r} given), which {row.label} does not take; drop {flag}"
    return None


def request(
    row: EncoderRow,
    facts: VideoFacts,
    given: Mapping[str, object],
    *,
    raw_output: bool = False,
    device: CudaDevice | None = None,
) -> EncodeRequest[Any]:
    """What ``row`` is asked (and opened) with: the facts, its own table made of ``given``, the device."""
    return EncodeRequest(facts, row.own_options(dict(given)), device, raw_output)


def unfit(row: EncoderRow, facts: VideoFacts, given: Mapping[str, object], *, raw_output: bool) -> str | None:
    """Why the stream and the options given do not fit ``row``, whatever the machine (None if they do).

    ``given`` holds the encoder options set to other than their defaults, by name.
    """
    own = row.refuse(request(row, facts, given, raw_output=raw_output))  # its own words first, where it has them
    if own is not None:
        return own
    label = row.label[0].upper() + row.label[1:]
    if facts.codec not in row.codecs:
        takers = " or ".join(r.name for r in ENCODERS.values() if facts.codec in r.codecs)
        codec = facts.codec
        return f"{label} encodes {', '.join(row.codecs)}, not {codec}; for {codec} use encoder {takers} (or auto)."
    if facts.pix_fmt not in row.pix_fmts:
        return f"{label} takes pix_fmt {', '.join(row.pix_fmts)}, not {facts.pix_fmt}."
    return foreign(row, given)


def describe() -> str:
    """One line per encoder, for ``--help`` and ``glrec info``."""
    return "; ".join(f"{r.name}: {', '.join(r.codecs)} ({r.note})" for r in ENCODERS.values())


__all__ = ["AUTO_ORDER", "ENCODERS", "ROWS", "EncodeRequest", "EncoderRow", "describe", "encoder_row", "foreign",
           "option_tables", "request", "unfit"]  # fmt: skip

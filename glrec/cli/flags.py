"""The command line's side of the option declarations: each table's flags, and the values a command line gave.

The declarations (:mod:`glrec._declare`, the tables of :mod:`glrec.options`)
hold each option's flag spelling, help and parser; here they become argparse
arguments, so every subcommand accepts what the Python API accepts, with the
same defaults (argparse stays in :mod:`glrec.cli`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import MISSING
from typing import Any

from .._declare import declared, shown
from ..options import LengthOptions, PipelineOptions, VideoOptions

#: The order of the encoding flags in ``--help``: what to record (size, rate, codec, encoder), then how much quality,
#: then the picture's format, then the settings of one encoder; the escape hatch (``-x``) last. Options not
#: named here keep their declaration order after these.
ENCODING_ORDER = ("size", "fps", "codec", "encoder", "crf", "qp", "bitrate", "quality", "preset", "gop", "bframes",
                  "pix_fmt", "matrix", "colour_range", "pad")  # fmt: skip
_LAST = ("encoder_options",)


def _ordered(table: type) -> list[tuple[Any, Any]]:
    options = declared(table)
    rank = {name: i for i, name in enumerate(ENCODING_ORDER)}
    first = sorted((o for o in options if o[0].name in rank), key=lambda o: rank[o[0].name])
    rest = [o for o in options if o[0].name not in rank and o[0].name not in _LAST]
    return first + rest + [o for o in options if o[0].name in _LAST]


def add_flags(
    parser: argparse.ArgumentParser,
    *tables: type,
    title: str | None = None,
    help_overrides: Mapping[str, str] | None = None,
    exclude: tuple[str, ...] = (),
) -> None:
    """Add every option of ``tables`` that has a flag; values stay None unless given (defaults live here).

    ``help_overrides`` replaces an option's help for one command (e.g. what no length means there);
    ``exclude`` leaves out options the command cannot use (``glrec serve`` has no JPEG ``--quality``).
    """
    group = parser.add_argument_group(title) if title else parser
    for table in tables:
        for f, spec in _ordered(table):
            if not spec.flags or f.name in exclude:
                continue
            default = "" if f.default in (None, (), MISSING) else f" (default {shown(f.default)})"
            text = (help_overrides or {}).get(f.name, spec.help + default)
            kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": text}
            if spec.boolean:
                kwargs["action"] = "store_true"
            else:
                kwargs["metavar"] = spec.metavar or f.name.upper()
                if spec.repeat:
                    kwargs["action"] = "append"
            group.add_argument(*spec.flags, **kwargs)


def values_from_args(args: argparse.Namespace, *tables: type) -> dict[str, Any]:
    """The options of ``tables`` given on the command line (unset ones left out, so defaults apply)."""
    out: dict[str, Any] = {}
    for table in tables:
        for f, spec in declared(table):
            if spec.flags and getattr(args, f.name, None) is not None:
                out[f.name] = getattr(args, f.name)
    return out


def add_recording_flags(
    p: argparse.ArgumentParser,
    *,
    length_help: dict[str, str] | None = None,
    encoding_help: dict[str, str] | None = None,
    exclude: tuple[str, ...] = (),
) -> None:
    """The flags every recording command shares, derived from :mod:`glrec.options` (less ``exclude``)."""
    add_flags(p, LengthOptions, title="length", help_overrides=length_help)
    add_flags(p, VideoOptions, title="encoding", help_overrides=encoding_help, exclude=exclude)
    add_flags(p, PipelineOptions, title="pipeline (GPU path, devices, queues)")


def recording_options(args: argparse.Namespace) -> dict[str, Any]:
    """Recorder keywords from the flags of :func:`add_recording_flags` (only those given)."""
    return values_from_args(args, VideoOptions, PipelineOptions)

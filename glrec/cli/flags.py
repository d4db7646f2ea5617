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


def add_flags(
    parser: argparse.ArgumentParser,
    *tables: type,
    title: str | None = None,
    help_overrides: Mapping[str, str] | None = None,
) -> None:
    """Add every option of ``tables`` that has a flag; values stay None unless given (defaults live here).

    ``help_overrides`` replaces an option's help for one command (e.g. what no length means there).
    """
    group = parser.add_argument_group(title) if title else parser
    for table in tables:
        for f, spec in declared(table):
            if not spec.flags:
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


def add_recording_flags(p: argparse.ArgumentParser, *, length_help: dict[str, str] | None = None) -> None:
    """The flags every recording command shares, derived from :mod:`glrec.options`."""
    add_flags(p, LengthOptions, title="length", help_overrides=length_help)
    add_flags(p, VideoOptions, title="encoding")
    add_flags(p, PipelineOptions, title="pipeline (GPU path, devices, queues)")


def recording_options(args: argparse.Namespace) -> dict[str, Any]:
    """Recorder keywords from the flags of :func:`add_recording_flags` (only those given)."""
    return values_from_args(args, VideoOptions, PipelineOptions)

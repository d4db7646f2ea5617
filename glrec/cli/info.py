"""``glrec info``: GL, EGL and CUDA devices, and what each encoder of the registry has here."""

from __future__ import annotations

import argparse
from typing import Any


def _cmd_info(args: argparse.Namespace) -> int:
    from ..diagnostics.info import info_lines

    print("\n".join(info_lines()))
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    info = subparsers.add_parser("info", parents=[common], help="GL, EGL and CUDA devices, and which encoders open")
    info.set_defaults(func=_cmd_info)

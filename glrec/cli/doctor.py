"""``glrec doctor``: every stage checked end to end (:mod:`glrec.diagnostics.doctor`), printed with remedies."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from ..diagnostics.common import FAIL, PASS
from ..diagnostics.doctor import run_doctor


def _cmd_doctor(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="glrec-doctor-") as tmp:
        checks = run_doctor(Path(tmp))
    required = {r.lower() for r in args.require}
    width = max(len(c.name) for c in checks)
    failed = False
    for c in checks:
        status = c.status
        if c.name.lower() in required and status != PASS:
            status, failed = FAIL, True
        failed |= status == FAIL
        print(f"{c.name:<{width}}  {status:<4}  {c.detail}")
        if c.remedy and status != PASS:
            print(f"{'':<{width}}        -> {c.remedy}")
    for name in sorted(required - {c.name.lower() for c in checks}):
        failed = True
        print(f"{name:<{width}}  {FAIL:<4}  required, but this machine has no such check")
    print("doctor: " + ("problems found (see FAIL lines)" if failed else "all available stages work"))
    return 1 if failed else 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    doctor = subparsers.add_parser("doctor", parents=[common], help="check every stage end to end, with remedies")
    doctor.add_argument("--require", action="append", default=[], metavar="CHECK",
                        help="treat a check that is n/a as a failure, e.g. --require nvenc")  # fmt: skip
    doctor.set_defaults(func=_cmd_doctor)

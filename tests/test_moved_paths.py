"""Module paths from before glrec.gl / glrec.cuda still import (the same module objects), with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from glrec._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_new_module_and_warns(old: str) -> None:
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({MOVED[old]!r})\n"
        "assert old is new, (old, new)\n"
        f"assert any({MOVED[old]!r} in str(x.message) and x.category is DeprecationWarning for x in w), w\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_every_new_home_exists() -> None:
    for new in MOVED.values():
        importlib.import_module(new)

"""Module paths from before glrec.gl / glrec.cuda still import (the same module objects), with a warning."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from glrec._moved import MOVED

# Each old path is imported as a program that names it first would: with no glrec module imported yet.
# One child checks them all (an interpreter each took 24 s of the suite, 70 starts of numpy, PyAV and the
# rest): before each path it forgets every glrec module and the finder that glrec's import installs, so
# the old path is found, and its new home imported, from nothing of glrec, as in a fresh interpreter.
_CHILD = """
import importlib, json, sys, traceback, warnings

def forget_glrec():
    for name in [n for n in sys.modules if n == "glrec" or n.startswith("glrec.")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != "glrec._moved"]

moved = json.loads(sys.argv[1])
failures = {}
for old, new in moved.items():
    forget_glrec()
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        home = importlib.import_module(new)
        assert module is home, (module, home)
        assert any(new in str(x.message) and x.category is DeprecationWarning for x in w), w
    except BaseException:
        failures[old] = traceback.format_exc()
print(json.dumps(failures))
"""


@pytest.fixture(scope="module")
def failures() -> dict[str, str]:
    """Old path -> the traceback of its check, for each that failed (in one child, see _CHILD)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(MOVED)], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_new_module_and_warns(old: str, failures: dict[str, str]) -> None:
    assert old not in failures, failures[old]


def test_every_new_home_exists() -> None:
    for new in MOVED.values():
        importlib.import_module(new)

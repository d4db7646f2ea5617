"""The house's rules that a reader of the code relies on (issue 31): argparse in the CLI only, faces only faces."""

from __future__ import annotations

import ast
from pathlib import Path

import glrec

GLREC = Path(glrec.__file__).resolve().parent


def _modules() -> list[Path]:
    return sorted(GLREC.rglob("*.py"))


def test_only_the_cli_imports_argparse():
    for path in _modules():
        if path.relative_to(GLREC).parts[0] == "cli":
            continue
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "argparse" not in names, f"{path.relative_to(GLREC)} imports argparse: the command line lives in cli/"


def test_package_faces_only_hand_names_on():
    """An ``__init__.py`` defines no function or class (a PEP 562 ``__getattr__`` that imports lazily aside)."""
    for path in GLREC.rglob("__init__.py"):
        tree = ast.parse(path.read_text())
        defined = [
            n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name != "__getattr__"
        ]
        assert not defined, f"{path.relative_to(GLREC.parent)} defines {defined}: move them to a module of their own"


def test_the_front_door_verbs_are_exported():
    for verb in ("record", "write_video", "transcode", "Recorder"):
        assert verb in glrec.__all__ and callable(getattr(glrec, verb)), verb
    from glrec._transcode import transcode

    assert glrec.transcode is transcode  # the module of the verb is private, the verb is not

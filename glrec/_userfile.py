"""Importing a user's Python file (a scene, a processing function) as a module, with errors that name it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .errors import GlrecError


def import_user_file(
    path: Path, prefix: str, error: type[GlrecError], what: str, *, once: bool = False, keep_failed: bool = False
) -> ModuleType:
    """Run ``path`` as module ``prefix<hash of its path>``; a failure raises ``error`` naming ``what`` and the file.

    ``once``: a file imported before is not run again (as Python treats modules). ``keep_failed``
    leaves a module whose import raised in ``sys.modules`` (how scene files have always loaded).
    """
    module_name = f"{prefix}{abs(hash(str(path.resolve())))}"
    if once and module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise error(f"Cannot import {str(path)!r} as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        if not keep_failed:
            del sys.modules[module_name]
        raise error(f"Importing {what} {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    return module


def inside_folder(path: Path, folder: Path) -> bool:
    """True when ``path`` (links followed) lies in ``folder`` (links followed) or below it.

    The rule for names inside files that came from elsewhere (a dataset spec's scene, a
    Shadertoy export's media): they may name only what sits beside them.
    """
    try:
        where, base = path.resolve(), folder.resolve()
    except (OSError, RuntimeError):  # a link loop, a name too long
        return False
    return where == base or base in where.parents

"""Module paths from before the platform packages (glrec.gl, glrec.cuda) keep importing, with a warning.

``import glrec.leaks`` or ``from glrec.interop.pool import DeviceFrame`` in a user's
program finds the module at its new home (``glrec.gl.leaks``, ``glrec.cuda.pool``)
and warns once with the new path; the module object is the same, so patches and
``isinstance`` checks see one module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: Old dotted path -> where the module lives now.
MOVED: dict[str, str] = {
    "glrec.context": "glrec.gl.context",
    "glrec.egl": "glrec.gl.egl",
    "glrec.osmesa": "glrec.gl.osmesa",
    "glrec.borrowed": "glrec.gl.borrowed",
    "glrec.devices": "glrec.gl.devices",
    "glrec.glstate": "glrec.gl.state",
    "glrec.glsl": "glrec.gl.glsl",
    "glrec.leaks": "glrec.gl.leaks",
    "glrec.target": "glrec.gl.target",
    "glrec.interop.cuda": "glrec.cuda.driver",
    "glrec.interop.vmm": "glrec.cuda.vmm",
    "glrec.interop.dlpack": "glrec.cuda.dlpack",
    "glrec.interop.pool": "glrec.cuda.pool",
    "glrec.capture": "glrec.sources.capture",
    "glrec.inputs": "glrec.events",
    "glrec.sources.inputs": "glrec.sources.media",
    "glrec.gym_mujoco": "glrec.gym.mujoco",
    "glrec.convert.layout": "glrec.layout",
    "glrec.sinks.timing": "glrec.sinks.frame_times",
    "glrec.sources.pack": "glrec.sources.to_uint8",
}


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; import it from there.", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module at its new path is already executed."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        return None if new is None else importlib.machinery.ModuleSpec(name, _Loader(new))


def install() -> None:
    """Add the finder once (``import glrec`` does this)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())

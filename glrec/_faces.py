"""Package faces that import what they hand on at first use (PEP 562), so a face costs nothing to import.

An encoder's room (:mod:`glrec.encoders.cpu`, say) re-exports its encoder, whose
module imports PyAV or moderngl; the registry imports the room's row at once, so
the face must not import the encoder until someone asks for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps each name to the submodule that defines it.

    >>> __getattr__ = lazy_names(__name__, {"CpuEncoder": "encoder"})  # doctest: +SKIP
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__

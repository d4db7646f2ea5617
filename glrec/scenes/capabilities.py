"""What a scene may offer beyond :class:`~glrec.scenes.base.Scene`, as typed protocols.

Each capability is one small protocol, checked with ``isinstance`` (they are
``runtime_checkable``), so a feature asks "is this scene Randomisable?" in one
place instead of probing attributes with ``getattr``:

- :class:`WritesPasses`: lists the ground-truth passes it writes (``passes``); a
  scene without it writes colour only.
- :class:`Randomisable`: takes a dataset spec's ``[params]``: ``parameters``
  (name -> default, optional) and ``randomise(params, rng)``.
- :class:`ReportsParams`: ``params``, the values in effect after ``randomise`` (its
  defaults and what it drew), merged under the spec's values in ``meta.json``.
- :class:`Classified`: names its class ids (``classes``).
- :class:`Annotated`: ``annotations(t)`` returns JSON-ready ``camera`` and ``objects``.
- :class:`Finite`: ``done(t)`` says it has nothing left to show at ``t`` (a video
  input that ended); live streams stop there.
- :class:`~glrec.events.Interactive`: ``on_input(event)`` takes viewer input.

The dataset contract is described with examples in :mod:`glrec.scenes.passes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..events import Interactive


@runtime_checkable
class WritesPasses(Protocol):
    passes: Sequence[str]


@runtime_checkable
class Randomisable(Protocol):
    def randomise(self, params: dict[str, Any], rng: np.random.Generator) -> None: ...


@runtime_checkable
class Parameterised(Protocol):
    parameters: Mapping[str, Any]


@runtime_checkable
class ReportsParams(Protocol):
    params: Mapping[str, Any]


@runtime_checkable
class Classified(Protocol):
    classes: Sequence[str]


@runtime_checkable
class Annotated(Protocol):
    def annotations(self, t: float) -> dict[str, Any]: ...


@runtime_checkable
class Finite(Protocol):
    def done(self, t: float) -> bool: ...


def passes_of(scene: object) -> tuple[str, ...]:
    """The passes ``scene`` writes: its ``passes``, or colour alone."""
    return tuple(scene.passes) if isinstance(scene, WritesPasses) else ("rgb",)


def parameters_of(scene: object) -> Mapping[str, Any] | None:
    """The parameters a spec may set on ``scene`` (name -> default), or None where it does not list them."""
    return scene.parameters if isinstance(scene, Parameterised) else None


def params_in_effect(scene: object) -> dict[str, Any]:
    """The values ``scene`` says are in effect (its ``params``), or none."""
    return dict(scene.params) if isinstance(scene, ReportsParams) else {}


def classes_of(scene: object) -> tuple[str, ...]:
    return tuple(scene.classes) if isinstance(scene, Classified) else ()


__all__ = [
    "Annotated",
    "Classified",
    "Finite",
    "Interactive",
    "Parameterised",
    "Randomisable",
    "ReportsParams",
    "WritesPasses",
    "classes_of",
    "parameters_of",
    "params_in_effect",
    "passes_of",
]

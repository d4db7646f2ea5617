"""Stage timing: a seam for profilers (``glrec bench``) to time the stages of a running pipeline.

A timer is a callable returning a context manager; the stage's methods run
inside it. Stage names: ``convert`` (``run``), ``handoff`` (``submit``,
``drain``), ``encode`` (``encode``, ``encode_batch``, ``flush``), ``mux`` (``write``, ``close``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

Timer = Callable[[], AbstractContextManager[Any]]
StageTimers = Mapping[str, Timer]
T = TypeVar("T")

#: The methods each stage's timer covers.
STAGE_METHODS: dict[str, tuple[str, ...]] = {
    "convert": ("run",),
    "handoff": ("submit", "drain"),
    "encode": ("encode", "encode_batch", "flush"),
    "mux": ("write", "close"),
}


class _Timed:
    """Forwards everything to ``inner``; the methods named in ``methods`` run inside ``timer()``."""

    def __init__(self, inner: object, timer: Timer, methods: tuple[str, ...]) -> None:
        self._inner = inner
        self._timer = timer
        self._methods = methods

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in self._methods:
            return attr

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            with self._timer():
                return attr(*args, **kwargs)

        return timed_call


def timed(stage_name: str, stage: T, timers: StageTimers) -> T:
    """``stage`` with its methods timed by ``timers[stage_name]`` (``stage`` itself when no timer is given)."""
    timer = timers.get(stage_name)
    if timer is None:
        return stage
    return _Timed(stage, timer, STAGE_METHODS[stage_name])  # type: ignore[return-value]

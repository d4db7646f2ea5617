"""Viewer input: the messages a viewer may send, their validation, and delivery to the scene.

Scenes opt in by having an ``on_input(event)`` method (:class:`Interactive`).
It is called on the render thread, before the next frame renders, once per
event, in arrival order. Events come from every connected viewer.

A viewer sends JSON text messages; anything else is dropped and counted, and
nothing in a message is ever executed or used as a name to look up:

=========  ==========================================================================
type       fields
=========  ==========================================================================
pointer    ``action`` (down, move, up), ``x``, ``y`` (0..1 from the picture's top-left),
           ``buttons`` (0..31, as DOM ``MouseEvent.buttons``: 1 left, 2 right, 4 middle),
           optional ``mods``
wheel      ``x``, ``y``, ``dx``, ``dy`` (pixels, |d| <= 10000), optional ``mods``
key        ``action`` (down, up), ``key`` (DOM ``KeyboardEvent.key``, 1-32 characters),
           optional ``code`` (0-32 characters), optional ``mods``
ping       ``t`` (the viewer's clock in ms); answered with a pong for clock-offset estimates
keyframe   no fields; asks the encoder for a keyframe (the viewer lost its place)
=========  ==========================================================================

``mods`` is a bitmask 0..15: 1 shift, 2 ctrl, 4 alt, 8 meta.

>>> parse_message('{"type": "pointer", "action": "down", "x": 0.5, "y": 0.5, "buttons": 1}')
InputEvent(kind='pointer', action='down', x=0.5, y=0.5, buttons=1, dx=0.0, dy=0.0, key='', code='', mods=0, viewer=0)
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import SceneError

log = logging.getLogger("glrec")

#: Largest message a viewer may send, in bytes (the server closes a connection that sends more).
MAX_MESSAGE_BYTES = 1024


@dataclass(frozen=True)
class InputEvent:
    """One validated mouse, wheel or keyboard event from a viewer.

    ``x``/``y`` are in 0..1 from the picture's top-left corner, whatever the
    viewer's window size. ``viewer`` numbers the connection it came from.
    """

    kind: Literal["pointer", "wheel", "key"]
    action: str = ""  # pointer: down, move, up; key: down, up; wheel: ""
    x: float = 0.0
    y: float = 0.0
    buttons: int = 0
    dx: float = 0.0
    dy: float = 0.0
    key: str = ""
    code: str = ""
    mods: int = 0
    viewer: int = 0


@dataclass(frozen=True)
class Ping:
    """A viewer's clock reading (ms), to be echoed with the server's clock."""

    t: float


@dataclass(frozen=True)
class KeyframeRequest:
    """A viewer asks for a keyframe."""


Message = InputEvent | Ping | KeyframeRequest


@runtime_checkable
class Interactive(Protocol):
    """A scene that takes viewer input: ``on_input(event)`` runs on the render thread before the next frame.

    >>> class Clicker:
    ...     clicks = 0
    ...     def on_input(self, event):
    ...         if event.kind == "pointer" and event.action == "down":
    ...             self.clicks += 1
    """

    def on_input(self, event: InputEvent) -> None:
        """Called on the render thread, before the next frame, with each input event from a viewer."""


class InputRejected(ValueError):
    """A viewer message failed validation; ``reason`` is a short category for counting."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {  # type: (required, optional)
    "pointer": (frozenset({"action", "x", "y", "buttons"}), frozenset({"mods"})),
    "wheel": (frozenset({"x", "y", "dx", "dy"}), frozenset({"mods"})),
    "key": (frozenset({"action", "key"}), frozenset({"code", "mods"})),
    "ping": (frozenset({"t"}), frozenset()),
    "keyframe": (frozenset(), frozenset()),
}
_ACTIONS = {"pointer": ("down", "move", "up"), "key": ("down", "up")}


def _number(value: Any, lo: float, hi: float, name: str) -> float:
    # bool is an int subclass; true/false is never a coordinate.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputRejected(f"bad {name}")
    if not lo <= value <= hi:
        raise InputRejected(f"{name} out of range")
    return float(value)


def _integer(value: Any, lo: int, hi: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputRejected(f"bad {name}")
    return value


def _text(value: Any, lo: int, hi: int, name: str) -> str:
    if not isinstance(value, str) or not lo <= len(value) <= hi or not value.isprintable():
        raise InputRejected(f"bad {name}")
    return value


def parse_message(data: str | bytes) -> Message:
    """Validate one viewer message and return it as an event, or raise :class:`InputRejected`."""
    if isinstance(data, bytes):
        raise InputRejected("binary message")
    if len(data) > MAX_MESSAGE_BYTES:
        raise InputRejected("too large")
    try:
        msg = json.loads(data)
    except (ValueError, RecursionError):
        raise InputRejected("not json") from None
    if not isinstance(msg, dict):
        raise InputRejected("not an object")
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise InputRejected("unknown type")
    required, optional = _FIELDS[kind]
    keys = set(msg) - {"type"}
    if not required <= keys or not keys <= required | optional:
        raise InputRejected(f"wrong fields for {kind}")
    if kind == "ping":
        return Ping(_number(msg["t"], 0, 1e15, "t"))
    if kind == "keyframe":
        return KeyframeRequest()
    action = msg.get("action", "")
    if kind in _ACTIONS and action not in _ACTIONS[kind]:
        raise InputRejected(f"bad action for {kind}")
    mods = _integer(msg.get("mods", 0), 0, 15, "mods")
    if kind == "key":
        key, code = _text(msg["key"], 1, 32, "key"), _text(msg.get("code", ""), 0, 32, "code")
        return InputEvent("key", action, key=key, code=code, mods=mods)
    x, y = _number(msg["x"], 0, 1, "x"), _number(msg["y"], 0, 1, "y")
    if kind == "wheel":
        dx, dy = _number(msg["dx"], -1e4, 1e4, "dx"), _number(msg["dy"], -1e4, 1e4, "dy")
        return InputEvent("wheel", x=x, y=y, dx=dx, dy=dy, mods=mods)
    return InputEvent("pointer", action, x=x, y=y, buttons=_integer(msg["buttons"], 0, 31, "buttons"), mods=mods)


class InputQueue:
    """Validated events on their way from the network thread to the render thread (bounded).

    When the render thread falls behind by more than ``maxsize`` events, new events
    are dropped and counted rather than stored.
    """

    def __init__(self, maxsize: int = 256) -> None:
        self._queue: queue.Queue[InputEvent] = queue.Queue(maxsize=maxsize)
        self.delivered = 0
        self.dropped = 0
        self.rejected: Counter[str] = Counter()  # validation failures by reason
        self._lock = threading.Lock()

    def reject(self, reason: str) -> None:
        """Count a viewer message dropped for ``reason`` (shown in ``/stats`` and the summary); it is never executed."""
        with self._lock:
            self.rejected[reason] += 1

    def put(self, event: InputEvent, viewer: int = 0) -> bool:
        """Queue ``event`` (from ``viewer``); False if the queue is full and it was dropped."""
        try:
            self._queue.put_nowait(replace(event, viewer=viewer))
            return True
        except queue.Full:
            with self._lock:
                self.dropped += 1
            return False

    def dispatch(self, scene: object) -> int:
        """Deliver every queued event to ``scene.on_input`` (render thread); return how many."""
        n = 0
        handler = scene.on_input if isinstance(scene, Interactive) else None
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                break
            n += 1
            if handler is None:
                continue  # the scene did not opt in; events are consumed, never queued forever
            try:
                handler(event)
            except Exception as exc:
                raise SceneError(
                    f"Scene {type(scene).__name__}.on_input({event}) raised {type(exc).__name__}: {exc}"
                ) from exc
        self.delivered += n
        return n

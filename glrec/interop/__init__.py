"""Handoffs between GL and the encoder: host PBO readback, CUDA register, CUDA shared memory.

Each runs after the convert stage and has one interface, :class:`Handoff`:
``before_frame()`` is called before a frame's GL work is issued (a handoff
that paces GL against its consumer waits there), ``submit(index)`` queues the
convert stage's current planes as frame ``index`` and returns the frames that
completed, ``drain()`` returns the rest, oldest first. Host frames are
:class:`~glrec.frame.HostFrame`; CUDA frames are :class:`~glrec.cuda.pool.DeviceFrame`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..frame import Frame
from .host import HostReadback


class Handoff(Protocol):
    """The handoff stage."""

    kind: str  # "host", "register" or "shared"

    def before_frame(self) -> None:
        """Before a frame's GL work is issued: where the handoff paces GL against its consumer, wait here."""

    def submit(self, index: int) -> Sequence[Frame]: ...

    def drain(self) -> Sequence[Frame]: ...

    def release(self) -> None: ...


__all__ = ["Frame", "Handoff", "HostReadback"]

"""Handoffs between GL and the encoder: host PBO readback, CUDA register, CUDA shared memory.

Each runs after the convert stage and has one interface, :class:`Handoff`:
``submit(index)`` queues the convert stage's current planes as frame ``index``
and returns the frames that completed, ``drain()`` returns the rest, oldest
first. Host frames are :class:`~glrec.frame.HostFrame`; CUDA frames are
:class:`~glrec.cuda.pool.DeviceFrame`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, Union

from ..frame import HostFrame
from .host import HostReadback

if TYPE_CHECKING:
    from ..cuda.pool import DeviceFrame

#: A frame as it leaves a handoff.
Frame = Union[HostFrame, "DeviceFrame"]


class Handoff(Protocol):
    """The handoff stage."""

    kind: str  # "host", "register" or "shared"

    def submit(self, index: int) -> Sequence[Frame]: ...

    def drain(self) -> Sequence[Frame]: ...

    def release(self) -> None: ...


__all__ = ["Frame", "Handoff", "HostReadback"]

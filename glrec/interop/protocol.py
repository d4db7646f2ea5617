"""The handoff stage's protocol: what the pipeline asks of every handoff (and of a GL encoder's own readback)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..frame import Frame


class Handoff(Protocol):
    """The handoff stage (see :mod:`glrec.interop`)."""

    kind: str  # "host", "register" or "shared"

    @property
    def device_bytes(self) -> int:
        """GPU memory its frames in flight take beyond GL's own textures (0 for the PBO ring to host memory)."""

    def before_frame(self) -> None:
        """Before a frame's GL work is issued: where the handoff paces GL against its consumer, wait here."""

    def submit(self, index: int) -> Sequence[Frame]: ...

    def drain(self) -> Sequence[Frame]: ...

    def release(self) -> None: ...

"""The convert stage's protocol: output planes of a known layout, refilled from the render target by ``run``."""

from __future__ import annotations

from typing import Protocol

import moderngl

from ..layout import PlaneLayout


class ConvertStage(Protocol):
    """What the handoffs read: output planes of a known layout, refilled by :meth:`run`."""

    layout: PlaneLayout
    planes: list[moderngl.Texture]

    def run(self, source: moderngl.Texture) -> None: ...

    def new_planes(self) -> list[moderngl.Texture]: ...

    def release(self) -> None: ...

"""Convert stage: the RGBA render target becomes what the encoder reads, on the GPU, rows top-down.

:class:`Converter` makes YUV planes (NV12, I420, YUV444; BT.709/601, limited or
full range); :class:`RgbPacker` makes packed RGB for encoders that convert
themselves (nvJPEG, NVENC's ABGR input). Both are :class:`ConvertStage`\\ s.
"""

from __future__ import annotations

from typing import Protocol

import moderngl

from ..layout import PACKED_RGB, PlaneLayout
from .pack import RgbPacker
from .yuv import Converter


class ConvertStage(Protocol):
    """What the handoffs read: output planes of a known layout, refilled by :meth:`run`."""

    layout: PlaneLayout
    planes: list[moderngl.Texture]

    def run(self, source: moderngl.Texture) -> None: ...

    def new_planes(self) -> list[moderngl.Texture]: ...

    def release(self) -> None: ...


__all__ = ["PACKED_RGB", "ConvertStage", "Converter", "PlaneLayout", "RgbPacker"]

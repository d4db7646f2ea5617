"""The GL JPEG encoder's room: the compute passes (stage), its block structure, the JPEG tables, the slots, the row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._faces import lazy_names

if TYPE_CHECKING:
    from .blocks import MAX_SEGMENT_BLOCKS
    from .row import ROW
    from .slots import GlJpegConvert, GlJpegEncoder, GlJpegReadback, gl_jpeg_refuse, open_slots
    from .stage import SUBSAMPLING, TILE, Frames, GlJpegStage, JpegGeometry, check_limits, geometry

_SLOTS = ("GlJpegConvert", "GlJpegEncoder", "GlJpegReadback", "gl_jpeg_refuse", "open_slots")
_STAGE = ("SUBSAMPLING", "TILE", "Frames", "GlJpegStage", "JpegGeometry", "check_limits", "geometry", "_grid")
__getattr__ = lazy_names(
    __name__,
    {"MAX_SEGMENT_BLOCKS": "blocks", "ROW": "row", **dict.fromkeys(_SLOTS, "slots"), **dict.fromkeys(_STAGE, "stage")},
)

__all__ = ["MAX_SEGMENT_BLOCKS", "ROW", "SUBSAMPLING", "TILE", "Frames", "GlJpegConvert", "GlJpegEncoder",
           "GlJpegReadback", "GlJpegStage", "JpegGeometry", "check_limits", "geometry", "gl_jpeg_refuse",
           "open_slots"]  # fmt: skip

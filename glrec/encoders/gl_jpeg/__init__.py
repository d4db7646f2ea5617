"""The GL JPEG encoder's room: the compute passes (stage), the JPEG tables, the pipeline slots and the row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._faces import lazy_names

if TYPE_CHECKING:
    from .row import ROW
    from .slots import GlJpegConvert, GlJpegEncoder, GlJpegReadback, gl_jpeg_refuse, open_slots
    from .stage import MAX_SEGMENT_BLOCKS, SUBSAMPLING, GlJpegStage, JpegGeometry, check_limits, geometry

__getattr__ = lazy_names(__name__, {
    "ROW": "row", **dict.fromkeys(("GlJpegConvert", "GlJpegEncoder", "GlJpegReadback", "gl_jpeg_refuse",
                                   "open_slots"), "slots"),
    **dict.fromkeys(("MAX_SEGMENT_BLOCKS", "SUBSAMPLING", "GlJpegStage", "JpegGeometry", "check_limits", "geometry",
                     "_grid"), "stage"),
})  # fmt: skip

__all__ = ["MAX_SEGMENT_BLOCKS", "ROW", "SUBSAMPLING", "GlJpegConvert", "GlJpegEncoder", "GlJpegReadback",
           "GlJpegStage", "JpegGeometry", "check_limits", "geometry", "gl_jpeg_refuse", "open_slots"]  # fmt: skip

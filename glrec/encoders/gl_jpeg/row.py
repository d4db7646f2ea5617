"""The GL JPEG encoder's row: baseline JPEG in GL compute shaders, in glrec's own GL context (no CUDA)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..jpeg_options import JpegOptions
from ..row import EncodeRequest, EncoderRow

if TYPE_CHECKING:
    import moderngl

    from .slots import GlJpegConvert, GlJpegReadback


def refuse(request: EncodeRequest[JpegOptions]) -> str | None:
    from .slots import gl_jpeg_refuse

    return gl_jpeg_refuse(request)


def slots(ctx: moderngl.Context, request: EncodeRequest[Any], depth: int) -> tuple[GlJpegConvert, GlJpegReadback]:
    from .slots import open_slots

    return open_slots(ctx, request, depth)


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s line: what it needs (GL's own context, compute shaders), whatever CUDA does."""
    return [
        "gl (GL-compute JPEG): mjpeg in GL compute shaders, in glrec's GL context (OpenGL 4.3: any GPU, "
        "Mesa too); auto does not pick it (--encoder gl)"
    ]


ROW = EncoderRow(
    "gl", "the GL JPEG encoder", ("mjpeg",), ("yuv420p", "yuv444p"), ("gl",),
    "glrec.encoders.gl_jpeg.slots:GlJpegEncoder", options=JpegOptions, gl_slots=slots, refuse=refuse,
    status=status, doctor="GL JPEG",
    note="baseline JPEG in GL compute shaders, in glrec's own GL context: no CUDA, any GPU with GL 4.3; "
    "auto does not pick it (not yet measured faster on any GPU)",
)  # fmt: skip

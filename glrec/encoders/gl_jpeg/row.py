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


def auto_problem(request: EncodeRequest[Any]) -> str | None:
    """Why auto leaves it out here: GL in software (Mesa's llvmpipe runs its passes on the CPU, 3-4x slower at
    720p than the CPU encoder: benchmarks/gl_jpeg.py), or no EGL device that says what it is."""
    import os

    from ...gl.devices import egl_devices

    devices = egl_devices()
    index = os.environ.get("GLCONTEXT_DEVICE_INDEX", "").strip()
    first = next((d for d in devices if d.index == (int(index) if index.isdigit() else 0)), None)
    if first is None:
        return "no EGL device to tell hardware GL from software"
    if "EGL_MESA_device_software" in first.extensions:
        return "GL here is software (Mesa llvmpipe), where the CPU encoder is faster"
    return None


def slots(ctx: moderngl.Context, request: EncodeRequest[Any], depth: int) -> tuple[GlJpegConvert, GlJpegReadback]:
    from .slots import open_slots

    return open_slots(ctx, request, depth)


def status(devices: Sequence[int], no_cuda: str | None) -> list[str]:
    """``glrec info``'s line: what it needs (GL's own context, compute shaders), whatever CUDA does."""
    return [
        "gl (GL-compute JPEG): mjpeg in GL compute shaders, in glrec's GL context (OpenGL 4.3: any GPU, Mesa "
        "too); auto takes it for mjpeg on hardware GL, not on software GL (there: --encoder gl)"
    ]


ROW = EncoderRow(
    "gl", "the GL JPEG encoder", ("mjpeg",), ("yuv420p", "yuv444p"), ("gl",),
    "glrec.encoders.gl_jpeg.slots:GlJpegEncoder", options=JpegOptions, gl_slots=slots, refuse=refuse,
    status=status, doctor="GL JPEG", auto_problem=auto_problem,
    chosen="MJPEG output on hardware GL: the GL JPEG encoder never leaves the GL context",
    note="baseline JPEG in GL compute shaders, in glrec's own GL context: no CUDA, any GPU with GL 4.3; "
    "auto takes it for MJPEG on hardware GL",
)  # fmt: skip

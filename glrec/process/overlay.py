"""Drawing an :class:`~glrec.process.draw.Overlay` on the processed frame with GL.

Boxes, points and lines become triangles (a quad per edge, point or segment:
wide GL lines are not in the core profile); a mask is a full-screen pass that
reads its bytes from a shader storage buffer (on the CUDA path that buffer is
CUDA memory, so the mask never visits the host). The GL state touched (blend,
cull, depth and scissor tests) is put back as it was after each frame.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import moderngl
import numpy as np

from ..errors import ProcessOutputError
from ..gl import glsl
from ..gl.fences import gl_function
from .draw import Boxes, Lines, Mask, Points, _rgba

GL_BLEND, GL_CULL_FACE, GL_DEPTH_TEST, GL_SCISSOR_TEST = 0x0BE2, 0x0B44, 0x0B71, 0x0C11
_BLEND_FUNC = (0x80C9, 0x80C8, 0x80CB, 0x80CA)  # GL_BLEND_SRC_RGB, DST_RGB, SRC_ALPHA, DST_ALPHA
_BLEND_EQUATION = (0x8009, 0x883D)  # GL_BLEND_EQUATION_RGB, GL_BLEND_EQUATION_ALPHA
GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ZERO, GL_ONE, GL_FUNC_ADD = 0x0302, 0x0303, 0, 1, 0x8006
VERTEX = np.dtype([("pos", "f4", 2), ("local", "f4", 2), ("colour", "f4", 4)])


def _gl(name: str, restype: Any, *args: Any) -> Any:
    return gl_function(name, restype, *args)


class _BlendState:
    """Alpha blending over the frame (keeping its alpha), the previous state restored on exit."""

    def __enter__(self) -> None:
        is_enabled = _gl("glIsEnabled", ctypes.c_ubyte, ctypes.c_uint)
        self._flags = {cap: bool(is_enabled(cap)) for cap in (GL_BLEND, GL_CULL_FACE, GL_DEPTH_TEST, GL_SCISSOR_TEST)}
        value = ctypes.c_int(0)
        get = _gl("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))
        self._func = [get(p, ctypes.byref(value)) or value.value for p in _BLEND_FUNC]
        self._equation = [get(p, ctypes.byref(value)) or value.value for p in _BLEND_EQUATION]
        for cap, on in ((GL_BLEND, True), (GL_CULL_FACE, False), (GL_DEPTH_TEST, False), (GL_SCISSOR_TEST, False)):
            _gl("glEnable" if on else "glDisable", None, ctypes.c_uint)(cap)
        _gl("glBlendEquation", None, ctypes.c_uint)(GL_FUNC_ADD)
        _gl("glBlendFuncSeparate", None, *[ctypes.c_uint] * 4)(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ZERO, GL_ONE)

    def __exit__(self, *exc: Any) -> None:
        _gl("glBlendFuncSeparate", None, *[ctypes.c_uint] * 4)(*self._func)
        _gl("glBlendEquationSeparate", None, ctypes.c_uint, ctypes.c_uint)(*self._equation)
        for cap, on in self._flags.items():
            _gl("glEnable" if on else "glDisable", None, ctypes.c_uint)(cap)


def _array(values: Any, columns: int, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float32)
    if a.size == 0:
        return a.reshape(0, columns)
    if a.ndim == 3 and a.shape[1:] == (2, 2) and columns == 4:
        a = a.reshape(-1, 4)
    if a.ndim == 1 and a.shape[0] == columns:
        a = a.reshape(1, columns)
    if a.ndim != 2 or a.shape[1] != columns or not np.isfinite(a).all():
        raise ProcessOutputError(f"{what} must be a finite (N, {columns}) array of pixel coordinates; got {a.shape}.")
    return a


def _quads(corners: np.ndarray, colour: tuple[float, ...], local: np.ndarray | None = None) -> np.ndarray:
    """Vertices of quads given as (N, 4, 2) corners in order around the quad: two triangles each."""
    order = [0, 1, 2, 0, 2, 3]
    out = np.zeros((corners.shape[0], 6), VERTEX)
    out["pos"] = corners[:, order]
    if local is not None:
        out["local"] = local[order]
    out["colour"] = colour
    return out.reshape(-1)


def _rect(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> np.ndarray:
    return np.stack([np.stack(c, -1) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))], 1)


def box_vertices(shape: Boxes) -> np.ndarray:
    b = _array(shape.xyxy, 4, "Boxes.xyxy")
    x0, x1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    y0, y1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    h = float(shape.width) / 2
    # Outer and inner rectangles; the four edges between them (top and bottom span the corners).
    edges = [
        _rect(x0 - h, y0 - h, x1 + h, y0 + h),
        _rect(x0 - h, y1 - h, x1 + h, y1 + h),
        _rect(x0 - h, y0 + h, x0 + h, y1 - h),
        _rect(x1 - h, y0 + h, x1 + h, y1 - h),
    ]
    return _quads(np.concatenate(edges), _rgba(shape.colour, "Boxes"))


def point_vertices(shape: Points) -> np.ndarray:
    p = _array(shape.xy, 2, "Points.xy")
    r = float(shape.radius)
    local = np.array([(-1, -1), (1, -1), (1, 1), (-1, 1)], np.float32)
    return _quads(_rect(p[:, 0] - r, p[:, 1] - r, p[:, 0] + r, p[:, 1] + r), _rgba(shape.colour, "Points"), local)


def line_vertices(shape: Lines) -> np.ndarray:
    s = _array(shape.segments, 4, "Lines.segments")
    a, b = s[:, :2], s[:, 2:]
    d = b - a
    length = np.hypot(d[:, 0], d[:, 1])
    keep = length > 0
    a, b, d, length = a[keep], b[keep], d[keep], length[keep]
    n = np.stack([-d[:, 1], d[:, 0]], 1) / length[:, None] * (float(shape.width) / 2)
    return _quads(np.stack([a - n, b - n, b + n, a + n], 1), _rgba(shape.colour, "Lines"))


_BUILDERS: dict[type, Callable[[Any], np.ndarray]] = {Boxes: box_vertices, Points: point_vertices, Lines: line_vertices}


class OverlayRenderer:
    """Draws shapes and a mask onto a frame texture of ``size``; owns its programs and buffers."""

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.size = size
        self._prog = glsl.program(ctx, glsl.source("overlay.vert"), glsl.source("overlay.frag"), origin="overlay")
        self._prog["size"].value = size  # type: ignore[union-attr]
        self._mask = glsl.program(
            ctx, glsl.source("fullscreen.vert"), glsl.source("overlay_mask.frag"), origin="overlay mask"
        )
        self._mask["size"].value = size  # type: ignore[union-attr]
        self._capacity = 6 * 4 * 64  # vertices; grown (never shrunk) when a frame has more
        self._vbo = ctx.buffer(reserve=self._capacity * VERTEX.itemsize)
        self._vao = ctx.vertex_array(self._prog, [(self._vbo, "2f 2f 4f", "pos", "local", "colour")])
        self._empty = ctx.vertex_array(self._mask, [])

    def draw(self, fbo: moderngl.Framebuffer, shapes: Sequence[Any], mask: tuple[Mask, Any] | None) -> None:
        """Draw ``shapes`` (with host arrays) and ``mask`` (the Mask and a (buffer, offset, scale) of its bytes)."""
        parts = [_BUILDERS[type(s)](s) for s in shapes if not isinstance(s, Mask)]
        vertices = np.concatenate(parts) if parts else np.zeros(0, VERTEX)
        fbo.use()
        with _BlendState():
            if mask is not None:
                self._draw_mask(*mask)
            if len(vertices):
                if len(vertices) > self._capacity:
                    self._capacity = 1 << (len(vertices) - 1).bit_length()
                    self._vbo.orphan(self._capacity * VERTEX.itemsize)
                self._vbo.write(vertices.tobytes())
                self._vao.render(moderngl.TRIANGLES, vertices=len(vertices))

    def _draw_mask(self, mask: Mask, where: tuple[moderngl.Buffer, int, float]) -> None:
        buffer, offset, scale = where
        w, h = self.size
        buffer.bind_to_storage_buffer(0, offset=offset, size=(w * h + 3) // 4 * 4)
        prog = self._mask
        prog["scale"].value = scale  # type: ignore[union-attr]
        if mask.palette is None:
            prog["palette_size"].value = 0  # type: ignore[union-attr]
            prog["colour"].value = _rgba(mask.colour, "Mask")  # type: ignore[union-attr]
        else:
            colours = [_rgba(c, "Mask palette") for c in mask.palette]
            if not 1 <= len(colours) <= 255:
                raise ProcessOutputError(f"Mask palette has {len(colours)} colours; give 1 to 255.")
            prog["palette_size"].value = len(colours)  # type: ignore[union-attr]
            table = np.zeros((255, 4), np.float32)  # the uniform array's full length
            table[: len(colours)] = colours
            prog["palette"].write(table.tobytes())  # type: ignore[union-attr]
        self._empty.render(moderngl.TRIANGLES, vertices=3)

    def release(self) -> None:
        for name in ("_vao", "_empty", "_vbo", "_prog", "_mask"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.release()
                setattr(self, name, None)

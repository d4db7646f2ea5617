"""``cube``: a lit, rotating, depth-tested cube (pyrr matrices)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import moderngl
import numpy as np
from pyrr import Matrix44, Vector3

from ..gl import glsl
from .base import ShaderScene

if TYPE_CHECKING:
    from ..events import InputEvent

# Six faces, two triangles each: position, normal.
_FACES = [
    ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    ((-1, 0, 0), (0, 0, 1), (0, 1, 0)),
    ((0, 1, 0), (0, 0, 1), (1, 0, 0)),
    ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
    ((0, 0, 1), (1, 0, 0), (0, 1, 0)),
    ((0, 0, -1), (0, 1, 0), (1, 0, 0)),
]


def _cube_vertices() -> np.ndarray:
    out = []
    for n, a, b in _FACES:
        n_, a_, b_ = (np.array(v, dtype="f4") for v in (n, a, b))
        corners = [n_ + s * a_ + r * b_ for s, r in ((-1, -1), (1, -1), (1, 1), (-1, -1), (1, 1), (-1, 1))]
        for c in corners:
            out.extend([*(c * 0.5), *n_])
    return np.array(out, dtype="f4")


class Cube(ShaderScene):
    """A unit cube turning about two axes, one directional light plus a highlight.

    Live viewers can turn it further by dragging with the left button (``on_input``);
    without input its frames depend only on ``t``.
    """

    def __init__(self, background: tuple[float, float, float] = (0.08, 0.09, 0.12)) -> None:
        super().__init__()
        self.background = background
        self._vbo: moderngl.Buffer | None = None
        self.yaw = 0.0  # radians added by dragging (live input)
        self.pitch = 0.0
        self._drag: tuple[float, float] | None = None

    def on_input(self, event: InputEvent) -> None:
        """Left-button drag turns the cube: across the picture is a full turn, down is half a turn."""
        if event.kind != "pointer":
            return
        if event.action == "down" and event.buttons & 1:
            self._drag = (event.x, event.y)
        elif event.action == "move" and self._drag is not None and event.buttons & 1:
            x0, y0 = self._drag
            self.yaw += (event.x - x0) * 2 * math.pi
            self.pitch = max(-1.5, min(1.5, self.pitch + (event.y - y0) * math.pi))
            self._drag = (event.x, event.y)
        elif event.action == "up" or not event.buttons & 1:
            self._drag = None

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.size = size
        self._prog = glsl.program(ctx, glsl.source("cube.vert"), glsl.source("cube.frag"), origin="cube.vert/cube.frag")
        self._vbo = ctx.buffer(_cube_vertices().tobytes())
        self._vao = ctx.vertex_array(self._prog, [(self._vbo, "3f 3f", "in_position", "in_normal")])
        self._eye = Vector3([0.0, 0.9, 2.6])
        self._proj = Matrix44.perspective_projection(45.0, size[0] / size[1], 0.1, 20.0, dtype="f4")
        self._view = Matrix44.look_at(self._eye, Vector3([0.0, 0.0, 0.0]), Vector3([0.0, 1.0, 0.0]), dtype="f4")
        light = np.array([-0.4, -0.7, -0.6], dtype="f4")
        self._prog["light_dir"].value = tuple(light / np.linalg.norm(light))  # type: ignore[union-attr]
        self._prog["eye"].value = tuple(self._eye)  # type: ignore[union-attr]

    def render(self, t: float) -> None:
        assert self._vao is not None and self._prog is not None, "call setup() first"
        self.ctx.enable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        self.ctx.clear(*self.background, depth=1.0)
        model = Matrix44.from_y_rotation(t * 0.9 + self.yaw, dtype="f4") * Matrix44.from_x_rotation(
            0.35 * math.sin(t * 0.6) + 0.4 + self.pitch, dtype="f4"
        )
        mvp = self._proj * self._view * model
        self._prog["mvp"].write(mvp.astype("f4").tobytes())  # type: ignore[union-attr]
        self._prog["model"].write(model.astype("f4").tobytes())  # type: ignore[union-attr]
        self._vao.render(moderngl.TRIANGLES)
        self.ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)

    def close(self) -> None:
        super().close()
        vbo, self._vbo = self._vbo, None
        if vbo is not None:
            vbo.release()

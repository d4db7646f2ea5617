"""``particles``: thousands of instanced, additive particles computed on the GPU."""

from __future__ import annotations

import moderngl
import numpy as np

from ..gl import glsl
from .base import ShaderScene


class Particles(ShaderScene):
    """``count`` instanced quads whose motion is a function of their id and time."""

    def __init__(self, count: int = 20_000, point_size: float = 0.012) -> None:
        super().__init__()
        self.count = count
        self.point_size = point_size
        self._vbo: moderngl.Buffer | None = None

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.size = size
        self._prog = glsl.program(ctx, glsl.source("particles.vert"), glsl.source("particles.frag"), origin="particles")
        quad = np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], dtype="f4")
        self._vbo = ctx.buffer(quad.tobytes())
        self._vao = ctx.vertex_array(self._prog, [(self._vbo, "2f", "in_corner")])
        self._prog["aspect"].value = size[0] / size[1]  # type: ignore[union-attr]
        self._prog["point_size"].value = self.point_size  # type: ignore[union-attr]

    def render(self, t: float) -> None:
        assert self._vao is not None and self._prog is not None, "call setup() first"
        self.ctx.clear(0.0, 0.0, 0.02)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.ONE, moderngl.ONE
        self._prog["time"].value = float(t)  # type: ignore[union-attr]
        self._vao.render(moderngl.TRIANGLES, instances=self.count)
        self.ctx.disable(moderngl.BLEND)

    def close(self) -> None:
        super().close()
        vbo, self._vbo = self._vbo, None
        if vbo is not None:
            vbo.release()

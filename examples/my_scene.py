"""A user scene: glrec record examples/my_scene.py:Spiral -o spiral.mp4

A scene is a class with setup(ctx, size), render(t) and close(). render(t)
draws into the framebuffer glrec has bound, and depends only on t.
"""

import moderngl
import numpy as np

VERTEX = """
#version 330 core
in float in_index;
uniform float time;
uniform float aspect;
out float shade;
void main() {
    float a = in_index * 0.02 + time;
    float r = in_index / 4000.0;
    gl_Position = vec4(cos(a) * r / aspect, sin(a) * r, 0.0, 1.0);
    gl_PointSize = 3.0;
    shade = r;
}
"""
FRAGMENT = """
#version 330 core
in float shade;
out vec4 colour;
void main() { colour = vec4(1.0 - shade, 0.4 + 0.6 * shade, 1.0, 1.0); }
"""


class Spiral:
    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=VERTEX, fragment_shader=FRAGMENT)
        self.prog["aspect"].value = size[0] / size[1]
        self.vbo = ctx.buffer(np.arange(4000, dtype="f4").tobytes())
        self.vao = ctx.vertex_array(self.prog, [(self.vbo, "f", "in_index")])

    def render(self, t: float) -> None:
        self.ctx.clear(0.02, 0.02, 0.05)
        self.ctx.enable(moderngl.PROGRAM_POINT_SIZE)
        self.prog["time"].value = t
        self.vao.render(moderngl.POINTS)

    def close(self) -> None:
        for obj in ("vao", "vbo", "prog"):
            if hasattr(self, obj):
                getattr(self, obj).release()
                delattr(self, obj)

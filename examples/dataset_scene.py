"""A user scene that writes every ground-truth pass: flat rectangles at given pixels and depths.

    glrec dataset my_spec.toml -o out/      # with scene = "examples/dataset_scene.py:Cards"

How a scene adds passes (see glrec.scenes.base.Scene): declare ``passes``,
write each pass from the fragment shader at its location, clear with
``glrec.scenes.passes.clear_passes``; optionally declare ``parameters`` and
``classes`` and implement ``randomise(params, rng)`` and ``annotations(t)``.
Here the layout is exact on purpose (the tests check pass alignment with it):
a card ``[x0, y0, x1, y1, depth, instance, class]`` covers the pixels whose
centres lie inside ``[x0, x1) x [y0, y1)`` (rows counted from the top).
"""

import moderngl
import numpy as np

from glrec.scenes.passes import clear_passes

VERTEX = """
#version 330 core
in vec2 in_pixel;         // pixel coordinates, rows from the top
uniform vec2 size;
uniform float depth;      // camera z of the card
uniform float near;
uniform float far;
void main() {
    vec2 ndc = vec2(in_pixel.x / size.x * 2.0 - 1.0, 1.0 - in_pixel.y / size.y * 2.0);
    // the window depth a perspective camera with these planes gives a point at this z
    float z_ndc = (far + near - 2.0 * far * near / depth) / (far - near);
    gl_Position = vec4(ndc, z_ndc, 1.0);
}
"""
FRAGMENT = """
#version 330 core
uniform vec3 colour;
uniform float depth;
uniform uint instance_id;
uniform uint class_id;
layout(location = 0) out vec4 out_colour;
layout(location = 1) out float out_depth;
layout(location = 2) out uint out_instance;
layout(location = 3) out uint out_class;
layout(location = 4) out vec4 out_normal;
void main() {
    out_colour = vec4(colour, 1.0);
    out_depth = depth;
    out_instance = instance_id;
    out_class = class_id;
    out_normal = vec4(0.0, 0.0, -1.0, 0.0);  // facing the camera (OpenCV axes)
}
"""


class Cards:
    """Axis-aligned cards facing the camera; nearer cards hide farther ones."""

    passes = ("rgb", "depth", "instance", "semantic", "normal")
    classes = ("background", "card", "tag")
    parameters = {"cards": [[8, 6, 40, 30, 2.0, 1, 1]], "jitter": 0}  # noqa: RUF012

    def __init__(self) -> None:
        self.params = dict(self.parameters)
        self.ctx = None

    def randomise(self, params: dict, rng: np.random.Generator) -> None:
        self.params = {**self.parameters, **params}
        # `jitter` pixels of random shift per card, from the sample's own generator
        j = int(self.params["jitter"])
        self.shift = rng.integers(-j, j + 1, size=(len(self.params["cards"]), 2)) if j else None

    def cards(self) -> list[list[float]]:
        cards = [list(c) for c in self.params["cards"]]
        if getattr(self, "shift", None) is not None:
            for c, (dx, dy) in zip(cards, self.shift, strict=True):
                c[0], c[2], c[1], c[3] = c[0] + dx, c[2] + dx, c[1] + dy, c[3] + dy
        return cards

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        self.ctx, self.size = ctx, size
        self.prog = ctx.program(vertex_shader=VERTEX, fragment_shader=FRAGMENT)
        self.prog["size"].value = tuple(float(s) for s in size)
        self.prog["near"].value, self.prog["far"].value = 0.1, 100.0
        self.vbo = ctx.buffer(reserve=6 * 2 * 4)
        self.vao = ctx.vertex_array(self.prog, [(self.vbo, "2f", "in_pixel")])

    def render(self, t: float) -> None:
        clear_passes(self.ctx, (0.0, 0.0, 0.0))
        self.ctx.enable(moderngl.DEPTH_TEST)
        for x0, y0, x1, y1, depth, instance, cls in self.cards():
            quad = np.array([x0, y0, x1, y0, x1, y1, x0, y0, x1, y1, x0, y1], dtype="f4")
            self.vbo.write(quad.tobytes())
            hue = np.array([(instance * 0.37) % 1.0, (instance * 0.61) % 1.0, (instance * 0.13) % 1.0])
            self.prog["colour"].value = tuple(0.2 + 0.8 * hue)
            self.prog["depth"].value = float(depth)
            self.prog["instance_id"].value = int(instance)
            self.prog["class_id"].value = int(cls)
            self.vao.render(moderngl.TRIANGLES)
        self.ctx.disable(moderngl.DEPTH_TEST)

    def annotations(self, t: float) -> dict:
        return {
            "objects": [
                {"instance": int(c[5]), "class": int(c[6]), "bbox": [int(c[0]), int(c[1]), int(c[2]), int(c[3])]}
                for c in self.cards()
            ]
        }

    def close(self) -> None:
        for name in ("vao", "vbo", "prog"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.release()
                setattr(self, name, None)

"""The G-buffer: one framebuffer with a render target per pass, filled in one draw.

A scene that writes ground truth declares its fragment outputs at fixed
locations (the order of :data:`PASSES`)::

    layout(location = 0) out vec4 out_colour;    // rgb:      RGBA8
    layout(location = 1) out float out_depth;    // depth:    R32F, camera z (OpenCV), 0 = no surface
    layout(location = 2) out uint out_instance;  // instance: R32UI, 0 = no object
    layout(location = 3) out uint out_class;     // semantic: R32UI, 0 = background
    layout(location = 4) out vec4 out_normal;    // normal:   RGBA32F, unit camera-space normal in xyz

The rest of the optional dataset contract: a scene lists the passes it writes in
``passes`` (names from :data:`PASSES`); ``parameters`` (name -> default) lists
what a dataset spec's ``[params]`` may set, ``randomise(params, rng)`` applies
one sample's values (draw anything else from ``rng``), ``params`` may hold the
values then in effect (recorded in ``meta.json`` under the spec's), ``classes`` names the
class ids, and ``annotations(t)`` returns JSON-ready ``camera`` and ``objects``
(each with ``instance``, ``class``, ``bbox``) for ``meta.json``.
``examples/dataset_scene.py`` is a complete small example.

Every pass comes from the same rasterisation as the colour (no antialiasing),
so they agree pixel for pixel. Integer targets cannot be cleared with
``ctx.clear`` (it writes float bits into them), so scenes clear with
:func:`clear_passes`, which picks the right ``glClearBuffer*`` per attachment.
"""

from __future__ import annotations

import ctypes

import moderngl
import numpy as np

from ..errors import ConfigError
from ..gl.fences import gl_function

__all__ = ["PASSES", "TARGETS", "GBuffer", "clear_passes"]

#: The ground-truth passes a scene may write, in fragment-output location order.
PASSES: tuple[str, ...] = ("rgb", "depth", "instance", "semantic", "normal")

#: pass -> (components, moderngl dtype) of its render target, in location order.
TARGETS: dict[str, tuple[int, str]] = {
    "rgb": (4, "f1"),
    "depth": (1, "f4"),
    "instance": (1, "u4"),
    "semantic": (1, "u4"),
    "normal": (4, "f4"),
}
_NUMPY = {"f1": np.uint8, "f4": np.float32, "u4": np.uint32}
# How many components each pass's array keeps (alpha and the normal's w are dropped).
_KEEP = {"rgb": 3, "depth": 1, "instance": 1, "semantic": 1, "normal": 3}

_GL_COLOR = 0x1800
_GL_DEPTH = 0x1801


def _clear_buffer(kind: str, drawbuffer: int, values: tuple[float, ...]) -> None:
    if kind == "uiv":
        fn = gl_function("glClearBufferuiv", None, ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))
        fn(_GL_COLOR, drawbuffer, (ctypes.c_uint * 4)(*(int(v) for v in values)))
    else:
        fn = gl_function("glClearBufferfv", None, ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_float))
        buffer = _GL_DEPTH if kind == "depth" else _GL_COLOR
        fn(buffer, drawbuffer, (ctypes.c_float * 4)(*values))


def clear_passes(ctx: moderngl.Context, background: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
    """Clear the bound framebuffer: colour to ``background``, depth to 1, every other target to 0.

    Works on glrec's one-attachment recording target as well as the G-buffer, so a scene can
    call it from ``render(t)`` whichever it is drawing into.
    """
    fbo = ctx.fbo
    for i, att in enumerate(fbo.color_attachments):
        dtype = getattr(att, "dtype", "f1")
        if i == 0:
            _clear_buffer("fv", 0, (*background, 1.0))
        elif dtype.startswith(("u", "i")):
            _clear_buffer("uiv", i, (0, 0, 0, 0))
        else:
            _clear_buffer("fv", i, (0.0, 0.0, 0.0, 0.0))
    if fbo.depth_attachment is not None:
        _clear_buffer("depth", 0, (1.0, 0.0, 0.0, 0.0))


class GBuffer:
    """Render targets for every pass plus a depth buffer for the depth test.

    All five targets exist whichever passes are written, because fragment output
    locations map to attachments by position; reading back costs only what is asked.
    """

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        max_size = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
        if max(size) > max_size:
            raise ConfigError(f"Size {size[0]}x{size[1]} exceeds this GPU's largest texture ({max_size} a side).")
        self.ctx = ctx
        self.size = size
        self.textures: dict[str, moderngl.Texture] = {
            name: ctx.texture(size, comps, dtype=dtype) for name, (comps, dtype) in TARGETS.items()
        }
        for tex in self.textures.values():
            tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self.depth_buffer = ctx.depth_renderbuffer(size)
        self.fbo = ctx.framebuffer(list(self.textures.values()), self.depth_buffer)
        # A colour-only framebuffer over the same texture, to blit colour into a Recorder's target.
        self.colour_fbo = ctx.framebuffer([self.textures["rgb"]])

    def use(self) -> None:
        self.fbo.use()
        self.fbo.viewport = (0, 0, *self.size)

    def read(self, name: str) -> np.ndarray:
        """Read one pass back as a top-down array: (h, w, 3) for rgb/normal, (h, w) otherwise."""
        _, dtype = TARGETS[name]
        keep = _KEEP[name]  # GL drops alpha / w in the read itself
        w, h = self.size
        raw = self.fbo.read(attachment=list(TARGETS).index(name), components=keep, dtype=dtype)
        arr = np.frombuffer(raw, _NUMPY[dtype]).reshape((h, w, keep) if keep > 1 else (h, w))
        return np.ascontiguousarray(arr[::-1])  # GL rows run bottom-up

    def release(self) -> None:
        """Free the GL objects. Safe to call twice."""
        for name in ("colour_fbo", "fbo", "depth_buffer"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.release()
                setattr(self, name, None)
        textures, self.textures = self.textures, {}
        for tex in textures.values():
            tex.release()

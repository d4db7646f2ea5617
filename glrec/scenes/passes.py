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
from collections.abc import Mapping
from dataclasses import dataclass, field

import moderngl
import numpy as np

from ..errors import ConfigError
from ..gl.fences import gl_function

__all__ = ["PASSES", "PASS_ROWS", "TARGETS", "GBuffer", "PassRow", "clear_passes", "register_pass", "unregister_pass"]


@dataclass(frozen=True)
class PassRow:
    """Everything glrec knows about one pass, read by the G-buffer, the renderer, the stream and the files.

    ``components``/``gl_dtype``: its render target (moderngl dtype ``f1``, ``f4``, ``u4``);
    ``keep``: the components its arrays keep; ``encodings``: the image file encodings
    allowed (the first the default), chosen by the ``[output]`` key ``option`` (None: the
    first always); ``file_dtypes``: per encoding, the numpy dtype of the file's array,
    which is also the training stream's; ``clip_ext``: a clip's file extension.
    """

    name: str
    components: int
    gl_dtype: str
    keep: int
    encodings: tuple[str, ...] = ("npy",)
    option: str | None = None
    file_dtypes: Mapping[str, str] = field(default_factory=dict)
    clip_ext: str = "npy"

    def encoding(self, output: object) -> str:
        """The encoding ``output`` (an :class:`~glrec.dataset.spec.document.OutputSpec`) picks for this pass."""
        return str(getattr(output, self.option)) if self.option is not None else self.encodings[0]

    def file_name(self, output: object, clip: bool = False) -> str:
        """The sample's file for this pass: ``depth.npy``, ``instance.png`` (``png16`` is a PNG), ``rgb.mp4``."""
        if clip:
            return f"{self.name}.{self.clip_ext}"
        return f"{self.name}.{self.encoding(output).removesuffix('16')}"

    def file_dtype(self, output: object) -> str:
        """The numpy dtype of the file's (and the stream's) array under ``output``."""
        return self.file_dtypes.get(self.encoding(output), _NUMPY_NAME[self.gl_dtype])

    def stream_dtype(self, **choices: str) -> str:
        """The stream's (and file's) dtype when the ``[output]`` keys are ``choices`` (others: their defaults)."""
        encoding = choices.get(self.option, self.encodings[0]) if self.option else self.encodings[0]
        return self.file_dtypes.get(encoding, _NUMPY_NAME[self.gl_dtype])

    @property
    def tail(self) -> tuple[int, ...]:
        """The array's shape after (h, w): ``(keep,)``, or nothing for one component."""
        return (self.keep,) if self.keep > 1 else ()


_NUMPY_NAME = {"f1": "u1", "f4": "f4", "u4": "u4"}
_IDS = {"png": "u2"}

#: Every pass glrec can write, in fragment-output location order (a dict: :func:`register_pass` adds one).
PASS_ROWS: dict[str, PassRow] = {
    row.name: row
    for row in (
        PassRow("rgb", 4, "f1", 3, ("png", "jpg"), "rgb", {"png": "u1", "jpg": "u1"}, clip_ext="mp4"),
        PassRow("depth", 1, "f4", 1, ("npy", "png16"), "depth", {"npy": "f4", "png16": "f4"}),
        PassRow("instance", 1, "u4", 1, ("png",), None, _IDS),
        PassRow("semantic", 1, "u4", 1, ("png",), None, _IDS),
        PassRow("normal", 4, "f4", 3, ("png", "npy"), "normal", {"png": "u1", "npy": "f4"}),
    )
}

#: The built-in ground-truth passes a scene may write, in fragment-output location order.
PASSES: tuple[str, ...] = tuple(PASS_ROWS)

#: pass -> (components, moderngl dtype) of its render target, in location order (built-in passes).
TARGETS: dict[str, tuple[int, str]] = {r.name: (r.components, r.gl_dtype) for r in PASS_ROWS.values()}
_NUMPY = {"f1": np.uint8, "f4": np.float32, "u4": np.uint32}


def register_pass(row: PassRow) -> None:
    """Add a pass: its render target gets the next fragment-output location (``len(PASS_ROWS)``).

    A scene then writes it by declaring that output and listing the name in ``passes``; the
    renderer reads it back like any other. See ``tests/dataset/test_dataset_pass_rows.py``.
    """
    if row.name in PASS_ROWS:
        raise ConfigError(f"Pass {row.name!r} exists already; choose another name.")
    if row.gl_dtype not in _NUMPY or not 1 <= row.keep <= row.components <= 4:
        raise ConfigError(
            f"Pass {row.name!r}: target {row.components} x {row.gl_dtype!r} keeping {row.keep} is not one glrec makes."
        )
    PASS_ROWS[row.name] = row


def unregister_pass(name: str) -> None:
    """Remove a pass :func:`register_pass` added (the built-in ones stay)."""
    if name in PASSES:
        raise ConfigError(f"Pass {name!r} is built in; it cannot be removed.")
    PASS_ROWS.pop(name, None)


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

    A target per row of :data:`PASS_ROWS` exists whichever passes are written, because fragment
    output locations map to attachments by position; reading back costs only what is asked.
    """

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        max_size = int(ctx.info["GL_MAX_TEXTURE_SIZE"])
        if max(size) > max_size:
            raise ConfigError(f"Size {size[0]}x{size[1]} exceeds this GPU's largest texture ({max_size} a side).")
        self.ctx = ctx
        self.size = size
        self.rows = tuple(PASS_ROWS.values())
        self.textures: dict[str, moderngl.Texture] = {
            r.name: ctx.texture(size, r.components, dtype=r.gl_dtype) for r in self.rows
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
        where = [r.name for r in self.rows].index(name)
        row = self.rows[where]  # GL drops alpha / w in the read itself
        w, h = self.size
        raw = self.fbo.read(attachment=where, components=row.keep, dtype=row.gl_dtype)
        arr = np.frombuffer(raw, _NUMPY[row.gl_dtype]).reshape((h, w, *row.tail))
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

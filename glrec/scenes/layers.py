"""The G-buffer of a batch: every pass's target a texture array, one sample per layer, filled in one pass.

A batch-drawing scene (:class:`~glrec.scenes.capabilities.BatchDrawable`) writes
``gl_Layer`` from its vertex shader (``GL_ARB_shader_viewport_layer_array``), so
every sample of a chunk is rasterised into its own layer with the same viewport
transform as the one-sample :class:`~glrec.scenes.passes.GBuffer`: a sample's
pixels do not depend on the batch size (tiles would shift clip coordinates and
could change edge coverage). moderngl cannot attach a texture array as a layered
attachment, so the framebuffer is made with raw GL calls; :meth:`LayeredGBuffer.bound`
binds it and puts the previous framebuffer and viewport back afterwards.
"""

from __future__ import annotations

import ctypes
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import moderngl

from ..errors import ConfigError
from ..gl.fences import gl_function
from .passes import PASS_ROWS

__all__ = ["LAYER_EXTENSION", "LayeredGBuffer", "can_layer", "layers_for", "state_bytes"]

#: The extension that lets a vertex shader pick the layer (core GL would need a geometry shader).
LAYER_EXTENSION = "GL_ARB_shader_viewport_layer_array"
_FRAMEBUFFER, _DRAW_BINDING, _READ_BINDING = 0x8D40, 0x8CA6, 0x8CAA
_COLOR0, _DEPTH_ATT, _TEX_2D_ARRAY, _DEPTH24, _COMPLETE = 0x8CE0, 0x8D00, 0x8C1A, 0x81A6, 0x8CD5
_TEX_2D = 0x0DE1
_VIEWPORT, _COLOR, _DEPTH = 0x0BA2, 0x1800, 0x1801
#: Bytes per pixel of the depth-test buffer (GL_DEPTH_COMPONENT24, stored in 32 bits).
_DEPTH_BYTES = 4


def can_layer(ctx: moderngl.Context) -> bool:
    """Whether ``ctx`` can draw a batch into layers from the vertex shader."""
    return LAYER_EXTENSION in ctx.extensions


def state_bytes(size: tuple[int, int], passes: Collection[str] | None = None) -> int:
    """GPU memory one layer of a :class:`LayeredGBuffer` takes: the targets of ``passes`` (None: all) plus depth."""
    rows = [r for r in PASS_ROWS.values() if passes is None or r.name in passes]
    per_pixel = sum(r.components * (1 if r.gl_dtype == "f1" else 4) for r in rows) + _DEPTH_BYTES
    return size[0] * size[1] * per_pixel


def layers_for(
    ctx: moderngl.Context, size: tuple[int, int], batch: int, budget: int, passes: Collection[str] | None = None
) -> int:
    """Samples per chunk: ``batch``, capped by GL's largest texture array and by ``budget`` bytes of targets."""
    cap = int(ctx.info["GL_MAX_ARRAY_TEXTURE_LAYERS"])
    return max(1, min(batch, cap, budget // state_bytes(size, passes)))


def _gl(name: str, *argtypes: object) -> Any:
    return gl_function(name, None, *argtypes)


def _get_ints(pname: int, n: int = 1) -> list[int]:
    out = (ctypes.c_int * 4)()
    _gl("glGetIntegerv", ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(pname, out)
    return list(out[:n])


class LayeredGBuffer:
    """A render target per row of :data:`~glrec.scenes.passes.PASS_ROWS`, each ``layers`` deep, and a depth array.

    >>> gb = LayeredGBuffer(ctx, (640, 480), 8)  # doctest: +SKIP
    >>> with gb.bound():
    ...     gb.clear([(0.1, 0.1, 0.1)] * 8)
    ...     scene.render_batch(layouts, times)
    """

    def __init__(
        self, ctx: moderngl.Context, size: tuple[int, int], layers: int, passes: Collection[str] | None = None
    ) -> None:
        cap = int(ctx.info["GL_MAX_ARRAY_TEXTURE_LAYERS"])
        if not 1 <= layers <= cap:
            raise ConfigError(f"A layered G-buffer of {layers} layers: this GPU takes 1..{cap}.")
        if not can_layer(ctx):
            raise ConfigError(f"This GL driver lacks {LAYER_EXTENSION}; batches are drawn one sample at a time.")
        self.ctx = ctx
        self.size = size
        self.layers = layers
        # Only the passes read afterwards get a target: the fragment outputs of the others go to
        # GL_NONE draw buffers and cost no memory and no fill (the fill bounds a batch on big GPUs).
        self.rows = tuple(r for r in PASS_ROWS.values() if passes is None or r.name in passes)
        locations = [r.name for r in PASS_ROWS.values()]
        w, h = size
        self.textures: dict[str, moderngl.TextureArray] = {}
        for r in self.rows:
            tex = ctx.texture_array((w, h, layers), r.components, dtype=r.gl_dtype)
            tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
            self.textures[r.name] = tex
        ids = (ctypes.c_uint * 1)()
        _gl("glCreateTextures", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(_TEX_2D_ARRAY, 1, ids)
        self._depth = int(ids[0])
        storage = _gl("glTextureStorage3D", ctypes.c_uint, ctypes.c_int, ctypes.c_uint, *(ctypes.c_int,) * 3)
        storage(self._depth, 1, _DEPTH24, w, h, layers)
        _gl("glCreateFramebuffers", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ids)
        self._fbo = int(ids[0])
        self._scratch = 0  # a framebuffer for clearing one layer (made when first needed)
        #: Passes whose targets :meth:`clear` leaves as they are: whoever reads them takes the cleared value
        #: (0) wherever the depth-test buffer is still 1 (nothing drawn); see DepthMarksDrawn.
        self.masked: frozenset[str] = frozenset()
        attach = _gl("glNamedFramebufferTexture", ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_int)
        self._slots = {name: locations.index(name) for name in self.textures}  # pass -> fragment output location
        for name, tex in self.textures.items():
            attach(self._fbo, _COLOR0 + self._slots[name], tex.glo, 0)  # level 0, every layer: layered
        attach(self._fbo, _DEPTH_ATT, self._depth, 0)
        n = max(self._slots.values(), default=-1) + 1
        buffers = [_COLOR0 + i if i in self._slots.values() else 0 for i in range(n)]  # 0: GL_NONE
        _gl("glNamedFramebufferDrawBuffers", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
            self._fbo, n, (ctypes.c_uint * max(n, 1))(*buffers)
        )
        status = gl_function("glCheckNamedFramebufferStatus", ctypes.c_uint, ctypes.c_uint, ctypes.c_uint)(
            self._fbo, _FRAMEBUFFER
        )
        if status != _COMPLETE:
            self.release()
            raise ConfigError(f"The layered G-buffer is incomplete (GL status 0x{status:04x}).")

    @contextmanager
    def bound(self) -> Iterator[None]:
        """Draw into every layer inside the block; the framebuffers and viewport bound before come back after."""
        draw, read = _get_ints(_DRAW_BINDING)[0], _get_ints(_READ_BINDING)[0]
        viewport = _get_ints(_VIEWPORT, 4)
        bind = _gl("glBindFramebuffer", ctypes.c_uint, ctypes.c_uint)
        set_viewport = _gl("glViewport", ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int)
        bind(_FRAMEBUFFER, self._fbo)
        set_viewport(0, 0, *self.size)
        try:
            yield
        finally:
            bind(0x8CA9, draw)  # GL_DRAW_FRAMEBUFFER
            bind(0x8CA8, read)  # GL_READ_FRAMEBUFFER
            set_viewport(*viewport)

    def clear(self, backgrounds: Sequence[tuple[float, float, float]]) -> None:
        """Clear the bound layered framebuffer: layer j's colour to ``backgrounds[j]``, depth to 1, the rest to 0.

        ``glClearBuffer*`` clears every layer at once; where the layers' backgrounds differ, each
        layer's colour is then cleared on its own (``glClearTexSubImage``) to its value. The targets of
        :attr:`masked` passes are not cleared.
        """
        first = tuple(float(c) for c in backgrounds[0]) if backgrounds else (0.0, 0.0, 0.0)
        colour = (*first, 1.0)
        self.clear_to({r.name: colour if self._slots[r.name] == 0 else (0, 0, 0, 0) for r in self.rows
                       if r.name not in self.masked}, 1.0)  # fmt: skip
        rest = [(j, b) for j, b in enumerate(backgrounds) if tuple(float(c) for c in b) != first]
        if rest and "rgb" in self.textures:
            # Each such layer cleared through a framebuffer holding that layer alone, by the same framebuffer
            # clear as the one-sample G-buffer's: a texture clear (glClearTexSubImage) converts floats to 8 bits
            # by another rule on NVIDIA (off by one), and a sample must not depend on its batch.
            if not self._scratch:
                ids = (ctypes.c_uint * 1)()
                _gl("glCreateFramebuffers", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ids)
                self._scratch = int(ids[0])
            layer = _gl("glNamedFramebufferTextureLayer", ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_int,
                        ctypes.c_int)  # fmt: skip
            clear = _gl("glClearNamedFramebufferfv", ctypes.c_uint, ctypes.c_uint, ctypes.c_int,
                        ctypes.POINTER(ctypes.c_float))  # fmt: skip
            glo = self.textures["rgb"].glo
            for j, b in rest:
                layer(self._scratch, _COLOR0, glo, 0, j)
                clear(self._scratch, _COLOR, 0, (ctypes.c_float * 4)(*(float(c) for c in b), 1.0))

    def clear_to(self, values: dict[str, tuple[float, ...]], depth: float) -> None:
        """Clear the bound layered framebuffer's targets named in ``values`` to those values (RGBA; integers
        for the id targets) and its depth-test buffer to ``depth``, every layer (what :meth:`clear` does, and
        the set-up of the masked read's driver check)."""
        fv = _gl("glClearBufferfv", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_float))
        uiv = _gl("glClearBufferuiv", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))
        for r in self.rows:
            if r.name in values:
                v = values[r.name]
                if r.gl_dtype.startswith(("u", "i")):
                    uiv(_COLOR, self._slots[r.name], (ctypes.c_uint * 4)(*(int(x) for x in v)))
                else:
                    fv(_COLOR, self._slots[r.name], (ctypes.c_float * 4)(*v))
        fv(_DEPTH, 0, (ctypes.c_float * 4)(depth))

    def copy_layer(self, name: str, layer: int, texture: moderngl.Texture) -> None:
        """Copy layer ``layer`` of pass ``name``'s target into ``texture`` (2-D, the same size and format), on
        the GPU (``glCopyImageSubData``): in command order, so a later draw into the layer does not change it."""
        src = self.textures[name]
        w, h = self.size
        _gl("glCopyImageSubData", *(ctypes.c_uint, ctypes.c_uint, *(ctypes.c_int,) * 4) * 2, *(ctypes.c_int,) * 3)(
            src.glo, _TEX_2D_ARRAY, 0, 0, 0, layer, texture.glo, _TEX_2D, 0, 0, 0, 0, w, h, 1
        )

    @property
    def depth_texture(self) -> int:
        """The depth-test buffer: a GL texture array (1 where nothing was drawn since :meth:`clear`)."""
        return self._depth

    def release(self) -> None:
        """Free the GL objects. Safe to call twice."""
        scratch, self._scratch = getattr(self, "_scratch", 0), 0
        if scratch:
            _gl("glDeleteFramebuffers", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, (ctypes.c_uint * 1)(scratch))
        fbo, self._fbo = getattr(self, "_fbo", 0), 0
        if fbo:
            _gl("glDeleteFramebuffers", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, (ctypes.c_uint * 1)(fbo))
        depth, self._depth = getattr(self, "_depth", 0), 0
        if depth:
            _gl("glDeleteTextures", ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, (ctypes.c_uint * 1)(depth))
        textures, self.textures = self.textures, {}
        for tex in textures.values():
            tex.release()

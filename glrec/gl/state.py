"""Snapshots of GL state, so glrec can work inside another library's context and leave it as it was.

:class:`StateGuard` reads every piece of state glrec's stages (and moderngl
under them) may change -- framebuffer, buffer, texture, image, sampler,
program and vertex-array bindings, viewport and scissor, the enables and
blend/depth/mask/raster settings, pixel-store parameters -- and after glrec's
calls puts back each one that differs. ``full=True`` reads a wider set
(every texture target on more units, stencil state, compatibility-profile
state, read/draw buffers); the tests compare such a full snapshot before and
after glrec's calls, which shows glrec changes nothing outside the restored
set.

Reads go through ``glGet*`` with ctypes (about a microsecond each;
:mod:`glrec.gl.state_calls`); see ``benchmarks/context_switch.py`` for the cost
per call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .state_calls import Value, functions

# Names of the GL enums used below (values from the GL 4.6 core/compat headers).
GL_TEXTURE0 = 0x84C0
GL_ACTIVE_TEXTURE = 0x84E0
GL_MAX_TEXTURE_IMAGE_UNITS = 0x8872
GL_CONTEXT_PROFILE_MASK = 0x9126
GL_CONTEXT_COMPATIBILITY_PROFILE_BIT = 0x2
GL_FRAMEBUFFER = 0x8D40
GL_DRAW_FRAMEBUFFER = 0x8CA9
GL_READ_FRAMEBUFFER = 0x8CA8

# (binding query, bind target) for texture targets; the touched set uses only 2D.
_TEX_2D = (0x8069, 0x0DE1)
_TEX_MORE = ((0x8C1D, 0x8C1A), (0x8514, 0x8513), (0x806A, 0x806F), (0x9104, 0x9100), (0x84F6, 0x84F5),
             (0x8068, 0x0DE0), (0x8C2C, 0x8C2A), (0x9105, 0x9102))  # fmt: skip
# Generic (non-indexed) buffer bindings: (binding query, target).
_BUFFERS = (
    (0x8894, 0x8892),  # ARRAY_BUFFER
    (0x88ED, 0x88EB),  # PIXEL_PACK_BUFFER
    (0x88EF, 0x88EC),  # PIXEL_UNPACK_BUFFER
    (0x8A28, 0x8A11),  # UNIFORM_BUFFER
    (0x90D3, 0x90D2),  # SHADER_STORAGE_BUFFER
    (0x8F36, 0x8F36),  # COPY_READ_BUFFER
    (0x8F37, 0x8F37),  # COPY_WRITE_BUFFER
    (0x8F43, 0x8F3F),  # DRAW_INDIRECT_BUFFER
    (0x90EF, 0x90EE),  # DISPATCH_INDIRECT_BUFFER
    (0x92C1, 0x92C0),  # ATOMIC_COUNTER_BUFFER
    (0x8C8F, 0x8C8E),  # TRANSFORM_FEEDBACK_BUFFER
)
_QUERY_BUFFER = (0x9193, 0x9192)  # GL 4.4
# Indexed buffer bindings: (binding, start, size, target).
_SSBO = (0x90D3, 0x90D4, 0x90D5, 0x90D2)
_UBO = (0x8A28, 0x8A29, 0x8A2A, 0x8A11)
# blend, cull, depth, stencil, scissor, sRGB, primitive restart (+fixed index), seamless cube maps,
# program point size, rasterizer discard, polygon offset fill/line/point, multisample, alpha to
# coverage, depth clamp, dither, line smooth, logic op, sample shading, polygon smooth
_ENABLES = (
    0x0BE2, 0x0B44, 0x0B71, 0x0B90, 0x0C11, 0x8DB9, 0x8F9D, 0x8D69, 0x884F, 0x8642, 0x8C89, 0x8037,
    0x809D, 0x809E, 0x864F, 0x0BD0, 0x0B20, 0x0BF2, 0x8C36, 0x2A02, 0x2A01, 0x0B41,
)  # fmt: skip
_PIXEL_STORE = (0x0D05, 0x0CF5, 0x0D02, 0x0CF2, 0x0D03, 0x0D04, 0x0CF3, 0x0CF4, 0x806C, 0x806E, 0x806B,
                0x806D, 0x0D00, 0x0CF0, 0x0D01, 0x0CF1)  # fmt: skip
_IMAGE = (0x8F3A, 0x8F3B, 0x8F3C, 0x8F3D, 0x8F3E, 0x906E)  # name, level, layered, layer, access, format
GL_R8 = 0x8229
GL_READ_ONLY = 0x88B8
# Compatibility-profile state MuJoCo's fixed-function renderer relies on (checked, never set by glrec).
_COMPAT_ENABLES = (0x0B50, 0x0DE1, 0x0B57, 0x0BC0, 0x0B60, 0x8074, 0x8075, 0x8076, 0x8078)
_COMPAT_INTS = ((0x0BA0, 1), (0x84E1, 1), (0x0B54, 1))  # matrix mode, client active texture, shade model
_COMPAT_FLOATS = ((0x0B00, 4), (0x0BA6, 16), (0x0BA7, 16))  # current colour, modelview, projection
_STENCIL_INTS = ((0x0B92, 1), (0x0B97, 1), (0x0B93, 1), (0x0B98, 1), (0x0B91, 1), (0x0B94, 1), (0x0B95, 1),
                 (0x0B96, 1), (0x8800, 1), (0x8801, 1), (0x8802, 1), (0x8803, 1))  # fmt: skip

log = logging.getLogger("glrec")


class _Item:
    """One piece of state: how to read it and (unless it is only checked) how to put it back."""

    __slots__ = ("get", "name", "set")

    def __init__(self, name: str, get: Callable[..., Value], set: Callable[..., None] | None = None) -> None:
        self.name, self.get, self.set = name, get, set


def _touched(name: str) -> bool:
    """Whether glrec's stages or moderngl under them may change ``name`` (what a guard restores)."""
    return name in _TOUCHED or name.startswith(("texture[", "pixel_store_"))


# What glrec's stages and moderngl under them set: framebuffer/program/VAO/buffer bindings, the
# storage buffer and image units and texture units the convert/pack/plane-writer shaders use (plus
# moderngl's own last unit), viewport, scissor, the enables, blend/depth/mask/clear and raster
# settings moderngl's setters and a scene may change, and every pixel-store parameter (normalised
# for glrec's reads, see _NORMAL).
_TOUCHED = frozenset({
    "draw_framebuffer", "read_framebuffer", "renderbuffer", "program", "vertex_array", "element_buffer",
    "buffer_0x90d2[0]", "buffer_0x8892", "buffer_0x88eb", "buffer_0x88ec", "buffer_0x8a11", "buffer_0x90d2",
    "buffer_0x8f36", "buffer_0x8f37", "image[0]", "image[1]", "image[2]", "active_texture",
    "viewport", "scissor_box", "enable_0xbe2", "enable_0xb44", "enable_0xb71", "enable_0xc11", "enable_0x8db9",
    "enable_0x8f9d", "enable_0x8d69", "enable_0x884f", "enable_0x8642", "enable_0x8c89", "blend_func",
    "blend_equation", "depth_func", "depth_mask", "depth_clear", "colour_mask[0]", "clear_colour", "cull_face",
    "front_face", "line_width", "point_size", "restart_index",
})  # fmt: skip
# Values glrec's own work needs, set after capture: default pixel-transfer parameters (the PBO
# readback and texture uploads assume them), no pixel buffer bound for uploads of its own, and
# rasterizer discard off (it would discard clears).
_NORMAL: dict[str, Value] = {
    **{f"pixel_store_0x{p:x}": ((4,) if p in (0x0D05, 0x0CF5) else (0,)) for p in _PIXEL_STORE},
    "buffer_0x88eb": (0,),
    "buffer_0x88ec": (0,),
    "enable_0x8c89": (0,),
}


class StateGuard:
    """Reads and restores the GL state of the context current when it was made (one context, one thread).

    >>> guard = StateGuard()                       # doctest: +SKIP
    >>> saved = guard.capture()                    # doctest: +SKIP
    >>> ...                                        # glrec's calls
    >>> guard.restore(saved)                       # doctest: +SKIP
    """

    def __init__(self, *, full: bool = False, version: int = 430) -> None:
        gl = self.gl = functions()
        self.full = full
        units = int(gl.ints(GL_MAX_TEXTURE_IMAGE_UNITS)[0])
        # moderngl does its own texture work (creation, reads) on the last unit.
        self.units = sorted({*range(16 if full else 4), units - 1})
        compat = bool(gl.ints(GL_CONTEXT_PROFILE_MASK)[0] & GL_CONTEXT_COMPATIBILITY_PROFILE_BIT)
        self._active: Value = (GL_TEXTURE0,)
        items = self._items(full, compat, version)
        self.items = items if full else [it for it in items if _touched(it.name)]
        self._normal = [(it.name, it.set, _NORMAL[it.name]) for it in self.items if it.name in _NORMAL and it.set]
        gl.GetError()  # a query this driver does not know must not leave an error for the caller
        self._active_item = next(it for it in self.items if it.name == "active_texture")

    # -- the state -----------------------------------------------------------------------------

    def _items(self, full: bool, compat: bool, version: int) -> list[_Item]:
        gl = self.gl
        items: list[_Item] = []
        add = items.append

        def bind_fb(target: int) -> Callable[[Value], None]:
            return lambda v: gl.BindFramebuffer(target, v[0])

        # Order matters on restore: the VAO before the element buffer it holds, indexed buffer
        # bindings before the generic ones (glBindBufferBase sets both), texture units before
        # the active unit, and the read framebuffer before its read buffer.
        add(_Item("draw_framebuffer", lambda: gl.ints(0x8CA6), bind_fb(GL_DRAW_FRAMEBUFFER)))
        add(_Item("read_framebuffer", lambda: gl.ints(0x8CAA), bind_fb(GL_READ_FRAMEBUFFER)))
        add(_Item("renderbuffer", lambda: gl.ints(0x8CA7), lambda v: gl.BindRenderbuffer(0x8D41, v[0])))
        add(_Item("program", lambda: gl.ints(0x8B8D), lambda v: gl.UseProgram(v[0])))
        add(_Item("vertex_array", lambda: gl.ints(0x85B5), lambda v: gl.BindVertexArray(v[0])))
        add(_Item("element_buffer", lambda: gl.ints(0x8895), lambda v: gl.BindBuffer(0x8893, v[0])))
        slots = 8 if full else 4
        for binding, start, size, target in (_SSBO, _UBO):
            for k in range(slots):
                add(_Item(f"buffer_0x{target:x}[{k}]", self._indexed_get(binding, start, size, k),
                          self._indexed_set(target, k)))  # fmt: skip
        buffers = _BUFFERS + ((_QUERY_BUFFER,) if version >= 440 else ())
        for binding, target in buffers:
            add(_Item(f"buffer_0x{target:x}", lambda b=binding: gl.ints(b), lambda v, t=target: gl.BindBuffer(t, v[0])))
        for k in range(8 if full else 4):
            add(_Item(f"image[{k}]", lambda k=k: tuple(gl.int_i(p, k) for p in _IMAGE), self._image_set(k)))
        targets = (_TEX_2D, *_TEX_MORE) if full else (_TEX_2D,)
        for unit in self.units:
            add(_Item(f"texture[{unit}]", self._unit_get(unit, targets), self._unit_set(unit, targets)))
        # Reading the units switches the active unit: capture() reads it first and hands it in here.
        add(_Item("active_texture", lambda: self._active, lambda v: gl.ActiveTexture(v[0])))
        add(_Item("viewport", lambda: gl.ints(0x0BA2, 4), lambda v: gl.Viewport(*v)))
        add(_Item("scissor_box", lambda: gl.ints(0x0C10, 4), lambda v: gl.Scissor(*v)))
        for cap in _ENABLES:
            add(_Item(f"enable_0x{cap:x}", lambda c=cap: (gl.IsEnabled(c),),
                      lambda v, c=cap: (gl.Enable if v[0] else gl.Disable)(c)))  # fmt: skip
        add(_Item("blend_func", lambda: gl.ints(0x80C9) + gl.ints(0x80C8) + gl.ints(0x80CB) + gl.ints(0x80CA),
                  lambda v: gl.BlendFuncSeparate(*v)))  # fmt: skip
        add(_Item("blend_equation", lambda: gl.ints(0x8009) + gl.ints(0x883D), lambda v: gl.BlendEquationSeparate(*v)))
        add(_Item("blend_color", lambda: gl.floats(0x8005, 4), lambda v: gl.BlendColor(*v)))
        add(_Item("depth_func", lambda: gl.ints(0x0B74), lambda v: gl.DepthFunc(v[0])))
        add(_Item("depth_mask", lambda: gl.bools(0x0B72), lambda v: gl.DepthMask(v[0])))
        add(_Item("depth_clear", lambda: gl.floats(0x0B73), lambda v: gl.ClearDepth(v[0])))
        add(_Item("depth_range", lambda: gl.floats(0x0B70, 2), lambda v: gl.DepthRange(*v)))
        for k in range(8 if full else 1):
            add(_Item(f"colour_mask[{k}]", lambda k=k: gl.bools_i(0x0C23, k, 4), lambda v, k=k: gl.ColorMaski(k, *v)))
        add(_Item("clear_colour", lambda: gl.floats(0x0C22, 4), lambda v: gl.ClearColor(*v)))
        add(_Item("cull_face", lambda: gl.ints(0x0B45), lambda v: gl.CullFace(v[0])))
        add(_Item("front_face", lambda: gl.ints(0x0B46), lambda v: gl.FrontFace(v[0])))
        add(_Item("polygon_mode", lambda: gl.ints(0x0B40), lambda v: gl.PolygonMode(0x0408, v[0])))
        add(_Item("line_width", lambda: gl.floats(0x0B21), lambda v: gl.LineWidth(v[0])))
        add(_Item("point_size", lambda: gl.floats(0x0B11), lambda v: gl.PointSize(v[0])))
        add(_Item("polygon_offset", lambda: gl.floats(0x8038) + gl.floats(0x2A00), lambda v: gl.PolygonOffset(*v)))
        # 64-bit read: the 32-bit one clamps the unsigned 0xFFFFFFFF moderngl sets.
        add(_Item("restart_index", lambda: (gl.int64(0x8F9E),), lambda v: gl.PrimitiveRestartIndex(v[0] & 0xFFFFFFFF)))
        for pname in _PIXEL_STORE:
            add(_Item(f"pixel_store_0x{pname:x}", lambda p=pname: gl.ints(p),
                      lambda v, p=pname: gl.PixelStorei(p, v[0])))  # fmt: skip
        if full:  # checked only: glrec never sets these
            add(_Item("read_buffer", lambda: gl.ints(0x0C02)))
            add(_Item("draw_buffer0", lambda: gl.ints(0x8825)))
            add(_Item("program_pipeline", lambda: gl.ints(0x825A)))
            add(_Item("transform_feedback", lambda: gl.ints(0x8E25)))
            for pname, n in _STENCIL_INTS:
                add(_Item(f"stencil_0x{pname:x}", lambda p=pname, n=n: gl.ints(p, n)))
            if compat:
                for cap in _COMPAT_ENABLES:
                    add(_Item(f"compat_enable_0x{cap:x}", lambda c=cap: (gl.IsEnabled(c),)))
                for pname, n in _COMPAT_INTS:
                    add(_Item(f"compat_0x{pname:x}", lambda p=pname, n=n: gl.ints(p, n)))
                for pname, n in _COMPAT_FLOATS:
                    add(_Item(f"compat_0x{pname:x}", lambda p=pname, n=n: gl.floats(p, n)))
        return items

    def _indexed_get(self, binding: int, start: int, size: int, k: int) -> Callable[[], Value]:
        gl = self.gl
        return lambda: (gl.int_i(binding, k), gl.int64_i(start, k), gl.int64_i(size, k))

    def _indexed_set(self, target: int, k: int) -> Callable[[Value], None]:
        gl = self.gl

        def put(v: Value) -> None:
            name, start, size = v
            if name and size:
                gl.BindBufferRange(target, k, name, start, size)
            else:
                gl.BindBufferBase(target, k, name)

        return put

    def _image_set(self, k: int) -> Callable[[Value], None]:
        gl = self.gl

        def put(v: Value) -> None:
            name, level, layered, layer, access, fmt = v
            # An image unit never bound reports format 0, which glBindImageTexture refuses.
            gl.BindImageTexture(k, name, level, layered, layer, access or GL_READ_ONLY, fmt or GL_R8)

        return put

    def _unit_get(self, unit: int, targets: tuple[tuple[int, int], ...]) -> Callable[[], Value]:
        gl = self.gl

        def get() -> Value:
            gl.ActiveTexture(GL_TEXTURE0 + unit)
            return (*(gl.ints(binding)[0] for binding, _ in targets), gl.ints(0x8919)[0])  # + sampler

        return get

    def _unit_set(self, unit: int, targets: tuple[tuple[int, int], ...]) -> Callable[[Value], None]:
        gl = self.gl

        def put(v: Value) -> None:
            gl.ActiveTexture(GL_TEXTURE0 + unit)
            for (_, target), name in zip(targets, v, strict=False):
                gl.BindTexture(target, name)
            gl.BindSampler(unit, v[-1])

        return put

    # -- capture / restore -----------------------------------------------------------------

    def capture(self) -> dict[str, Value]:
        """Read every item; the active texture unit is as it was afterwards."""
        self._active = self.gl.ints(GL_ACTIVE_TEXTURE)
        out = {it.name: it.get() for it in self.items}
        self.gl.ActiveTexture(self._active[0])
        return out

    def restore(self, saved: dict[str, Value]) -> None:
        """Put every restorable item back to ``saved``.

        All of them, without reading first: on Mesa a ``glGet`` costs several times
        a state change, so comparing would cost more than it saves.
        """
        for it in self.items:
            if it.set is not None and it is not self._active_item:
                it.set(saved[it.name])
        self.gl.ActiveTexture(saved["active_texture"][0])  # last: restoring the units switched it

    def enter(self) -> dict[str, Value]:
        """Before glrec's calls: set aside GL errors already pending, then capture the state."""
        pending = self._errors()
        if pending:
            log.debug("GL error(s) %s were pending in the caller's context before glrec's calls", pending)
        saved = self.capture()
        for name, put, value in self._normal:
            if saved[name] != value:
                put(value)
        return saved

    def leave(self, saved: dict[str, Value]) -> str | None:
        """After glrec's calls: restore the state; say what went wrong if glrec's calls left a GL error."""
        errors = self._errors()
        self.restore(saved)
        errors += self._errors()
        if errors:
            codes = ", ".join(f"0x{e:04x}" for e in errors)
            return f"glrec's GL calls in the caller's context raised GL error {codes}; please report this as a bug."
        return None

    def _errors(self) -> list[int]:
        out: list[int] = []
        while len(out) < 16:
            err = int(self.gl.GetError())
            if not err:
                break
            out.append(err)
        return out

    @staticmethod
    def diff(before: dict[str, Value], after: dict[str, Value]) -> dict[str, tuple[Value, Value | None]]:
        """Items whose values differ: name -> (before, after)."""
        return {k: (before[k], after.get(k)) for k in before if before[k] != after.get(k)}

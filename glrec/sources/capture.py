"""Capture source: a framebuffer or texture of the recorder's GL context, copied into the recorder's target.

This is how ``context="current"`` records another library's rendering: after
MuJoCo or pyrender has drawn, :meth:`Capture.resolve` finds what to read (the
framebuffer bound for reading, a framebuffer the caller names, or a texture,
attached to a framebuffer of glrec's own) and checks it before anything is
copied: complete, a colour buffer to read, at least the recorder's size.
:meth:`Capture.copy` then blits the recorder's size from GL's origin, the
lower-left corner, 1:1 into the target -- the region ``glReadPixels(0, 0, w, h)``
reads, which is where MuJoCo draws in its larger offscreen buffer -- resolving a
multisampled source on the way as the library's own read-back would; the
usual convert stage turns GL's bottom-up rows into a top-down video frame.

A blit bypasses the fragment pipeline except the scissor test and sRGB
encoding, so both are switched off for it (and put back): the bytes arrive as
the library stored them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, ContextError
from ..gl import egl
from ..gl.fences import gl_function

_u, _i = ctypes.c_uint, ctypes.c_int
GL_READ_FRAMEBUFFER = 0x8CA8
GL_DRAW_FRAMEBUFFER = 0x8CA9
GL_READ_FRAMEBUFFER_BINDING = 0x8CAA
GL_READ_BUFFER = 0x0C02
GL_COLOR_ATTACHMENT0 = 0x8CE0
GL_FRAMEBUFFER_COMPLETE = 0x8CD5
GL_FRAMEBUFFER_UNDEFINED = 0x8219
GL_ATTACHMENT_TYPE = 0x8CD0
GL_ATTACHMENT_NAME = 0x8CD1
GL_ATTACHMENT_LEVEL = 0x8CD2
GL_TEXTURE = 0x1702
GL_RENDERBUFFER = 0x8D41
GL_TEXTURE_WIDTH, GL_TEXTURE_HEIGHT = 0x1000, 0x1001
GL_RENDERBUFFER_WIDTH, GL_RENDERBUFFER_HEIGHT = 0x8D42, 0x8D43
GL_COLOR_BUFFER_BIT = 0x4000
GL_NEAREST = 0x2600
GL_SCISSOR_TEST = 0x0C11
GL_FRAMEBUFFER_SRGB = 0x8DB9
GL_NONE = 0


def _f(name: str, restype: Any, *args: Any) -> Any:
    return gl_function(name, restype, *args)


def _ints(pname: int) -> int:
    value = (_i * 4)()
    _f("glGetIntegerv", None, _u, ctypes.POINTER(_i))(pname, value)
    return int(value[0])


def _name_of(obj: Any, kind: str) -> int:
    """A GL name from an int or a moderngl object (``.glo``)."""
    name = getattr(obj, "glo", obj)
    if isinstance(name, bool) or not isinstance(name, int) or name < 0:
        raise ConfigError(
            f"{kind} {obj!r} is not a GL {kind} name; pass an int (e.g. 0 for the default framebuffer) "
            f"or a moderngl {kind.capitalize()}."
        )
    return name


@dataclass(frozen=True)
class Source:
    """What one capture reads: a framebuffer name (glrec's own when a texture was named) and its size."""

    framebuffer: int
    size: tuple[int, int] | None
    what: str
    texture: int = 0


class Capture:
    """Finds and copies the caller's framebuffer or texture; owns one read framebuffer for textures."""

    def __init__(self, size: tuple[int, int], version: int, binding: egl.Binding) -> None:
        self.size = size
        self._dsa = version >= 450  # size checks read attachments through GL 4.5 direct state access
        self._binding = binding
        self._reader = 0  # framebuffer glrec attaches a named texture to

    def resolve(self, fbo: Any = None, texture: Any = None) -> Source:
        """What to record, checked; call before glrec binds its own target (reads the current read binding)."""
        if fbo is not None and texture is not None:
            raise ConfigError("Give capture() a framebuffer or a texture, not both.")
        if texture is not None:
            return self._texture_source(_name_of(texture, "texture"))
        name = _ints(GL_READ_FRAMEBUFFER_BINDING) if fbo is None else _name_of(fbo, "framebuffer")
        what = f"framebuffer {name}" + (" (bound for reading)" if fbo is None else "")
        if name and not _f("glIsFramebuffer", ctypes.c_ubyte, _u)(name):
            raise ConfigError(f"{what} is not a framebuffer of the recorder's GL context.")
        _f("glBindFramebuffer", None, _u, _u)(GL_READ_FRAMEBUFFER, name)
        self._check_complete(what, name)
        return Source(name, self._framebuffer_size(name), what)

    def _texture_source(self, name: int) -> Source:
        what = f"texture {name}"
        if not name or not _f("glIsTexture", ctypes.c_ubyte, _u)(name):
            raise ConfigError(f"{what} is not a texture of the recorder's GL context.")
        if not self._reader:
            fb = _u(0)
            _f("glGenFramebuffers", None, _i, ctypes.POINTER(_u))(1, ctypes.byref(fb))
            self._reader = int(fb.value)
        _f("glBindFramebuffer", None, _u, _u)(GL_READ_FRAMEBUFFER, self._reader)
        _f("glFramebufferTexture", None, _u, _u, _u, _i)(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, name, 0)
        _f("glReadBuffer", None, _u)(GL_COLOR_ATTACHMENT0)
        try:
            self._check_complete(what, self._reader)
        except ConfigError:
            self._detach()
            raise
        size = self._texture_size(name, 0) if self._dsa else None
        return Source(self._reader, size, what, texture=name)

    def _check_complete(self, what: str, name: int) -> None:
        status = int(_f("glCheckFramebufferStatus", _u, _u)(GL_READ_FRAMEBUFFER))
        # Mesa reports a surfaceless context's framebuffer 0 as undefined; NVIDIA's 580 driver on the H200 did
        # not (capture(0) was accepted there), so the EGL binding (no read surface) decides.
        if status == GL_FRAMEBUFFER_UNDEFINED or (name == 0 and not self._binding.read):
            raise ConfigError(
                f"{what}: this context has no default framebuffer (it was made without a surface, as MuJoCo's "
                "and pyrender's are). Say what to record: rec.capture(fbo=...) or rec.capture(texture=...)."
            )
        if status != GL_FRAMEBUFFER_COMPLETE:
            raise ConfigError(f"{what} is incomplete (status 0x{status:04x}); render into it before capturing.")
        if _ints(GL_READ_BUFFER) == GL_NONE:
            raise ConfigError(f"{what} has no read buffer (glReadBuffer(GL_NONE)); select a colour attachment.")

    def _framebuffer_size(self, name: int) -> tuple[int, int] | None:
        if name == 0:
            surface = self._binding.read
            return egl.surface_size(self._binding.display, surface) if surface else None
        if not self._dsa:
            return None
        attachment = _ints(GL_READ_BUFFER)
        query = _f("glGetFramebufferAttachmentParameteriv", None, _u, _u, _u, ctypes.POINTER(_i))
        out = _i(0)
        values = []
        for pname in (GL_ATTACHMENT_TYPE, GL_ATTACHMENT_NAME, GL_ATTACHMENT_LEVEL):
            query(GL_READ_FRAMEBUFFER, attachment, pname, ctypes.byref(out))
            values.append(int(out.value))
        kind, obj, level = values
        if kind == GL_TEXTURE:
            return self._texture_size(obj, level)
        if kind == GL_RENDERBUFFER:
            get = _f("glGetNamedRenderbufferParameteriv", None, _u, _u, ctypes.POINTER(_i))
            w, h = _i(0), _i(0)
            get(obj, GL_RENDERBUFFER_WIDTH, ctypes.byref(w))
            get(obj, GL_RENDERBUFFER_HEIGHT, ctypes.byref(h))
            return int(w.value), int(h.value)
        return None

    @staticmethod
    def _texture_size(name: int, level: int) -> tuple[int, int]:
        get = _f("glGetTextureLevelParameteriv", None, _u, _i, _u, ctypes.POINTER(_i))
        w, h = _i(0), _i(0)
        get(name, level, GL_TEXTURE_WIDTH, ctypes.byref(w))
        get(name, level, GL_TEXTURE_HEIGHT, ctypes.byref(h))
        return int(w.value), int(h.value)

    def copy(self, source: Source, target_fbo: int) -> None:
        """Blit the lower-left :attr:`size` of ``source`` into glrec's target framebuffer ``target_fbo``, unscaled."""
        w, h = self.size
        if source.size is not None and (source.size[0] < w or source.size[1] < h):
            if source.texture:
                self._detach()
            raise ConfigError(
                f"{source.what} is {source.size[0]}x{source.size[1]}, smaller than the {w}x{h} the recorder "
                f"records; make the Recorder with size=({source.size[0]}, {source.size[1]}) or smaller."
            )
        is_enabled = _f("glIsEnabled", ctypes.c_ubyte, _u)
        enable, disable = _f("glEnable", None, _u), _f("glDisable", None, _u)
        switched = [cap for cap in (GL_SCISSOR_TEST, GL_FRAMEBUFFER_SRGB) if is_enabled(cap)]
        for cap in switched:
            disable(cap)
        get_error = _f("glGetError", _u)
        while get_error():  # errors of the caller's own, not this blit's
            pass
        bind = _f("glBindFramebuffer", None, _u, _u)
        bind(GL_READ_FRAMEBUFFER, source.framebuffer)
        bind(GL_DRAW_FRAMEBUFFER, target_fbo)
        blit = _f("glBlitFramebuffer", None, _i, _i, _i, _i, _i, _i, _i, _i, _u, _u)
        blit(0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST)
        error = int(get_error())
        for cap in switched:
            enable(cap)
        if source.texture:
            self._detach()
        if error:
            raise ContextError(
                f"Copying {source.what} into the recorder failed with GL error 0x{error:04x}: its colour format "
                "must be a normalised or float one (not integer) and a multisampled source must be "
                f"exactly {w}x{h}."
            )

    def _detach(self) -> None:
        # Keeping the caller's texture attached would keep it alive after the caller deletes it.
        _f("glBindFramebuffer", None, _u, _u)(GL_READ_FRAMEBUFFER, self._reader)
        _f("glFramebufferTexture", None, _u, _u, _u, _i)(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, 0, 0)

    def release(self) -> None:
        """Delete glrec's read framebuffer (call with the context current). Safe twice."""
        reader, self._reader = self._reader, 0
        if reader:
            _f("glDeleteFramebuffers", None, _i, ctypes.POINTER(_u))(1, ctypes.byref(_u(reader)))

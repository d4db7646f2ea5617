"""The GL entry points :mod:`glrec.gl.state` reads and puts back state with, and typed reads through them.

Looked up once per process with :func:`glrec.gl.fences.gl_function` (they are the
same for every context of a driver); each thread gets its own
:class:`StateCalls` for the scratch buffers the reads fill.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from .fences import gl_function

_i, _u, _f, _d, _b = ctypes.c_int, ctypes.c_uint, ctypes.c_float, ctypes.c_double, ctypes.c_ubyte
_i64 = ctypes.c_int64

Value = tuple[Any, ...]


class StateCalls:
    """The GL calls that read and set the state a guard covers, and typed reads (``ints``, ``floats``, ...)."""

    def __init__(self) -> None:
        def f(name: str, *args: Any, restype: Any = None) -> Any:
            return gl_function(name, restype, *args)

        p = ctypes.POINTER
        self.GetIntegerv = f("glGetIntegerv", _u, p(_i))
        self.GetFloatv = f("glGetFloatv", _u, p(_f))
        self.GetDoublev = f("glGetDoublev", _u, p(_d))
        self.GetBooleanv = f("glGetBooleanv", _u, p(_b))
        self.GetIntegeri_v = f("glGetIntegeri_v", _u, _u, p(_i))
        self.GetInteger64i_v = f("glGetInteger64i_v", _u, _u, p(_i64))
        self.GetInteger64v = f("glGetInteger64v", _u, p(_i64))
        self.GetBooleani_v = f("glGetBooleani_v", _u, _u, p(_b))
        self.IsEnabled = f("glIsEnabled", _u, restype=_b)
        self.GetError = f("glGetError", restype=_u)
        self.ActiveTexture = f("glActiveTexture", _u)
        self.BindTexture = f("glBindTexture", _u, _u)
        self.BindSampler = f("glBindSampler", _u, _u)
        self.BindFramebuffer = f("glBindFramebuffer", _u, _u)
        self.BindRenderbuffer = f("glBindRenderbuffer", _u, _u)
        self.UseProgram = f("glUseProgram", _u)
        self.BindVertexArray = f("glBindVertexArray", _u)
        self.BindBuffer = f("glBindBuffer", _u, _u)
        self.BindBufferBase = f("glBindBufferBase", _u, _u, _u)
        self.BindBufferRange = f("glBindBufferRange", _u, _u, _u, ctypes.c_ssize_t, ctypes.c_ssize_t)
        self.BindImageTexture = f("glBindImageTexture", _u, _u, _i, _b, _i, _u, _u)
        self.Viewport = f("glViewport", _i, _i, _i, _i)
        self.Scissor = f("glScissor", _i, _i, _i, _i)
        self.Enable = f("glEnable", _u)
        self.Disable = f("glDisable", _u)
        self.BlendFuncSeparate = f("glBlendFuncSeparate", _u, _u, _u, _u)
        self.BlendEquationSeparate = f("glBlendEquationSeparate", _u, _u)
        self.BlendColor = f("glBlendColor", _f, _f, _f, _f)
        self.DepthFunc = f("glDepthFunc", _u)
        self.DepthMask = f("glDepthMask", _b)
        self.ClearDepth = f("glClearDepth", _d)
        self.DepthRange = f("glDepthRange", _d, _d)
        self.ColorMaski = f("glColorMaski", _u, _b, _b, _b, _b)
        self.ClearColor = f("glClearColor", _f, _f, _f, _f)
        self.CullFace = f("glCullFace", _u)
        self.FrontFace = f("glFrontFace", _u)
        self.PolygonMode = f("glPolygonMode", _u, _u)
        self.LineWidth = f("glLineWidth", _f)
        self.PointSize = f("glPointSize", _f)
        self.PolygonOffset = f("glPolygonOffset", _f, _f)
        self.PrimitiveRestartIndex = f("glPrimitiveRestartIndex", _u)
        self.PixelStorei = f("glPixelStorei", _u, _i)
        self.ReadBuffer = f("glReadBuffer", _u)
        self._ints = (_i * 16)()
        self._floats = (_f * 16)()
        self._bools = (_b * 4)()
        self._i64 = _i64(0)

    def ints(self, pname: int, n: int = 1) -> Value:
        self.GetIntegerv(pname, self._ints)
        return tuple(self._ints[:n])

    def floats(self, pname: int, n: int = 1) -> Value:
        self.GetFloatv(pname, self._floats)
        return tuple(self._floats[:n])

    def bools(self, pname: int, n: int = 1) -> Value:
        self.GetBooleanv(pname, self._bools)
        return tuple(self._bools[:n])

    def int64(self, pname: int) -> int:
        self.GetInteger64v(pname, ctypes.byref(self._i64))
        return int(self._i64.value)

    def int_i(self, pname: int, index: int) -> int:
        self.GetIntegeri_v(pname, index, self._ints)
        return int(self._ints[0])

    def int64_i(self, pname: int, index: int) -> int:
        self.GetInteger64i_v(pname, index, ctypes.byref(self._i64))
        return int(self._i64.value)

    def bools_i(self, pname: int, index: int, n: int) -> Value:
        self.GetBooleani_v(pname, index, self._bools)
        return tuple(self._bools[:n])


_PER_THREAD = threading.local()


def functions() -> StateCalls:
    """This thread's entry points (their scratch buffers are not shared between threads)."""
    gl = getattr(_PER_THREAD, "gl", None)
    if gl is None:
        gl = _PER_THREAD.gl = StateCalls()
    return gl

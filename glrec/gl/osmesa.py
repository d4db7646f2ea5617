"""The caller's OSMesa context, put back after glrec's EGL calls (MuJoCo's ``MUJOCO_GL=osmesa``, PyOpenGL's osmesa).

Mesa's OSMesa and Mesa's EGL share the thread's GL dispatch (``libglapi``):
making glrec's EGL context current takes the thread's GL calls away from an
OSMesa context, and releasing EGL afterwards leaves them going nowhere, while
OSMesa still reports its context current. The library that owns it never makes
it current again (MuJoCo does so once, at creation), so its frames come out
black. So when the thread has an OSMesa context and no EGL context current,
:func:`current` notes it with the caller's EGL binding (:class:`glrec.gl.egl.Binding`),
and putting that binding back binds it again, colour buffer, row length and
orientation as they were.

OSMesa is looked for only once a Python OpenGL loader for it has been imported
(PyOpenGL's osmesa platform, which MuJoCo, dm_control and pyrender use), so
that recorders without it pay two dictionary lookups per activation.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass
from typing import Any

OSMESA_ROW_LENGTH, OSMESA_Y_UP, OSMESA_TYPE = 0x10, 0x11, 0x23
_LOADERS = ("OpenGL.osmesa", "OpenGL.platform.osmesa")
_NAMES = ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so")
_lib: Any = None  # the loaded libOSMesa; False when a loader was imported but no libOSMesa is loaded


@dataclass(frozen=True)
class OSMesaCurrent:
    """An OSMesa context with the colour buffer it was made current on, and how that buffer is laid out."""

    context: int
    buffer: int
    type: int
    width: int
    height: int
    row_length: int
    y_up: int

    def make_current(self) -> None:
        """Bind the context to its buffer again (a no-op for OSMesa if it is still the GL the thread uses)."""
        lib = _library()
        if lib is None or not lib.OSMesaMakeCurrent(self.context, self.buffer, self.type, self.width, self.height):
            return  # destroyed meanwhile: nothing to put back
        lib.OSMesaPixelStore(OSMESA_ROW_LENGTH, self.row_length)
        lib.OSMesaPixelStore(OSMESA_Y_UP, self.y_up)


def current() -> OSMesaCurrent | None:
    """The OSMesa context current on this thread by OSMesa's own account, or None (also when OSMesa is not loaded)."""
    lib = _library()
    if lib is None:
        return None
    context = lib.OSMesaGetCurrentContext()
    if not context:
        return None
    w, h, fmt, buffer = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_void_p()
    if not lib.OSMesaGetColorBuffer(context, ctypes.byref(w), ctypes.byref(h), ctypes.byref(fmt), ctypes.byref(buffer)):
        return None
    values = []
    for pname in (OSMESA_TYPE, OSMESA_ROW_LENGTH, OSMESA_Y_UP):
        value = ctypes.c_int()
        lib.OSMesaGetIntegerv(pname, ctypes.byref(value))
        values.append(int(value.value))
    kind, row_length, y_up = values
    return OSMesaCurrent(int(context), int(buffer.value or 0), kind, int(w.value), int(h.value), row_length, y_up)


def _library() -> Any:
    global _lib
    if _lib is None:
        if not any(name in sys.modules for name in _LOADERS):
            return None
        _lib = _open() or False  # the loader loads libOSMesa as it is imported: looked for once
    return _lib or None


def _open() -> Any:
    for name in _NAMES:
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # the copy already loaded, never a new one
        except OSError:
            continue
        lib.OSMesaGetCurrentContext.restype = ctypes.c_void_p
        lib.OSMesaGetColorBuffer.argtypes = [ctypes.c_void_p, *[ctypes.c_void_p] * 4]
        lib.OSMesaGetColorBuffer.restype = ctypes.c_ubyte
        lib.OSMesaGetIntegerv.argtypes = [ctypes.c_int, ctypes.c_void_p]
        lib.OSMesaGetIntegerv.restype = None
        lib.OSMesaMakeCurrent.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_int]
        lib.OSMesaMakeCurrent.restype = ctypes.c_ubyte
        lib.OSMesaPixelStore.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.OSMesaPixelStore.restype = None
        return lib
    return None

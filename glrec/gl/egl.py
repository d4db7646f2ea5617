"""The calling thread's current EGL context, read and set through ctypes.

EGL keeps one current context per thread and client API, together with the
display and the draw/read surfaces it was made current with. :class:`Binding`
is that whole tuple; :meth:`Binding.current` reads it and
:meth:`Binding.make_current` puts it back exactly, "nothing current" included.
glcontext's own ``__enter__``/``__exit__`` cannot serve here: its exit makes
*no* context current, which would take MuJoCo's or pyrender's context away.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import osmesa
from .osmesa import OSMesaCurrent

EGL_OPENGL_API = 0x30A2
EGL_DRAW = 0x3059
EGL_READ = 0x305A
EGL_WIDTH = 0x3057
EGL_HEIGHT = 0x3056
EGL_SUCCESS = 0x3000
EGL_BAD_CONTEXT = 0x3006
EGL_BAD_DISPLAY = 0x3008
EGL_NOT_INITIALIZED = 0x3001
#: Errors meaning the context or its display no longer exists.
GONE = (0x3001, 0x3006, 0x3008)

_ERRORS = {
    0x3001: "EGL_NOT_INITIALIZED (the display was terminated)",
    0x3002: "EGL_BAD_ACCESS (the context is current on another thread)",
    0x3006: "EGL_BAD_CONTEXT (the context was destroyed)",
    0x3008: "EGL_BAD_DISPLAY",
    0x3009: "EGL_BAD_MATCH",
    0x300D: "EGL_BAD_SURFACE (a surface was destroyed)",
    0x300E: "EGL_CONTEXT_LOST",
}


@functools.lru_cache(maxsize=1)
def lib() -> Any:
    """libEGL with the prototypes glrec uses (the library MuJoCo, PyOpenGL and glcontext load too)."""
    egl = ctypes.CDLL("libEGL.so.1")
    vp, u, i = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int
    for name, restype, argtypes in (
        ("eglGetCurrentContext", vp, []),
        ("eglGetCurrentDisplay", vp, []),
        ("eglGetCurrentSurface", vp, [i]),
        ("eglMakeCurrent", u, [vp, vp, vp, vp]),
        ("eglQueryAPI", u, []),
        ("eglBindAPI", u, [u]),
        ("eglGetError", i, []),
        ("eglQuerySurface", u, [vp, vp, i, ctypes.POINTER(i)]),
        ("eglQueryContext", u, [vp, vp, i, ctypes.POINTER(i)]),
    ):
        fn = getattr(egl, name)
        fn.restype, fn.argtypes = restype, argtypes
    return egl


def error_text(code: int) -> str:
    return _ERRORS.get(code, f"EGL error 0x{code:04x}")


@dataclass(frozen=True)
class Binding:
    """What is current on this thread for the OpenGL API: display, surfaces, context (0 for none).

    ``api`` is the client API the thread had bound (``eglBindAPI``); glrec binds
    OpenGL while it works and puts ``api`` back afterwards. ``osmesa`` is the
    OSMesa context the thread had current with no EGL context (:mod:`glrec.gl.osmesa`),
    bound again with the binding.
    """

    display: int
    draw: int
    read: int
    context: int
    api: int = EGL_OPENGL_API
    osmesa: OSMesaCurrent | None = field(default=None, compare=False)

    @classmethod
    def current(cls) -> Binding:
        egl = lib()
        api = int(egl.eglQueryAPI())
        if api != EGL_OPENGL_API:
            egl.eglBindAPI(EGL_OPENGL_API)
        context = int(egl.eglGetCurrentContext() or 0)
        return cls(
            int(egl.eglGetCurrentDisplay() or 0),
            int(egl.eglGetCurrentSurface(EGL_DRAW) or 0),
            int(egl.eglGetCurrentSurface(EGL_READ) or 0),
            context,
            api,
            None if context else osmesa.current(),
        )

    def make_current(self, release_on: int = 0) -> int:
        """Make this binding current; return 0 or the EGL error code.

        "No context" is made current by releasing the thread's context on the
        display ``release_on`` (the one being left), as ``eglMakeCurrent`` wants
        a valid display even to release.
        """
        egl = lib()
        if self.context:
            ok = egl.eglMakeCurrent(self.display, self.draw, self.read, self.context)
        elif release_on:
            ok = egl.eglMakeCurrent(release_on, None, None, None)
        else:
            ok = 1
        error = 0 if ok else int(egl.eglGetError())
        if self.api != EGL_OPENGL_API:
            egl.eglBindAPI(self.api)
        if self.osmesa is not None and not error:
            self.osmesa.make_current()
        return error


def current_context() -> int:
    """The EGL context current for OpenGL on this thread (0 for none), in one EGL call.

    With another client API bound, EGL answers for that API, whose context is never
    glrec's: the caller then takes the slow path, which binds OpenGL to look.
    """
    return int(lib().eglGetCurrentContext() or 0)


def surface_size(display: int, surface: int) -> tuple[int, int] | None:
    """Width and height of an EGL surface, or None if EGL cannot say."""
    egl = lib()
    w, h = ctypes.c_int(0), ctypes.c_int(0)
    if not egl.eglQuerySurface(display, surface, EGL_WIDTH, ctypes.byref(w)):
        return None
    if not egl.eglQuerySurface(display, surface, EGL_HEIGHT, ctypes.byref(h)):
        return None
    return int(w.value), int(h.value)


# -- glrec's own headless context ----------------------------------------------------------------

EGL_EXTENSIONS = 0x3055
EGL_VENDOR = 0x3053
EGL_NONE = 0x3038
EGL_PLATFORM_DEVICE_EXT = 0x313F
EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_ALLOC_NEW_DISPLAY_EXT = 0x3379  # EGL_EXT_display_alloc
EGL_TRACK_REFERENCES_KHR = 0x3352  # EGL_KHR_display_reference
EGL_DEVICE_EXT = 0x322C  # EGL_EXT_explicit_device: a platform's display on a named EGL device
_CONFIG = (0x3033, 0x0001, 0x3040, 0x0008, 0x3024, 8, 0x3023, 8, 0x3022, 8)  # pbuffer, OpenGL, RGB8
EGL_CONTEXT_MAJOR_VERSION, EGL_CONTEXT_MINOR_VERSION = 0x3098, 0x30FB
EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT = 0x30FD, 0x1


def _ext(name: str, restype: Any, *argtypes: Any) -> Any:
    egl = lib()
    egl.eglGetProcAddress.restype, egl.eglGetProcAddress.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    ptr = egl.eglGetProcAddress(name.encode())
    return ctypes.CFUNCTYPE(restype, *argtypes)(ptr) if ptr else None


def _attribs(values: tuple[int, ...]) -> Any:
    return (ctypes.c_int * (len(values) + 1))(*values, EGL_NONE)


@dataclass
class Headless:
    """A surfaceless EGL context glrec created, and the display it lives on.

    ``private`` displays cannot be ended by another library's ``eglTerminate``:
    one glrec allocated (EGL_EXT_display_alloc, ``allocated``), terminated and
    destroyed with the context, or a reference-counted one (EGL_KHR_display_reference),
    whose ``eglTerminate`` only takes back glrec's own ``eglInitialize``. A shared
    display is never terminated by glrec.
    """

    display: int
    context: int
    private: bool
    how: str
    allocated: bool = False

    def destroy(self) -> None:
        """Destroy the context (EGL frees it once no thread has it current) and a private display."""
        egl = lib()
        egl.eglDestroyContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        egl.eglDestroyContext(self.display, self.context)
        if self.private:
            egl.eglTerminate.argtypes = [ctypes.c_void_p]
            egl.eglTerminate(self.display)
            destroy = _ext("eglDestroyDisplayEXT", ctypes.c_uint, ctypes.c_void_p) if self.allocated else None
            if destroy is not None:
                destroy(self.display)


def _display(device_index: int | None) -> tuple[int, bool, str, bool]:
    """An initialised EGL display for glrec's context: (display, private, how it was chosen, allocated).

    Other libraries (pyrender on delete, MuJoCo at exit) call ``eglTerminate``
    on the display of EGL device 0, which destroys every context on it, glrec's
    included. So glrec asks for a display of its own: EGL_EXT_display_alloc
    where the driver has it, else a reference-counted device display
    (EGL_KHR_display_reference: a display requested with reference tracking is
    not the one other libraries get, and its ``eglTerminate`` undoes one
    ``eglInitialize`` only), else the surfaceless platform's display on the
    device (EGL_EXT_explicit_device; NVIDIA's driver 580 has it: libraries
    terminate the device platform's display, not this one), else Mesa's
    surfaceless platform when no device was named, else the shared device
    display. Surfaceless displays are never terminated by glrec either.
    """
    egl = lib()
    egl.eglQueryString.restype, egl.eglQueryString.argtypes = ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]
    client = (egl.eglQueryString(None, EGL_EXTENSIONS) or b"").decode()
    query = _ext("eglQueryDevicesEXT", ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                 ctypes.POINTER(ctypes.c_int))  # fmt: skip
    platform_display = _ext("eglGetPlatformDisplayEXT", ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_int))  # fmt: skip
    if query is None or platform_display is None:
        raise RuntimeError("EGL lacks EGL_EXT_device_enumeration / EGL_EXT_platform_base")
    devices = (ctypes.c_void_p * 32)()
    count = ctypes.c_int(0)
    if not query(32, devices, ctypes.byref(count)) or count.value < 1:
        raise RuntimeError("EGL reports no devices (eglQueryDevicesEXT)")
    index = 0 if device_index is None else device_index
    if not 0 <= index < count.value:
        raise RuntimeError(f"requested EGL device {index}, but EGL has {count.value}")
    device = devices[index]
    egl.eglInitialize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    wide = _wide_platform_display()

    def candidates() -> Iterator[tuple[int, Any, tuple[int, ...], bool, str]]:
        """(platform, native display, attributes, private, how), best first; attributes holding a handle need
        EGL 1.5's call. Lazily: Mesa's surfaceless candidate initialises the shared device display to ask its
        vendor, which costs a display on drivers that never get that far (NVIDIA's 580 takes the third)."""
        if "EGL_EXT_display_alloc" in client:
            yield EGL_PLATFORM_DEVICE_EXT, device, (EGL_ALLOC_NEW_DISPLAY_EXT, 1), True, "private"
        if "EGL_KHR_display_reference" in client:
            yield (
                EGL_PLATFORM_DEVICE_EXT,
                device,
                (EGL_TRACK_REFERENCES_KHR, 1),
                True,
                f"device {index}, reference-counted",
            )
        if wide is not None and "EGL_EXT_explicit_device" in client and "EGL_MESA_platform_surfaceless" in client:
            yield (
                EGL_PLATFORM_SURFACELESS_MESA,
                None,
                (EGL_DEVICE_EXT, int(device or 0)),
                False,
                f"device {index}, surfaceless",
            )
        if device_index is None and "EGL_MESA_platform_surfaceless" in client:
            shared = platform_display(EGL_PLATFORM_DEVICE_EXT, device, _attribs(()))
            vendor = b""
            if shared and egl.eglInitialize(shared, None, None):
                vendor = egl.eglQueryString(shared, EGL_VENDOR) or b""
            if b"Mesa" in vendor:  # surfaceless would be Mesa's: only where device 0 is Mesa's too
                yield EGL_PLATFORM_SURFACELESS_MESA, None, (), False, "Mesa surfaceless"
        yield EGL_PLATFORM_DEVICE_EXT, device, (), False, f"device {index}, shared"

    for platform, native, attribs, private, how in candidates():
        if attribs[:1] == (EGL_DEVICE_EXT,):
            display = wide(platform, native, (ctypes.c_ssize_t * (len(attribs) + 1))(*attribs, EGL_NONE))
        else:
            display = platform_display(platform, native, _attribs(attribs))
        if display and egl.eglInitialize(display, None, None):
            return int(display), private, how, attribs[:1] == (EGL_ALLOC_NEW_DISPLAY_EXT,)
        egl.eglGetError()
    raise RuntimeError(f"eglInitialize failed ({error_text(int(egl.eglGetError()))})")


def _wide_platform_display() -> Any:
    """EGL 1.5's ``eglGetPlatformDisplay`` (attributes as EGLAttrib, wide enough for a device handle), or None."""
    try:
        fn = lib().eglGetPlatformDisplay
    except AttributeError:
        return None
    fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_ssize_t)]
    return fn


def create_headless(device_index: int | None, major: int = 4, minor: int = 3) -> Headless:
    """Create a surfaceless OpenGL core context (not made current); raises RuntimeError with EGL's reason."""
    egl = lib()
    display, private, how, allocated = _display(device_index)
    egl.eglChooseConfig.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int)]  # fmt: skip
    config, found = ctypes.c_void_p(0), ctypes.c_int(0)
    for attribs in (_CONFIG, _CONFIG[2:]):  # with a pbuffer bit, else any OpenGL config
        chosen = egl.eglChooseConfig(display, _attribs(attribs), ctypes.byref(config), 1, ctypes.byref(found))
        if chosen and found.value:
            break
    else:
        raise RuntimeError("no EGL config renders OpenGL")
    api = int(egl.eglQueryAPI())
    egl.eglBindAPI(EGL_OPENGL_API)
    egl.eglCreateContext.restype = ctypes.c_void_p
    egl.eglCreateContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    version = (EGL_CONTEXT_MAJOR_VERSION, major, EGL_CONTEXT_MINOR_VERSION, minor,
               EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT)  # fmt: skip
    context = egl.eglCreateContext(display, config, None, _attribs(version))
    error = int(egl.eglGetError())
    if api != EGL_OPENGL_API:
        egl.eglBindAPI(api)
    if not context:
        raise RuntimeError(f"eglCreateContext for OpenGL {major}.{minor} core failed ({error_text(error)})")
    return Headless(display, int(context), private, how, allocated)

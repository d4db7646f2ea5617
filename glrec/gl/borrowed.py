"""Borrowing the caller's current GL context (``context="current"``): checks, then a moderngl wrapper.

glrec records inside a context another library made (MuJoCo, pyrender, a
user's PyOpenGL or moderngl one). It must be an EGL context current on this
thread with OpenGL 4.3 (compute shaders); anything else is a clear error that
says what to do. The wrapper is made under a :class:`~glrec.gl.state.StateGuard`,
as moderngl sets a little state of its own on a new context.
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os

from ..errors import ContextError
from . import egl
from .context import _FACTORY, REQUIRED_GL, GLContext, _Loader, _wrap

log = logging.getLogger("glrec")


def borrow_current_context(require: int = REQUIRED_GL) -> GLContext:
    """Wrap the GL context current on this thread (``context="current"``); glrec saves and restores its state.

    Raises ContextError when no EGL context is current (with what to do) or
    when the context's OpenGL is older than 4.3.

    >>> renderer = mujoco.Renderer(model)        # doctest: +SKIP
    >>> gl = borrow_current_context()            # MuJoCo's context
    """
    from .state import StateGuard

    binding = egl.Binding.current()
    if binding.api != egl.EGL_OPENGL_API:
        egl.lib().eglBindAPI(binding.api)  # the caller's API back; glrec binds OpenGL when it works
        binding = dataclasses.replace(binding, api=egl.EGL_OPENGL_API)
    if not binding.context:
        raise ContextError(_no_context_message())
    if egl.current_context() != binding.context:  # pragma: no cover - EGL returned inconsistent answers
        raise ContextError("The current EGL context changed while glrec was reading it.")
    version = _gl_version()
    if version < require:
        raise ContextError(
            f"The current GL context is OpenGL {version // 100}.{version % 100 // 10}; glrec needs "
            f"{require // 100}.{require % 100 // 10} (compute shaders). Create the context with at least that "
            "version (EGL_CONTEXT_MAJOR_VERSION 4, EGL_CONTEXT_MINOR_VERSION 3), or record with glrec's own "
            "context (context='own') and hand it frames."
        )
    guard = StateGuard(version=version)
    saved = guard.enter()
    try:
        loader = _Loader()
        ctx = _wrap(loader, require)
    finally:
        problem = guard.leave(saved)
    if problem:
        raise ContextError(problem)
    gl = GLContext(ctx, None, binding, _token=_FACTORY)
    gl._guard = guard
    loader.gl = gl
    log.info("recording in the current GL context: %s, OpenGL %s", gl.info.renderer, gl.info.version)
    return gl


def _gl_version() -> int:
    """The current context's GL version as 100 * major + 10 * minor (works on GL 2 too)."""
    from .fences import gl_function

    get_string = gl_function("glGetString", ctypes.c_char_p, ctypes.c_uint)
    text = (get_string(0x1F02) or b"").decode(errors="replace")  # GL_VERSION, e.g. "4.5 (Core Profile) Mesa"
    head = text.split(" ", 1)[0].split(".")
    try:
        return int(head[0]) * 100 + int(head[1][:1]) * 10
    except (IndexError, ValueError):
        return 0


def _no_context_message() -> str:
    glx = _glx_current()
    if glx:
        return (
            "No EGL context is current on this thread, but a GLX context is (an X11 window, e.g. GLFW or "
            "MUJOCO_GL=glfw). glrec records EGL contexts: create the window with EGL (GLFW: "
            "glfw.window_hint(glfw.CONTEXT_CREATION_API, glfw.EGL_CONTEXT_API)) or use MUJOCO_GL=egl / "
            "PYOPENGL_PLATFORM=egl."
        )
    return (
        "context='current' needs a GL context current on this thread, and none is. Create the Recorder right "
        "after the library made its context current (e.g. after mujoco.Renderer(...) or "
        "pyrender.OffscreenRenderer(...)), on the same thread; with MuJoCo set MUJOCO_GL=egl and with "
        "pyrender PYOPENGL_PLATFORM=egl before importing them. Or leave context='own'."
    )


def _glx_current() -> bool:
    try:
        glx = ctypes.CDLL("libGLX.so.0", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    fn = glx.glXGetCurrentContext
    fn.restype = ctypes.c_void_p
    return bool(fn())

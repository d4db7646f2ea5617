"""GL entry points that moderngl does not wrap (fence sync objects).

Loaded through ``eglGetProcAddress`` so they come from the same driver as the
context moderngl made, whichever vendor library EGL dispatched to.
"""

from __future__ import annotations

import ctypes
import functools
import time
from typing import Any

GL_SYNC_GPU_COMMANDS_COMPLETE = 0x9117
GL_SYNC_FLUSH_COMMANDS_BIT = 0x00000001
GL_ALREADY_SIGNALED = 0x911A
GL_TIMEOUT_EXPIRED = 0x911B
GL_CONDITION_SATISFIED = 0x911C
GL_WAIT_FAILED = 0x911D


@functools.lru_cache(maxsize=1)
def _egl() -> ctypes.CDLL:
    lib = ctypes.CDLL("libEGL.so.1")
    lib.eglGetProcAddress.restype = ctypes.c_void_p
    lib.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    return lib


@functools.cache
def gl_function(name: str, restype: Any, *argtypes: Any) -> Any:
    """Return a callable for the GL function ``name`` of the current driver."""
    from ..errors import ContextError

    ptr = _egl().eglGetProcAddress(name.encode())
    if not ptr:
        raise ContextError(f"The GL driver does not export {name}; glrec needs OpenGL 4.3 or newer.")
    return ctypes.CFUNCTYPE(restype, *argtypes)(ptr)


def dispatch_compute(program: int, x: int, y: int, z: int = 1) -> None:
    """Run the compute program ``program`` (a GL name) over ``x * y * z`` work groups.

    Same as moderngl's ``ComputeShader.run``, but through ctypes, which releases
    the GIL for the call. On software GL (Mesa llvmpipe) the dispatch is where
    the frame rendered before it is rasterised and the compute shader runs,
    milliseconds of work during which the encode thread can then run Python.
    """
    gl_function("glUseProgram", None, ctypes.c_uint)(program)
    gl_function("glDispatchCompute", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint)(x, y, z)


class Fence:
    """A GL fence placed after the commands issued so far.

    ``wait()`` blocks until the GPU has finished them; ``signalled()`` asks
    without blocking. Fences replace ``glFinish``: the CPU only waits for the
    frame it is about to read, never for the whole queue.
    """

    __slots__ = ("_sync",)

    def __init__(self) -> None:
        fence_sync = gl_function("glFenceSync", ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint)
        self._sync: int | None = fence_sync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0)

    def _client_wait(self, timeout_ns: int) -> int:
        wait = gl_function("glClientWaitSync", ctypes.c_uint, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64)
        return int(wait(self._sync, GL_SYNC_FLUSH_COMMANDS_BIT, timeout_ns))

    def signalled(self) -> bool:
        if self._sync is None:
            return True
        return self._client_wait(0) in (GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED)

    def wait(self, timeout_s: float = 10.0, poll_s: float | None = None) -> None:
        """Block until signalled. ``poll_s``: ask every ``poll_s`` seconds and sleep between (the GL driver may
        spin a core while it blocks; a thread that waits long for a batch gives that core to others)."""
        from ..errors import ContextError

        if self._sync is None:
            return
        if poll_s is not None:
            end = time.monotonic() + timeout_s
            while not self.signalled() and time.monotonic() < end:
                time.sleep(poll_s)
        result = self._client_wait(int(timeout_s * 1e9) if poll_s is None else 0)
        if result == GL_TIMEOUT_EXPIRED:
            raise ContextError(f"The GPU did not finish a frame within {timeout_s} s (GL fence timed out).")
        if result == GL_WAIT_FAILED:
            raise ContextError("glClientWaitSync failed: the GL context was lost or is not current.")
        self.release()

    def release(self) -> None:
        sync, self._sync = self._sync, None
        if sync is not None:
            gl_function("glDeleteSync", None, ctypes.c_void_p)(sync)

"""A GL buffer that shaders write and the host reads through a persistent, coherent mapping.

Reading finished results with ``glGetBufferSubData`` (moderngl's ``Buffer.read``) made
NVIDIA's driver wait for all the work queued after them, so a thread could not run
ahead of the GPU (the GL JPEG encoder's ring of outputs bought no overlap that way).
Mapped once, a finished result is read as memory once a fence placed after
``glMemoryBarrier(CLIENT_MAPPED_BARRIER)`` has signalled: no GL call, no wait for
later work.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import ContextError
from .fences import gl_function

__all__ = ["CLIENT_MAPPED_BARRIER", "MappedBuffer"]

#: GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT: shader writes made visible through a persistent mapping.
CLIENT_MAPPED_BARRIER = 0x00004000
_SHADER_STORAGE_BUFFER = 0x90D2
_MAP_READ, _MAP_PERSISTENT, _MAP_COHERENT, _CLIENT_STORAGE = 0x0001, 0x0040, 0x0080, 0x0200


class MappedBuffer:
    """``nbytes`` of GL buffer storage mapped for reading for its whole life (made and released on the GL thread).

    ``client``: ask for the storage in host memory (``GL_CLIENT_STORAGE_BIT``), for large results the host
    copies out whole (a mapping of GPU memory would be read across the bus uncached)."""

    def __init__(self, nbytes: int, what: str = "a GL buffer", *, client: bool = False) -> None:
        self.nbytes = nbytes
        name = ctypes.c_uint(0)
        gl_function("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        self.glo = name.value
        flags = _MAP_READ | _MAP_PERSISTENT | _MAP_COHERENT
        gl_function("glNamedBufferStorage", None, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint)(
            self.glo, nbytes, None, flags | (_CLIENT_STORAGE if client else 0)
        )
        map_range = gl_function("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint, ctypes.c_ssize_t,
                                ctypes.c_ssize_t, ctypes.c_uint)  # fmt: skip
        self.address = int(map_range(self.glo, 0, nbytes, flags) or 0)
        if not self.address:
            self.release()
            raise ContextError(f"glMapNamedBufferRange could not map {what} persistently.")

    def bind(self, binding: int) -> None:
        """Bind it whole as shader storage block ``binding``."""
        gl_function("glBindBufferBase", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint)(
            _SHADER_STORAGE_BUFFER, binding, self.glo
        )

    def read(self, nbytes: int, offset: int = 0) -> bytes:
        """``nbytes`` from ``offset``, read from the mapping (after the fence that follows the writes)."""
        return ctypes.string_at(self.address + offset, nbytes)

    def read_into(self, out: Any, offset: int = 0) -> None:
        """Fill the contiguous host array ``out`` from ``offset`` of the mapping, one memmove without the GIL
        (after the fence that follows the writes)."""
        if out.nbytes > self.nbytes - offset:
            raise ValueError(f"{out.nbytes} bytes from {offset} run past the mapping's {self.nbytes}.")
        ctypes.memmove(out.ctypes.data, self.address + offset, out.nbytes)

    def release(self) -> None:
        """Unmap and delete; safe twice."""
        glo, self.glo = self.glo, 0
        if glo:
            if self.address:
                gl_function("glUnmapNamedBuffer", ctypes.c_ubyte, ctypes.c_uint)(glo)
            self.address = 0
            gl_function("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, ctypes.byref(ctypes.c_uint(glo))
            )

"""A GL buffer the CPU reads through a persistent, coherent mapping: no driver round trip per read.

``glGetBufferSubData`` (moderngl's ``Buffer.read``) may wait for more than the
buffer's own writes: on the H200 reading a chunk's box table waited for the next
chunk, already issued, to finish, with the GIL held. A :class:`MappedBuffer` is
written by shaders and read from its mapping once a fence placed after
``glMemoryBarrier(GL_CLIENT_MAPPED_BUFFER_BARRIER_BIT)`` has signalled.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import ContextError
from .fences import gl_function

__all__ = ["CLIENT_MAPPED_BARRIER", "MappedBuffer"]

_MAP_READ, _MAP_PERSISTENT, _MAP_COHERENT, _DYNAMIC_STORAGE = 0x0001, 0x0040, 0x0080, 0x0100
_SHADER_STORAGE = 0x90D2
#: glMemoryBarrier's bit that makes shader writes to a persistently mapped buffer visible to the CPU.
CLIENT_MAPPED_BARRIER = 0x00004000


class MappedBuffer:
    """``size`` bytes of GL buffer storage, mapped for reading for its whole life (made on the GL thread)."""

    def __init__(self, size: int) -> None:
        ids = (ctypes.c_uint * 1)()
        gl_function("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ids)
        self.glo = int(ids[0])
        self.size = size
        flags = _MAP_READ | _MAP_PERSISTENT | _MAP_COHERENT
        storage = gl_function("glNamedBufferStorage", None, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p,
                              ctypes.c_uint)  # fmt: skip
        storage(self.glo, size, None, flags | _DYNAMIC_STORAGE)
        map_range = gl_function("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint, ctypes.c_ssize_t,
                                ctypes.c_ssize_t, ctypes.c_uint)  # fmt: skip
        address = map_range(self.glo, 0, size, flags)
        if not address:
            self.release()
            raise ContextError("The GL driver would not map a buffer for reading (glMapNamedBufferRange).")
        self._address: int | None = int(address)

    def bind_to_storage_buffer(self, binding: int, size: int) -> None:
        """Bind its first ``size`` bytes as shader storage block ``binding``."""
        bind = gl_function("glBindBufferRange", None, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_ssize_t,
                           ctypes.c_ssize_t)  # fmt: skip
        bind(_SHADER_STORAGE, binding, self.glo, 0, size)

    def words(self, count: int) -> np.ndarray:
        """A copy of its first ``count`` 32-bit words (after the fence that follows the writes)."""
        assert self._address is not None and count * 4 <= self.size, "released, or reading past the end"
        return np.ctypeslib.as_array((ctypes.c_uint32 * count).from_address(self._address)).copy()

    def release(self) -> None:
        """Unmap and delete (on the GL thread); safe twice."""
        glo, self.glo = self.glo, 0
        if glo:
            if self._address is not None:
                gl_function("glUnmapNamedBuffer", ctypes.c_ubyte, ctypes.c_uint)(glo)
            gl_function("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, (ctypes.c_uint * 1)(glo)
            )
        self._address = None

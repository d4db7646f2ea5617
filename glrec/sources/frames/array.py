"""Host arrays into the render target through a ring of persistently mapped pixel-unpack buffers.

Each frame is packed once, by numpy, straight into the next slot of one GL
buffer that stays mapped (``GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT``):
rows reversed on the way (GL textures are stored bottom-up, arrays top-down),
any strides read, and floats or 16-bit values converted in the same pass. The
target texture is then filled from that slot with ``glTextureSubImage2D``,
which returns at once; a fence after it guards the slot, which is written
again only once the GPU has read it. So the one host copy is the one into the
buffer, and on a GPU the transfer overlaps the encode of earlier frames.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ...errors import ContextError
from ...gl.fences import gl_function
from ..pixel_unpack import FenceRing, unpacking
from .to_uint8 import Packer
from .written import HostFrameIn

GL_RGB, GL_RGBA, GL_UNSIGNED_BYTE = 0x1907, 0x1908, 0x1401
GL_MAP_WRITE_BIT, GL_MAP_PERSISTENT_BIT, GL_MAP_COHERENT_BIT = 0x0002, 0x0040, 0x0080
_MAP_FLAGS = GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT
_SLOT_ALIGN = 256


def _fn(name: str, restype: Any, *args: Any) -> Any:
    return gl_function(name, restype, *args)


class ArraySource:
    """Upload host frames of ``size`` into ``texture`` (the target's RGBA8 colour), ``depth`` in flight.

    >>> source = ArraySource(ctx, target.colour, (640, 360))  # doctest: +SKIP
    >>> source.put(inspect_frame(array))  # then convert the target as for a scene  # doctest: +SKIP
    """

    def __init__(self, ctx: Any, texture: Any, size: tuple[int, int], depth: int = 3) -> None:
        if "GL_ARB_buffer_storage" not in ctx.extensions and ctx.version_code < 440:
            raise ContextError("Array frames need persistent buffer mapping (OpenGL 4.4 or GL_ARB_buffer_storage).")
        self.texture = texture
        self.size = size
        w, h = size
        self.slot_bytes = (w * h * 4 + _SLOT_ALIGN - 1) // _SLOT_ALIGN * _SLOT_ALIGN
        self._ring = FenceRing(max(2, depth))
        self._packer = Packer()
        self._name: int | None = None
        self._memory: np.ndarray | None = None  # set while the buffer is mapped
        name = ctypes.c_uint(0)
        _fn("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        self._name = name.value
        total = self.slot_bytes * len(self._ring)
        _fn("glNamedBufferStorage", None, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint)(
            self._name, total, None, _MAP_FLAGS
        )
        ptr = _fn("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t,
                  ctypes.c_uint)(self._name, 0, total, _MAP_FLAGS)  # fmt: skip
        if not ptr:
            self.release()
            raise ContextError("glMapNamedBufferRange failed for the array upload ring (out of memory?).")
        self._memory = np.ctypeslib.as_array((ctypes.c_uint8 * total).from_address(ptr))

    def put(self, frame: HostFrameIn) -> None:
        """Pack ``frame`` into the next slot and queue its upload into the texture (returns at once)."""
        assert self._memory is not None, "released"
        slot = self._ring.next_free()
        start = slot * self.slot_bytes
        fmt = self._pack(frame.array, self._memory[start : start + self.slot_bytes])
        self._upload(fmt, start)
        self._ring.guard(slot)

    def _pack(self, array: np.ndarray, out: np.ndarray) -> int:
        """Write ``array`` (H, W, C) bottom row first into ``out``; return the GL format it is in."""
        h, w, c = array.shape
        flipped = array[::-1]
        if c == 1:  # GL core has no luminance upload: expand to opaque RGBA words
            self._packer.grey_into_rgba(out[: h * w * 4].view("<u4").reshape(h, w), flipped[:, :, 0])
            return GL_RGBA
        self._packer.into(out[: h * w * c].reshape(h, w, c), flipped)
        return GL_RGB if c == 3 else GL_RGBA

    def _upload(self, fmt: int, offset: int) -> None:
        assert self._name is not None, "released"
        w, h = self.size
        with unpacking(self._name) as sub:
            # Tight rows (row length 0); rows of 3 * width bytes need not be 4-byte aligned.
            sub(self.texture.glo, w, h, fmt, GL_UNSIGNED_BYTE, offset, 0, 1)

    def release(self) -> None:
        """Unmap and delete the ring. Safe twice."""
        self._ring.release()
        mapped, self._memory = self._memory is not None, None
        name, self._name = self._name, None
        if name is not None:
            if mapped:
                _fn("glUnmapNamedBuffer", ctypes.c_ubyte, ctypes.c_uint)(name)
            delete = _fn("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))
            delete(1, ctypes.byref(ctypes.c_uint(name)))

"""What the host uploads share: texture uploads from a pixel-unpack buffer, and a ring of fenced slots.

:func:`unpacking` binds a buffer as ``GL_PIXEL_UNPACK_BUFFER`` and fills
textures from it with ``glTextureSubImage2D`` (which returns at once: the GPU
reads the buffer later), putting the pixel-store state back as it found it,
since moderngl and a host application rely on it. :class:`FenceRing` hands out
the slots of a ring in turn, each written again only once the GPU has read it.
Decoded pictures (:mod:`glrec.sources.video.upload`) and written arrays
(:mod:`glrec.sources.frames.array`) both go this way.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator

from ..gl.fences import Fence, gl_function

GL_PIXEL_UNPACK_BUFFER = 0x88EC
GL_PIXEL_UNPACK_BUFFER_BINDING = 0x88EF
GL_UNPACK_ROW_LENGTH = 0x0CF2
GL_UNPACK_ALIGNMENT = 0x0CF5

#: ``sub(texture, width, height, format, type, offset, row_length, alignment)``: fill ``texture`` (a GL name).
SubImage = Callable[[int, int, int, int, int, int, int, int], None]


def get_int(name: int) -> int:
    """``glGetIntegerv`` of one value."""
    value = ctypes.c_int(0)
    gl_function("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(name, ctypes.byref(value))
    return value.value


@contextlib.contextmanager
def unpacking(buffer: int) -> Iterator[SubImage]:
    """Bind the GL buffer named ``buffer`` for pixel unpacking (0: offsets are client addresses) for the block.

    Yields :data:`SubImage`; the buffer binding, row length and alignment go back as found.
    """
    bind = gl_function("glBindBuffer", None, ctypes.c_uint, ctypes.c_uint)
    store = gl_function("glPixelStorei", None, ctypes.c_uint, ctypes.c_int)
    sub_image = gl_function("glTextureSubImage2D", None, ctypes.c_uint, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                            ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)  # fmt: skip

    def sub(texture: int, w: int, h: int, fmt: int, gl_type: int, offset: int, row_length: int, alignment: int) -> None:
        store(GL_UNPACK_ROW_LENGTH, row_length)
        store(GL_UNPACK_ALIGNMENT, alignment)
        sub_image(texture, 0, 0, 0, w, h, fmt, gl_type, offset)

    saved = (get_int(GL_PIXEL_UNPACK_BUFFER_BINDING), get_int(GL_UNPACK_ROW_LENGTH), get_int(GL_UNPACK_ALIGNMENT))
    bind(GL_PIXEL_UNPACK_BUFFER, buffer)
    try:
        yield sub
    finally:
        bind(GL_PIXEL_UNPACK_BUFFER, saved[0])
        store(GL_UNPACK_ROW_LENGTH, saved[1])
        store(GL_UNPACK_ALIGNMENT, saved[2])


class FenceRing:
    """``count`` slots used in turn; :meth:`guard` places a fence after the GPU work that reads a slot."""

    def __init__(self, count: int) -> None:
        self._fences: list[Fence | None] = [None] * count
        self._next = 0

    def __len__(self) -> int:
        return len(self._fences)

    def next_free(self) -> int:
        """The next slot, once the GPU has read what it held (``count - 1`` uploads ago: normally long since)."""
        slot = self._next
        self._next = (slot + 1) % len(self._fences)
        fence = self._fences[slot]
        if fence is not None:
            fence.wait()
            self._fences[slot] = None
        return slot

    def guard(self, slot: int) -> None:
        """Fence ``slot`` after the commands issued so far (the uploads that read it)."""
        self._fences[slot] = Fence()

    def release(self) -> None:
        """Drop the fences (safe twice)."""
        for i, fence in enumerate(self._fences):
            if fence is not None:
                fence.release()
                self._fences[i] = None

"""CUDA handoff, *shared* path: GL buffers whose storage is CUDA memory, no per-frame map.

CUDA allocates the pool with its virtual memory API (``cuMemCreate``) as memory
that can be exported as a POSIX file descriptor; GL imports that descriptor
(``GL_EXT_memory_object_fd``) and makes one buffer whose storage *is* that
memory. After converting a frame, a compute shader writes the planes into the
frame's slot of that buffer (``shaders/planes_to_buffer.comp``; measured much
cheaper on NVIDIA than ``glGetTexImage`` into a pixel-pack buffer) and a fence is
placed; once the fence has signalled, CUDA reads the slot at its own address.
There is no ``cuGraphicsMapResources``/``Unmap`` at all, which is what the
register path spends most of its time on.

Needs the NVIDIA driver's ``GL_EXT_memory_object_fd`` (measured working on an
H200, driver 580); :func:`glrec.interop.handoff.open_handoff` falls back to the
register path where it is missing.
"""

from __future__ import annotations

import ctypes
import logging
from collections import deque
from typing import Any

import moderngl

from .. import glsl
from .._gl import Fence, gl_function
from ..convert import PlaneLayout
from ..errors import ContextError
from .cuda import CudaDevice, call, driver
from .pool import DeviceFrame, DevicePool

log = logging.getLogger("glrec")

GL_DEDICATED_MEMORY_OBJECT_EXT = 0x9581
GL_HANDLE_TYPE_OPAQUE_FD_EXT = 0x9586
EXTENSION = "GL_EXT_memory_object_fd"


def _gl(name: str, restype: Any, *args: Any) -> Any:
    return gl_function(name, restype, *args)


def _gl_error(what: str) -> None:
    err = _gl("glGetError", ctypes.c_uint)()
    if err:
        raise ContextError(f"{what} failed with GL error 0x{err:04x}; the shared handoff needs {EXTENSION}.")


class PlaneWriter:
    """Writes a source's current plane textures into a GL buffer at an offset, in the host layout.

    ``offset`` must be a multiple of ``GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT``
    (the shared handoff's slots are 256-byte aligned).
    """

    def __init__(self, ctx: moderngl.Context, source: Any) -> None:
        self.ctx = ctx
        self.source = source
        layout: PlaneLayout = source.layout
        planes = list(source.planes)
        pad = 3 - len(planes)
        self.nbytes = layout.nbytes
        self._shader = glsl.compute(ctx, "planes_to_buffer.comp")
        values = {
            "nplanes": len(planes),
            "start": tuple(list(layout.offsets) + [layout.nbytes] * pad),
            "row_bytes": tuple([t.width * t.components for t in planes] + [1] * pad),
            "comps": tuple([t.components for t in planes] + [1] * pad),
            "total": layout.nbytes,
        }
        for name, value in values.items():
            self._shader[name].value = value  # type: ignore[union-attr]
        self._groups = (layout.nbytes + 4 * 256 - 1) // (4 * 256)

    def run(self, buffer: moderngl.Buffer, offset: int) -> None:
        """Queue the write of the source's current planes into ``buffer`` at ``offset``."""
        for unit, tex in enumerate(self.source.planes):
            tex.use(unit)
        buffer.bind_to_storage_buffer(0, offset=offset, size=(self.nbytes + 3) // 4 * 4)
        self._shader.run(self._groups)
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)

    def release(self) -> None:
        shader, self._shader = self._shader, None  # type: ignore[assignment]
        if shader is not None:
            shader.release()


class SharedHandoff:
    """Hand converted frames to CUDA through GL buffers backed by CUDA memory.

    ``depth`` frames are in flight before the oldest is handed out (its fence has
    usually signalled by then, so the wait is free). ``slots`` is the pool size:
    frames held by the consumer plus those in flight.

    >>> handoff = SharedHandoff(ctx, converter, device, depth=3)  # doctest: +SKIP
    """

    kind = "shared"

    def __init__(self, ctx: moderngl.Context, source: Any, device: CudaDevice, *, depth: int = 3,
                 slots: int | None = None) -> None:  # fmt: skip
        if EXTENSION not in ctx.extensions:
            raise ContextError(f"This GL driver lacks {EXTENSION}; use the register handoff (handoff='register').")
        self.source = source
        self.device = device
        self.layout: PlaneLayout = source.layout
        self.depth = max(1, depth)
        count = slots or self.depth + 6
        self._memory_object: int | None = None
        self._buffer: moderngl.Buffer | None = None
        self._vmm: tuple[Any, int, int] | None = None  # (allocation handle, address, size)
        self._writer: PlaneWriter | None = None
        self.pool: DevicePool | None = None
        self._pending: deque[tuple[int, int, Fence]] = deque()
        try:
            stride = (self.layout.nbytes + 255) // 256 * 256
            address, size = self._allocate(stride * count)
            self._import(ctx, size)
            self.pool = DevicePool(device, self.layout.nbytes, count, base=address, stride=stride)
            self._writer = PlaneWriter(ctx, source)
        except BaseException:
            self.release()
            raise

    def _allocate(self, nbytes: int) -> tuple[int, int]:
        cu = driver()
        self.device.bind()
        prop = cu.CUmemAllocationProp()
        prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = self.device.ordinal
        prop.requestedHandleTypes = cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        gran = call("cuMemGetAllocationGranularity", prop,
                    cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)  # fmt: skip
        size = (nbytes + gran - 1) // gran * gran
        handle = call("cuMemCreate", size, prop, 0)
        try:
            address = call("cuMemAddressReserve", size, 0, 0, 0)
        except BaseException:
            call("cuMemRelease", handle)
            raise
        self._vmm = (handle, int(address), size)
        call("cuMemMap", address, size, 0, handle, 0)
        access = cu.CUmemAccessDesc()
        access.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = self.device.ordinal
        access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        call("cuMemSetAccess", address, size, [access], 1)
        return int(address), size

    def _import(self, ctx: moderngl.Context, size: int) -> None:
        assert self._vmm is not None
        handle = self._vmm[0]
        fd = call("cuMemExportToShareableHandle", handle,
                  driver().CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)  # fmt: skip
        mo = ctypes.c_uint(0)
        _gl("glCreateMemoryObjectsEXT", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(mo))
        self._memory_object = mo.value
        dedicated = ctypes.c_int(1)
        _gl("glMemoryObjectParameterivEXT", None, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(
            mo.value, GL_DEDICATED_MEMORY_OBJECT_EXT, ctypes.byref(dedicated)
        )
        # On success GL owns the descriptor (and closes it); on failure it is still ours.
        _gl("glImportMemoryFdEXT", None, ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint, ctypes.c_int)(
            mo.value, size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, int(fd)
        )
        try:
            _gl_error("glImportMemoryFdEXT")
        except ContextError:
            import os

            os.close(int(fd))
            raise
        name = ctypes.c_uint(0)
        _gl("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        _gl("glNamedBufferStorageMemEXT", None, ctypes.c_uint, ctypes.c_int64, ctypes.c_uint, ctypes.c_uint64)(
            name.value, size, mo.value, 0
        )
        _gl_error("glNamedBufferStorageMemEXT")
        self._buffer = ctx.external_buffer(name.value, size)

    def submit(self, index: int) -> list[DeviceFrame]:
        """Copy the source's planes into a free slot (on the GPU) as frame ``index``; return completed frames."""
        assert self.pool is not None and self._buffer is not None
        done = []
        if len(self._pending) >= self.depth:
            done.append(self._collect())
        slot = self.pool.acquire()
        assert self._writer is not None
        self._writer.run(self._buffer, self.pool.address(slot) - self.pool.base)
        self._pending.append((index, slot, Fence()))
        return done

    def drain(self) -> list[DeviceFrame]:
        return [self._collect() for _ in range(len(self._pending))]

    def _collect(self) -> DeviceFrame:
        assert self.pool is not None
        index, slot, fence = self._pending.popleft()
        fence.wait()  # GL finished writing the slot; CUDA may read it now
        return DeviceFrame(index, self.layout, self.pool, slot, pending=False)

    def release(self) -> None:
        """Free the GL buffer, the memory object and the CUDA allocation. Safe twice."""
        while self._pending:
            self._pending.popleft()[2].release()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.release()
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            # moderngl's wrapper of an external buffer does not own the GL name: delete it here.
            _gl("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, ctypes.byref(ctypes.c_uint(buffer.glo))
            )
        mo, self._memory_object = self._memory_object, None
        if mo is not None:
            _gl("glDeleteMemoryObjectsEXT", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, ctypes.byref(ctypes.c_uint(mo))
            )
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.release()
        vmm, self._vmm = self._vmm, None
        if vmm is not None:
            handle, address, size = vmm
            self.device.bind()
            try:
                call("cuMemUnmap", address, size)
            finally:
                call("cuMemAddressFree", address, size)
                call("cuMemRelease", handle)

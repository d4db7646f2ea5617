"""CUDA memory that GL (and OpenCL) use as their own: a VMM allocation exported as a POSIX fd.

CUDA allocates with its virtual memory API (``cuMemCreate``) memory that can be
exported as a file descriptor; GL imports the descriptor
(``GL_EXT_memory_object_fd``) and makes one buffer whose storage *is* that
memory, so a GL shader and a CUDA kernel (or torch, CuPy) read and write the
same bytes at their own addresses, with no map/unmap. The same allocation can
be exported again for another API (OpenCL's ``cl_khr_external_memory_opaque_fd``).
Ordering between the APIs is the user's: GL fences, CUDA events.

The shared handoff and the processing stage both use it.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import moderngl

from ..errors import ContextError
from ..gl.fences import gl_function
from .driver import CudaDevice, call, driver

GL_DEDICATED_MEMORY_OBJECT_EXT = 0x9581
GL_HANDLE_TYPE_OPAQUE_FD_EXT = 0x9586
EXTENSION = "GL_EXT_memory_object_fd"


def _gl(name: str, restype: Any, *args: Any) -> Any:
    return gl_function(name, restype, *args)


def _gl_error(what: str) -> None:
    err = _gl("glGetError", ctypes.c_uint)()
    if err:
        raise ContextError(f"{what} failed with GL error 0x{err:04x}; sharing CUDA memory with GL needs {EXTENSION}.")


def _clear_gl_errors() -> None:
    """Take the errors earlier GL calls left (GL keeps one per kind, so a few reads empty it)."""
    get = _gl("glGetError", ctypes.c_uint)
    for _ in range(16):
        if not get():
            return


class SharedBuffer:
    """``nbytes`` (rounded up to the allocation granularity) of CUDA memory that is also a GL buffer.

    :attr:`address` is the CUDA device pointer, :attr:`buffer` the moderngl
    buffer over the same bytes. :meth:`export_fd` gives another descriptor of
    the memory for a further API. ``release()`` is safe twice.

    ``ctx=None`` allocates the CUDA side only, for memory that is filled before
    a GL context is at hand (NVDEC decoding ahead); :meth:`attach` makes the GL
    buffer later and :meth:`detach` releases it alone.
    """

    def __init__(self, ctx: moderngl.Context | None, device: CudaDevice, nbytes: int) -> None:
        if ctx is not None and EXTENSION not in ctx.extensions:
            raise ContextError(f"This GL driver lacks {EXTENSION}, which sharing CUDA memory with GL needs.")
        self.device = device
        self._vmm: tuple[Any, int, int] | None = None  # (allocation handle, address, size)
        self._memory_object: int | None = None
        self.buffer: moderngl.Buffer | None = None
        try:
            self._allocate(nbytes)
            if ctx is not None:
                self._import(ctx)
        except BaseException:
            self.release()
            raise

    def attach(self, ctx: moderngl.Context) -> moderngl.Buffer:
        """Make the GL buffer over this memory in ``ctx`` (once; on the GL thread)."""
        if self.buffer is None:
            if EXTENSION not in ctx.extensions:
                raise ContextError(f"This GL driver lacks {EXTENSION}, which sharing CUDA memory with GL needs.")
            try:
                self._import(ctx)
            except BaseException:
                self.detach()
                raise
        assert self.buffer is not None
        return self.buffer

    @property
    def address(self) -> int:
        assert self._vmm is not None, "released"
        return self._vmm[1]

    @property
    def size(self) -> int:
        assert self._vmm is not None, "released"
        return self._vmm[2]

    def _allocate(self, nbytes: int) -> None:
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

    def export_fd(self) -> int:
        """A new POSIX file descriptor of the allocation; the caller (or the API importing it) owns it."""
        assert self._vmm is not None, "released"
        handle_type = driver().CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        return int(call("cuMemExportToShareableHandle", self._vmm[0], handle_type, 0))

    def _import(self, ctx: moderngl.Context) -> None:
        mo = ctypes.c_uint(0)
        _gl("glCreateMemoryObjectsEXT", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(mo))
        self._memory_object = mo.value
        dedicated = ctypes.c_int(1)
        _gl("glMemoryObjectParameterivEXT", None, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(
            mo.value, GL_DEDICATED_MEMORY_OBJECT_EXT, ctypes.byref(dedicated)
        )
        import_fd = _gl("glImportMemoryFdEXT", None, ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint, ctypes.c_int)
        _clear_gl_errors()  # an earlier call's error must not read as the import failing: GL would own a closed fd
        fd = self.export_fd()  # exported last, so nothing between here and the import can leave it open
        # On success GL owns the descriptor (and closes it); on failure it is still ours, closed here once.
        try:
            import_fd(mo.value, self.size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd)
        except BaseException:
            os.close(fd)
            raise
        try:
            _gl_error("glImportMemoryFdEXT")
        except ContextError:
            os.close(fd)
            raise
        name = ctypes.c_uint(0)
        _gl("glCreateBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        _gl("glNamedBufferStorageMemEXT", None, ctypes.c_uint, ctypes.c_int64, ctypes.c_uint, ctypes.c_uint64)(
            name.value, self.size, mo.value, 0
        )
        try:
            _gl_error("glNamedBufferStorageMemEXT")
        except ContextError:
            _delete_buffer(name.value)
            raise
        self.buffer = ctx.external_buffer(name.value, self.size)

    def release(self) -> None:
        """Free the GL buffer, the memory object and the CUDA allocation. Safe twice."""
        self.detach()
        vmm, self._vmm = self._vmm, None
        if vmm is not None:
            handle, address, size = vmm
            self.device.bind()
            try:
                call("cuMemUnmap", address, size)
            finally:
                call("cuMemAddressFree", address, size)
                call("cuMemRelease", handle)

    def detach(self) -> None:
        """Free the GL buffer and memory object, keeping the CUDA allocation. Safe twice."""
        buffer, self.buffer = self.buffer, None
        if buffer is not None:
            # moderngl's wrapper of an external buffer does not own the GL name: delete it here.
            _delete_buffer(buffer.glo)
        mo, self._memory_object = self._memory_object, None
        if mo is not None:
            _gl("glDeleteMemoryObjectsEXT", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, ctypes.byref(ctypes.c_uint(mo))
            )


def _delete_buffer(name: int) -> None:
    _gl("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(ctypes.c_uint(name)))

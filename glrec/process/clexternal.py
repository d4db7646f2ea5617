"""The OpenCL kernel on the stage's CUDA memory, imported through ``cl_khr_external_memory_opaque_fd``.

The stage's slots are one CUDA VMM allocation (:class:`~glrec.cuda.vmm.SharedBuffer`);
a POSIX fd of it is imported into the shared OpenCL context
(``clCreateBufferWithProperties``) and each slot's ``in`` and ``out`` regions are
sub-buffers of it. pyopencl does not wrap the external-memory calls, so they
go through ctypes on the loader pyopencl uses. Everything made here is
released by :meth:`ExternalRunner.close`: events as they are waited for, the
sub-buffers and the imported buffer before the CUDA allocation is freed.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

import numpy as np

from ..errors import ProcessError
from .clcontext import SharedCL, finish_then
from .memory import CudaMemory
from .runner import Processed
from .spec import OpenCLKernel

CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR = 0x2060
CL_DEVICE_HANDLE_LIST_KHR = 0x2051
CL_DEVICE_HANDLE_LIST_END_KHR = 0
CL_MEM_READ_WRITE = 1


@functools.lru_cache(maxsize=1)
def _libopencl() -> ctypes.CDLL:
    """The OpenCL loader pyopencl uses (its wheel bundles one), for the calls pyopencl does not wrap."""
    import pyopencl  # noqa: F401  (its loader is what /proc/self/maps shows)

    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libOpenCL" in line:
                return ctypes.CDLL(line.split()[-1])
    return ctypes.CDLL("libOpenCL.so.1")


@functools.cache
def function(name: str, restype: Any, *argtypes: Any) -> Any:
    """``name`` from the loader with its signature (set once: the loader's function objects are shared)."""
    fn = getattr(_libopencl(), name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


def _release_event(event: int) -> None:
    function("clReleaseEvent", ctypes.c_int32, ctypes.c_void_p)(event)


class ExternalRunner:
    """The kernel on the stage's CUDA memory, imported into OpenCL; no copy of the frame anywhere.

    :meth:`close` must run before the CUDA memory is freed (the stage releases runner, then memory).
    """

    def __init__(self, cl: Any, entry: SharedCL, kernel: Any, spec: OpenCLKernel, memory: CudaMemory) -> None:
        assert memory.shared is not None
        device = entry.device
        self.cl, self.entry, self.queue, self.kernel, self.memory = cl, entry, entry.queue, kernel, memory
        self._events: dict[int, int] = {}  # slot -> the release event its emit waits for
        self.regions: list[tuple[Any, Any]] = []  # (in, out) sub-buffers per slot
        self._subs: list[Any] = []  # every sub-buffer made, for release
        layout = memory.layout
        self.global_size = tuple(layout.dst)
        align = device.get_info(cl.device_info.MEM_BASE_ADDR_ALIGN) // 8
        if layout.stride % align:
            raise ProcessError(f"slot stride {layout.stride} is not a multiple of the device's {align}-byte alignment")
        create = function("clCreateBufferWithProperties", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_int32))  # fmt: skip
        # A descriptor of its own for this import, closed by glrec once the call returned, imported or not:
        # unlike GL and Vulkan, NVIDIA's OpenCL (driver 580) does not take the descriptor over (measured on
        # an H200: every import left one open), and OpenCL's extension does not hand ownership to the driver.
        fd = memory.shared.export_fd()
        try:
            props = (ctypes.c_uint64 * 6)(CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, fd, CL_DEVICE_HANDLE_LIST_KHR,
                                          device.int_ptr, CL_DEVICE_HANDLE_LIST_END_KHR, 0)  # fmt: skip
            err = ctypes.c_int32(0)
            mem = create(entry.context.int_ptr, props, CL_MEM_READ_WRITE, memory.shared.size, None, ctypes.byref(err))
        finally:
            os.close(fd)
        if err.value != 0 or not mem:
            raise ProcessError(f"clCreateBufferWithProperties (opaque fd) failed with {err.value}")
        self.whole = cl.Buffer.from_int_ptr(mem, retain=False)
        try:
            self._mems = (ctypes.c_void_p * 1)(self.whole.int_ptr)
            stride, off = layout.stride, layout.offsets
            for s in range(memory.count):
                for r in ("in", "out"):
                    self._subs.append(self.whole.get_sub_region(s * stride + off[r], layout.nbytes(r)))
                self.regions.append((self._subs[-2], self._subs[-1]))
            kernel.set_args(*self.regions[0], np.int32(layout.src[0]), np.int32(layout.src[1]), *spec.args)
            self._acquire_ext = self._extension(device, "clEnqueueAcquireExternalMemObjectsKHR")
            self._release_ext = self._extension(device, "clEnqueueReleaseExternalMemObjectsKHR")
        except BaseException:
            self._release_memory()
            raise

    @staticmethod
    def _extension(device: Any, name: str) -> Any:
        address = function("clGetExtensionFunctionAddressForPlatform", ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_char_p)  # fmt: skip
        ptr = address(device.platform.int_ptr, name.encode())
        if not ptr:
            raise ProcessError(f"the OpenCL platform does not export {name}")
        signature = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                     ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p)  # fmt: skip
        return signature(ptr)

    description = "through CUDA external memory (cl_khr_external_memory_opaque_fd), no host copy"

    def run(self, slot: int) -> Processed:
        src, dst = self.regions[slot]
        self.kernel.set_arg(0, src)
        self.kernel.set_arg(1, dst)
        self._forget_event(slot)  # left over from a frame dropped after a failure, never waited for
        q = self.queue.int_ptr
        if self._acquire_ext(q, 1, self._mems, 0, None, None) != 0:
            raise ProcessError("clEnqueueAcquireExternalMemObjectsKHR failed")
        self.cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size, None)
        event = ctypes.c_void_p(0)
        if self._release_ext(q, 1, self._mems, 0, None, ctypes.byref(event)) != 0:
            raise ProcessError("clEnqueueReleaseExternalMemObjectsKHR failed")
        self._events[slot] = event.value or 0
        self.queue.flush()
        return Processed("out", wait=functools.partial(self._wait, slot))

    def _wait(self, slot: int) -> None:
        """Wait for the slot's kernel and release its event (once: a second call returns at once)."""
        event = self._events.get(slot)
        if not event:
            return
        try:
            wait = function("clWaitForEvents", ctypes.c_int32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p))
            err = wait(1, ctypes.byref(ctypes.c_void_p(event)))
        finally:
            self._forget_event(slot)
        if err != 0:
            raise ProcessError(f"the OpenCL kernel on frame slot {slot} failed (clWaitForEvents returned {err})")

    def _forget_event(self, slot: int) -> None:
        event = self._events.pop(slot, 0)
        if event:
            _release_event(event)

    def _release_memory(self) -> None:
        """Release the sub-buffers, then the imported buffer: all before the CUDA allocation goes."""
        subs, self._subs, self.regions = self._subs, [], []
        for b in subs:
            b.release()
        whole, self.whole = self.whole, None
        if whole is not None:
            whole.release()

    def close(self) -> None:
        """Release everything this recording made in OpenCL; the shared context and queue stay."""
        queue, self.queue = self.queue, None
        finish_then(self.cl, self.entry, queue, self._release)

    def _release(self) -> None:
        for slot in list(self._events):
            self._forget_event(slot)
        self._release_memory()
        self.kernel = None  # pyopencl releases a kernel with its last reference, this one

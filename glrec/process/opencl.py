"""OpenCL kernels as a processing stage (pyopencl), through CUDA external memory or host memory.

Sharing GL's frame with OpenCL directly (``cl_khr_gl_sharing``) is not an
option on a headless NVIDIA machine: measured on an H200 (driver 580, platform
"OpenCL 3.0 CUDA 13.0.98"), the device does not offer the extension, and
``clCreateContext`` with ``CL_GL_CONTEXT_KHR`` + ``CL_EGL_DISPLAY_KHR`` for a
headless EGL context fails with ``CL_INVALID_OPERATION`` (-59). What it does
offer is ``cl_khr_external_memory_opaque_fd``, so glrec goes through CUDA: the
stage's slots are a CUDA VMM allocation that GL already uses as buffer storage
(:mod:`glrec.interop.vmm`); a second POSIX fd of it is imported into OpenCL
(``clCreateBufferWithProperties``), and each slot's regions are sub-buffers of
it. Ordering is by host waits: GL's fence before the kernel is queued, the
kernel's OpenCL event before GL reads the result (GL and CUDA cannot export
semaphores, so no GPU-side wait between the three without Vulkan).

Fallback order: (1) external memory, where the pipeline is on CUDA with shared
memory and the OpenCL device is that CUDA device and offers the extension;
(2) a copy through host memory per frame (GL or CUDA -> host -> OpenCL buffer
-> kernel -> host -> back), which works with any OpenCL platform (PoCL on a CPU
in CI). The log says which, and why.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelBuildError, ProcessError, ProcessUnavailableError
from .memory import CudaMemory, HostMemory
from .runner import FunctionRunner, Processed
from .spec import OpenCLKernel

if TYPE_CHECKING:
    from ..interop.cuda import DeviceInfo

log = logging.getLogger("glrec")

OPENCL_HINT = (
    "pip install glrec[opencl] (pyopencl) and an OpenCL driver: Debian's pocl-opencl-icd on a CPU, or on NVIDIA "
    "the driver's libnvidia-opencl.so.1 named in an .icd file (OCL_ICD_VENDORS)"
)
EXTERNAL_EXTENSION = "cl_khr_external_memory_opaque_fd"
CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR = 0x2060
CL_DEVICE_HANDLE_LIST_KHR = 0x2051
CL_DEVICE_HANDLE_LIST_END_KHR = 0
CL_DEVICE_UUID_KHR = 0x106A
CL_MEM_READ_WRITE = 1


def import_pyopencl() -> Any:
    try:
        import pyopencl
    except ImportError as exc:
        raise ProcessUnavailableError(
            f"An OpenCL kernel needs pyopencl, which is not installed ({exc}); {OPENCL_HINT}."
        ) from None
    return pyopencl


@functools.lru_cache(maxsize=1)
def _libopencl() -> ctypes.CDLL:
    """The OpenCL loader pyopencl uses (its wheel bundles one), for the calls pyopencl does not wrap."""
    import_pyopencl()
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libOpenCL" in line:
                return ctypes.CDLL(line.split()[-1])
    return ctypes.CDLL("libOpenCL.so.1")


def _uuid(device: Any) -> str | None:
    if "cl_khr_device_uuid" not in device.extensions:
        return None
    out = (ctypes.c_ubyte * 16)()
    lib = _libopencl()
    lib.clGetDeviceInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    if lib.clGetDeviceInfo(device.int_ptr, CL_DEVICE_UUID_KHR, 16, out, None) != 0:
        return None
    return bytes(out).hex()


def is_cuda_device(cl: Any, device: Any, info: DeviceInfo) -> bool:
    """Whether OpenCL ``device`` is the CUDA device ``info``: by UUID, else by PCI bus (NVIDIA's attribute query)."""
    uuid = _uuid(device)
    if uuid is not None:
        return uuid == info.uuid
    if "cl_nv_device_attribute_query" not in device.extensions:
        return False
    domain, bus, _ = info.pci_bus_id.split(":")
    try:
        same_domain = device.get_info(cl.device_info.PCI_DOMAIN_ID_NV) == int(domain, 16)
    except cl.Error:
        same_domain = True  # older drivers answer the bus only
    return same_domain and device.get_info(cl.device_info.PCI_BUS_ID_NV) == int(bus, 16)


def choose_device(cl: Any, cuda: DeviceInfo | None) -> Any:
    """The CUDA device's own OpenCL device when there is one, else ``PYOPENCL_CTX``, a GPU, or the first device."""
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as exc:
        raise ProcessUnavailableError(f"No OpenCL platform is installed ({exc}); {OPENCL_HINT}.") from None
    if not devices:
        raise ProcessUnavailableError(f"The OpenCL platforms here have no device; {OPENCL_HINT}.")
    if cuda is not None:
        for d in devices:
            if is_cuda_device(cl, d, cuda):
                return d
    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    return (gpus or devices)[0]


def build_kernel(cl: Any, ctx: Any, device: Any, kernel: OpenCLKernel, extra_args: int) -> Any:
    """Build ``kernel`` for ``device``; a failure raises KernelBuildError with the compiler's log."""
    where = f"{device.name.strip()} ({device.platform.name.strip()})"
    program = cl.Program(ctx, kernel.source)
    try:
        program.build(options=list(kernel.options))
    except cl.Error as exc:
        try:
            text = program.get_build_info(device, cl.program_build_info.LOG).strip()
        except cl.Error:
            text = str(exc)
        raise KernelBuildError(f"{kernel.label} failed to build on {where}:\n{text}") from None
    names = [n for n in program.get_info(cl.program_info.KERNEL_NAMES).split(";") if n]
    if kernel.name is None and len(names) != 1:
        raise KernelBuildError(
            f"{kernel.origin} has kernels {', '.join(names) or 'none'}; name one, e.g. file.cl:name."
        )
    name = kernel.name or names[0]
    if name not in names:
        raise KernelBuildError(f"{kernel.origin} has no kernel {name!r}; it has {', '.join(names) or 'none'}.")
    k = cl.Kernel(program, name)
    expected = 4 + extra_args
    count = k.get_info(cl.kernel_info.NUM_ARGS)
    if count != expected:
        raise KernelBuildError(
            f"Kernel {name!r} takes {count} arguments; glrec passes (src, dst, width, height) and the "
            f"{extra_args} in OpenCLKernel(args=...), {expected} in all."
        )
    return k


class _HostKernel:
    """``fn(frame, out)`` for :class:`FunctionRunner`: frame -> OpenCL buffer -> kernel -> out, buffers made once."""

    def __init__(self, cl: Any, ctx: Any, queue: Any, kernel: Any, spec: OpenCLKernel, src: Any, dst: Any) -> None:
        self.cl, self.queue, self.kernel = cl, queue, kernel
        self.global_size = tuple(dst)
        self.src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, src[0] * src[1] * 4)
        self.dst = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, dst[0] * dst[1] * 4)
        kernel.set_args(self.src, self.dst, np.int32(src[0]), np.int32(src[1]), *spec.args)

    def __call__(self, frame: np.ndarray, out: np.ndarray) -> None:
        cl = self.cl
        cl.enqueue_copy(self.queue, self.src, frame)
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size, None)
        cl.enqueue_copy(self.queue, out, self.dst)  # blocking: ``out`` is complete on return

    def close(self) -> None:
        """Free the buffers and drop the queue and kernel, so the context goes now, not at garbage collection."""
        if self.queue is None:
            return
        self.queue.finish()
        self.src.release()
        self.dst.release()
        self.kernel = self.queue = None


class ExternalRunner:
    """The kernel on the stage's CUDA memory, imported into OpenCL; no copy of the frame anywhere."""

    def __init__(self, cl: Any, ctx: Any, queue: Any, device: Any, kernel: Any, spec: OpenCLKernel,
                 memory: CudaMemory) -> None:  # fmt: skip
        assert memory.shared is not None
        self.cl, self.queue, self.kernel, self.memory = cl, queue, kernel, memory
        layout = memory.layout
        self.global_size = tuple(layout.dst)
        align = device.get_info(cl.device_info.MEM_BASE_ADDR_ALIGN) // 8
        if layout.stride % align:
            raise ProcessError(f"slot stride {layout.stride} is not a multiple of the device's {align}-byte alignment")
        lib = _libopencl()
        lib.clCreateBufferWithProperties.restype = ctypes.c_void_p
        lib.clCreateBufferWithProperties.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int32),
        ]  # fmt: skip
        # A descriptor of its own for this import, closed by glrec once the call returned, imported or not:
        # unlike GL and Vulkan, NVIDIA's OpenCL (driver 580) does not take the descriptor over (measured on
        # an H200: every import left one open), and OpenCL's extension does not hand ownership to the driver.
        fd = memory.shared.export_fd()
        try:
            props = (ctypes.c_uint64 * 6)(CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, fd, CL_DEVICE_HANDLE_LIST_KHR,
                                          device.int_ptr, CL_DEVICE_HANDLE_LIST_END_KHR, 0)  # fmt: skip
            err = ctypes.c_int32(0)
            mem = lib.clCreateBufferWithProperties(ctx.int_ptr, props, CL_MEM_READ_WRITE, memory.shared.size, None,
                                                   ctypes.byref(err))  # fmt: skip
        finally:
            os.close(fd)
        if err.value != 0 or not mem:
            raise ProcessError(f"clCreateBufferWithProperties (opaque fd) failed with {err.value}")
        self.whole = cl.Buffer.from_int_ptr(mem, retain=False)
        self._mems = (ctypes.c_void_p * 1)(self.whole.int_ptr)
        stride, off = layout.stride, layout.offsets
        self.regions = [
            (self.whole.get_sub_region(s * stride + off["in"], layout.nbytes("in")),
             self.whole.get_sub_region(s * stride + off["out"], layout.nbytes("out")))
            for s in range(memory.count)
        ]  # fmt: skip
        kernel.set_args(*self.regions[0], np.int32(layout.src[0]), np.int32(layout.src[1]), *spec.args)
        self._acquire = self._extension(lib, device, "clEnqueueAcquireExternalMemObjectsKHR")
        self._release = self._extension(lib, device, "clEnqueueReleaseExternalMemObjectsKHR")

    @staticmethod
    def _extension(lib: ctypes.CDLL, device: Any, name: str) -> Any:
        lib.clGetExtensionFunctionAddressForPlatform.restype = ctypes.c_void_p
        lib.clGetExtensionFunctionAddressForPlatform.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        ptr = lib.clGetExtensionFunctionAddressForPlatform(device.platform.int_ptr, name.encode())
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
        q = self.queue.int_ptr
        if self._acquire(q, 1, self._mems, 0, None, None) != 0:
            raise ProcessError("clEnqueueAcquireExternalMemObjectsKHR failed")
        self.cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size, None)
        event = ctypes.c_void_p(0)
        if self._release(q, 1, self._mems, 0, None, ctypes.byref(event)) != 0:
            raise ProcessError("clEnqueueReleaseExternalMemObjectsKHR failed")
        done = self.cl.Event.from_int_ptr(event.value, retain=False)
        self.queue.flush()
        return Processed("out", wait=done.wait)

    def close(self) -> None:
        if self.queue is None:
            return
        self.queue.finish()
        regions, self.regions = self.regions, []
        for pair in regions:
            for b in pair:
                b.release()
        self.whole.release()
        # The context, queue and program go with the last reference to them (NVIDIA's OpenCL holds device
        # files per context): drop glrec's now rather than when this runner is collected.
        self.kernel = self.queue = None


def open_opencl(
    spec: OpenCLKernel, label: str, memory: HostMemory | CudaMemory, *, host: bool = False
) -> FunctionRunner | ExternalRunner:
    """Build ``spec`` and pick how it reaches the frames (see the module docstring); ``host`` forces the copy."""
    cl = import_pyopencl()
    cuda = memory.device if isinstance(memory, CudaMemory) else None
    device = choose_device(cl, cuda.info if cuda is not None else None)
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, device)
    kernel = build_kernel(cl, ctx, device, spec, len(spec.args))
    where = f"{device.name.strip()} ({device.platform.name.strip()})"
    layout = memory.layout
    if isinstance(memory, CudaMemory) and host:
        reason = "Process(memory='host') asked for it"
    elif isinstance(memory, CudaMemory):
        if not is_cuda_device(cl, device, cuda.info):  # type: ignore[union-attr]
            reason = f"the OpenCL device {where} is not CUDA device {cuda.ordinal}"  # type: ignore[union-attr]
        elif EXTERNAL_EXTENSION not in device.extensions:
            reason = f"{where} lacks {EXTERNAL_EXTENSION}"
        else:
            try:
                runner = ExternalRunner(cl, ctx, queue, device, kernel, spec, memory)
            except (ProcessError, cl.Error) as exc:
                reason = f"importing CUDA memory into OpenCL failed: {exc}"
            else:
                log.info("%s on %s %s", label, where, runner.description)
                return runner
    else:
        reason = "the pipeline's frames are in GL memory (no CUDA), which OpenCL cannot import"
    host_fn = _HostKernel(cl, ctx, queue, kernel, spec, layout.src, layout.dst)
    # On the CUDA path the copy is a fallback the user should hear about; on the host path it is the only way.
    level = logging.WARNING if isinstance(memory, CudaMemory) and not host else logging.INFO
    log.log(level, "%s on %s: copying each frame through host memory (%s)", label, where, reason)
    return FunctionRunner(host_fn, label, memory, array="numpy", host=True, writes_out=True, on_close=host_fn.close)

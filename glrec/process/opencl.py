"""OpenCL kernels as a processing stage (pyopencl), through CUDA external memory or host memory.

Sharing GL's frame with OpenCL directly (``cl_khr_gl_sharing``) is not an
option on a headless NVIDIA machine: measured on an H200 (driver 580, platform
"OpenCL 3.0 CUDA 13.0.98"), the device does not offer the extension, and
``clCreateContext`` with ``CL_GL_CONTEXT_KHR`` + ``CL_EGL_DISPLAY_KHR`` for a
headless EGL context fails with ``CL_INVALID_OPERATION`` (-59). What it does
offer is ``cl_khr_external_memory_opaque_fd``, so glrec goes through CUDA: the
stage's slots are a CUDA VMM allocation that GL already uses as buffer storage
(:mod:`glrec.cuda.vmm`); a second POSIX fd of it is imported into OpenCL
(``clCreateBufferWithProperties``), and each slot's regions are sub-buffers of
it. Ordering is by host waits: GL's fence before the kernel is queued, the
kernel's OpenCL event before GL reads the result (GL and CUDA cannot export
semaphores, so no GPU-side wait between the three without Vulkan).

Fallback order: (1) external memory, where the pipeline is on CUDA with shared
memory and the OpenCL device is that CUDA device and offers the extension;
(2) a copy through host memory per frame (GL or CUDA -> host -> OpenCL buffer
-> kernel -> host -> back), which works with any OpenCL platform (PoCL on a CPU
in CI). The log says which, and why.

Every recording in a process uses the same OpenCL context, queue and built
programs per device (:mod:`glrec.process.clcontext`: NVIDIA's OpenCL holds
device files per context); what a recording creates is released when it ends,
the imported buffers before the CUDA memory under them is freed.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import KernelBuildError, ProcessError, ProcessUnavailableError
from .clcontext import SharedCL, finish_then, shared
from .clexternal import ExternalRunner, function
from .memory import CudaMemory, HostMemory
from .runner import FunctionRunner
from .spec import OpenCLKernel

if TYPE_CHECKING:
    from ..cuda.driver import DeviceInfo

log = logging.getLogger("glrec")

OPENCL_HINT = (
    "pip install glrec[opencl] (pyopencl) and an OpenCL driver: Debian's pocl-opencl-icd on a CPU, or on NVIDIA "
    "the driver's libnvidia-opencl.so.1 named in an .icd file (OCL_ICD_VENDORS)"
)
EXTERNAL_EXTENSION = "cl_khr_external_memory_opaque_fd"
CL_DEVICE_UUID_KHR = 0x106A


def import_pyopencl() -> Any:
    try:
        import pyopencl
    except ImportError as exc:
        raise ProcessUnavailableError(
            f"An OpenCL kernel needs pyopencl, which is not installed ({exc}); {OPENCL_HINT}."
        ) from None
    return pyopencl


def _uuid(device: Any) -> str | None:
    if "cl_khr_device_uuid" not in device.extensions:
        return None
    out = (ctypes.c_ubyte * 16)()
    get = function("clGetDeviceInfo", ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t,
                    ctypes.c_void_p, ctypes.c_void_p)  # fmt: skip
    if get(device.int_ptr, CL_DEVICE_UUID_KHR, 16, out, None) != 0:
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
    return same_domain and bool(device.get_info(cl.device_info.PCI_BUS_ID_NV) == int(bus, 16))


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


def _program(cl: Any, entry: SharedCL, kernel: OpenCLKernel) -> Any:
    """``kernel``'s program, built once per process and device; a failed build raises KernelBuildError with the
    compiler's log, the failed program released."""
    program = entry.program(kernel.source, kernel.options)
    if program is not None:
        return program
    program = cl.Program(entry.context, kernel.source)
    failure = None
    try:
        program.build(options=list(kernel.options))
    except cl.Error as exc:
        try:
            failure = program.get_build_info(entry.device, cl.program_build_info.LOG).strip()
        except cl.Error:
            failure = str(exc)
    if failure is not None:
        # pyopencl's build error is raised from reference cycles with its frames, which hold the failed program
        # (and so the shared context): collect them now rather than whenever the collector next runs.
        program = None
        gc.collect()
        where = f"{entry.device.name.strip()} ({entry.device.platform.name.strip()})"
        raise KernelBuildError(f"{kernel.label} failed to build on {where}:\n{failure}")
    entry.keep(kernel.source, kernel.options, program)
    return program


def build_kernel(cl: Any, entry: SharedCL, kernel: OpenCLKernel, extra_args: int) -> Any:
    """A kernel object of ``kernel`` for this recording; a failed build or a kernel glrec cannot call raises
    KernelBuildError."""
    program = _program(cl, entry, kernel)
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

    def __init__(self, cl: Any, entry: SharedCL, kernel: Any, spec: OpenCLKernel, src: Any, dst: Any) -> None:
        self.cl, self.entry, self.queue, self.kernel = cl, entry, entry.queue, kernel
        self.global_size = tuple(dst)
        flags = cl.mem_flags
        self.buffers = [cl.Buffer(entry.context, flags.READ_ONLY, src[0] * src[1] * 4)]
        try:
            self.buffers.append(cl.Buffer(entry.context, flags.WRITE_ONLY, dst[0] * dst[1] * 4))
            kernel.set_args(*self.buffers, np.int32(src[0]), np.int32(src[1]), *spec.args)
        except BaseException:
            self._release()
            raise

    def __call__(self, frame: np.ndarray, out: np.ndarray) -> None:
        cl = self.cl
        cl.enqueue_copy(self.queue, self.buffers[0], frame)
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, self.global_size, None)
        cl.enqueue_copy(self.queue, out, self.buffers[1])  # blocking: ``out`` is complete on return

    def _release(self) -> None:
        buffers, self.buffers = self.buffers, []
        for b in buffers:
            b.release()
        self.kernel = None  # pyopencl releases a kernel with its last reference, this one

    def close(self) -> None:
        """Release the buffers and the kernel now (the shared context and queue stay for the next recording)."""
        queue, self.queue = self.queue, None
        finish_then(self.cl, self.entry, queue, self._release)


def open_opencl(
    spec: OpenCLKernel, label: str, memory: HostMemory | CudaMemory, *, host: bool = False
) -> FunctionRunner | ExternalRunner:
    """Build ``spec`` and pick how it reaches the frames (see the module docstring); ``host`` forces the copy."""
    cl = import_pyopencl()
    cuda = memory.device if isinstance(memory, CudaMemory) else None
    device = choose_device(cl, cuda.info if cuda is not None else None)
    entry = shared(cl, device)
    kernel = build_kernel(cl, entry, spec, len(spec.args))
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
                runner = ExternalRunner(cl, entry, kernel, spec, memory)
            except (ProcessError, cl.Error) as exc:
                reason = f"importing CUDA memory into OpenCL failed: {exc}"
            else:
                log.info("%s on %s %s", label, where, runner.description)
                return runner
    else:
        reason = "the pipeline's frames are in GL memory (no CUDA), which OpenCL cannot import"
    host_fn = _HostKernel(cl, entry, kernel, spec, layout.src, layout.dst)
    # On the CUDA path the copy is a fallback the user should hear about; on the host path it is the only way.
    level = logging.WARNING if isinstance(memory, CudaMemory) and not host else logging.INFO
    log.log(level, "%s on %s: copying each frame through host memory (%s)", label, where, reason)
    try:
        return FunctionRunner(host_fn, label, memory, array="numpy", host=True, writes_out=True, on_close=host_fn.close)
    except BaseException:
        host_fn.close()
        raise

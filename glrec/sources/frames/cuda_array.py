"""CUDA arrays in: a device-to-device copy into a GL buffer, unpacked into the render target on the GPU.

The frame (PyTorch, CuPy, JAX, anything with ``__cuda_array_interface__`` or
DLPack) is copied on glrec's stream, after the producer's stream has reached
the point where the data is complete (an event recorded on the producer's
stream, waited for on glrec's), into a GL buffer, the way the recording's CUDA
handoff works:

- *shared*: the buffer's storage is CUDA memory (:class:`~glrec.cuda.vmm.SharedBuffer`),
  so there is no map at all; a GL fence after the unpack pass keeps the next copy
  from overwriting what GL still reads, and the copy is complete (stream
  synchronised) before GL reads it;
- *register*: a GL buffer registered with CUDA (``cuGraphicsGLRegisterBuffer``);
  mapping orders the copy after GL's last read, unmapping orders GL's next read
  after the copy (a map costs hundreds of microseconds per frame).

The unpack pass (:mod:`.unpack`) then fills the render target, and the frame
goes the way a rendered one does: GL convert, CUDA handoff, encoder. The
frame never touches host memory. ``write()`` returns once glrec's copy is
done, so the caller may overwrite or free the array straight away.

Where the recorder reads frames back to the host anyway (``handoff="host"``,
or GL not on the CUDA device), :class:`CudaToHost` copies the frame to host
memory once and it continues as a host array.
"""

from __future__ import annotations

import logging
from typing import Any

import moderngl
import numpy as np

from ...cuda.driver import CudaDevice, call, driver
from ...errors import ConfigError
from ...gl.fences import Fence
from .unpack import CopyPlan, UnpackPass, copy_plan
from .written import CudaFrameIn, HostFrameIn, check_float_range

log = logging.getLogger("glrec")


def check_device(frame: CudaFrameIn, device: int) -> None:
    if frame.device != device:
        raise ConfigError(
            f"The frame is a CUDA array on device {frame.device}; this recorder records on CUDA device {device}. "
            f"Move it there first (e.g. tensor.to('cuda:{device}')), or record with cuda_device={frame.device}."
        )


def _check_alignment(frame: CudaFrameIn) -> None:
    size = frame.dtype.itemsize
    if frame.ptr % size or any(s % size for s in frame.strides):
        raise ConfigError(
            f"The CUDA frame's address or strides {frame.strides} are not multiples of its {frame.dtype} items; "
            "pass a contiguous copy (tensor.contiguous())."
        )


def _copy(plan: CopyPlan, src: int, dst: int, stream: Any, *, to_host: bool = False) -> None:
    """Queue ``plan``'s copy from device address ``src`` (element [0,0,0]) to ``dst`` on ``stream``."""
    cu = driver()
    start = src + plan.src_offset
    if plan.rows == 1:
        name = "cuMemcpyDtoHAsync" if to_host else "cuMemcpyDtoDAsync"
        call(name, dst, start, plan.row_bytes, stream)
        return
    copy = cu.CUDA_MEMCPY2D()
    copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice = start
    copy.srcPitch = plan.src_pitch
    if to_host:
        copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_HOST
        copy.dstHost = dst
    else:
        copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.dstDevice = dst
    copy.dstPitch = plan.row_bytes
    copy.WidthInBytes = plan.row_bytes
    copy.Height = plan.rows
    call("cuMemcpy2DAsync", copy, stream)


def _after_producer(frame: CudaFrameIn, device: CudaDevice, event: Any) -> None:
    """Make glrec's stream wait until the producer's stream has finished the frame."""
    if frame.stream is None:
        return
    call("cuEventRecord", event, driver().CUstream(frame.stream))
    call("cuStreamWaitEvent", device.stream, event, 0)


class CudaArraySource:
    """Copy CUDA frames of ``size`` into ``texture`` (the target's RGBA8 colour) on ``device``.

    ``shared`` stages them in CUDA memory GL uses as a buffer (needs ``GL_EXT_memory_object_fd``;
    the register path otherwise), see the module docstring.
    """

    def __init__(self, ctx: moderngl.Context, texture: Any, size: tuple[int, int], device: CudaDevice, *,
                 shared: bool = False) -> None:  # fmt: skip
        from ...cuda.vmm import EXTENSION

        self.ctx = ctx
        self.texture = texture
        self.size = size
        self.device = device
        self.shared = shared and EXTENSION in ctx.extensions
        self._buffer: moderngl.Buffer | None = None
        self._resource: Any = None  # register: the CUDA graphics resource of the buffer
        self._memory: Any = None  # shared: the SharedBuffer
        self._read: Fence | None = None  # shared: placed after GL's last read of the buffer
        self._unpack: UnpackPass | None = UnpackPass(ctx)
        log.info(
            "CUDA frames in through %s", "CUDA memory GL reads (no map)" if self.shared else "a registered GL buffer"
        )
        device.bind()
        self._producer_done = device.event()

    def put(self, frame: CudaFrameIn) -> None:
        """Copy ``frame`` into the target (on the GPU); raise ConfigError for NaN/out-of-range floats."""
        try:
            check_device(frame, self.device.ordinal)
            _check_alignment(frame)
            plan = copy_plan(frame.shape, frame.strides, frame.dtype.itemsize)
            self.device.bind()
            self._staging(plan.nbytes)
            stream = self.device.stream
            _after_producer(frame, self.device, self._producer_done)
            if self.shared:
                fence, self._read = self._read, None
                if fence is not None:
                    fence.wait()  # GL has read the previous frame out of the buffer (long ago, normally)
                _copy(plan, frame.ptr, self._memory.address, stream)
            else:
                call("cuGraphicsMapResources", 1, self._resource, stream)
                try:
                    address, _ = call("cuGraphicsResourceGetMappedPointer", self._resource)
                    _copy(plan, frame.ptr, int(address), stream)
                finally:
                    call("cuGraphicsUnmapResources", 1, self._resource, stream)
            # Complete before GL reads it; and glrec's from here: the caller may reuse the array.
            call("cuStreamSynchronize", stream)
        finally:
            frame.release()
        assert self._unpack is not None and self._buffer is not None
        self._unpack.run(self._buffer, plan, frame.shape, frame.dtype, self.texture)
        if self.shared:
            self._read = Fence()

    def _staging(self, nbytes: int) -> None:
        """The staging buffer, made again larger when a frame needs more room (strided frames may)."""
        if self._buffer is not None and self._buffer.size >= nbytes:
            return
        self._drop_buffer()
        size = (nbytes + 255) // 256 * 256
        if self.shared:
            from ...cuda.vmm import SharedBuffer

            self._memory = SharedBuffer(self.ctx, self.device, size)
            self._buffer = self._memory.buffer
            return
        self._buffer = self.ctx.buffer(reserve=size)
        flags = driver().CUgraphicsRegisterFlags.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
        self._resource = call("cuGraphicsGLRegisterBuffer", self._buffer.glo, flags)

    def _drop_buffer(self) -> None:
        fence, self._read = self._read, None
        if fence is not None:
            fence.wait()  # GL may not read memory that is about to be freed
        memory, self._memory = self._memory, None
        if memory is not None:
            self._buffer = None
            memory.release()
        resource, self._resource = self._resource, None
        if resource is not None:
            self.device.bind()
            call("cuGraphicsUnregisterResource", resource)
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            buffer.release()

    def release(self) -> None:
        """Unregister and free the staging buffer and the unpack pass. Safe twice."""
        self._drop_buffer()
        unpack, self._unpack = self._unpack, None
        if unpack is not None:
            unpack.release()
        event, self._producer_done = self._producer_done, None
        if event is not None:
            self.device.bind()
            call("cuEventDestroy", event)


class CudaToHost:
    """CUDA frames copied once to host memory, for recorders that read frames back to the host anyway.

    Opens the frame's device (its primary context) at the first frame; any device works, since
    nothing else of the recording is on it.
    """

    def __init__(self) -> None:
        self._devices: dict[int, tuple[CudaDevice, Any]] = {}
        self._buffer = np.empty(0, np.uint8)
        self._logged = False

    def to_host(self, frame: CudaFrameIn) -> HostFrameIn:
        if not self._logged:
            self._logged = True
            log.info("CUDA frames are copied to host memory: this recording reads frames back to the host "
                     "(handoff host, or GL not on a CUDA device); the CUDA handoff keeps them on the GPU.")  # fmt: skip
        try:
            device, event = self._device(frame.device)
            plan = copy_plan(frame.shape, frame.strides, frame.dtype.itemsize)
            if self._buffer.nbytes < plan.nbytes:
                self._buffer = np.empty(plan.nbytes, np.uint8)
            _after_producer(frame, device, event)
            _copy(plan, frame.ptr, self._buffer.ctypes.data, device.stream, to_host=True)
            call("cuStreamSynchronize", device.stream)
        finally:
            frame.release()
        array = np.ndarray(frame.shape, frame.dtype, buffer=self._buffer, offset=plan.origin, strides=plan.strides)
        if array.dtype.kind == "f":
            check_float_range(array)
        return HostFrameIn(array)

    def _device(self, ordinal: int) -> tuple[CudaDevice, Any]:
        if ordinal not in self._devices:
            device = CudaDevice.open(ordinal)
            self._devices[ordinal] = (device, device.event())
        device, event = self._devices[ordinal]
        device.bind()
        return device, event

    def release(self) -> None:
        devices, self._devices = self._devices, {}
        for device, event in devices.values():
            device.bind()
            call("cuEventDestroy", event)
            device.release()

"""CUDA arrays in: a device-to-device copy into a GL buffer, unpacked into the render target on the GPU.

The frame (PyTorch, CuPy, JAX, anything with ``__cuda_array_interface__`` or
DLPack) is copied on glrec's stream, after the producer's stream has reached
the point where the data is complete (an event recorded on the producer's
stream, waited for on glrec's), into a GL buffer registered with CUDA
(``cuGraphicsGLRegisterBuffer``); mapping orders the copy after GL's last
read of the buffer, unmapping orders GL's next read after the copy. The
unpack pass (:mod:`.unpack`) then fills the render target, and the frame
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

from ..errors import ConfigError
from ..interop.cuda import CudaDevice, call, driver
from .frames import CudaFrameIn, HostFrameIn, check_float_range
from .unpack import CopyPlan, UnpackPass, copy_plan

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
    """Copy CUDA frames of ``size`` into ``texture`` (the target's RGBA8 colour) on ``device``."""

    def __init__(self, ctx: moderngl.Context, texture: Any, size: tuple[int, int], device: CudaDevice) -> None:
        self.ctx = ctx
        self.texture = texture
        self.size = size
        self.device = device
        self._buffer: moderngl.Buffer | None = None
        self._resource: Any = None
        self._unpack: UnpackPass | None = UnpackPass(ctx)
        device.bind()
        self._producer_done = device.event()

    def put(self, frame: CudaFrameIn) -> None:
        """Copy ``frame`` into the target (on the GPU); raise ConfigError for NaN/out-of-range floats."""
        try:
            check_device(frame, self.device.ordinal)
            _check_alignment(frame)
            plan = copy_plan(frame.shape, frame.strides, frame.dtype.itemsize)
            self.device.bind()
            resource = self._staging(plan.nbytes)
            stream = self.device.stream
            _after_producer(frame, self.device, self._producer_done)
            call("cuGraphicsMapResources", 1, resource, stream)
            try:
                address, _ = call("cuGraphicsResourceGetMappedPointer", resource)
                _copy(plan, frame.ptr, int(address), stream)
            finally:
                call("cuGraphicsUnmapResources", 1, resource, stream)
            # The copy is glrec's from here: the caller may reuse the array, the producer may free it.
            call("cuStreamSynchronize", stream)
        finally:
            frame.release()
        assert self._unpack is not None and self._buffer is not None
        self._unpack.run(self._buffer, plan, frame.shape, frame.dtype, self.texture)

    def _staging(self, nbytes: int) -> Any:
        """The registered GL buffer, grown (and registered again) when a frame needs more room."""
        if self._buffer is not None and self._buffer.size >= nbytes:
            return self._resource
        self._drop_buffer()
        self._buffer = self.ctx.buffer(reserve=(nbytes + 255) // 256 * 256)
        flags = driver().CUgraphicsRegisterFlags.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
        self._resource = call("cuGraphicsGLRegisterBuffer", self._buffer.glo, flags)
        return self._resource

    def _drop_buffer(self) -> None:
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

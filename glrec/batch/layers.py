"""A step's batch into one GL array texture (N layers of W x H), in one upload: host or CUDA memory.

An ``(N, H, W, C)`` C-contiguous batch is exactly the bytes of N layers of H
rows, top row first, so it goes in with one ``glTexSubImage3D``:

- host batches straight from their memory (the driver's one copy);
- CUDA batches through a GL buffer registered with CUDA: one device-to-device
  copy of the whole step into it (map, copy, unmap: mapping orders the copy
  after GL's last read of the buffer), then the texture is filled from the
  buffer on the GPU. The pixels never touch host memory.

Rows stay top row first: the passes that read the layers know it (the GL JPEG
stage's ``top_down``, the grid's tile shader).
"""

from __future__ import annotations

import logging
from typing import Any

import moderngl
import numpy as np

from ..errors import ConfigError
from .frames import Batch, CudaBatch, HostBatch

log = logging.getLogger("glrec")


class LayerUpload:
    """Fills an array texture of ``envs`` layers of ``size`` with ``channels`` each, from batches (see above)."""

    def __init__(self, ctx: moderngl.Context, envs: int, size: tuple[int, int], channels: int,
                 device: Any = None) -> None:  # fmt: skip
        self.ctx = ctx
        w, h = size
        most = int(ctx.info.get("GL_MAX_ARRAY_TEXTURE_LAYERS", 256))
        if envs > most:  # checked before any GL object: one array texture holds the step
            raise ConfigError(
                f"{envs} envs exceed this GL's {most} array texture layers; split the batch over two BatchRecorders "
                f"(frames[:{most}] and frames[{most}:]), or use encoder 'cpu'."
            )
        self.texture = ctx.texture_array((w, h, envs), channels, alignment=1)
        self.texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self.device = device  # a CudaDevice for CUDA batches (None: host batches only)
        self._nbytes = envs * w * h * channels
        self._buffer: moderngl.Buffer | None = None
        self._resource: Any = None
        self._event: Any = None

    def put(self, batch: Batch) -> None:
        """Fill every layer with ``batch`` (the GPU reads it in order with the passes after it)."""
        if isinstance(batch, HostBatch):
            frames = batch.frames
            data = np.ascontiguousarray(np.stack(frames) if not isinstance(frames, np.ndarray) else frames)
            self.texture.write(data, alignment=1)
            return
        self._put_cuda(batch)

    def _put_cuda(self, batch: CudaBatch) -> None:
        from ..cuda.driver import call, driver

        device = self.device
        if device is None:
            raise ConfigError("This recording was set up for host batches; pass every step the same way.")
        if batch.device != device.ordinal:
            raise ConfigError(f"The batch is on CUDA device {batch.device}; this recording runs on device "
                              f"{device.ordinal}. Pass cuda_device={batch.device}.")  # fmt: skip
        device.bind()
        if self._buffer is None:
            self._buffer = self.ctx.buffer(reserve=self._nbytes)
            flags = driver().CUgraphicsRegisterFlags.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
            self._resource = call("cuGraphicsGLRegisterBuffer", self._buffer.glo, flags)
            self._event = device.event()
        stream = device.stream
        if batch.stream is not None:  # glrec's copy waits until the producer has finished the frames
            call("cuEventRecord", self._event, driver().CUstream(batch.stream))
            call("cuStreamWaitEvent", stream, self._event, 0)
        call("cuGraphicsMapResources", 1, self._resource, stream)
        try:
            address, _ = call("cuGraphicsResourceGetMappedPointer", self._resource)
            _copy_batch(batch, int(address), stream)
        finally:
            call("cuGraphicsUnmapResources", 1, self._resource, stream)
        call("cuStreamSynchronize", stream)  # complete before GL reads it; the caller may reuse the batch
        self.texture.write(self._buffer, alignment=1)

    def release(self) -> None:
        """Unregister and free the buffer and the texture. Safe twice."""
        resource, self._resource = self._resource, None
        if resource is not None and self.device is not None:
            from ..cuda.driver import call

            self.device.bind()
            call("cuGraphicsUnregisterResource", resource)
            if self._event is not None:
                call("cuEventDestroy", self._event)
                self._event = None
        for name in ("_buffer", "texture"):
            obj = getattr(self, name)
            setattr(self, name, None)
            if obj is not None:
                obj.release()


def _copy_batch(batch: CudaBatch, dst: int, stream: Any) -> None:
    """Queue the batch's copy into ``dst`` (packed layers) on ``stream``: one copy when it is contiguous."""
    from ..cuda.driver import call, driver

    if batch.contiguous:
        call("cuMemcpyDtoDAsync", dst, batch.ptr, batch.nbytes, stream)
        return
    n, h, w, c = batch.shape
    s = batch.strides
    if s[3] != 1 or s[2] != c:
        raise ConfigError(f"The CUDA batch's pixels are not packed (strides {s}); pass batch.contiguous().")
    cu = driver()
    for env in range(n):  # rows of each env, pitched: one 2-D copy per env
        copy = cu.CUDA_MEMCPY2D()
        copy.srcMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.srcDevice = batch.ptr + env * s[0]
        copy.srcPitch = s[1]
        copy.dstMemoryType = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.dstDevice = dst + env * h * w * c
        copy.dstPitch = w * c
        copy.WidthInBytes = w * c
        copy.Height = h
        call("cuMemcpy2DAsync", copy, stream)

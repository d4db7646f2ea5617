"""A step's batch into one GL array texture (N layers of W x H), in one upload: host or CUDA memory.

An ``(N, H, W, C)`` C-contiguous batch is exactly the bytes of N layers of H
rows, top row first, so it goes in with one ``glTexSubImage3D``:

- host batches straight from their memory (the driver's one copy);
- CUDA batches through GL buffers whose storage is CUDA memory
  (:class:`~glrec.cuda.vmm.SharedBuffer`, ``GL_EXT_memory_object_fd``): one
  device-to-device copy of the whole step into a slot of a ring of such
  buffers (:meth:`LayerUpload.stage`, no GL call), then the texture is filled
  from the slot on the GPU (:meth:`LayerUpload.fill`). No map or unmap per
  step. With ``ahead=K`` the ring holds 2K slots, so a caller can stage K
  steps on the CUDA side and then fill and encode all K in one turn of GL:
  the GPU switches between the CUDA and GL contexts twice per K steps, not
  per step (DESIGN: the two take turns; per frame they do not reach the
  serial bound). Where the driver lacks the extension, one buffer registered
  with CUDA is mapped per step (``shared`` is False; K is then 1). The pixels
  never touch host memory.

Rows stay top row first: the passes that read the layers know it (the GL JPEG
stage's ``top_down``, the grid's tile shader).
"""

from __future__ import annotations

import logging
from typing import Any

import moderngl
import numpy as np

from ..errors import ConfigError, ContextError
from ..gl.fences import Fence
from .frames import Batch, CudaBatch, HostBatch

log = logging.getLogger("glrec")


class LayerUpload:
    """Fills an array texture of ``envs`` layers of ``size`` with ``channels`` each, from batches (see above).

    GPU memory for CUDA batches: ``2 * ahead`` slots of one step (``envs * W * H * channels`` bytes) each.
    """

    def __init__(self, ctx: moderngl.Context, envs: int, size: tuple[int, int], channels: int,
                 device: Any = None, *, ahead: int = 1) -> None:  # fmt: skip
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
        self._buffer: moderngl.Buffer | None = None  # the registered buffer (drivers without shared memory)
        self._resource: Any = None
        self._events: tuple[Any, Any] | None = None  # (the producer's frames ready, glrec's copy done)
        self._slots: list[Any] = []  # SharedBuffers, staged in turn
        self._read: list[Fence | None] = []  # after GL's fill from each slot
        self._next = 0
        self.shared = False
        if device is not None:
            try:
                self._set_up(device, max(1, ahead))
            except BaseException:
                self.release()
                raise
        self.ahead = max(1, ahead) if self.shared else 1

    def _set_up(self, device: Any, ahead: int) -> None:
        """The slots where GL can import CUDA memory, else one buffer registered with CUDA (needs ``ctx`` current)."""
        from ..cuda.driver import call, driver
        from ..cuda.vmm import EXTENSION, SharedBuffer

        device.bind()
        self._events = (device.event(), device.event())
        if EXTENSION in self.ctx.extensions:
            try:
                for _ in range(2 * ahead):
                    self._slots.append(SharedBuffer(self.ctx, device, self._nbytes))
                    self._read.append(None)
                self.shared = True
                return
            except ContextError as exc:  # the import refused (another GPU's GL): the registered buffer works
                for buffer in self._slots:
                    buffer.release()
                self._slots, self._read = [], []
                log.debug("batch upload: sharing CUDA memory with GL failed (%s); mapping a registered buffer", exc)
        else:
            log.debug("batch upload: the GL driver lacks %s; mapping a registered buffer per step", EXTENSION)
        self._buffer = self.ctx.buffer(reserve=self._nbytes)
        flags = driver().CUgraphicsRegisterFlags.CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD
        self._resource = call("cuGraphicsGLRegisterBuffer", self._buffer.glo, flags)

    def put(self, batch: Batch) -> None:
        """Fill every layer with ``batch`` now (GL current; the GPU reads it in order with the passes after it)."""
        if isinstance(batch, HostBatch):
            frames = batch.frames
            data = np.ascontiguousarray(np.stack(frames) if not isinstance(frames, np.ndarray) else frames)
            self.texture.write(data, alignment=1)
            return
        if not self.shared:
            self._put_mapped(batch)
            return
        self.settle(len(self._slots) - 1)  # the slot about to be staged again was filled two puts ago
        self.fill(self.stage(batch))

    def stage(self, batch: Batch) -> int:
        """Queue the CUDA copy of ``batch`` into the next slot (no GL call); returns the slot for :meth:`fill`.

        The caller may reuse the batch when this returns: the producer's stream waits for the copy
        (or, where the batch names no stream, the copy is waited for here). The slot's previous fill
        must be known complete: :meth:`fill` and :meth:`settle` see to it within ``2 * ahead`` stages.
        """
        from ..cuda.driver import call

        device = self._cuda_device(batch)
        assert isinstance(batch, CudaBatch) and self._events is not None and self.shared
        slot, self._next = self._next, (self._next + 1) % len(self._slots)
        copied = self._events[1]
        stream = device.stream
        producer = self._after_producer(batch, stream)
        _copy_batch(batch, self._slots[slot].address, stream)
        if producer is not None:  # and the producer's next work (a new frame in the same memory) waits for it
            call("cuEventRecord", copied, stream)
            call("cuStreamWaitEvent", producer, copied, 0)
        else:
            call("cuStreamSynchronize", stream)
        return slot

    def fill(self, slot: int) -> None:
        """Fill the texture from ``slot`` (GL current): waits for the staged copies first."""
        from ..cuda.driver import call

        assert self.device is not None
        if self._read[slot] is not None:
            raise AssertionError(f"slot {slot} filled twice without settle()")
        self.device.bind()
        call("cuStreamSynchronize", self.device.stream)  # every staged copy done (once per turn in practice)
        self.texture.write(self._slots[slot].buffer, alignment=1)
        self._read[slot] = Fence()

    def settle(self, keep: int) -> None:
        """Wait for GL's fills from every slot but the ``keep`` newest (GL current), so they can be staged again."""
        n = len(self._slots)
        for back in range(keep + 1, n + 1):
            slot = (self._next - back) % n
            fence, self._read[slot] = self._read[slot], None
            if fence is not None:
                fence.wait()

    def _after_producer(self, batch: CudaBatch, stream: Any) -> Any:
        """Make glrec's ``stream`` wait until the producer has finished the frames; the producer's stream, or None."""
        from ..cuda.driver import call, driver

        if batch.stream is None:
            return None
        assert self._events is not None
        producer = driver().CUstream(batch.stream)
        call("cuEventRecord", self._events[0], producer)
        call("cuStreamWaitEvent", stream, self._events[0], 0)
        return producer

    def _cuda_device(self, batch: Batch) -> Any:
        device = self.device
        if device is None or not isinstance(batch, CudaBatch):
            raise ConfigError("This recording was set up for host batches; pass every step the same way.")
        if batch.device != device.ordinal:
            raise ConfigError(f"The batch is on CUDA device {batch.device}; this recording runs on device "
                              f"{device.ordinal}. Pass cuda_device={batch.device}.")  # fmt: skip
        device.bind()
        return device

    def _put_mapped(self, batch: Batch) -> None:
        from ..cuda.driver import call

        device = self._cuda_device(batch)
        assert isinstance(batch, CudaBatch) and self._events is not None and self._buffer is not None
        stream = device.stream
        self._after_producer(batch, stream)
        call("cuGraphicsMapResources", 1, self._resource, stream)
        try:
            address, _ = call("cuGraphicsResourceGetMappedPointer", self._resource)
            _copy_batch(batch, int(address), stream)
        finally:
            call("cuGraphicsUnmapResources", 1, self._resource, stream)
        call("cuStreamSynchronize", stream)  # complete before GL reads it; the caller may reuse the batch
        self.texture.write(self._buffer, alignment=1)

    def release(self) -> None:
        """Free the slots (or unregister the buffer), the events and the texture (GL current). Safe twice."""
        from ..cuda.driver import call

        fences, self._read = self._read, []
        for fence in fences:
            if fence is not None:
                fence.release()
        if self.device is not None:
            self.device.bind()
            if self._slots:
                call("cuStreamSynchronize", self.device.stream)  # no copy still writing into a slot
        slots, self._slots = self._slots, []
        for buffer in slots:
            buffer.release()
        resource, self._resource = self._resource, None
        if resource is not None:
            call("cuGraphicsUnregisterResource", resource)
        events, self._events = self._events, None
        for event in events or ():
            call("cuEventDestroy", event)
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

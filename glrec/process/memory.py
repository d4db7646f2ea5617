"""Where the processing stage keeps frames: a few slots, allocated once, each GL buffer memory.

A slot holds three regions: ``in`` (the rendered frame, H x W x 4, rows
top-down), ``out`` (the output frame, when it cannot be written over the input:
another size, or an OpenCL kernel reading its input while writing) and ``mask``
(one byte per output pixel for an overlay mask). GL writes ``in`` and reads
``out`` and ``mask`` with compute and fragment shaders; the process function
reads and writes them in between.

:class:`HostMemory` (any GL): one GL buffer per slot and a host copy of it
(:class:`~glrec.cuda.pool.HostPool`), read and written with
``glGetBufferSubData``/``glBufferSubData``. :class:`CudaMemory` (NVIDIA): one
:class:`~glrec.cuda.vmm.SharedBuffer`, CUDA memory that is GL's buffer
storage, so torch, CuPy or an OpenCL kernel work on the frame where GL put it;
a host copy exists only for a function that asked for host memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import moderngl
import numpy as np

from ..cuda.pool import HostPool

if TYPE_CHECKING:
    from ..cuda.driver import CudaDevice
    from ..cuda.pool import DevicePool
    from ..cuda.vmm import SharedBuffer

Region = Literal["in", "out", "mask"]
#: Region alignment: GL storage-buffer offsets and OpenCL sub-buffer origins both need it (4 KiB covers both).
ALIGN = 4096


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class SlotLayout:
    """Byte offsets of a slot's regions, for input size ``src`` and output size ``dst``."""

    src: tuple[int, int]
    dst: tuple[int, int]
    separate_out: bool

    @property
    def offsets(self) -> dict[Region, int]:
        at = _align(self.nbytes("in"))
        out = at if self.separate_out else 0
        if self.separate_out:
            at += _align(self.nbytes("out"))
        return {"in": 0, "out": out, "mask": at}

    @property
    def stride(self) -> int:
        return self.offsets["mask"] + _align(self.nbytes("mask"))

    def nbytes(self, region: Region) -> int:
        w, h = self.src if region == "in" else self.dst
        return w * h if region == "mask" else w * h * 4

    def shape(self, region: Region) -> tuple[int, ...]:
        w, h = self.src if region == "in" else self.dst
        return (h, w) if region == "mask" else (h, w, 4)


class HostMemory:
    """Slots as GL buffers plus their host copies (the path for any GL, Mesa included)."""

    kind = "host"

    def __init__(self, ctx: moderngl.Context, layout: SlotLayout, count: int) -> None:
        self.layout = layout
        self.count = count
        # One buffer per slot: reading one frame back must not wait for GL writing the next.
        self._buffers = [ctx.buffer(reserve=layout.stride) for _ in range(count)]
        self._host = HostPool(layout.stride, count, stride=layout.stride)

    def gl(self, slot: int, region: Region) -> tuple[moderngl.Buffer, int]:
        return self._buffers[slot], self.layout.offsets[region]

    def host(self, slot: int, region: Region) -> np.ndarray:
        """The host copy of ``region`` as a flat uint8 array."""
        return self._host.array(slot, self.layout.offsets[region], self.layout.nbytes(region))

    def download(self, slot: int, region: Region) -> None:
        """GL -> host copy (waits for GL's writes: call after the slot's fence)."""
        nbytes, offset = self.layout.nbytes(region), self.layout.offsets[region]
        self._buffers[slot].read_into(self.host(slot, region), size=nbytes, offset=offset)

    def upload(self, slot: int, region: Region) -> None:
        self._buffers[slot].write(self.host(slot, region), offset=self.layout.offsets[region])

    def release(self) -> None:
        buffers, self._buffers = self._buffers, []
        for b in buffers:
            b.release()
        self._host.release()


class CudaMemory:
    """Slots in one CUDA allocation that is also a GL buffer; events per slot order CUDA before GL."""

    kind = "cuda"

    def __init__(self, ctx: moderngl.Context, device: CudaDevice, layout: SlotLayout, count: int) -> None:
        from ..cuda.pool import DevicePool
        from ..cuda.vmm import SharedBuffer

        self.layout = layout
        self.count = count
        self.device = device
        self.shared: SharedBuffer | None = SharedBuffer(ctx, device, layout.stride * count)
        self._host: HostPool | None = None
        try:
            # The pool's slots are the stage's; it is used for its per-slot CUDA events.
            self.pool: DevicePool | None = DevicePool(
                device, layout.stride, count, base=self.shared.address, stride=layout.stride
            )
        except BaseException:
            self.release()
            raise

    def gl(self, slot: int, region: Region) -> tuple[moderngl.Buffer, int]:
        assert self.shared is not None and self.shared.buffer is not None
        return self.shared.buffer, slot * self.layout.stride + self.layout.offsets[region]

    def ptr(self, slot: int, region: Region) -> int:
        assert self.shared is not None
        return self.shared.address + slot * self.layout.stride + self.layout.offsets[region]

    def event(self, slot: int) -> object:
        assert self.pool is not None
        return self.pool.events[slot]

    def host(self, slot: int, region: Region) -> np.ndarray:
        """A host staging copy of ``region`` (made on first use: only host-memory functions need one)."""
        if self._host is None:
            self._host = HostPool(self.layout.stride, self.count, stride=self.layout.stride)
        return self._host.array(slot, self.layout.offsets[region], self.layout.nbytes(region))

    def download(self, slot: int, region: Region) -> None:
        from ..cuda.driver import call

        self.device.bind()
        call("cuMemcpyDtoH", self.host(slot, region).ctypes.data, self.ptr(slot, region), self.layout.nbytes(region))

    def upload(self, slot: int, region: Region) -> None:
        from ..cuda.driver import call

        self.device.bind()
        call("cuMemcpyHtoD", self.ptr(slot, region), self.host(slot, region).ctypes.data, self.layout.nbytes(region))

    def release(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            self.device.synchronize()  # nothing of glrec's may still write the memory being freed
            pool.release()
        shared, self.shared = self.shared, None
        if shared is not None:
            shared.release()
        if self._host is not None:
            self._host.release()

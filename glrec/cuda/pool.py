"""Device frames and the pool of device buffers they live in.

A handoff fills a slot of a :class:`DevicePool` and hands out a
:class:`DeviceFrame` for it. Slots are allocated once: no allocation per
frame. A frame holds its slot until :meth:`DeviceFrame.release` (encoders call
it when done); the producer blocks in :meth:`DevicePool.acquire` when every
slot is in use, which bounds memory the same way the encode queue does.

Frames are laid out exactly like the host path's buffers (planes back to back,
rows tightly packed, top row first), so :meth:`DeviceFrame.to_host` feeds the
CPU encoder unchanged, and a frame can be compared byte for byte with a host
readback. Consumers read frames in place through ``__cuda_array_interface__``
(CuPy, Numba, PyTorch, PyNvVideoCodec, nvImageCodec) or DLPack
(``torch.from_dlpack(frame)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import CudaError
from ..frame import HostFrame
from ..layout import PlaneLayout
from .driver import CudaDevice, call


def _wait_until(
    cond: threading.Condition,
    ready: Callable[[], bool],
    timeout: float,
    error: Callable[[], str],
    abort: Callable[[], None] | None = None,
) -> None:
    """With ``cond`` held: wait until ``ready()``, calling ``abort`` (it may raise) while waiting.

    A CudaError saying ``error()`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while not ready():
        if abort is not None:
            abort()
        left = deadline - time.monotonic()
        if left <= 0:
            raise CudaError(error())
        cond.wait(min(left, 0.1))


class DevicePool:
    """``count`` slots of ``nbytes`` each in device memory, handed out and returned.

    ``base``/``stride`` describe memory the caller owns (the shared handoff
    passes its CUDA–GL shared allocation); otherwise the pool allocates with
    ``cuMemAlloc`` and frees on :meth:`release`.
    """

    def __init__(
        self, device: CudaDevice, nbytes: int, count: int, *, base: int | None = None, stride: int | None = None
    ) -> None:
        self.device = device
        self.nbytes = nbytes
        self.stride = stride or _round_up(nbytes, 512)  # 512 B keeps every slot aligned for vector loads
        self._owned = base is None
        device.bind()
        self.base = int(call("cuMemAlloc", self.stride * count)) if base is None else int(base)
        # One event per slot, recorded after the copy that fills it: made once, reused.
        self.events = [device.event() for _ in range(count)]
        self._free = list(range(count))
        self._reading: dict[int, Any] = {}  # slot -> event recorded after a consumer's asynchronous read
        self._cond = threading.Condition()
        self.count = count

    def address(self, slot: int) -> int:
        return self.base + slot * self.stride

    def acquire(self, timeout: float = 30.0, *, abort: Callable[[], None] | None = None) -> int:
        """Take a free slot, waiting while the consumer still holds them all.

        ``abort`` is called while waiting; it raises to stop the wait (e.g. when the
        encode worker failed and will never return its slots).
        """
        with self._cond:
            _wait_until(
                self._cond,
                lambda: bool(self._free),
                timeout,
                lambda: (
                    f"No free device buffer after {timeout:.0f} s: all {self.count} are held by frames "
                    "that were never released. Call frame.release() when done with each DeviceFrame."
                ),
                abort,
            )
            slot = self._free.pop(0)
            reading = self._reading.pop(slot, None)
        if reading is not None:  # a consumer's copy out of this slot may still be queued: let it finish
            self.device.bind()
            call("cuEventSynchronize", reading)
        return slot

    def wait_free(self, slots: Iterable[int], timeout: float = 30.0) -> None:
        """Block until every slot in ``slots`` has been given back (the consumer is done with them)."""
        wanted = set(slots)
        with self._cond:
            _wait_until(
                self._cond,
                lambda: wanted.issubset(self._free),
                timeout,
                lambda: (
                    f"Frames in slots {sorted(wanted - set(self._free))} were not released within {timeout:.0f} s; "
                    "call frame.release() when done with each DeviceFrame."
                ),
            )

    def give_back(self, slot: int, *, reading: Any = None) -> None:
        """Return ``slot``; ``reading`` is an event behind a copy that still reads it (waited for in acquire)."""
        with self._cond:
            if slot not in self._free:
                if reading is not None:
                    self._reading[slot] = reading
                self._free.append(slot)
                self._cond.notify_all()  # the producer may wait in acquire() or in wait_free()

    @property
    def free(self) -> int:
        with self._cond:
            return len(self._free)

    def release(self) -> None:
        base, self.base = self.base, 0
        events, self.events = self.events, []
        if base:
            self.device.bind()
            for event in events:
                call("cuEventDestroy", event)
            if self._owned:
                call("cuMemFree", base)


class HostPool:
    """``count`` host buffers of ``nbytes`` each, allocated once (the host-memory side of a stage's slots).

    One contiguous allocation, slot ``k`` at ``k * stride``; :meth:`array` views a
    slot as uint8. Who uses which slot is the owner's bookkeeping (one thread).
    """

    def __init__(self, nbytes: int, count: int, *, stride: int | None = None) -> None:
        self.nbytes = nbytes
        self.count = count
        self.stride = stride or _round_up(nbytes, 512)
        self._memory: np.ndarray | None = np.zeros(self.stride * count, np.uint8)

    def array(self, slot: int, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """Slot ``slot`` (from ``offset``, ``nbytes`` long; default: the rest of the slot) as a flat uint8 view."""
        assert self._memory is not None, "released"
        start = slot * self.stride + offset
        return self._memory[start : start + (self.nbytes - offset if nbytes is None else nbytes)]

    def release(self) -> None:
        self._memory = None


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class _PlaneView:
    """One plane of a frame as a ``(height, width, components)`` CUDA array (what NVENC wants per plane)."""

    def __init__(self, ptr: int, w: int, h: int, c: int, stream: int | None) -> None:
        self.__cuda_array_interface__ = {
            "shape": (h, w, c),
            "strides": (w * c, c, 1),
            "typestr": "|u1",
            "data": (ptr, False),
            "version": 3,
            "stream": stream,
        }


class DeviceFrame:
    """A converted frame in device memory, valid until :meth:`release`.

    ``layout`` says where each plane is; the whole frame is one C-contiguous
    ``uint8`` array of ``layout.host_shape`` at :attr:`ptr`.

    >>> frame.to_host().data.shape  # doctest: +SKIP
    (1620, 1920)
    >>> torch.as_tensor(frame, device="cuda")  # zero-copy view  # doctest: +SKIP
    """

    def __init__(self, index: int, layout: PlaneLayout, pool: DevicePool, slot: int, *, pending: bool) -> None:
        self.index = index
        self.layout = layout
        self.pool = pool
        self.slot: int | None = slot
        self.ptr = pool.address(slot)
        # The slot's event, recorded after the copy that filled it, while that copy may still run.
        self._ready: Any = pool.events[slot] if pending else None

    @property
    def pix_fmt(self) -> str:
        """The frame's pixel format (``nv12``, ``yuv420p``, ``yuv444p``, ``rgba``, ...)."""
        return self.layout.pix_fmt

    @property
    def width(self) -> int:
        """Width of the picture in pixels."""
        return self.layout.width

    @property
    def height(self) -> int:
        """Height of the picture in pixels."""
        return self.layout.height

    @property
    def device(self) -> CudaDevice:
        """The CUDA device whose memory holds the frame."""
        return self.pool.device

    def _check(self) -> None:
        if self.slot is None:
            raise CudaError(f"Frame {self.index} was released; its device buffer now holds another frame.")

    def synchronize(self) -> None:
        """Block until the copy that filled this frame has finished (cheap if it has)."""
        self._check()
        event, self._ready = self._ready, None
        if event is not None:
            self.device.bind()
            call("cuEventSynchronize", event)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        self._check()
        return {
            "shape": self.layout.host_shape,
            "strides": None,
            "typestr": "|u1",
            "data": (self.ptr, False),
            "version": 3,
            # Consumers synchronise on glrec's stream before reading (CAI v3 semantics).
            "stream": self.device.stream_handle if self._ready is not None else None,
        }

    def plane_views(self) -> list[_PlaneView]:
        """One CUDA-array view per plane, in layout order (Y, U, V / Y, UV / RGB)."""
        self._check()
        stream = self.device.stream_handle if self._ready is not None else None
        return [
            _PlaneView(self.ptr + off, w, h, c, stream)
            for (w, h, c), off in zip(self.layout.planes, self.layout.offsets, strict=True)
        ]

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self.device.ordinal)  # kDLCUDA

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        """A DLPack capsule viewing this frame (the frame must outlive what the consumer makes of it)."""
        from .dlpack import capsule

        self.synchronize()  # the consumer's stream may be any stream: make the data complete first
        return capsule(self.ptr, self.layout.host_shape, self.device.ordinal, owner=self)

    def to_host(self, out: np.ndarray | None = None) -> HostFrame:
        """Copy the frame to host memory as a :class:`~glrec.frame.HostFrame` (what the CPU encoder takes)."""
        self.synchronize()
        self.device.bind()
        data = out if out is not None else np.empty(self.layout.host_shape, np.uint8)
        call("cuMemcpyDtoH", data.ctypes.data, self.ptr, self.layout.nbytes)
        return HostFrame(self.index, self.layout.pix_fmt, self.layout.width, self.layout.height, data)

    def release(self, *, after: Any = None) -> None:
        """Return the buffer to the pool. Safe to call twice.

        ``after`` is a stream on which a copy out of this frame was queued and may still run
        (PyNvVideoCodec's input copy): an event is recorded there, and the slot is refilled only
        once it completed.
        """
        slot, self.slot = self.slot, None
        if slot is not None:
            event, self._ready = self._ready, None
            self.device.bind()
            if event is not None:
                call("cuEventSynchronize", event)  # the slot may be refilled only after its copy ended
            reading = None
            if after is not None:
                reading = self.pool.events[slot]
                call("cuEventRecord", reading, after)
            self.pool.give_back(slot, reading=reading)

    def __repr__(self) -> str:
        state = "released" if self.slot is None else f"0x{self.ptr:x}"
        return f"<DeviceFrame {self.index} {self.pix_fmt} {self.width}x{self.height} {state}>"

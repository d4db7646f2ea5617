"""The CUDA side of a dataset stream: batch slots in CUDA memory that GL packs into directly.

The slots are one :class:`~glrec.cuda.vmm.SharedBuffer` (CUDA memory that is
also the storage of a GL buffer, as the shared handoff uses): the GPU packer
writes each frame's passes at its place in a slot, the GL fence after each
frame has signalled before a batch is handed out, and CUDA reads the same bytes
at its own address, with no copy and no map/unmap. Each pass of a batch is a
:class:`CudaArray`: ``torch.from_dlpack`` / ``cupy.from_dlpack`` view it in place.

Ordering with the consumer: DLPack tells the producer the consumer's stream.
The data is complete when handed out (nothing to wait for), and when the last
array of a batch is gone an event is recorded on every stream that took one of
its arrays; the renderer waits for it before GL writes that slot again, so
kernels queued on the consumer's stream still read the old batch. An array read
through ``__cuda_array_interface__`` (which names no consumer stream) makes the
release wait for the whole device instead.

Needs an NVIDIA GPU, cuda-python and the driver's ``GL_EXT_memory_object_fd``;
not run on the CPU-only development machine (its CPU twin, the host slots in
:mod:`glrec.dataset.rendering.memory`, has the same layout and is tested in CI).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import moderngl
import numpy as np

from ...cuda.driver import CudaDevice, call, cuda_problem, device_info, driver
from ...cuda.pool import DevicePool
from ...cuda.vmm import SharedBuffer
from ...errors import DeviceError
from .memory import ALIGN, BatchLayout, Lease, PassView
from .pack import PackTarget

log = logging.getLogger("glrec")

__all__ = ["CudaArray", "CudaSlots", "check_cuda", "open_cuda"]

_UNKNOWN = -1  # "a consumer read it without saying on which stream"


def check_cuda(ordinal: int) -> None:
    """Raise DeviceError (with the reason and the way out) unless CUDA device ``ordinal`` can be used."""
    problem = cuda_problem()
    if problem is not None:
        raise DeviceError(
            f"device='cuda:{ordinal}' needs CUDA, which is not usable here: {problem}. "
            "Use device='cpu' for numpy batches (glrec never falls back on its own)."
        )
    device_info(ordinal)  # DeviceError naming the visible devices when there is no such ordinal


def open_cuda(ordinal: int, gl_device: int | None) -> tuple[CudaDevice, Any]:
    """The CUDA device and a GL context on the EGL device that is that GPU (checked, not assumed)."""
    from ...gl.context import create_cuda_context

    device = CudaDevice.open(ordinal)
    try:
        gl = create_cuda_context(ordinal, device.info.pci_bus_id, gl_device)
    except BaseException:
        device.release()
        raise
    return device, gl


def _stream_handle(stream: Any) -> int:
    """A DLPack ``stream`` argument as a CUDA stream handle (None and 1: the legacy default stream)."""
    if stream is None:
        return 1  # CU_STREAM_LEGACY
    return int(stream)


class CudaArray:
    """One pass of a batch in CUDA memory; valid while referenced (it holds its batch's slot).

    A consumer of ``__cuda_array_interface__`` must keep this object (CuPy's
    ``asarray`` does); DLPack views hold the slot themselves.

    ``torch.from_dlpack(a)`` / ``cupy.from_dlpack(a)`` give zero-copy views that
    hold the slot too; ``shape``, ``dtype``, ``strides`` (bytes) describe it.
    """

    def __init__(self, slots: CudaSlots, lease: Lease, view: PassView) -> None:
        self._slots = slots
        self._lease = lease
        self._view = view
        self.shape = view.shape
        self.dtype = np.dtype(view.dtype)
        self.strides = view.strides
        self._base = slots.address(lease.slot)

    @property
    def device(self) -> int:
        return self._slots.device.ordinal

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._slots.device.ordinal)  # kDLCUDA

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        """A DLPack capsule over the pass; ``stream`` is the consumer's (recorded for the slot's release)."""
        from ...cuda.dlpack import capsule

        if copy:
            raise BufferError("glrec's CUDA arrays are views of the render memory; copy after importing.")
        if stream != -1:  # -1: the consumer asks for no ordering at all
            self._slots.note_stream(self._lease.slot, _stream_handle(stream))
        view = self._view
        elements = tuple(s // view.itemsize for s in view.strides)
        # DLPack wants the data pointer itself 256-byte aligned, the rest in byte_offset.
        return capsule(self._base, view.shape, self._slots.device.ordinal, owner=self._lease, dtype=view.dtype,
                       strides=elements, byte_offset=view.offset)  # fmt: skip

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        self._slots.note_stream(self._lease.slot, _UNKNOWN)
        view = self._view
        return {
            "shape": view.shape,
            "strides": view.strides,
            "typestr": self.dtype.str,
            "data": (self._base + view.offset, False),
            "version": 3,
            "stream": None,  # complete already: GL's fence signalled before the batch was handed out
        }

    def __repr__(self) -> str:
        return f"<CudaArray {self.dtype} {self.shape} on cuda:{self.device}>"


class CudaSlots:
    """``count`` batch slots of ``nbytes`` in one CUDA allocation that is also a GL buffer.

    Made and closed on the GL thread (:meth:`close_gl`); the CUDA memory is freed
    by :meth:`close` or, if arrays still hold slots then, when the last goes.
    """

    def __init__(self, ctx: moderngl.Context, device: CudaDevice, nbytes: int, count: int) -> None:
        self.device = device
        self.stride = (nbytes + ALIGN - 1) // ALIGN * ALIGN
        self.count = count
        self.waiting_since: float | None = None
        self._streams: dict[int, set[int]] = {}
        self._lock = threading.Lock()
        self._leased: set[int] = set()
        self._closed = False
        self._shared: SharedBuffer | None = SharedBuffer(ctx, device, self.stride * count)
        try:
            self.pool: DevicePool | None = DevicePool(device, nbytes, count, base=self._shared.address,
                                                      stride=self.stride)  # fmt: skip
        except BaseException:
            self._shared.release()
            raise
        log.info("dataset stream: %d batch buffers of %.1f MB in CUDA memory shared with GL on %s",
                 count, nbytes / 1e6, device.info.name)  # fmt: skip

    def address(self, slot: int) -> int:
        assert self.pool is not None, "released"
        return self.pool.address(slot)

    def acquire(self, abort: Callable[[], None]) -> int:
        import time

        assert self.pool is not None
        if self.pool.free == 0:
            self.waiting_since = time.monotonic()
        try:
            slot = self.pool.acquire(timeout=float("inf"), abort=abort)
        finally:
            self.waiting_since = None
        with self._lock:
            self._leased.add(slot)
        return slot

    def lease(self, slot: int) -> Lease:
        return Lease(self, slot, self._give_back)

    def note_stream(self, slot: int, stream: int) -> None:
        with self._lock:
            self._streams.setdefault(slot, set()).add(stream)

    def target(self, slot: int, offset: int, nbytes: int) -> PackTarget:
        assert self._shared is not None and self._shared.buffer is not None, "GL side released"
        return (self._shared.buffer, slot * self.stride + offset)

    def arrays(self, lease: Lease, layout: BatchLayout, n: int) -> dict[str, CudaArray]:
        return {name: CudaArray(self, lease, layout.pass_view(name, n)) for name in layout.passes()}

    def _give_back(self, slot: int) -> None:
        with self._lock:
            streams = self._streams.pop(slot, set())
            self._leased.discard(slot)
            last_out = self._closed and not self._leased
        pool = self.pool
        if pool is None:
            return
        reading = None
        try:
            self.device.bind()
            if _UNKNOWN in streams:
                call("cuCtxSynchronize")  # a CAI consumer did not say which stream reads it
            else:
                # One event per slot: extra streams (rare) are waited for here, the last one by acquire().
                ordered = sorted(streams)
                for extra in ordered[:-1]:
                    call("cuStreamSynchronize", driver().CUstream(extra))
                if ordered:
                    reading = pool.events[slot]
                    call("cuEventRecord", reading, driver().CUstream(ordered[-1]))
        except Exception as exc:  # runs from a finalizer: nowhere to raise to
            log.warning("dataset stream: ordering the release of a CUDA batch failed: %s", exc)
            reading = None
        pool.give_back(slot, reading=reading)
        if last_out:
            self._free()

    def close_gl(self) -> None:
        """Release the GL buffer over the memory (on the GL thread). Safe twice."""
        if self._shared is not None:
            self._shared.detach()

    def close(self) -> None:
        """Free the CUDA memory now, or when the last array still holding a slot goes. Safe twice."""
        with self._lock:
            self._closed = True
            busy = bool(self._leased)
        if not busy:
            self._free()

    def _free(self) -> None:
        pool, self.pool = self.pool, None
        shared, self._shared = self._shared, None
        try:
            if pool is not None:
                pool.release()
            if shared is not None:
                shared.release()
        finally:
            if pool is not None or shared is not None:
                self.device.release()

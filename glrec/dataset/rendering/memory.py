"""Where a streamed batch lives: its layout in one slot of memory, and the fixed pool of slots with leases.

Each frame of each sample is the GPU packer's bytes (:mod:`glrec.dataset.rendering.pack`:
rgb, float32 depth, uint16 ids, normals, each section 16-byte aligned) at
``i * sample_stride + f * frame_stride`` of its batch's slot, so a pass of the
whole batch is one strided array over the slot: no copy to gather it, on the
host (numpy) or in CUDA memory (DLPack). A slot is handed out with a
:class:`Lease`; every array made from it keeps the lease alive, and only when
the last of them is gone does the slot go back to the pool. So memory is the
pool, whatever the consumer does, and a held array is never written over.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import mmap
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...gl.mapped import MappedBuffer
from ...scenes.passes import PASS_ROWS

__all__ = ["BatchLayout", "HostChunks", "HostSlots", "Lease", "LentMappings", "PoolExhausted"]

log = logging.getLogger("glrec")

#: Byte alignment of every frame in a slot: GL's storage-buffer offsets and CUDA/DLPack pointers need it.
ALIGN = 256


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class PassView:
    """One pass of ``n`` samples as a strided array: numpy type string, shape, byte strides, byte offset."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class BatchLayout:
    """Where each sample, frame and pass of a batch of ``batch`` samples lies in one slot.

    ``sections`` is the packer's pass -> (byte offset, bytes) within one frame;
    ``normal`` the normal pass's format (``png``: uint8, ``npy``: float32).
    """

    batch: int
    frames: int
    size: tuple[int, int]
    sections: dict[str, tuple[int, int]]
    frame_bytes: int
    normal: str = "png"

    @property
    def frame_stride(self) -> int:
        return _round_up(max(self.frame_bytes, 1), ALIGN)

    @property
    def sample_stride(self) -> int:
        return self.frames * self.frame_stride

    @property
    def nbytes(self) -> int:
        """Bytes of one slot (a full batch)."""
        return self.batch * self.sample_stride

    def frame_offset(self, sample: int, frame: int = 0) -> int:
        """Byte offset of frame ``frame`` of the batch's ``sample``-th sample (a multiple of 256)."""
        return sample * self.sample_stride + frame * self.frame_stride

    def pass_view(self, name: str, n: int) -> PassView:
        """Pass ``name`` of the first ``n`` samples: shape (n, h, w[, c]), or (n, frames, h, w[, c]) for clips."""
        w, h = self.size
        row = PASS_ROWS[name]
        dtype, tail = row.stream_dtype(normal=self.normal), row.tail
        item = np.dtype(dtype).itemsize
        inner = (h, w, *tail)
        inner_strides: list[int] = []
        step = item
        for extent in reversed(inner):
            inner_strides.insert(0, step)
            step *= extent
        lead: tuple[int, ...] = (n,)
        lead_strides: tuple[int, ...] = (self.sample_stride,)
        if self.frames > 1:
            lead, lead_strides = (n, self.frames), (self.sample_stride, self.frame_stride)
        return PassView(dtype, lead + inner, lead_strides + tuple(inner_strides), self.sections[name][0])

    def passes(self) -> list[str]:
        return list(self.sections)


#: Free chunk buffers a :class:`HostChunks` keeps. A worker with encode threads has up to a shard chunk of samples
#: waiting for them (several chunks on the 2-core machine, whose chunks are smaller): keeping one, 44 of 62 chunks
#: of a 300-sample run got new memory; a worker without encode threads (16 on 16 cores) holds about two (its bound
#: of samples waiting to be written is one chunk). On hardware GL a shard worker's chunks are lent instead
#: (:class:`LentMappings`), so there these hold only chunks that found both mappings lent.
#: Kept buffers are never more than were in use at once.
KEEP = 4


class HostChunks:
    """Host memory for chunks' packed bytes, used again: :meth:`take` gives a uint8 array whose memory comes back
    here when the last view of it is gone (a chunk's samples are views of it, encoded on other threads). A worker
    then copies each chunk into pages it has touched before, instead of new ones the kernel must map and zero (on
    the 2-core machine the copy of 32 samples of 3.3 MB took 0.48-1.0 ms a sample into new memory, 0.31 used
    again). At most ``keep`` free buffers are kept; more are made while more are in use. New memory is an
    anonymous mapping, which the kernel zeroes page by page as the copy first touches it (a ``bytearray`` was
    also set to zero first: one more pass over every new chunk)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._free: list[mmap.mmap] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """An array of ``nbytes`` (contents undefined), its memory used again once it and its views are gone."""
        with self._lock:
            fits = [b for b in self._free if len(b) >= nbytes]
            buf = min(fits, key=len) if fits else None
            if buf is None:
                self._free.clear()  # too small for this chunk: given back to Python
            else:
                self._free.remove(buf)
        if buf is None:
            buf = mmap.mmap(-1, max(1, nbytes))  # anonymous; unmapped once the array and its views are gone
        array = np.frombuffer(buf, np.uint8, count=nbytes)
        weakref.finalize(array, self._give_back, buf).atexit = False
        return array

    def _give_back(self, buf: mmap.mmap) -> None:
        with self._lock:
            if len(self._free) < self.keep:
                self._free.append(buf)


#: Mapped buffers a :class:`LentMappings` has at most: one whose samples are being encoded and one being drawn
#: into. With both lent (encode threads behind the GL thread), a chunk is copied into host memory instead.
LEND_AT_MOST = 2


class LentMappings:
    """Persistently mapped GL buffers (:class:`~glrec.gl.mapped.MappedBuffer`, host memory) lent out as arrays.

    The GPU copies a chunk's packed passes into a free one and the chunk's samples are views of the mapping
    itself: the host reads each byte once, where it encodes it, instead of copying 32 samples of 3.3 MB into
    host memory first (``MappedBuffer.read_into``, 10 % of a GL JPEG shard worker's CPU on the H200 machine).
    A buffer is free again once the last view of its array is gone. Buffers are made and released on the GL
    thread; views may be dropped on any thread. The borrower drops every view before :meth:`release`: a view
    read after it reads unmapped memory (:class:`~glrec.dataset.files.runner.ShardWorker` does, and only it
    borrows)."""

    def __init__(self, most: int = LEND_AT_MOST) -> None:
        self.most = most
        self._buffers: list[MappedBuffer] = []
        self._lent: set[int] = set()  # id() of the buffers with live views
        self._lock = threading.Lock()
        #: Chunks lent, and chunks that found every buffer lent (copied into host memory instead).
        self.lends = self.misses = 0

    def free(self, nbytes: int) -> MappedBuffer | None:
        """A buffer of at least ``nbytes`` with no live views (made while fewer than :attr:`most` exist), or None."""
        with self._lock:
            idle = [b for b in self._buffers if id(b) not in self._lent]
        fits = [b for b in idle if b.nbytes >= nbytes]
        if fits:
            return fits[0]
        if idle:  # too small for this chunk: made again at its size
            self._buffers.remove(idle[0])
            idle[0].release()
        if len(self._buffers) >= self.most:
            self.misses += 1
            return None
        buf = MappedBuffer(max(16, nbytes), "a chunk's packed passes", client=True)
        self._buffers.append(buf)
        return buf

    def lend(self, buf: MappedBuffer, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of ``buf``'s mapping as a uint8 array (after the fence that follows the GPU's
        writes); ``buf`` is free again once it and every view of it are gone."""
        array = np.frombuffer(memoryview((ctypes.c_uint8 * nbytes).from_address(buf.address)), np.uint8)
        with self._lock:
            self._lent.add(id(buf))
            self.lends += 1
        weakref.finalize(array, self._returned, id(buf)).atexit = False
        return array

    def _returned(self, key: int) -> None:
        with self._lock:
            self._lent.discard(key)

    def release(self) -> None:
        """Unmap and delete every buffer (GL thread); safe twice."""
        with self._lock:
            still, self._lent = len(self._lent), set()
        if still:  # a bug of the borrower: its arrays now point at unmapped memory
            log.warning("glrec: %d lent chunk(s) of packed passes were still referenced when released", still)
        buffers, self._buffers = self._buffers, []
        for buf in buffers:
            buf.release()


class PoolExhausted(Exception):
    """Raised inside :meth:`HostSlots.acquire` by its ``abort`` callback to stop waiting (internal)."""


class Lease:
    """The consumer's hold on one slot: alive while any array made from it is; the slot returns after.

    ``on_release(slot)`` runs once, on whichever thread drops the last reference
    (or calls :meth:`release` on a lease nobody received).
    """

    def __init__(self, memory: Any, slot: int, on_release: Callable[[int], None]) -> None:
        self.memory = memory  # what keeps the slot's bytes alive (a numpy array, or the CUDA slots)
        self.slot = slot
        self._finalizer = weakref.finalize(self, on_release, slot)

    @property
    def alive(self) -> bool:
        return self._finalizer.alive

    def release(self) -> None:
        """Return the slot now (only for a lease whose arrays never left glrec)."""
        self._finalizer()


class _ArrayOf:
    """An ``__array_interface__`` over a slot's bytes that holds the slot's lease (numpy keeps it as ``base``)."""

    def __init__(self, lease: Lease, address: int, view: PassView) -> None:
        self.lease = lease
        self.__array_interface__ = {
            "data": (address + view.offset, False),
            "shape": view.shape,
            "strides": view.strides,
            "typestr": "<" + view.dtype if view.itemsize > 1 else "|" + view.dtype,
            "version": 3,
        }


class HostSlots:
    """``count`` host slots of ``nbytes`` each, allocated once; :meth:`acquire` waits while all are leased."""

    def __init__(self, nbytes: int, count: int) -> None:
        if count < 2:
            raise ConfigError(f"buffers={count}: a stream needs at least 2 (one rendered while one is read).")
        self.nbytes = nbytes
        self.count = count
        self._memory = [np.empty(max(nbytes, 1), np.uint8) for _ in range(count)]
        self._free = list(range(count))
        self._cond = threading.Condition()
        self.waiting_since: float | None = None  # when acquire() began waiting for a held slot

    def memory(self, slot: int) -> np.ndarray:
        return self._memory[slot]

    def acquire(self, abort: Callable[[], None]) -> int:
        """A free slot; while every slot is leased, wait (calling ``abort``, which may raise, now and then)."""
        collected = False
        with self._cond:
            while not self._free:
                if self.waiting_since is None:
                    self.waiting_since = time.monotonic()
                elif not collected and time.monotonic() - self.waiting_since > 0.5:
                    # Arrays in reference cycles are garbage the collector has not reached yet; its
                    # finalizers give slots back, so it runs without the lock.
                    collected = True
                    self._cond.release()
                    try:
                        gc.collect()
                    finally:
                        self._cond.acquire()
                    continue
                abort()
                self._cond.wait(0.05)
            self.waiting_since = None
            return self._free.pop(0)

    def give_back(self, slot: int) -> None:
        with self._cond:
            if slot not in self._free:
                self._free.append(slot)
                self._cond.notify_all()

    @property
    def free(self) -> int:
        with self._cond:
            return len(self._free)

    def lease(self, slot: int) -> Lease:
        return Lease(self._memory[slot], slot, self.give_back)

    def arrays(self, lease: Lease, layout: BatchLayout, n: int) -> dict[str, np.ndarray]:
        """Every pass of the first ``n`` samples of the leased slot, as numpy arrays holding the lease."""
        address = int(self._memory[lease.slot].ctypes.data)
        return {name: np.asarray(_ArrayOf(lease, address, layout.pass_view(name, n))) for name in layout.passes()}

"""Raw frames for an encode process: a ring of step slots in shared memory that has no name.

The recorder copies a step's frames for one child into slot ``message % slots``
and sends only their places; the child encodes them where they lie and
acknowledges the step, after which the slot may be written again (the recorder
never has more than ``slots`` steps unacknowledged per child, see
:class:`~glrec.batch.mux_procs.ProcessPool`). The memory is a ``memfd``
handed to the child as an inherited descriptor: nothing in ``/dev/shm`` or on
disk, and it is gone when the last process holding it exits, however it exits.
"""

from __future__ import annotations

import math
import mmap
import os

import numpy as np

__all__ = ["FrameSlots", "can_share"]


def can_share() -> bool:
    """Whether this OS has anonymous shared memory files (Linux's ``memfd_create``)."""
    return hasattr(os, "memfd_create")


class FrameSlots:
    """``slots`` x ``per_slot`` frames of ``shape`` uint8 in shared memory; :meth:`spec` rebuilds it in a child."""

    def __init__(self, slots: int, per_slot: int, shape: tuple[int, ...], fd: int | None = None) -> None:
        self.slots, self.per_slot, self.shape = slots, per_slot, tuple(shape)
        count = slots * per_slot * math.prod(shape)
        size = max(1, count)
        if fd is None:
            fd = os.memfd_create("glrec-batch-frames", os.MFD_CLOEXEC)  # inherited only through pass_fds
            try:
                os.ftruncate(fd, size)
            except BaseException:
                os.close(fd)
                raise
        self.fd = fd
        self._map: mmap.mmap | None = mmap.mmap(fd, size)
        self.frames: np.ndarray | None = np.frombuffer(self._map, np.uint8, count).reshape(slots, per_slot, *shape)
        self.sent = 0  # frames messages written (the recorder's side): the next goes to slot sent % slots

    def spec(self) -> tuple[int, int, int, tuple[int, ...]]:
        """What a child needs to map the same memory: (fd, slots, per_slot, shape)."""
        return self.fd, self.slots, self.per_slot, self.shape

    def write(self, arrays: list[np.ndarray]) -> int:
        """Copy one message's frames into the next slot; returns the slot."""
        assert self.frames is not None
        slot = self.sent % self.slots
        for k, array in enumerate(arrays):
            self.frames[slot, k] = array
        self.sent += 1
        return slot

    def frame(self, slot: int, k: int) -> np.ndarray:
        """Frame ``k`` of ``slot``, where it lies (valid until the slot's message is acknowledged)."""
        assert self.frames is not None
        return self.frames[slot, k]

    def close(self) -> None:
        """Unmap and close the descriptor; safe twice (arrays still viewing it must be gone)."""
        self.frames = None
        if self._map is not None:
            self._map.close()
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

"""One OpenCL context per device per process, shared by every recording that runs a kernel.

NVIDIA's OpenCL opens device files (``/dev/nvidia0``, ``/dev/nvidiactl``,
``/dev/nvidia-uvm``...) for every context, and they outlive the recording that
made it: measured on an H200 (driver 580), two recordings with a context each
left 36 more descriptors open. A long-running process that records in a loop
would run out. So glrec keeps, per OpenCL device, one context, one in-order
command queue and the programs it built (by source and build options, the
most recent :data:`PROGRAMS` of them), reused by every recording and dropped
at interpreter exit; N recordings cost the descriptors of one. A forked child
makes its own (a parent's OpenCL objects are not valid there).

What a recording makes itself (its kernel object, buffers, the buffer imported
from CUDA memory and its sub-buffers, events) it releases when it ends:
memory objects with ``release()``, events through ``clReleaseEvent``;
pyopencl has no explicit release for kernels, so the runner holds the only
reference and drops it.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

log = logging.getLogger("glrec")

#: Programs kept per device (least recently used dropped first): recordings reusing a kernel skip its build.
PROGRAMS = 32


class SharedCL:
    """The process's context, queue and built programs for one OpenCL device."""

    def __init__(self, cl: Any, device: Any) -> None:
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context, device)
        self._programs: OrderedDict[tuple[str, tuple[str, ...]], Any] = OrderedDict()
        self._lock = threading.Lock()

    def program(self, source: str, options: tuple[str, ...]) -> Any | None:
        """The program built earlier from ``source`` with ``options``, or None."""
        with self._lock:
            program = self._programs.get((source, options))
            if program is not None:
                self._programs.move_to_end((source, options))
            return program

    def keep(self, source: str, options: tuple[str, ...], program: Any) -> None:
        """Remember a successfully built ``program`` (a failed build is never kept)."""
        with self._lock:
            self._programs[(source, options)] = program
            self._programs.move_to_end((source, options))
            while len(self._programs) > PROGRAMS:
                self._programs.popitem(last=False)  # kernels made from it keep it alive in OpenCL

    @property
    def programs(self) -> list[Any]:
        with self._lock:
            return list(self._programs.values())

    def drop(self) -> None:
        """Let go of the programs, queue and context (they go when no recording holds them)."""
        with self._lock:
            self._programs.clear()
        self.queue = self.context = None


_lock = threading.Lock()
_shared: dict[int, SharedCL] = {}
_inherited: list[SharedCL] = []  # a forked child's copies of its parent's: held, so the child never releases them


def shared(cl: Any, device: Any) -> SharedCL:
    """The shared context, queue and programs for ``device``, made on first use."""
    with _lock:
        entry = _shared.get(device.int_ptr)
        if entry is None:
            entry = _shared[device.int_ptr] = SharedCL(cl, device)
            log.debug("OpenCL: one context for %s, shared by this process's recordings", device.name.strip())
        return entry


def entries() -> list[SharedCL]:
    """The shared entries now held (one per OpenCL device used)."""
    with _lock:
        return list(_shared.values())


def discard(entry: SharedCL) -> None:
    """Stop handing out ``entry`` (an OpenCL error may have left its context unusable); the next use makes anew.

    Recordings still using it keep it; it goes with the last of them.
    """
    with _lock:
        for key, value in list(_shared.items()):
            if value is entry:
                del _shared[key]


def finish(cl: Any, entry: SharedCL, queue: Any) -> None:
    """Wait for the shared queue; an error there may have broken the context, so later recordings make a new one."""
    try:
        queue.finish()
    except cl.Error:
        discard(entry)
        raise


def finish_then(cl: Any, entry: SharedCL, queue: Any | None, release: Callable[[], None]) -> None:
    """A recording's close: wait for the shared ``queue`` (None: closed already, nothing to do), then ``release``
    what the recording made, even when the wait failed."""
    if queue is None:
        return
    try:
        finish(cl, entry, queue)
    finally:
        release()


def release_all() -> None:
    """Finish and drop every shared context (at interpreter exit, before pyopencl's own teardown)."""
    with _lock:
        held = list(_shared.values())
        _shared.clear()
    for entry in held:
        try:
            if entry.queue is not None:
                entry.queue.finish()
        except Exception as exc:  # at exit there is no one left to raise to
            log.debug("OpenCL: finishing the shared queue failed at exit: %s", exc)
        entry.drop()


def _forget_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    _inherited.extend(_shared.values())
    _shared.clear()


atexit.register(release_all)
os.register_at_fork(after_in_child=_forget_in_child)

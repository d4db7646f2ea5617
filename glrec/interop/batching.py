"""Frames in flight between GL and CUDA: fenced in batches, handed out without waiting, optionally phased.

Two pieces of bookkeeping the shared handoff (:mod:`glrec.interop.shared`) uses,
kept free of GL and CUDA so they can be tested anywhere:

- :class:`FencedBatches`: frames GL has been asked to write, grouped in batches of
  ``batch``; one fence is placed after each batch's last frame, and a batch is
  handed out as soon as its fence has signalled (checked without blocking). Only
  when more than ``depth`` batches are in flight does the producer wait for the
  oldest (``depth`` 0: each batch is waited for as it completes). Fewer fences
  and fewer hand-overs mean fewer GL <-> CUDA switches.
- :class:`PhaseGate`: before GL starts the next batch, wait until the consumer has
  released every frame of the batch handed out before it. GL and CUDA then work
  in turns of one batch each instead of interleaving frame by frame, which is
  what a GPU that time-slices between a GL and a CUDA context prefers when both
  keep it busy; ``benchmarks/gpu_ceiling.py`` measures whether it does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class FenceLike(Protocol):
    def signalled(self) -> bool: ...

    def wait(self) -> None: ...

    def release(self) -> None: ...


class FencedBatches(Generic[T]):
    """Items (frames written on the GPU) fenced per batch; :meth:`add` returns the batches that are done.

    >>> class Done:
    ...     def signalled(self): return True
    ...     def wait(self): pass
    ...     def release(self): pass
    >>> b = FencedBatches(2, 1, Done)
    >>> b.add(1), b.add(2), b.add(3), b.drain()
    ([], [1, 2], [], [3])
    """

    def __init__(self, batch: int, depth: int, make_fence: Callable[[], FenceLike]) -> None:
        self.batch = max(1, batch)
        self.depth = max(0, depth)
        self._make_fence = make_fence
        self._open: list[T] = []
        self._fenced: deque[tuple[list[T], FenceLike]] = deque()

    @property
    def in_flight(self) -> int:
        """Items written but not yet handed out."""
        return len(self._open) + sum(len(items) for items, _ in self._fenced)

    @property
    def at_batch_start(self) -> bool:
        """True when the next item starts a new batch."""
        return not self._open

    def add(self, item: T) -> list[T]:
        """Record ``item`` as written (after the GL commands that write it); return items now complete."""
        self._open.append(item)
        if len(self._open) >= self.batch:
            self._fenced.append((self._open, self._make_fence()))
            self._open = []
        return self._collect(block_beyond=self.depth)

    def drain(self) -> list[T]:
        """Fence what is open and return everything, waiting for the GPU as needed."""
        if self._open:
            self._fenced.append((self._open, self._make_fence()))
            self._open = []
        return self._collect(block_beyond=0)

    def _collect(self, block_beyond: int) -> list[T]:
        out: list[T] = []
        while self._fenced:
            items, fence = self._fenced[0]
            if len(self._fenced) > block_beyond:
                fence.wait()
            elif not fence.signalled():
                break
            self._fenced.popleft()
            fence.release()
            out.extend(items)
        return out

    def discard(self) -> list[T]:
        """Forget everything in flight (on release); returns the items so their slots can be freed."""
        out = list(self._open)
        self._open = []
        while self._fenced:
            items, fence = self._fenced.popleft()
            fence.release()
            out.extend(items)
        return out


class PhaseGate:
    """Lets GL start a batch only after the consumer released the batch handed out before it.

    ``released(slots)`` says whether all of ``slots`` are back; ``wait(slots)``
    blocks until they are (the device pool's condition variable).
    """

    def __init__(self, wait: Callable[[Iterable[int]], None]) -> None:
        self._wait = wait
        self._last: list[int] = []

    def handed_out(self, slots: Iterable[int]) -> None:
        """Frames (their pool slots) went to the consumer."""
        self._last.extend(slots)

    def before_batch(self) -> None:
        """Block until the consumer has released every frame handed out since the last call."""
        last, self._last = self._last, []
        if last:
            self._wait(last)

"""The shards a worker renders, as they come, and a shard it has begun (:class:`.runner.ShardWorker`).

A local worker's shards come over its connection, sent ahead by the parent (one waits while one draws); one
process's come from a :class:`ShardQueue`; a Ray task's is one shard. :class:`ShardFeed` hands them all out the
same way, saying whether the next has come yet, so a worker draws it while the one before is committed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .writers import WriteBehind

__all__ = ["OpenShard", "ShardFeed", "ShardQueue"]


@dataclass
class OpenShard:
    """A shard a worker has begun: its samples, writer (on a write thread), manifest lines so far, and its commit
    once whole."""

    shard: int
    indices: range
    writer: WriteBehind
    where: str
    lines: list[dict[str, Any]] = field(default_factory=list)
    commit: Future[dict[str, object]] | None = None


class ShardFeed:
    """The shards a worker renders, as they come: ``ready()`` says whether ``get()`` has one without waiting;
    ``get()`` returns it, or None at the end. :meth:`of` feeds an iterable's (all there now).

    >>> feed = ShardFeed.of([3, 4])
    >>> feed.peek(), feed.take(block=False), feed.take(block=True), feed.take(block=True)
    (3, 3, 4, None)
    """

    def __init__(self, ready: Callable[[], bool], get: Callable[[], int | None]) -> None:
        self._ready, self._get = ready, get
        self._next: deque[int | None] = deque()  # one taken ahead by peek()
        self._ended = False

    @classmethod
    def of(cls, shards: Iterable[int]) -> ShardFeed:
        it = iter(shards)
        return cls(lambda: True, lambda: next(it, None))

    def _pull(self) -> None:
        shard = self._get()
        self._ended = shard is None
        self._next.append(shard)

    def peek(self) -> int | None:
        """The next shard if it has come (None: not yet, or the end), without taking it."""
        if not self._next and not self._ended and self._ready():
            self._pull()
        return self._next[0] if self._next else None

    def take(self, block: bool) -> int | None:
        """The next shard; None at the end, or (without ``block``) when none has come yet."""
        if not self._next and not self._ended and (block or self._ready()):
            self._pull()
        if not self._next:
            return None
        shard = self._next[0]
        if shard is not None:  # the end stays: later takes say it again
            self._next.popleft()
        return shard


class ShardQueue:
    """The shards still to render, lowest first, made as they are taken: a spec may have 2**63 - 1 shards.

    >>> list(ShardQueue(5, {0, 2})), len(ShardQueue(5, {0, 2}))
    ([1, 3, 4], 3)
    """

    def __init__(self, total: int, done: set[int]) -> None:
        self.total = total
        self.done = done

    def __len__(self) -> int:
        return self.total - len(self.done)

    def __iter__(self) -> Iterator[int]:
        return (s for s in range(self.total) if s not in self.done)

"""The encode pool: worker threads that own the env streams, fed through bounded queues, with a backpressure policy.

Env ``i`` belongs to worker ``i % workers`` for the whole recording (an encoder
is used by one thread, frames in order). Threads, not processes: PyAV releases
the GIL while libavcodec encodes and swscale converts (two threads encode 1.4x
the frames of one on 2 busy cores, ``benchmarks/vector_record.py``), and a thread
takes a frame without a copy between processes.

Backpressure, when a worker's queue is full because encoding is slower than the
simulator (one of :data:`POLICIES`):

- ``block`` (default): ``write()`` waits for room; every frame is encoded, memory is flat.
- ``drop``: the frame is not queued; its time slot stays empty in the file (players
  show the previous picture for it), ``BatchResult.dropped`` counts it.
- ``repeat``: as ``drop``, but the worker encodes the previous picture in the slot,
  so the file keeps one frame per step (constant frame rate); ``repeated`` counts it.

``abort_after`` consecutive frames of one env dropped or repeated stop the
recording with :class:`~glrec.errors.EncoderError` (files finished first). Markers
(an episode's end, ``save_last``, the end) are never dropped: they wait for room.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..errors import EncoderError
from ..frame import Frame
from .stream import EnvStream

log = logging.getLogger("glrec")

Backpressure = Literal["block", "drop", "repeat"]
POLICIES: tuple[str, ...] = ("block", "drop", "repeat")
_STOP = ("stop",)


class EncodePool:
    """Worker threads running ``make_stream(env)``'s streams (see the module docstring)."""

    def __init__(self, envs: int, make_stream: Callable[[int], EnvStream], *, workers: int, queue_steps: int,
                 backpressure: Backpressure, abort_after: int | None) -> None:  # fmt: skip
        self.envs = envs
        self.workers = max(1, min(workers, envs))
        self.policy = backpressure
        self.abort_after = abort_after
        self.dropped = [0] * envs
        self.repeated = [0] * envs
        self._run_behind = [0] * envs  # consecutive frames of each env not queued
        self._skipped = [0] * envs  # frames not queued since the env's last queued item (main thread only)
        self.streams: list[EnvStream | None] = [None] * envs
        self.error: BaseException | None = None
        self._raised = False
        per_worker = -(-envs // self.workers)
        self._queues: list[queue.Queue[tuple[Any, ...]]] = [
            queue.Queue(maxsize=max(1, queue_steps) * per_worker) for _ in range(self.workers)
        ]
        self._make_stream = make_stream
        self._threads = [
            threading.Thread(target=self._run, args=(w,), name=f"glrec-batch-encode-{w}", daemon=True)
            for w in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()
        self._finished = False

    # -- the recorder's side

    def put_frame(self, env: int, frame: Frame, *, wait: bool = False) -> bool:
        """Queue env ``env``'s next frame under the policy (``wait``: whatever the policy); False when it was
        dropped or repeated."""
        self.raise_error()
        item = ("frame", env, frame, self._skipped[env], self.policy == "repeat")
        target = self._queues[env % self.workers]
        if self.policy == "block" or wait:
            self._put(target, item)
        else:
            try:
                target.put_nowait(item)
            except queue.Full:
                self._behind(env)
                return False
        self._skipped[env] = 0
        self._run_behind[env] = 0
        return True

    def _behind(self, env: int) -> None:
        self._skipped[env] += 1
        (self.repeated if self.policy == "repeat" else self.dropped)[env] += 1
        self._run_behind[env] += 1
        if self.abort_after is not None and self._run_behind[env] > self.abort_after:
            raise EncoderError(
                f"Encoding fell behind: env {env} had {self._run_behind[env]} frames in a row {self.policy}ped "
                f"(abort_after={self.abort_after}). Use fewer or smaller envs, a faster encoder or preset, more "
                "workers, or backpressure='block' (the simulator then waits for the encoder)."
            )

    def put_marker(self, kind: str, env: int, *args: Any) -> None:
        """Queue ``kind`` (end_episode, save_last) for env ``env``, after its frames; waits for room."""
        self.raise_error()
        self._put(self._queues[env % self.workers], (kind, env, args, self._skipped[env], self.policy == "repeat"))
        self._skipped[env] = 0

    def _put(self, target: queue.Queue[tuple[Any, ...]], item: tuple[Any, ...]) -> None:
        while True:
            try:
                target.put(item, timeout=0.1)
                return
            except queue.Full:
                self.raise_error()

    def raise_error(self) -> None:
        """Raise a worker's error on the calling thread, once, as itself."""
        if self.error is not None and not self._raised:
            self._raised = True
            raise self.error

    def backlogged(self) -> bool:
        return any(q.full() for q in self._queues)

    def finish(self) -> None:
        """Finish every stream (flush, trailers, clips), join the workers; raise a worker's error. Safe twice."""
        if self._finished:
            return
        self._finished = True
        for env in range(self.envs):  # frames skipped at the very end still count (repeat fills them)
            if self._skipped[env]:
                self._put(self._queues[env % self.workers], ("tail", env, (), self._skipped[env],
                                                             self.policy == "repeat"))  # fmt: skip
                self._skipped[env] = 0
        for q in self._queues:
            while True:
                try:
                    q.put(_STOP, timeout=0.1)
                    break
                except queue.Full:
                    continue  # the worker always drains its queue, also after an error
        for thread in self._threads:
            thread.join()
        self.raise_error()

    # -- the workers' side

    def _stream(self, env: int) -> EnvStream:
        stream = self.streams[env]
        if stream is None:
            stream = self.streams[env] = self._make_stream(env)
        return stream

    def _run(self, worker: int) -> None:
        q = self._queues[worker]
        mine: list[int] = []
        while True:
            item = q.get()
            if item is _STOP:
                break
            if self.error is not None:
                continue  # keep draining so a producer waiting for room wakes up and sees the error
            kind, env, payload, skipped, repeat = item
            try:
                stream = self._stream(env)
                if env not in mine:
                    mine.append(env)
                if kind == "frame":
                    stream.frame(payload, skipped, repeat)
                elif kind == "end_episode":
                    stream.end_episode(skipped, repeat, *payload)
                elif kind == "save_last":
                    stream.save_last(payload[0], payload[1], skipped, repeat)
                elif kind == "tail":
                    stream.tail(skipped, repeat)
            except BaseException as exc:
                if self.error is None:
                    self.error = exc
                log.debug("glrec: batch encode worker %d failed: %r", worker, exc)
        for env in mine:  # finish every file this worker opened, also after an error (the first one wins)
            owned = self.streams[env]
            assert owned is not None
            if self.error is not None:
                owned.abandon()
                continue
            try:
                owned.finish(0, False)
            except BaseException as exc:
                self.error = self.error or exc

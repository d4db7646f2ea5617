"""The encode pool: worker threads that own the env streams, fed through bounded queues, with a backpressure policy.

Env ``i`` belongs to worker ``i % workers`` for the whole recording (an encoder
is used by one thread, frames in order). A step's frames go to each worker as
one item: one queue operation per worker per step, not per frame. Threads, not processes: PyAV releases
the GIL while libavcodec encodes and swscale converts (two threads encode 1.4x
the frames of one on 2 busy cores, ``benchmarks/vector_record.py``), and a thread
takes a frame without a copy between processes.

Backpressure, when a worker's queue (``queue_steps`` steps of its envs' frames) is
full because encoding is slower than the simulator (one of :data:`POLICIES`):

- ``block`` (default): ``write()`` waits for room; every frame is encoded, memory is flat.
- ``drop``: the frame is not queued; its time slot stays empty in the file (players
  show the previous picture for it), ``BatchResult.dropped`` counts it.
- ``repeat``: as ``drop``, but the worker encodes the previous picture in the slot,
  so the file keeps one frame per step (constant frame rate); ``repeated`` counts it.

Routes may hand a step's frames on steps after it was written (the GL JPEG
route's turns): :meth:`EncodePool.hand_on` queues them step by step, and a
marker for step s (an episode's end after it, ``save_last``) is queued after
the frames of steps <= s and before those of later steps.

``abort_after`` consecutive frames of one env dropped or repeated stop the
recording with :class:`~glrec.errors.EncoderError` (files finished first). Markers
(an episode's end, ``save_last``, the end) are never dropped and take no room: the
bound is on frames, which markers are not.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from ..cuda.pool import DeviceFrame
from ..errors import EncoderError
from ..frame import Frame
from .result import BatchVideo
from .routes import Handed
from .stream import EnvStream

log = logging.getLogger("glrec")

Backpressure = Literal["block", "drop", "repeat"]
POLICIES: tuple[str, ...] = ("block", "drop", "repeat")
_STOP = ("stop",)


class _Lane:
    """A worker's queue: bounded in steps of frames; markers (episode ends, the end) always find room."""

    def __init__(self, steps: int) -> None:
        self._items: collections.deque[tuple[Any, ...]] = collections.deque()
        self._steps = 0  # frame items queued
        self._limit = max(1, steps)
        self._lock = threading.Condition()

    def put(self, item: tuple[Any, ...], *, frames: bool, timeout: float | None) -> bool:
        """Queue ``item``; a frames item waits up to ``timeout`` (None: not at all) for room. False: no room."""
        with self._lock:
            room = not frames or self._steps < self._limit
            if not room and (timeout is None or not self._lock.wait_for(lambda: self._steps < self._limit, timeout)):
                return False
            self._items.append(item)
            self._steps += frames
            self._lock.notify_all()
            return True

    def get(self) -> tuple[Any, ...]:
        with self._lock:
            self._lock.wait_for(lambda: bool(self._items))
            item = self._items.popleft()
            if item[0] == "frames":
                self._steps -= 1
                self._lock.notify_all()
            return item

    def full(self) -> bool:
        return self._steps >= self._limit


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
        self._held: collections.deque[tuple[int, str, int, tuple[Any, ...]]] = collections.deque()  # markers
        self._make_stream = make_stream
        self._finished = False
        self._start_workers(queue_steps)

    # -- the transport to the workers (threads here; processes in mux_procs)

    def _start_workers(self, queue_steps: int) -> None:
        self._lanes = [_Lane(queue_steps) for _ in range(self.workers)]
        self._threads = [
            threading.Thread(target=self._run, args=(w,), name=f"glrec-batch-encode-{w}", daemon=True)
            for w in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def _offer(self, worker: int, item: tuple[Any, ...], *, frames: bool, timeout: float | None) -> bool:
        """Queue ``item`` for ``worker``; a frames item waits up to ``timeout`` (None: not at all) for room."""
        return self._lanes[worker].put(item, frames=frames, timeout=timeout)

    def _full(self, worker: int) -> bool:
        return self._lanes[worker].full()

    def _stop_workers(self) -> None:
        for lane in self._lanes:
            lane.put(_STOP, frames=False, timeout=None)
        for thread in self._threads:
            thread.join()

    def outcome(self) -> tuple[list[BatchVideo], int]:
        """The files written (once finished) and the most one env's ring held."""
        streams = [s for s in self.streams if s is not None]
        peak = max((s.ring.peak_bytes for s in streams if s.ring is not None), default=0)
        return [v for s in streams for v in s.videos], peak

    # -- the recorder's side

    def put_frames(self, frames: Sequence[tuple[int, Frame]], *, wait: bool = False) -> list[int]:
        """Queue a step's ``(env, frame)`` pairs under the policy (``wait``: whatever the policy), one item per
        worker; returns the envs whose frame was dropped or repeated."""
        self.raise_error()
        repeat, workers, skipped = self.policy == "repeat", self.workers, self._skipped
        per_worker: dict[int, list[tuple[int, Frame, int, bool]]] = {}
        for env, frame in frames:
            per_worker.setdefault(env % workers, []).append((env, frame, skipped[env], repeat))
        behind: list[int] = []
        for worker, items in per_worker.items():
            envs = [item[0] for item in items]
            if self.policy == "block" or wait:
                self._put(worker, ("frames", items), frames=True)
            elif not self._offer(worker, ("frames", items), frames=True, timeout=None):
                for env in envs:
                    self._behind(env)
                behind += envs
                continue
            for env in envs:
                skipped[env] = 0
                self._run_behind[env] = 0
        return behind

    def hand_on(self, handed: Handed, *, wait: bool = False) -> None:
        """Queue a route's ``(step, env, frame)`` step by step, each step's markers after its frames."""
        for step, group in itertools.groupby(handed, key=lambda h: h[0]):
            self.release_markers(before=step)
            frames = [(env, frame) for _, env, frame in group]
            behind = set(self.put_frames(frames, wait=wait))
            for env, frame in frames:
                if env in behind and isinstance(frame, DeviceFrame):
                    frame.release()  # dropped: its device slot goes back for the next step

    def marker(self, step: int, kind: str, env: int, *args: Any) -> None:
        """Queue ``kind`` for env ``env`` after the frames of steps <= ``step`` (see the module docstring)."""
        self._held.append((step, kind, env, args))

    def release_markers(self, before: float) -> None:
        """Queue the markers held for steps before ``before``."""
        while self._held and self._held[0][0] < before:
            _, kind, env, args = self._held.popleft()
            self.put_marker(kind, env, *args)

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
        """Queue ``kind`` (end_episode, save_last) for env ``env``, after its frames."""
        self.raise_error()
        self._put(env % self.workers, (kind, env, args, self._skipped[env], self.policy == "repeat"), frames=False)
        self._skipped[env] = 0

    def _put(self, worker: int, item: tuple[Any, ...], *, frames: bool) -> None:
        while not self._offer(worker, item, frames=frames, timeout=0.1):
            self.raise_error()

    def raise_error(self) -> None:
        """Raise a worker's error on the calling thread, once, as itself."""
        if self.error is not None and not self._raised:
            self._raised = True
            raise self.error

    def backlogged(self) -> bool:
        return any(self._full(w) for w in range(self.workers))

    def finish(self) -> None:
        """Finish every stream (flush, trailers, clips), join the workers; raise a worker's error. Safe twice."""
        if self._finished:
            return
        self._finished = True
        for env in range(self.envs):  # frames skipped at the very end still count (repeat fills them)
            if self._skipped[env]:
                self._offer(env % self.workers, ("tail", env, (), self._skipped[env], self.policy == "repeat"),
                            frames=False, timeout=None)  # fmt: skip
                self._skipped[env] = 0
        self._stop_workers()
        self.raise_error()

    # -- the workers' side

    def _stream(self, env: int, mine: list[int]) -> EnvStream:
        stream = self.streams[env]
        if stream is None:
            stream = self.streams[env] = self._make_stream(env)
            mine.append(env)
        return stream

    def _run(self, worker: int) -> None:
        lane = self._lanes[worker]
        mine: list[int] = []
        while True:
            item = lane.get()
            if item is _STOP:
                break
            if self.error is not None:
                continue  # keep draining so a producer waiting for room wakes up and sees the error
            try:
                apply(item, lambda env: self._stream(env, mine))
            except BaseException as exc:
                if self.error is None:
                    self.error = exc
                log.debug("glrec: batch encode worker %d failed: %r", worker, exc)
        owned = [self.streams[env] for env in mine]  # every file this worker opened, also after an error
        self.error = finish_streams([s for s in owned if s is not None], self.error)


def apply(item: tuple[Any, ...], stream_of: Callable[[int], EnvStream]) -> None:
    """Carry out one queued item (a step's frames, a marker) on its envs' streams: a worker's or a mux process's."""
    if item[0] == "frames":
        for env, frame, skipped, repeat in item[1]:
            stream_of(env).frame(frame, skipped, repeat)
        return
    kind, env, payload, skipped, repeat = item
    stream = stream_of(env)
    if kind == "end_episode":
        stream.end_episode(skipped, repeat, *payload)
    elif kind == "save_last":
        stream.save_last(payload[0], payload[1], skipped, repeat)
    elif kind == "tail":
        stream.tail(skipped, repeat)


def finish_streams(streams: Iterable[EnvStream], error: BaseException | None) -> BaseException | None:
    """Finish every stream (flush, trailer, clips); after ``error``, abandon them instead. The first error."""
    for owned in streams:
        if error is not None:
            owned.abandon()
            continue
        try:
            owned.finish(0, False)
        except BaseException as exc:
            error = exc
    return error

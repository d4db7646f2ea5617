"""Muxing in processes: where the GPU made every JPEG, the env streams run in child processes.

With the JPEGs made on the GPU (the GL JPEG and nvJPEG routes) the encode
workers only mux, and muxing holds the GIL: one thread bounded 64 files at
17,610 env-frames/s on the H200 while the same route into rings, muxing
nothing, did 33,284, and more threads only took the GIL from each other and
from the recorder's GPU calls (``docs/guides/performance.md``). So from
:data:`PROCESS_ENVS` envs on, :class:`ProcessPool` runs the streams in
:data:`PROCESSES` children (``python -m glrec.batch.mux_child``), env ``i`` in
child ``i % P``, each with its own GIL; the recorder sends each child one
message per step (its envs' JPEG bytes) through a pipe.

Everything else is the thread pool's (:class:`~glrec.batch.pool.EncodePool`):
backpressure counted in steps (a child acknowledges each step it has muxed),
markers after their step's frames. A child's error (a file it cannot write)
is raised by ``close()``, after every file was finished; a child that dies is
reported at the next step. A child whose recorder dies sees its input end and
finishes every file; Ctrl-C and SIGTERM are left to the recorder, which
finishes through the children.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import select
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from ..errors import EncoderError
from ..frame import EncodedFrame, HostFrame
from ..video_facts import VideoFacts
from .frame_slots import FrameSlots, can_share
from .mux_child import HEADER
from .names import has_field
from .pool import EncodePool
from .result import BatchVideo
from .routes import ChildEncoder, Route
from .stream import EnvStream

log = logging.getLogger("glrec")

#: Envs from which streams of GPU-made JPEGs are muxed in processes, and how many.
PROCESS_ENVS = 16
PROCESSES = 2
#: The most shared memory the CPU encoders' processes take for raw frames in flight (else: threads).
FRAME_MEMORY = 1 << 30
#: Cores from which the CPU encoders run in processes. Below, the cores bound the encode and threads cost less:
#: 16 envs x 256x256 H.264 on 2 cores, threads 1.2x processes (a child's start alone is about 0.8 s of CPU).
CPU_PROCESS_CORES = 8


class _Child:
    """One mux (or encode) process: its pipe in, its acknowledgements and result out; its frame slots, if any."""

    def __init__(self, config: tuple[Any, ...], slots: FrameSlots | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.slots = slots
        self.proc = subprocess.Popen([sys.executable, "-m", "glrec.batch.mux_child"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, bufsize=0,
                                     pass_fds=() if slots is None else (slots.fd,))  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.in_flight = 0  # frames messages sent and not yet acknowledged
        self.result: tuple[Any, ...] | None = None
        self.send((*config, None if slots is None else slots.spec()))

    def send(self, message: Any) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.stdin.write(HEADER.pack(len(body)))
            self.stdin.write(body)
        except (BrokenPipeError, OSError) as exc:
            raise self.died() from exc

    def died(self) -> EncoderError:
        code = self.proc.poll()
        return EncoderError(f"A glrec mux process exited (code {code}); its envs' files end where it stopped. "
                            "Its error is on stderr above.")  # fmt: skip

    def read_acks(self, timeout: float | None) -> None:
        """Take the acknowledgements waiting (after up to ``timeout`` seconds for the first)."""
        ready, _, _ = select.select([self.stdout], [], [], timeout)
        if not ready:
            return
        data = os.read(self.stdout.fileno(), 65536)
        if not data:
            raise self.died()
        acks = data.count(b".")
        self.in_flight -= acks
        if b"!" in data:  # the result began (only after a stop)
            self._result_from(data[data.index(b"!") + 1 :])

    def _result_from(self, start: bytes) -> None:
        data = self._read_to(start, HEADER.size)
        (size,) = HEADER.unpack(data[: HEADER.size])
        data = self._read_to(data, HEADER.size + size)
        try:
            self.result = pickle.loads(data[HEADER.size : HEADER.size + size])
        except Exception as exc:  # an error of a type this process cannot rebuild
            self.result = ("done", [], 0, EncoderError(f"A glrec mux process's result could not be read: {exc!r}."))

    def _read_to(self, data: bytes, size: int) -> bytes:
        """``data`` and what follows it on the child's output, to ``size`` bytes at least."""
        while len(data) < size:
            more = os.read(self.stdout.fileno(), 1 << 20)
            if not more:
                raise self.died()
            data += more
        return data

    def finish(self) -> None:
        """Stop, wait for the result and the exit."""
        self.send(("stop",))
        self.stdin.close()
        while self.result is None:
            self.read_acks(None)
        self.proc.wait()


class ProcessPool(EncodePool):
    """The env streams in child processes (see the module docstring): GPU-made JPEGs to mux, or, with
    ``encoder`` (the CPU encoder and its frames), host frames to encode, passed in shared memory."""

    def __init__(self, envs: int, facts: VideoFacts, pattern: str, *, overwrite: bool, split: bool,
                 ring: tuple[int, int] | None, segment: int | None, queue_steps: int, backpressure: Any,
                 abort_after: int | None, processes: int = PROCESSES,
                 encoder: ChildEncoder | None = None) -> None:  # fmt: skip
        self._config = (facts, pattern, overwrite, split, ring, segment, encoder)
        self._queue_steps = max(1, queue_steps)
        self._frame_shape = encoder.shape if encoder is not None else None
        super().__init__(envs, lambda env: None, workers=processes,  # type: ignore[arg-type,return-value]
                         queue_steps=queue_steps, backpressure=backpressure, abort_after=abort_after)  # fmt: skip

    def _start_workers(self, queue_steps: int) -> None:
        self._children: list[_Child] = []
        per_child = -(-self.envs // self.workers)
        try:
            for _ in range(self.workers):
                slots = None
                if self._frame_shape is not None:
                    slots = FrameSlots(self._queue_steps, per_child, self._frame_shape)
                try:
                    self._children.append(_Child(self._config, slots))
                except BaseException:
                    if slots is not None:
                        slots.close()
                    raise
        except BaseException:
            self._stop_workers()
            raise
        log.debug("batch: %s in %d processes", "encoding" if self._frame_shape else "muxing", self.workers)

    def _offer(self, worker: int, item: tuple[Any, ...], *, frames: bool, timeout: float | None) -> bool:
        child = self._children[worker]
        if frames:
            child.read_acks(0)
            if child.in_flight >= self._queue_steps:
                if timeout is None:
                    return False
                child.read_acks(timeout)
                if child.in_flight >= self._queue_steps:
                    return False
            if child.slots is None:  # GPU-made JPEGs: their bytes go through the pipe
                item = ("frames", [(env, _data(frame), skipped, repeat) for env, frame, skipped, repeat in item[1]])
            else:  # raw frames: copied into the child's next slot (free: fewer than `slots` unacknowledged)
                slot = child.slots.write([_pixels(frame) for _, frame, _, _ in item[1]])
                item = ("frames", [(env, (slot, k), skipped, repeat)
                                   for k, (env, _, skipped, repeat) in enumerate(item[1])])  # fmt: skip
            child.in_flight += 1
        child.send(item)
        return True

    def _full(self, worker: int) -> bool:
        child = self._children[worker]
        child.read_acks(0)
        return child.in_flight >= self._queue_steps

    def _stop_workers(self) -> None:
        for child in getattr(self, "_children", []):
            try:
                if child.proc.poll() is None and child.result is None:
                    child.finish()
            except EncoderError as exc:
                self.error = self.error or exc
                child.proc.kill()
                child.proc.wait()
            if child.result is not None and child.result[3] is not None:
                self.error = self.error or child.result[3]
            if child.slots is not None:
                child.slots.close()

    def outcome(self) -> tuple[list[BatchVideo], int]:
        videos: list[BatchVideo] = []
        peak = 0
        for child in getattr(self, "_children", []):
            if child.result is not None:
                videos += child.result[1]
                peak = max(peak, child.result[2])
        return sorted(videos, key=lambda v: (v.env or 0, v.episode or 0, v.part)), peak


def choose_pool(route: Route, envs: int, selected: int, path: Any, facts: VideoFacts,
                make_stream: Callable[[int], EnvStream], *, workers: int | None, ring: tuple[int, int] | None,
                segment: int | None, overwrite: bool, queue_steps: int, backpressure: Any,
                abort_after: int | None) -> EncodePool:  # fmt: skip
    """Threads, or processes from :data:`PROCESS_ENVS` envs on: for GPU-made JPEGs, which are only muxed, and
    for the CPU encoders (one process per core), whose Python per frame would otherwise queue for one GIL."""
    muxes_only = route.muxes_only
    many = workers is None and selected >= PROCESS_ENVS and isinstance(path, (str, os.PathLike))
    if many and muxes_only:
        return ProcessPool(envs, facts, os.fspath(path), overwrite=overwrite, split=has_field(path, "episode"),
                           ring=ring, segment=segment, queue_steps=queue_steps, backpressure=backpressure,
                           abort_after=abort_after)  # fmt: skip
    cores = os.cpu_count() or 1
    processes = min(cores, selected)
    child = route.child_encoder
    frame_bytes = 0 if child is None else math.prod(child.shape)
    memory = max(1, queue_steps) * -(-envs // processes) * processes * frame_bytes  # ProcessPool's slots
    if many and child is not None and cores >= CPU_PROCESS_CORES and can_share() and memory <= FRAME_MEMORY:
        return ProcessPool(envs, facts, os.fspath(path), overwrite=overwrite, split=has_field(path, "episode"),
                           ring=ring, segment=segment, queue_steps=queue_steps, backpressure=backpressure,
                           abort_after=abort_after, processes=processes, encoder=child)  # fmt: skip
    # Muxing alone holds the GIL: more threads only take it from each other and from the GPU's calls
    # (the GL JPEG route, 64 x 256x256 on the H200: 1 thread 17,345 env-frames/s, 2 15,521, 16 9,753).
    count = workers or (1 if muxes_only else os.cpu_count() or 1)
    return EncodePool(envs, make_stream, workers=count, queue_steps=queue_steps, backpressure=backpressure,
                      abort_after=abort_after)  # fmt: skip


def _pixels(frame: Any) -> Any:
    assert isinstance(frame, HostFrame) and frame.av_frame is None, "the CPU route hands host arrays"
    return frame.data


def _data(frame: Any) -> bytes:
    assert isinstance(frame, EncodedFrame), "the process pool takes GPU-made JPEGs only"
    return frame.data

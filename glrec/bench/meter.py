"""Clocks for the benchmark: loop time, CPU use, peak memory, and time per stage.

Process figures come from ``resource.getrusage``: CPU time of this process
plus its waited-for children (the naive loop's ffmpeg), and the peak resident
set size, which the kernel tracks per process. That is why every benchmark
row runs in a fresh process: peaks would otherwise leak from one row into
the next.

Stage times use GL timer queries on hardware GL. On Mesa's software
rasterisers they are not usable: llvmpipe records the query when the command
is queued, not when its threads rasterise (measured: a 1080p ``plasma`` frame
reads 0.0-0.8 ms by query against 8-12 ms of rasterising), so there each GL
stage is closed with ``glFinish`` and timed by the wall clock. Serialising the
GL stages that way slows the pipeline a little, which is why stage times come
from a separate *profiled* pass and the end-to-end frames/s from a clean one.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
import subprocess
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import moderngl

from ..gl.context import software_gl

#: The stages a frame passes through, in pipeline order (the table's columns).
STAGES = ("render", "convert", "readback", "encode", "mux")

GLClock = Literal["auto", "query", "finish"]


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its children that have exited."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> tuple[float, float]:
    """Peak resident memory in MiB of (this process, its largest exited child); Linux reports KiB."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return me / 1024.0, kids / 1024.0


def gpu_memory_mb(pid: int) -> float | None:
    """GPU memory held by ``pid`` according to ``nvidia-smi``, or None without an NVIDIA GPU."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    used = [float(m) for p, m in (line.split(",") for line in out.splitlines() if "," in line) if int(p) == pid]
    return sum(used) if used else 0.0


@dataclass
class LoopMeter:
    """Wall and CPU time of a frame loop: ``start()``, run the loop, ``stop()``."""

    t0: float = 0.0
    c0: float = 0.0
    seconds: float = 0.0
    cpu: float = 0.0

    def start(self) -> None:
        self.c0 = cpu_seconds()
        self.t0 = time.perf_counter()

    def stop(self) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu = cpu_seconds() - self.c0

    def recount_cpu(self) -> None:
        """The CPU up to now, the wall time of :meth:`stop` kept: children reaped since then count too."""
        self.cpu = cpu_seconds() - self.c0

    def figures(self, frames: int) -> dict[str, float]:
        """frames/s, CPU seconds and CPU use (in cores: 2.0 is two cores busy all the time)."""
        s = self.seconds
        return {
            "seconds": s,
            "fps": frames / s if s > 0 else 0.0,
            "cpu_seconds": self.cpu,
            "cpu_use": self.cpu / s if s > 0 else 0.0,
        }


class StageClock:
    """Seconds spent per stage, summed over a run; several threads may feed it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.seconds[stage] += seconds

    @contextlib.contextmanager
    def wall(self, stage: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - t)

    def per_frame_ms(self, frames: int) -> dict[str, float]:
        """Milliseconds per frame for each stage that was timed."""
        return {k: 1e3 * v / frames for k, v in self.seconds.items()} if frames else {}


def gl_clock_for(ctx: moderngl.Context, wanted: GLClock = "auto") -> Literal["query", "finish"]:
    """``query`` on hardware GL with timer queries, ``finish`` on software rasterisers (see module doc)."""
    if wanted != "auto":
        return wanted
    return "finish" if software_gl(ctx) or "GL_ARB_timer_query" not in ctx.extensions else "query"


class GLStageTimer:
    """Time GL work per stage into a :class:`StageClock`.

    ``query``: a GL_TIME_ELAPSED query around the stage, read back once the
    ring of ``depth`` queries wraps, so reading never stalls the pipeline.
    ``finish``: ``glFinish`` at the end of the stage and the wall clock.
    """

    def __init__(self, ctx: moderngl.Context, clock: StageClock, mode: GLClock = "auto", depth: int = 16) -> None:
        self.ctx = ctx
        self.clock = clock
        self.mode = gl_clock_for(ctx, mode)
        self._free: list[moderngl.Query] = []
        self._pending: deque[tuple[str, moderngl.Query]] = deque()
        self._depth = depth

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.mode == "finish":
            t = time.perf_counter()
            try:
                yield
            finally:
                self.ctx.finish()
                self.clock.add(name, time.perf_counter() - t)
            return
        query = self._take()
        with query:
            yield
        self._pending.append((name, query))

    @contextlib.contextmanager
    def host_stage(self, name: str) -> Iterator[None]:
        """A stage whose cost is mostly the CPU's (a readback, a CUDA handoff): always the wall clock.

        In ``finish`` mode it also ends with ``glFinish``, so GL work queued inside is counted here.
        """
        t = time.perf_counter()
        try:
            yield
        finally:
            if self.mode == "finish":
                self.ctx.finish()
            self.clock.add(name, time.perf_counter() - t)

    def _take(self) -> moderngl.Query:
        if self._free:
            return self._free.pop()
        if len(self._pending) < self._depth:
            return self.ctx.query(time=True)
        self._read_oldest()
        return self._free.pop()

    def _read_oldest(self) -> None:
        name, query = self._pending.popleft()
        self.clock.add(name, query.elapsed / 1e9)  # blocks only if the GPU is that far behind
        self._free.append(query)

    def close(self) -> None:
        """Read the queries still in flight and free them."""
        while self._pending:
            self._read_oldest()
        free, self._free = self._free, []
        for q in free:
            # moderngl releases queries with the context; only newer versions have release()
            release = getattr(q, "release", None)
            if release is not None:
                release()

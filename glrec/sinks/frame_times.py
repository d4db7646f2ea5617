"""Render times of live frames, and latency distributions measured against them.

A live frame's *render time* is the wall-clock moment its slot's render call
began (Unix epoch seconds, :func:`time.time`, so a browser on the same machine,
or one whose clock offset is estimated, can compare it with its own clock).
Latencies are measured from there to a later point: the packet written to the
socket (server side), or the picture drawn (browser side).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

import numpy as np


class FrameTimes:
    """Render times of the most recent ``keep`` frames, by frame index; safe across threads.

    >>> times = FrameTimes()
    >>> times.mark(7, 1700000000.0)
    >>> times.get(7)
    1700000000.0
    """

    def __init__(self, keep: int = 512) -> None:
        self._keep = keep
        self._times: OrderedDict[int, float] = OrderedDict()
        self._lock = threading.Lock()

    def mark(self, index: int, t: float | None = None) -> float:
        """Record frame ``index``'s render time (default: now); return it."""
        t = time.time() if t is None else t
        with self._lock:
            self._times[index] = t
            while len(self._times) > self._keep:
                self._times.popitem(last=False)
        return t

    def get(self, index: int) -> float | None:
        """The render time of frame ``index``, or None if unknown or too old."""
        with self._lock:
            return self._times.get(index)


class LatencyStats:
    """A bounded sample of latencies (seconds) with median and p99; safe across threads.

    >>> s = LatencyStats()
    >>> for ms in (10, 20, 30):
    ...     s.add(ms / 1000)
    >>> s.summary()["median_ms"]
    20.0
    """

    def __init__(self, keep: int = 20_000) -> None:
        self._samples: deque[float] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self.count = 0

    def add(self, seconds: float) -> None:
        """Record one latency sample, in seconds (thread-safe)."""
        with self._lock:
            self._samples.append(seconds)
            self.count += 1

    def since(self, render_time: float | None, now: float | None = None) -> None:
        """Add ``now - render_time`` (skipped when the render time is unknown)."""
        if render_time is not None:
            self.add((time.time() if now is None else now) - render_time)

    def summary(self) -> dict[str, float]:
        """``count``, ``median_ms``, ``p99_ms``, ``max_ms`` over the kept samples (NaN when empty)."""
        with self._lock:
            a = np.array(self._samples, dtype=np.float64) * 1000.0
        if a.size == 0:
            return {"count": 0, "median_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan")}
        return {
            "count": int(a.size),
            "median_ms": round(float(np.median(a)), 3),
            "p99_ms": round(float(np.percentile(a, 99)), 3),
            "max_ms": round(float(a.max()), 3),
        }

    def describe(self, what: str) -> str:
        """One line: ``what``, the median and p99 in milliseconds, and the sample count."""
        s = self.summary()
        if not s["count"]:
            return f"{what}: no samples"
        return f"{what}: median {s['median_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms over {s['count']} frames"

"""RSS of a BatchRecorder and its mux processes over many steps: one file per env, segments, or rings.

    PYTHONPATH=. python benchmarks/long_files_memory.py 100000 files   # one .mkv per env
    PYTHONPATH=. python benchmarks/long_files_memory.py 100000 seg     # segment_seconds=60, {part} in the name
    PYTHONPATH=. python benchmarks/long_files_memory.py 20000 ring     # clips mode: rings of 10 s

64 envs of 16x16 frames through the GL JPEG route with 2 mux processes; the route's JPEGs are made once and
handed on every step (the muxers' memory is what is measured, not the GPU's). Prints the RSS of the recorder
and of each mux process every tenth of the run. Files go to a temporary folder, removed at the end (about
5.7 GB at 100,000 steps).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np

import glrec
from glrec.batch import gl_route
from glrec.frame import EncodedFrame


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def made_once() -> None:
    """The route encodes the first step on the GPU (or llvmpipe) and hands those JPEGs on every step."""
    real, real_drain = gl_route.GlJpegRoute.frames, gl_route.GlJpegRoute.drain
    cache: list[Any] = []

    def frames(self: Any, batch: Any, active: Any, step: int) -> Any:
        if not cache:
            cache.extend(real(self, batch, active, step) + real_drain(self))
        wanted = set(active)
        return [
            (step, env, EncodedFrame(0, "mjpeg", f.width, f.height, f.data)) for _, env, f in cache if env in wanted
        ]

    gl_route.GlJpegRoute.frames = frames  # type: ignore[method-assign]
    gl_route.GlJpegRoute.drain = lambda self: []  # type: ignore[method-assign]


def main() -> int:
    steps, mode = int(sys.argv[1]), sys.argv[2]
    n, size = 64, 16
    made_once()
    frames = np.random.default_rng(0).integers(0, 255, (n, size, size, 3), np.uint8)
    folder = tempfile.mkdtemp()
    kw: dict[str, Any] = {"ring": {"ring_seconds": 10}, "seg": {"segment_seconds": 60}}.get(mode, {})
    name = "env{env:02d}-{part:04d}.mkv" if mode == "seg" else "env{env:02d}.mkv"
    try:
        rec = glrec.BatchRecorder(f"{folder}/{name}", fps=60, encoder="gl", codec="mjpeg", **kw)
        t = time.perf_counter()
        for s in range(steps):
            rec.write(frames)
            if s and s % max(1, steps // 10) == 0:
                children = [round(rss_mb(c.proc.pid), 1) for c in getattr(rec._pool, "_children", [])]
                print(s, "recorder", round(rss_mb(), 1), "mux processes", children, flush=True)
        result = rec.close()
        print(result.summary(), f"{n * steps / (time.perf_counter() - t):.0f} env-frames/s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

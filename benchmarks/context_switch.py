"""Cost of glrec sharing a thread with other GL users: context switches and GL state save/restore.

Measures, per call (median of several rounds of N calls each):

- ``active, already current``: ``with gl.active():`` when glrec's context is current (nested use);
- ``active, from none``: glrec's context made current and nothing current again after;
- ``active, from another context``: the caller's context (a second EGL context) put back after;
- ``state guard (touched set)``: what a recorder with ``context="current"`` adds per call in the
  caller's context: read the state, then compare and restore it;
- ``state guard (full set)``: the wider snapshot the tests compare;
- ``frame, own context`` / ``frame, context='current'``: a whole ``rec.frame()`` (64x64, nothing
  drawn) with glrec's context and inside another context, so the lines above can be read against
  the per-frame work they sit in.

    PYTHONPATH=. python benchmarks/context_switch.py [--calls 2000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from glrec.gl import egl
from glrec.gl.context import create_context
from glrec.gl.state import StateGuard


def per_call(fn: Callable[[], None], calls: int, rounds: int = 5) -> float:
    """Median over ``rounds`` of the mean time of one call, in microseconds."""
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    n = args.calls
    out: dict[str, float] = {}
    gl = create_context()
    other = create_context()  # stands in for another library's context

    def nested() -> None:
        with gl.active():
            pass

    with gl.active():
        out["active, already current"] = per_call(nested, n)
    out["active, from none"] = per_call(nested, n)
    with other.active():
        out["active, from another context"] = per_call(nested, n)
        touched, full = StateGuard(), StateGuard(full=True)

        def guard(g: StateGuard) -> Callable[[], None]:
            return lambda: g.leave(g.enter())

        out["state guard (touched set)"] = per_call(guard(touched), n // 4)
        out["state guard (full set)"] = per_call(guard(full), n // 10)
    import glrec

    with tempfile.TemporaryDirectory() as tmp:
        for label, kwargs, host in (("frame, own context", {}, None), ("frame, context='current'", {}, other)):
            frames = n // 4
            if host is not None:
                host.active().__enter__()
                kwargs = {"context": "current"}
            rec = glrec.Recorder(Path(tmp) / f"{len(out)}.mkv", size=(64, 64), preset="ultrafast", **kwargs)

            def frame(rec: glrec.Recorder = rec) -> None:
                with rec.frame():
                    pass

            out[label] = per_call(frame, frames, rounds=3)
            rec.close()
            if host is not None:
                host.active().__exit__(None, None, None)
    assert egl.current_context() == 0
    other.release()
    gl.release()
    width = max(map(len, out))
    for k, v in out.items():
        print(f"{k:<{width}}  {v:8.2f} us/call")
    if args.json:
        import os

        doc = {
            "machine": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0],  # other work on a shared machine inflates every figure
            "us_per_call": out,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Rows that use the whole machine: ``glrec-xN:<backend>`` (N recordings at once) and ``dataset:w<N>``.

``glrec-xN`` starts N processes (``spawn``: none inherits a GL context), each
running the ``glrec:<backend>`` row's recorder on its own file; all set up their
context, recorder and scene, wait at one barrier, then record. Its frames/s is the
total: N x frames over the time from the barrier to the last process's end (set-up
excluded; ``startup_seconds`` says what it took). ``dataset:wN`` renders
:data:`DATASET_SPEC` (``examples/dataset.toml``'s spec) with ``workers=N`` (``auto``:
the default count) and reports samples/s as its frames/s, worker start-up included.
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import EncoderUnavailableError
from .meter import LoopMeter, peak_rss_mb
from .spec import RowResult, RowSpec, row

#: ``examples/dataset.toml``'s spec (tests/bench/test_bench_scale.py keeps the two equal): 640x480, five passes, PNG.
DATASET_SPEC: dict[str, Any] = {
    "dataset": {"scene": "table", "samples": 200, "size": "640x480", "seed": 2024, "shard_size": 50},
    "output": {"layout": "webdataset", "passes": ["rgb", "depth", "instance", "semantic", "normal"], "rgb": "png",
               "depth": "npy", "normal": "png"},
    "params": {
        "objects": {"int": [3, 8]}, "object_size": [0.3, 0.6], "table_size": 2.4,
        "camera_distance": {"uniform": [2.4, 3.4]}, "camera_elevation": {"normal": [35.0, 8.0], "clip": [15.0, 70.0]},
        "camera_azimuth": {"uniform": [0.0, 360.0]}, "fov": {"choice": [40.0, 50.0, 60.0], "weights": [1, 2, 1]},
        "light_azimuth": {"uniform": [0.0, 360.0]}, "light_elevation": {"uniform": [30.0, 80.0]},
        "ambient": {"uniform": [0.15, 0.4]},
        "table_colour": {"choice": [[0.55, 0.45, 0.35], [0.35, 0.4, 0.45], [0.6, 0.6, 0.55]]},
    },
}  # fmt: skip


#: How long the processes wait for each other to be set up.
_BARRIER_SECONDS = 600.0


def _one_of_many(spec: RowSpec, barrier: Any, conn: Connection) -> None:
    from .pipeline import run_recorder

    try:
        result = run_recorder(spec, profiled=False, ready=lambda: barrier.wait(_BARRIER_SECONDS))
        result["ended"] = time.monotonic()  # system-wide clock: comparable across the processes
        conn.send(("ok", result))
    except EncoderUnavailableError as exc:  # this machine lacks the backend: the row is skipped, as glrec:BACKEND is
        barrier.abort()
        conn.send(("skipped", str(exc)))
    except BaseException as exc:
        barrier.abort()  # the others stop waiting
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


@row("glrec-xN")
def glrec_processes(spec: RowSpec) -> RowResult:
    n = spec.processes
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n + 1)
    started = time.monotonic()
    procs, conns = [], []
    for i in range(n):
        receive, send = ctx.Pipe(duplex=False)
        one = replace(spec, row=f"glrec:{spec.backend}", processes=1, tag=f"{spec.tag}_p{i}")
        p = ctx.Process(target=_one_of_many, args=(one, barrier, send), name=f"glrec-bench {spec.row} {i}")
        p.start()
        send.close()
        procs.append(p)
        conns.append(receive)
    try:
        barrier.wait(_BARRIER_SECONDS)
        t0 = time.monotonic()
    except Exception:
        t0 = None
    results = []
    for p, c in zip(procs, conns, strict=True):
        try:
            results.append(c.recv())
        except EOFError:
            results.append(("failed", f"process {p.name} died (exit code {p.exitcode})"))
        p.join()
    skipped = [r[1] for r in results if r[0] == "skipped"]
    if len(skipped) == n:  # every one refused: the machine lacks the backend
        raise EncoderUnavailableError(skipped[0])
    failed = [r[1] if r[0] == "failed" else f"EncoderUnavailableError: {r[1]}" for r in results if r[0] != "ok"]
    if failed or t0 is None:
        from ..errors import GlrecError

        raise GlrecError(f"{len(failed)} of {n} recordings failed: {failed[0] if failed else 'barrier broken'}")
    done = [r[1] for r in results]
    seconds = max(r["ended"] for r in done) - t0
    frames = n * spec.frames
    cpu = sum(r["cpu_seconds"] for r in done)
    return {
        **spec.describe(),
        "frames": frames, "frames_timed": frames, "frames_per_process": spec.frames, "processes": n,
        "seconds": seconds, "fps": frames / seconds, "cpu_seconds": cpu, "cpu_use": cpu / seconds,
        "per_process_fps": [r["fps"] for r in done], "startup_seconds": t0 - started,
        "peak_rss_mb": max(r["peak_rss_mb"] for r in done), "child_peak_rss_mb": 0.0,
        "gpu_memory_mb": _total([r.get("gpu_memory_mb") for r in done]),
        "frames_written": sum(r.get("frames_written", 0) for r in done), "encoder": done[0].get("encoder"),
        "x264": done[0].get("x264"), "stages_ms": {}, "stage_clock": "none",
    }  # fmt: skip


def _total(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@row("dataset")
def dataset_row(spec: RowSpec) -> RowResult:
    from ..dataset import DatasetSpec, generate
    from ..dataset.files.local import wait_for_workers

    shard = max(1, spec.dataset_shard_size)
    dspec = DatasetSpec.from_dict(DATASET_SPEC).with_(samples=spec.frames, shard_size=shard)
    workers = None if spec.workers == "auto" else int(spec.workers)
    with tempfile.TemporaryDirectory(prefix="glrec-bench-dataset-", dir=spec.workdir) as tmp:
        meter = LoopMeter()
        meter.start()
        result = generate(dspec, Path(tmp) / "out", workers=workers)
        meter.stop()  # the wall time a user waits; the workers' CPU and memory once they have exited
        wait_for_workers()
        meter.recount_cpu()
    own, child = peak_rss_mb()
    return {
        **spec.describe(), "frames_timed": spec.frames, **meter.figures(spec.frames), "peak_rss_mb": own,
        "child_peak_rss_mb": child, "gpu_memory_mb": None, "stages_ms": {},
        "stage_clock": "none", "workers_used": result.workers, "shards": result.shards, "unit": "samples/s",
    }  # fmt: skip

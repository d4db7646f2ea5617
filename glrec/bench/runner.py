"""Run benchmark rows, each in a fresh process, and collect one result document.

Each row runs in a new process forked from a server that has already imported
glrec, numpy, PyAV and moderngl (``multiprocessing`` *forkserver*): peak RSS
and CPU time are then the row's own, and starting a row costs milliseconds,
not an interpreter start. The rows a comparison rests on (baselines and glrec
end to end) run interleaved, ``repeat`` times, so a neighbour's load spreads
over all of them rather than landing on one.
"""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing as mp
import re
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import EncoderUnavailableError, GlrecError
from .analysis import analyse
from .backends import Backend, pick_backends
from .config import BenchConfig
from .spec import ROWS, RowFunction, RowResult, RowSpec
from .system import machine, result_name, versions

log = logging.getLogger("glrec")

#: Modules whose import registers row functions; a backend's module adds itself here.
ROW_MODULES: list[str] = [
    "glrec.bench.baselines",
    "glrec.bench.pipeline",
    "glrec.bench.stages",
    "glrec.bench.gpu_stages",
    "glrec.bench.scale",
    "glrec.bench.system",
]

Progress = Callable[[int, int, dict[str, Any]], None]


def row_function(name: str) -> RowFunction:
    """The function for a row name; rows for one backend (``glrec:cpu``, ``stage:handoff:nvjpeg``)
    share the function registered without the backend (``glrec``, ``stage:handoff``)."""
    import importlib

    for module in ROW_MODULES:
        importlib.import_module(module)
    base = name.rsplit(":", 1)[0]
    fn = ROWS.get(name) or ROWS.get(base) or ROWS.get(re.sub(r"-x\d+$", "-xN", base))
    if fn is None:
        raise GlrecError(f"No benchmark row named {name!r}. Known: {', '.join(sorted(ROWS))}.")
    return fn


def _child(spec: RowSpec, conn: Connection) -> None:
    try:
        conn.send(("ok", row_function(spec.row)(spec)))
    except EncoderUnavailableError as exc:
        conn.send(("skipped", str(exc)))
    except BaseException as exc:
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
        conn.send(("failed", f"{type(exc).__name__}: {exc}\n{detail}"))
    finally:
        conn.close()


_MP: Any = None


def _context() -> Any:
    global _MP
    if _MP is None:
        _MP = mp.get_context("forkserver")
        _MP.set_forkserver_preload(["numpy", "av", "moderngl", *ROW_MODULES])
    return _MP


def run_isolated(spec: RowSpec, timeout: float = 600.0) -> RowResult:
    """Run one row in a fresh process; return its figures with ``status`` ok, skipped or failed."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(spec, send), name=f"glrec-bench {spec.row}")
    started = time.perf_counter()
    proc.start()
    send.close()
    try:
        if receive.poll(timeout):
            status, payload = receive.recv()
        else:
            status, payload = "failed", f"timed out after {timeout:g} s"
    except EOFError:
        status, payload = "failed", "the row's process died without a result"
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join()
        receive.close()
    base = {**spec.describe(), "status": status, "process_seconds": time.perf_counter() - started}
    if status == "ok":
        return {**base, **payload}
    if proc.exitcode not in (0, None) and status == "failed":
        payload = f"{payload} (exit code {proc.exitcode})"
    return {**base, "reason": payload}


def plan(config: BenchConfig, workdir: str) -> list[RowSpec]:
    """Every row of the run, in the order they run."""
    backends = pick_backends(list(config.backends))
    specs: list[RowSpec] = []
    for scene in config.scenes:
        for size in config.sizes:
            base = RowSpec(
                row="", scene=scene, size=size, frames=config.frames_for(size), fps=config.fps,
                preset=config.preset, crf=config.crf, workdir=workdir, gl_clock=config.gl_clock,
            )  # fmt: skip
            together = [f"glrec-x{n}:{b.name}" for n in config.processes for b in backends]
            compared = [*config.baselines[:1], *(b.row for b in backends), *together, *config.baselines[1:]]
            for r in range(config.repeat):
                specs += [_with_processes(_spec(base, name, backends, f"_r{r}")) for name in compared]
            if config.profile:
                specs += [_spec(base, f"glrec-profiled:{b.name}", backends) for b in backends]
            if config.stages:
                seen: list[str] = []
                for b in backends:
                    seen += [s for s in b.stage_rows if s not in seen]
                specs += [_spec(base, s, backends) for s in seen]
    for w in config.dataset_workers:
        specs.append(
            RowSpec(
                row=f"dataset:w{w}", scene="table", size=(640, 480), frames=config.dataset_samples, workdir=workdir,
                workers=w, dataset_shard_size=config.dataset_shard_size,
            )
        )  # fmt: skip
    if config.memory_frames:
        mem = RowSpec(
            row="glrec:cpu", scene=config.scenes[0], size=config.memory_size, fps=config.fps,
            preset=config.preset, crf=config.crf, workdir=workdir,
        )  # fmt: skip
        cpu = pick_backends(["cpu"])
        specs += [_spec(replace(mem, frames=n), "glrec:cpu", cpu, "_mem") for n in _memory_frames(config)]
    # First: the GL driver and the memory of an idle process, for the record.
    specs.insert(0, replace(specs[0], row="probe", frames=1, tag="", backend=None, options={}))
    return specs


def _with_processes(spec: RowSpec) -> RowSpec:
    """A ``glrec-xN:`` row carries its N."""
    m = re.match(r"glrec-x(\d+):", spec.row)
    return replace(spec, processes=int(m.group(1))) if m else spec


def _memory_frames(config: BenchConfig) -> tuple[int, int]:
    return config.memory_frames, 10 * config.memory_frames


def _spec(base: RowSpec, name: str, backends: list[Backend], tag: str = "") -> RowSpec:
    per_backend = name.startswith(("glrec", "stage:handoff:"))
    backend = next((b for b in backends if per_backend and name.endswith(f":{b.name}")), None)
    if backend is None:
        return replace(base, row=name, tag=tag)
    return replace(base, row=name, backend=backend.name, options=dict(backend.options), suffix=backend.suffix, tag=tag)


def run_bench(config: BenchConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run the whole benchmark and return the result document (see ``benchmarks/README.md``).

    Rows run in processes started by ``multiprocessing``'s forkserver, so from a
    script call this under ``if __name__ == "__main__":`` as with any
    multiprocessing code.
    """
    config = config.checked()
    created = dt.datetime.now(dt.timezone.utc)
    started = time.perf_counter()
    with ExitStack() as stack:
        if config.keep_outputs is not None:
            workdir = str(config.keep_outputs)
            Path(workdir).mkdir(parents=True, exist_ok=True)
        else:
            workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="glrec-bench-"))
        specs = plan(config, workdir)
        rows: list[dict[str, Any]] = []
        for i, spec in enumerate(specs):
            result = run_isolated(spec, config.timeout)
            if spec.tag.startswith("_r"):
                result["run"] = int(spec.tag[2:])
            if spec.tag == "_mem":
                result["memory_check"] = True
            rows.append(result)
            if progress is not None:
                progress(i + 1, len(specs), result)
    probe = next((r for r in rows if r["row"] == "probe" and r["status"] == "ok"), {})
    mach = machine()
    doc: dict[str, Any] = {
        "schema": "glrec-bench/1",
        "created": created.isoformat(timespec="seconds"),
        "name": result_name(mach, probe.get("gl"), created),
        "wall_seconds": time.perf_counter() - started,
        "machine": mach,
        "versions": versions(),
        "gl": probe.get("gl"),
        "idle_rss_mb": probe.get("idle_rss_mb"),
        "config": config.describe(),
        "rows": [r for r in rows if r["row"] != "probe"],
    }
    doc.update(analyse(doc))
    return doc

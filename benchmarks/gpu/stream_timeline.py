"""Where a training-stream batch's time goes, per thread and on the GPU: wall time in each stage, GL timer queries.

Wraps the stream's stages (slot acquire, planning, the scene's batch draw, the packer, its fence wait, the box
table read, the deferred columns) with wall-clock timers per thread, and brackets each chunk's draw and pack with
GL timestamp queries (``glQueryCounter``), read after the chunk's fence: the GPU time of the draw and of the
packing, and how much of the run's wall time the GPU spent on GL work. The consumer sums every pass on the GPU
(as ``dataset_stream.py --device cuda``).

python benchmarks/gpu/stream_timeline.py --device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 6
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from glrec.dataset import DatasetSpec, stream  # noqa: E402
from glrec.options import parse_size  # noqa: E402

TIMES: dict[tuple[str, str], float] = defaultdict(float)
CALLS: dict[tuple[str, str], int] = defaultdict(int)
GPU: list[tuple[int, ...]] = []  # per chunk: clear start, end, draw start, end, pack end (ns, the GPU's clock)
_TIMESTAMP, _RESULT = 0x8E28, 0x8866


def timed(owner: Any, name: str, label: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            key = (threading.current_thread().name, label)
            TIMES[key] += time.perf_counter() - started
            CALLS[key] += 1

    setattr(owner, name, wrapper)


def _query() -> int:
    from glrec.gl.fences import gl_function

    q = ctypes.c_uint()
    gl_function("glGenQueries", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(q))
    gl_function("glQueryCounter", None, ctypes.c_uint, ctypes.c_uint)(q.value, _TIMESTAMP)
    return q.value


def _result(q: int) -> int:
    from glrec.gl.fences import gl_function

    out = ctypes.c_uint64()
    gl_function("glGetQueryObjectui64v", None, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint64))(
        q, _RESULT, ctypes.byref(out)
    )
    gl_function("glDeleteQueries", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(ctypes.c_uint(q)))
    return out.value


def count_gc() -> None:
    """Time Python's cyclic garbage collector, per generation, on whichever thread it ran (it holds the GIL)."""
    import gc

    started: dict[int, float] = {}

    def callback(phase: str, info: dict[str, int]) -> None:
        me = threading.get_ident()
        if phase == "start":
            started[me] = time.perf_counter()
        elif me in started:
            key = (threading.current_thread().name, f"garbage collection, generation {info['generation']}")
            TIMES[key] += time.perf_counter() - started.pop(me)
            CALLS[key] += 1

    gc.callbacks.append(callback)


def instrument() -> None:
    from glrec.cuda.pool import DevicePool
    from glrec.dataset.rendering import layer_pack, plans
    from glrec.dataset.rendering.memory import HostSlots
    from glrec.dataset.streaming import producer, tensors
    from glrec.gl import fences
    from glrec.scenes.layers import LayeredGBuffer
    from glrec.scenes.table import Table

    timed(DevicePool, "acquire", "slot acquire (consumer holds buffers)")
    timed(HostSlots, "acquire", "slot acquire (consumer holds buffers)")
    timed(plans, "plan_samples", "plan (params + layouts)")
    timed(layer_pack.LayerPacker, "_read_table", "box table read")
    timed(layer_pack, "mask_boxes", "  of which: boxes from a mask (ids beyond the table)")
    timed(fences.Fence, "wait", "GL fence wait")
    timed(fences.Fence, "signalled", "fence flush (signalled)")
    timed(layer_pack, "clear_table", "box table clear (CPU)")
    timed(layer_pack, "dispatch_compute", "pack and box dispatches (CPU)")
    timed(producer.Producer, "_batch", "producer: a whole batch")
    timed(producer, "deferred_columns", "deferred columns")
    timed(tensors.SampleStream, "__next__", "consumer: next()")
    import concurrent.futures

    timed(concurrent.futures.Future, "result", "waiting for planned chunks")

    # Per chunk, GPU timestamps: before and after the clear, before the first instanced draw, after the
    # scene's draw, before the fence (after the packing): the GPU's work without the gaps where it waited for
    # the CPU to issue commands.
    chunks: list[dict[str, int]] = []

    def stamp(label: str) -> None:
        chunks[-1][label] = _query()

    clear = LayeredGBuffer.clear

    def clear_stamped(self: Any, *args: Any) -> None:
        chunks.append({})
        stamp("clear0")
        clear(self, *args)
        stamp("clear1")

    LayeredGBuffer.clear = clear_stamped  # type: ignore[method-assign]
    one = Table._draw

    def draw_stamped(self: Table, *args: Any) -> None:
        if chunks and "draw0" not in chunks[-1]:
            stamp("draw0")
        one(self, *args)

    Table._draw = draw_stamped  # type: ignore[method-assign]
    for name, label in (("render_batch", "scene draw (CPU, GL calls)"),
                        ("render_prepared", "scene draw, GL half (prepared)")):  # fmt: skip
        original = getattr(Table, name, None)
        if original is None:
            continue

        def drawn(self: Table, *args: Any, _original: Any = original, _label: str = label) -> None:
            started = time.perf_counter()
            _original(self, *args)
            key = (threading.current_thread().name, _label)
            TIMES[key] += time.perf_counter() - started
            CALLS[key] += 1
            stamp("draw1")  # (render_batch: again after its GL half's)

        setattr(Table, name, drawn)
    init = fences.Fence.__init__

    def fence_init(self: Any) -> None:
        if chunks and "draw1" in chunks[-1] and "fence" not in chunks[-1]:
            stamp("fence")
        init(self)

    fences.Fence.__init__ = fence_init  # type: ignore[method-assign]
    run = layer_pack.LayerPacker.run

    def packer_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return run(self, *args, **kwargs)
        finally:
            key = (threading.current_thread().name, "packer run (dispatch, wait, read)")
            TIMES[key] += time.perf_counter() - started
            CALLS[key] += 1
            # The chunk just packed is the newest entry; an older one without all five stamps (a draw that
            # took another way) is dropped, so it cannot hold back the chunks after it.
            done = chunks[-1] if chunks and len(chunks[-1]) == 5 else None
            chunks.clear()
            if done is not None:
                t = {k: _result(q) for k, q in done.items()}
                GPU.append((t["clear0"], t["clear1"], t["draw0"], t["draw1"], t["fence"]))

    layer_pack.LayerPacker.run = packer_run  # type: ignore[method-assign]


def hold_gil() -> None:
    """Make glrec's ctypes GL entry points keep the GIL (ctypes.PYFUNCTYPE), all but glClientWaitSync: a
    thread that returns from a call that released it waits for the GIL behind busy Python threads."""
    import functools

    from glrec.gl import fences

    original = fences.gl_function

    @functools.cache
    def held(name: str, restype: Any, *argtypes: Any) -> Any:
        if name == "glClientWaitSync":
            return original(name, restype, *argtypes)
        ptr = fences._egl().eglGetProcAddress(name.encode())
        return ctypes.PYFUNCTYPE(restype, *argtypes)(ptr)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("glrec") and getattr(module, "gl_function", None) is original:
            module.gl_function = held  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="128x128")
    ap.add_argument("--passes", default="rgb,depth")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--plan-processes",
        type=int,
        default=0,
        help="planning processes at most, at every image size (0: glrec's rule)",
    )
    ap.add_argument("--plan-depth", type=int, default=0, help="set plan_ahead.DEPTH (0: glrec's default)")
    ap.add_argument("--cull", action="store_true", help="an experiment: the table drawn with back faces culled")
    ap.add_argument("--switch-interval", type=float, default=0.0, help="an experiment: sys.setswitchinterval (s)")
    ap.add_argument("--gc", choices=("on", "off", "freeze"), default="on",
                    help="an experiment: the cyclic GC off, or gc.freeze() after the warm-up")  # fmt: skip
    ap.add_argument("--gil-held", action="store_true",
                    help="an experiment: glrec's ctypes GL calls keep the GIL, except the fence's wait")  # fmt: skip
    args = ap.parse_args()
    n = args.batch
    spec = DatasetSpec.load(args.spec).with_(samples=n * args.batches, shard_size=n, size=parse_size(args.size))
    spec = spec.with_(output=replace(spec.output, passes=tuple(args.passes.split(","))))
    consume: Callable[[dict[str, Any]], Any]
    if args.device == "cpu":
        import numpy as np

        def consume(batch: dict[str, Any]) -> Any:
            return sum(float(np.asarray(batch[p]).sum()) for p in spec.output.passes)
    else:
        import torch

        def consume(batch: dict[str, Any]) -> Any:
            return float(sum(torch.from_dlpack(batch[p]).sum(dtype=torch.float64) for p in spec.output.passes))

    def run() -> float:
        started = time.perf_counter()
        with stream(spec, n, device=args.device) as s:
            for batch in s:
                t = time.perf_counter()
                consume(batch)
                TIMES[("MainThread", "consumer: sum every pass")] += time.perf_counter() - t
        return time.perf_counter() - started

    if args.cull:
        import moderngl

        from glrec.scenes.table import Table

        submit = Table._submit

        def culled(self: Any, *a: Any) -> None:
            self.ctx.enable(moderngl.CULL_FACE)
            try:
                submit(self, *a)
            finally:
                self.ctx.disable(moderngl.CULL_FACE)

        Table._submit = culled  # type: ignore[method-assign]
    if args.plan_processes:
        from glrec.dataset.rendering import plan_ahead

        plan_ahead.PROCESSES = plan_ahead.FEW_LAYER_PROCESSES = args.plan_processes
        plan_ahead.PROCESS_CORES = 1
    if args.plan_depth:
        from glrec.dataset.rendering import plan_ahead

        plan_ahead.DEPTH = args.plan_depth
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    warm = run()
    if args.gil_held:  # after the warm-up: every module that calls GL through ctypes is imported
        hold_gil()
    instrument()
    count_gc()
    if args.gc != "on":
        import gc

        gc.disable() if args.gc == "off" else gc.freeze()
    TIMES.clear()
    CALLS.clear()
    took = run()
    extra = "".join(
        [", GIL held in GL calls" if args.gil_held else "", f", GC {args.gc}" if args.gc != "on" else ""]
        + ([f", switch interval {args.switch_interval * 1e3:g} ms"] if args.switch_interval else [])
    )
    lines = [f"{args.size} passes {args.passes} batch {n} x {args.batches}, device {args.device}{extra}: "
             f"warm-up {spec.samples / warm:.0f} samples/s, instrumented {spec.samples / took:.0f} samples/s "
             f"({took:.3f} s)"]  # fmt: skip
    for (thread, label), secs in sorted(TIMES.items(), key=lambda kv: -kv[1]):
        per = 1e6 * secs / spec.samples
        lines.append(f"  {thread:24s} {label:40s} {secs:8.3f} s  {secs / took:6.1%}  "
                     f"{per:8.2f} us/sample  ({CALLS.get((thread, label), 0)} calls)")  # fmt: skip
    if GPU:
        clears = sum(c1 - c0 for c0, c1, *_ in GPU) / 1e9
        draws = sum(d1 - d0 for _, _, d0, d1, _ in GPU) / 1e9
        packs = sum(f - d1 for *_, d1, f in GPU) / 1e9
        gaps = sum(d0 - c1 for _, c1, d0, *_ in GPU) / 1e9
        span = (GPU[-1][-1] - GPU[0][0]) / 1e9
        busy = clears + draws + packs
        us = 1e6 / spec.samples
        lines.append(f"  GPU (timer queries, {len(GPU)} chunks), us/sample: clear {clears * us:.2f}, instanced draws "
                     f"{draws * us:.2f}, pack + boxes {packs * us:.2f} (waiting for the CPU between clear and draws "
                     f"{gaps * us:.2f}); GL busy {busy / span:.1%} of its span {span:.3f} s")  # fmt: skip
        lines.append(f"  GPU-alone rate of clear + draws + pack: {spec.samples / busy:.0f} samples/s")
    print("\n".join(lines), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"lines": lines, "gpu_chunks": GPU}) + "\n")


if __name__ == "__main__":
    main()

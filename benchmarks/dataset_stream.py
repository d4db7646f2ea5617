"""Samples/s of glrec.dataset.stream against reading the same samples from shards (webdataset + DataLoader).

Both consumers touch every pass of every sample (a sum), in rounds that alternate
the two, in one process; the shards are made first by ``glrec.dataset.generate``
(not timed). Results go to ``benchmarks/results/<date>_<machine>_dataset-stream.{json,txt}``.
``--batch-sizes 1,64,256`` adds a stream row per batch size; ``--before`` adds the
same stream with every sample planned alone (the per-sample path: parameters and
the scene's layout drawn one sample at a time), so before/after is one run;
``--unlayered`` adds the stream with batches planned at once but drawn one sample
per GL pass (main before the layered batch path); ``--gl-bound`` adds, per batch
size, the GL-alone bound: the same scene, passes and batch drawn N samples per GL
pass into the layered targets with one fence per batch, no packing, no readback
(layouts planned before the clock starts);
``--device cuda`` consumes CUDA tensors (torch through DLPack, summed on the GPU);
``--size 128x128 --passes rgb,depth`` is the RL-sized case. Each stream row has a
``-steady`` twin from the same run: the samples after the first batch over the
time after it (a training run's rate, without the stream's start: its GL context,
shaders, CUDA handoff and the first batch's planning).

    python benchmarks/dataset_stream.py --samples 64 --batch-size 16 --rounds 2
    python benchmarks/dataset_stream.py --samples 256 --batch-sizes 1,64,256 --before --device cuda --workers 0
    python benchmarks/dataset_stream.py --samples 64 --batch-size 16 --gl-bound --unlayered --workers 0
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from glrec.dataset import DatasetSpec, generate, stream  # noqa: E402

PASSES = ("rgb", "depth", "instance", "semantic", "normal")


def touch(arrays: list[object]) -> float:
    return float(sum(float(np.asarray(a).sum()) for a in arrays))


def touch_cuda(arrays: list[object]) -> float:
    total = sum(torch.from_dlpack(a).sum(dtype=torch.float64) for a in arrays)  # on the GPU, one sync
    return float(total)  # type: ignore[arg-type]


def run_stream(
    spec: DatasetSpec, batch_size: int, device: str = "cpu", before: bool = False, unlayered: bool = False,
    with_meta: bool = False, with_boxes: bool = False,
) -> tuple[int, float, int, float]:  # fmt: skip
    """Samples and seconds from the stream's start, then after its first batch (the steady rate)."""
    from glrec.dataset.rendering.sample import SampleRenderer

    passes = list(spec.output.passes)
    plan, layered = SampleRenderer.prepare, SampleRenderer.batch_ready
    if before:  # the per-sample path: nothing planned ahead, each sample drawn alone
        SampleRenderer.prepare = lambda self, indices: None  # type: ignore[method-assign]
    if before or unlayered:  # one sample per GL pass
        SampleRenderer.batch_ready = property(lambda self: False)  # type: ignore[method-assign, assignment]
    try:
        started, n, first, first_at = time.perf_counter(), 0, 0, 0.0
        with stream(spec, batch_size, device=device) as s:
            for batch in s:
                (touch_cuda if device != "cpu" else touch)([batch[p] for p in passes])
                if with_meta:  # a consumer of the annotations too: every box and every sample's meta read
                    assert sum(len(b) for b in batch["boxes"]) >= 0 and len(list(batch["meta"])) == len(batch["index"])
                if with_boxes:  # a detection loop: every sample's boxes, labels and instance ids, not the meta
                    got = [
                        len(batch[c][j]) for c in ("boxes", "labels", "instances") for j in range(len(batch["index"]))
                    ]
                    assert min(got) >= 0
                n += len(batch["index"])
                if not first:
                    first, first_at = n, time.perf_counter()
        ended = time.perf_counter()
        return n, ended - started, n - first, ended - first_at
    finally:
        SampleRenderer.prepare = plan  # type: ignore[method-assign]
        SampleRenderer.batch_ready = layered  # type: ignore[method-assign]


def run_gl_bound(spec: DatasetSpec, batch_size: int, device: str = "cpu") -> tuple[int, float]:
    """The GL-alone bound: every batch drawn into the layered targets, one fence per batch, nothing read."""
    from glrec.dataset.rendering.batches import parse_device
    from glrec.dataset.rendering.plans import TIME_PARAM, plan_samples
    from glrec.dataset.rendering.render_layers import LayerRenderer
    from glrec.dataset.rendering.sample import SampleRenderer
    from glrec.gl.context import create_context
    from glrec.gl.fences import Fence

    cuda, owner = parse_device(device), None
    if cuda is None:
        gl = create_context()
    else:  # the GL context on the CUDA device's GPU, as the stream's
        from glrec.dataset.rendering.cuda import open_cuda

        owner, gl = open_cuda(cuda, None)
    with gl.active():
        r = SampleRenderer(spec, gl.mgl, None, keep_rgb=True, packed=True)
        layers = LayerRenderer(r, batch_size)
        batches = [range(i, min(spec.samples, i + batch_size)) for i in range(0, spec.samples, batch_size)]
        plans = [plan_samples(spec, b, r.scene) for b in batches]  # not timed: the bound is GL's
        gb = layers.gbuffer
        assert gb is not None
        started = time.perf_counter()
        for batch in plans:
            for j in range(0, len(batch), layers.layers):
                chunk = batch[j : j + layers.layers]
                with gb.bound():
                    r.scene.render_batch(gb, [p.layout for p in chunk],  # type: ignore[attr-defined]
                                         [float(p.params.get(TIME_PARAM, 0.0)) for p in chunk])  # fmt: skip
            Fence().wait()
        took = time.perf_counter() - started
        layers.release()
        r.close()
    gl.release()
    if owner is not None:
        owner.release()
    return spec.samples, took


def run_shards(root: Path, spec: DatasetSpec, batch_size: int, workers: int) -> tuple[int, float]:
    import webdataset as wds

    urls = f"{root}/shard-{{000000..{spec.shards - 1:06d}}}.tar"
    from glrec.dataset.api import member_names

    names = member_names(spec)
    ds = wds.WebDataset(urls, shardshuffle=False).decode("rgb8").to_tuple(*names).batched(batch_size)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    started, n = time.perf_counter(), 0
    for batch in loader:
        touch(batch[:-1])
        n += len(batch[0])
    return n, time.perf_counter() - started


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{cpu}, {len(os.sched_getaffinity(0))} cores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--batch-sizes", default="", help="more stream rows, one per batch size, comma-separated")
    ap.add_argument("--before", action="store_true", help="add the per-sample path's row (each batch size)")
    ap.add_argument("--unlayered", action="store_true", help="add the one-sample-per-GL-pass stream row")
    ap.add_argument("--gl-bound", action="store_true", help="add the GL-alone bound's row (each batch size)")
    ap.add_argument("--with-meta", action="store_true", help="add a row whose consumer also reads boxes and meta")
    ap.add_argument(
        "--with-boxes",
        action="store_true",
        help="add a row whose consumer also reads boxes, labels and instances (not meta)",
    )
    ap.add_argument("--device", default="cpu", help='the stream\'s device: "cpu" or "cuda"')
    ap.add_argument("--size", default="", help="WxH instead of the spec's")
    ap.add_argument("--passes", default="", help="comma-separated passes instead of the spec's")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--plan-process-batch",
        default="",
        help="set plan_ahead.PROCESS_BATCH: a batch size, or 'none' (batches planned on threads only)",
    )
    ap.add_argument("--plan-processes", type=int, default=0,
                    help="planning processes at most, at every image size (PROCESS_CORES set to 1)")  # fmt: skip
    ap.add_argument("--plan-depth", type=int, default=0, help="set plan_ahead.DEPTH (batches planned ahead)")
    ap.add_argument("--workers", default="0,2", help="DataLoader workers for the shard reader, comma-separated")
    ap.add_argument("--tag", default="2c_llvmpipe", help="machine name in the result file name")
    ap.add_argument("--name", default="dataset-stream", help="what, in the result file name")
    args = ap.parse_args()
    if args.plan_process_batch:
        from glrec.dataset.rendering import plan_ahead

        plan_ahead.PROCESS_BATCH = None if args.plan_process_batch == "none" else int(args.plan_process_batch)
    if args.plan_processes:
        from glrec.dataset.rendering import plan_ahead

        plan_ahead.PROCESSES = plan_ahead.FEW_LAYER_PROCESSES = args.plan_processes
        plan_ahead.PROCESS_CORES = 1
    if args.plan_depth:
        from glrec.dataset.rendering import plan_ahead

        plan_ahead.DEPTH = args.plan_depth
    spec = DatasetSpec.load(args.spec)
    spec = spec.with_(samples=args.samples, shard_size=max(1, args.samples // 4))
    if args.size:
        from glrec.options import parse_size

        spec = spec.with_(size=parse_size(args.size))
    if args.passes:
        from dataclasses import replace

        spec = spec.with_(output=replace(spec.output, passes=tuple(args.passes.split(","))))
    workers = [int(w) for w in args.workers.split(",") if w]
    sizes = [args.batch_size] + [int(b) for b in args.batch_sizes.split(",") if b and int(b) != args.batch_size]
    rows: dict[str, list[float]] = {}
    for b in sizes:
        rows[f"stream:batch={b}"] = []
        rows[f"stream-steady:batch={b}"] = []
        if args.before:
            rows[f"stream-before:batch={b}"] = []
        if args.unlayered:
            rows[f"stream-unlayered:batch={b}"] = []
        if args.gl_bound:
            rows[f"gl-bound:batch={b}"] = []
        if args.with_meta:
            rows[f"stream-with-meta:batch={b}"] = []
            rows[f"stream-with-meta-steady:batch={b}"] = []
        if args.with_boxes:
            rows[f"stream-with-boxes:batch={b}"] = []
            rows[f"stream-with-boxes-steady:batch={b}"] = []
    rows.update({f"shards:workers={w}": [] for w in workers})
    with tempfile.TemporaryDirectory() as tmp:
        made = generate(spec, Path(tmp) / "shards") if workers else None  # --workers "": no shard rows
        for r in range(args.rounds):
            order = list(rows) if r % 2 == 0 else list(reversed(rows))
            for name in order:
                if "-steady:" in name:  # filled by its stream's row
                    continue
                if name.startswith("gl-bound"):
                    n, t = run_gl_bound(spec, int(name.split("=")[1]), args.device)
                elif name.startswith("stream"):
                    b = int(name.split("=")[1])
                    n, t, n_steady, t_steady = run_stream(
                        spec, b, args.device, before=name.startswith("stream-before"),
                        unlayered=name.startswith("stream-unlayered"), with_meta=name.startswith("stream-with-meta"),
                        with_boxes=name.startswith("stream-with-boxes"),
                    )  # fmt: skip
                    steady = name.replace(":", "-steady:")
                    if steady in rows and n_steady:
                        rows[steady].append(n_steady / t_steady)
                        print(f"round {r}: {steady}: {n_steady / t_steady:.1f} samples/s", flush=True)
                else:
                    n, t = run_shards(Path(tmp) / "shards", spec, args.batch_size, int(name.split("=")[1]))
                assert n == spec.samples, (name, n)
                rows[name].append(n / t)
                print(f"round {r}: {name}: {n / t:.1f} samples/s", flush=True)
    result = {
        "date": date.today().isoformat(),
        "machine": machine(),
        "renderer": "Mesa llvmpipe (EGL)" if "llvmpipe" in args.tag else args.tag,
        "spec": args.spec,
        "size": list(spec.size),
        "passes": list(spec.output.passes),
        "samples": spec.samples,
        "batch_size": args.batch_size,
        "device": args.device,
        "generate_samples_per_s": made.samples_per_second if made else None,
        "samples_per_s": {k: v for k, v in rows.items()},
        "median_samples_per_s": {k: float(np.median(v)) for k, v in rows.items() if v},
        "command": " ".join(sys.argv),
    }
    out = ROOT / "benchmarks" / "results" / f"{result['date']}_{args.tag}_{args.name}"
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"{result['date']} {result['machine']}, {spec.size[0]}x{spec.size[1]}, {spec.samples} samples, "
             f"batch {args.batch_size}, every pass summed"]  # fmt: skip
    lines += [f"{k}: median {v:.1f} samples/s" for k, v in result["median_samples_per_s"].items()]
    if made is not None:
        lines.append(f"(generate, for reference: {made.samples_per_second:.1f} samples/s)")
    out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

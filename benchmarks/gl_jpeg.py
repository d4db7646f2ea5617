"""The GL-compute JPEG encoder before and after its parallel entropy coding, side by side in one run.

``before`` is the encoder as it was (``benchmarks/gl_jpeg_before.py``: DCT, one invocation per
restart segment for the Huffman coding, a one-group scan, assembly); ``after`` is
:class:`glrec.encoders.gl_jpeg.stage.GlJpegStage` (two passes: segment coding, assembly). Per size
and scene (the scene rendered once at t = 0.5, quality 90, 4:2:0), both variants interleaved
within each of ``--repeat`` rounds, medians reported:

- ``stage_fps``: the render target encoded ``--frames`` times through the ring of 3 (run +
  fence + readback of the compressed bytes), as the recorder drives it;
- ``cpu_ms_per_frame``: CPU time of the process (every thread: on llvmpipe that is the encoding
  itself) per frame in those runs, which a loaded machine moves less than fps;
- ``gpu_ms_per_frame``: one GL timer query around ``min(50, --frames)`` frames queued back to back,
  per frame: the GPU time a frame costs in the stream (passes, barriers, gaps between dispatches);
- ``passes_ms``: each pass alone (finished before and after): ``gpu`` from timer queries,
  ``wall`` to a glFinish (the one to read on llvmpipe, where queries close early);
- ``readback_ms``: collecting a finished frame with nothing queued behind it, and with two frames
  queued (the ring wrapping); the gap is what the readback waits for besides its own bytes;
- ``record_fps``: ``glrec.record(scene, .mkv, codec="mjpeg", encoder="gl")`` end to end
  (``before``: the pipeline given the old stage);
- ``bytes`` and ``identical``: the JPEG of each variant, and whether they are the same bytes.

``--batch 256x256:64``: 64 frames of 256x256 (layers of an array texture) encoded one at a
time (before) and as one batch per dispatch (after, ``run_batch``/``submit_batch``).
``--with-cpu`` adds PyAV's mjpeg (FFmpeg) as before: encode alone, and the host path.

    PYTHONPATH=. python benchmarks/gl_jpeg.py --sizes 1920x1080,1280x720 --scenes plasma,cube \\
        --frames 600 --repeat 3 --json benchmarks/results/DATE_MACHINE_gl-jpeg-before-after.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np

import glrec
from glrec.encoders.gl_jpeg import GlJpegStage
from glrec.encoders.gl_jpeg import slots as gl_jpeg_pipeline
from glrec.gl.context import create_context
from glrec.gl.target import RenderTarget
from glrec.scenes import load_scene

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gl_jpeg_before  # the old encoder, beside this script
from results_file import write_results

QUALITY = 90
VARIANTS: dict[str, Any] = {"before": gl_jpeg_before.GlJpegStage, "after": GlJpegStage}
STREAM = 50  # the most frames under one timer query


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def stage_fps(stage: Any, texture: Any, frames: int, cpu: list[float] | None = None) -> float:
    """Frames per second through the ring; appends CPU ms per frame (all threads: llvmpipe's too) to ``cpu``."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for i in range(frames):
        stage.run(texture)
        n += len(stage.submit(i))
    n += len(stage.drain())
    assert n == frames
    if cpu is not None:
        cpu.append((time.process_time() - c0) * 1e3 / frames)
    return frames / (time.perf_counter() - t0)


def gpu_ms_per_frame(stage: Any, texture: Any, frames: int) -> float:
    """GPU time of ``frames`` frames queued back to back (one ring slot, no readback), per frame."""
    ctx = stage.ctx
    ctx.finish()
    query = ctx.query(time=True)
    with query:
        for _ in range(frames):
            stage.run(texture)
    ctx.finish()
    return float(query.elapsed) / 1e6 / frames


def readback_ms(stage: Any, texture: Any, repeat: int = 5) -> dict[str, float]:
    """Milliseconds to collect a finished frame (fence signalled: the reads of its bytes and length word).

    ``idle``: nothing queued behind it; ``behind_2``: two more frames queued on the GPU (the ring
    of 3 when it wraps, as in the stream). A large gap means the readback waits for later work.
    """
    ctx, idle, busy = stage.ctx, [], []
    for _ in range(repeat):
        stage.run(texture)
        stage.submit(0)
        ctx.finish()
        t0 = time.perf_counter()
        stage.drain()
        idle.append((time.perf_counter() - t0) * 1e3)
        stage.run(texture)
        stage.submit(0)
        ctx.finish()
        stage.run(texture)
        stage.submit(1)
        stage.run(texture)
        t0 = time.perf_counter()
        assert [i for i, _ in stage.submit(2)] == [0]  # the ring wraps: frame 0 is read
        busy.append((time.perf_counter() - t0) * 1e3)
        stage.drain()
    return {"idle": statistics.median(idle), "behind_2": statistics.median(busy)}


@contextlib.contextmanager
def pipeline_stage(variant: str) -> Iterator[None]:
    """The recorder's GL JPEG convert slot built with the ``variant`` stage."""
    saved = gl_jpeg_pipeline.GlJpegStage
    gl_jpeg_pipeline.GlJpegStage = VARIANTS[variant]
    try:
        yield
    finally:
        gl_jpeg_pipeline.GlJpegStage = saved


def rounds(fns: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Median of ``repeat`` interleaved rounds of every fn (after one warm-up round)."""
    got: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(repeat + 1):
        for name, fn in fns.items():
            value = fn()
            if r:
                got[name].append(value)
    return {k: statistics.median(v) for k, v in got.items()}


def bench(size: tuple[int, int], scene_name: str, frames: int, repeat: int, with_cpu: bool) -> dict[str, Any]:
    w, h = size
    row: dict[str, Any] = {"size": f"{w}x{h}", "scene": scene_name, "frames": frames}
    with create_context() as gl:
        ctx = gl.mgl
        target = RenderTarget(ctx, size)
        scene = load_scene(scene_name)
        scene.setup(ctx, size)
        target.use()
        scene.render(0.5)
        stages = {v: cls(ctx, size, quality=QUALITY, depth=3) for v, cls in VARIANTS.items()}
        jpegs = {v: s.encode_now(target.colour) for v, s in stages.items()}
        cpu: dict[str, list[float]] = {v: [] for v in stages}
        fps = rounds(
            {v: (lambda s=s, c=cpu[v]: stage_fps(s, target.colour, frames, c)) for v, s in stages.items()}, repeat
        )
        stream = min(STREAM, frames)
        gpu = rounds({v: (lambda s=s: gpu_ms_per_frame(s, target.colour, stream)) for v, s in stages.items()}, repeat)
        for v, s in stages.items():
            row[v] = {
                "stage_fps": fps[v],
                "cpu_ms_per_frame": statistics.median(cpu[v][1:]),  # the warm-up round left out
                "gpu_ms_per_frame": gpu[v],
                "passes_ms": s.profile([target.colour]),
                "readback_ms": readback_ms(s, target.colour),
                "bytes": len(jpegs[v]),
            }
            s.release()
        row["identical"] = jpegs["before"] == jpegs["after"]
        if with_cpu:
            row.update(cpu_rows(target, size, frames, repeat))
        scene.close()
        target.release()
    with tempfile.TemporaryDirectory() as tmp:

        def record(variant: str) -> float:
            with pipeline_stage(variant):
                r = glrec.record(scene_name, Path(tmp) / f"{variant}.mkv", size=size, fps=30, frames=frames,
                                 codec="mjpeg", encoder="gl", quality=QUALITY, overwrite=True)  # fmt: skip
            assert r.frames == frames
            return frames / r.wall_seconds

        rec = rounds({v: (lambda v=v: record(v)) for v in VARIANTS}, repeat)
    for v in VARIANTS:
        row[v]["record_fps"] = rec[v]
    row["after/before stage_fps"] = row["after"]["stage_fps"] / row["before"]["stage_fps"]
    return row


def bench_batch(size: tuple[int, int], batch: int, frames: int, repeat: int) -> dict[str, Any]:
    """``batch`` frames of ``size`` a step: one at a time (before) against one batch per dispatch (after)."""
    w, h = size
    steps = max(1, frames // batch)
    row: dict[str, Any] = {"size": f"{w}x{h}", "batch": batch, "frames": steps * batch}
    with create_context() as gl:
        ctx = gl.mgl
        target = RenderTarget(ctx, size)
        scene = load_scene("plasma")
        scene.setup(ctx, size)
        target.use()
        layers = []
        for i in range(batch):
            scene.render(i / 30)
            layers.append(target.fbo.read(components=4))
        array = ctx.texture_array((w, h, batch), 4, b"".join(layers))
        one = ctx.texture((w, h), 4, layers[0])
        before = gl_jpeg_before.GlJpegStage(ctx, size, quality=QUALITY, depth=3)
        after = GlJpegStage(ctx, size, quality=QUALITY, depth=3, batch=batch)

        def one_at_a_time() -> float:
            return stage_fps(before, one, steps * batch)

        def batched() -> float:
            t0 = time.perf_counter()
            n = 0
            for i in range(steps):
                after.run_batch(array)
                n += len(after.submit_batch(range(i * batch, (i + 1) * batch)))
            n += len(after.drain())
            assert n == steps * batch
            return n / (time.perf_counter() - t0)

        fps = rounds({"before": one_at_a_time, "after": batched}, repeat)
        row["before"] = {"stage_fps": fps["before"], "passes_ms_per_frame": before.profile([one])}
        row["after"] = {"stage_fps": fps["after"], "passes_ms_per_batch": after.profile(array)}
        row["identical"] = after.encode_batch([one]) == [before.encode_now(one)]
        row["after/before stage_fps"] = fps["after"] / fps["before"]
        for obj in (before, after, array, one, target):
            obj.release()
        scene.close()
    return row


def cpu_rows(target: RenderTarget, size: tuple[int, int], frames: int, repeat: int) -> dict[str, Any]:
    """PyAV's mjpeg on frames made beforehand (encode only), and the host path (readback + swscale + encode)."""
    from glrec.dataset.files.encode import jpeg_qscale

    w, h = size

    def mjpeg() -> Any:
        cc = av.CodecContext.create("mjpeg", "w")
        cc.width, cc.height, cc.pix_fmt, cc.color_range = w, h, "yuvj420p", 2
        cc.qmin = cc.qmax = jpeg_qscale(QUALITY)  # glrec's mapping of quality for FFmpeg's encoder
        return cc

    def host_path() -> float:
        cc, t0 = mjpeg(), time.perf_counter()
        for _ in range(frames):
            raw = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1]
            cc.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(raw), format="rgb24").reformat(format="yuvj420p"))
        cc.encode(None)
        return frames / (time.perf_counter() - t0)

    rgb = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1].copy()
    yuv = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuvj420p")

    def encode_only() -> float:
        cc, t0 = mjpeg(), time.perf_counter()
        for i in range(frames):
            yuv.pts = i  # FFmpeg refuses a frame whose pts does not advance
            cc.encode(yuv)
        cc.encode(None)
        return frames / (time.perf_counter() - t0)

    got = rounds({"stage:pyav-mjpeg": encode_only, "host:pyav-mjpeg": host_path}, repeat)
    return dict(got)


def table(rows: list[dict[str, Any]]) -> str:
    nan = float("nan")
    lines = [f"{'size':>9} {'scene':>6} {'variant':>7} {'stage fps':>9} {'cpu ms/f':>8} {'gpu ms/f':>8} "
             f"{'record fps':>10} {'bytes':>7}  passes (gpu ms | wall ms, each alone)"]  # fmt: skip
    for row in rows:
        for v in VARIANTS:
            r = row[v]
            p = r.get("passes_ms") or r.get("passes_ms_per_batch") or r.get("passes_ms_per_frame")
            passes = " ".join(f"{k} {p['gpu'][k]:.3f}|{p['wall'][k]:.2f}" for k in p["gpu"])
            if "readback_ms" in r:
                passes += " readback {idle:.3f}|behind-2 {behind_2:.3f}".format(**r["readback_ms"])
            scene = row.get("scene", f"b{row.get('batch')}")
            lines.append(
                f"{row['size']:>9} {scene:>6} {v:>7} {r['stage_fps']:9.1f} {r.get('cpu_ms_per_frame', nan):8.3f} "
                f"{r.get('gpu_ms_per_frame', nan):8.3f} {r.get('record_fps', nan):10.1f} {r.get('bytes', 0):7d}  "
                f"{passes}"
            )
        lines.append(f"{'':>9} after/before stage fps x{row['after/before stage_fps']:.2f}, "
                     f"identical bytes: {row['identical']}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1920x1080,1280x720")
    ap.add_argument("--scenes", default="plasma,cube")
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", default="256x256:64", help="SIZE:N batch row ('' for none)")
    ap.add_argument("--with-cpu", action="store_true", help="also PyAV's mjpeg rows")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with create_context() as gl:
        renderer = gl.info.renderer
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "gl": renderer, "av": av.__version__},
        "command": " ".join(sys.argv),
        "quality": QUALITY,
        "pix_fmt": "yuv420p",
        "rows": [],
    }
    for s in args.sizes.split(","):
        size = tuple(int(v) for v in s.split("x"))
        for scene in args.scenes.split(","):
            row = bench((size[0], size[1]), scene, args.frames, args.repeat, args.with_cpu)
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
    if args.batch:
        s, n = args.batch.split(":")
        w, h = (int(v) for v in s.split("x"))
        row = bench_batch((w, h), int(n), args.frames, args.repeat)
        result["rows"].append(row)
        print(json.dumps(row), flush=True)
    print(table(result["rows"]))
    write_results(result, args.json, "gl-jpeg-before-after.json")


if __name__ == "__main__":
    main()

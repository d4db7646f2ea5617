"""The GL-compute JPEG encoder against PyAV's mjpeg encoder, on whatever GL this machine has.

Rows per size (plasma, quality 90, 4:2:0; median of ``--repeat`` runs of ``--frames`` frames):

- ``stage:gl-jpeg``: a rendered target encoded over and over by :class:`GlJpegStage`, ring of 3,
  bytes on the host (run + fence + readback of the compressed bytes);
- ``stage:pyav-mjpeg``: PyAV's mjpeg (FFmpeg) on yuvj420p frames made beforehand: encode only;
- ``host:pyav-mjpeg``: what the host path adds: glReadPixels, flip, RGB -> yuvj420p (swscale), encode;
- ``record:gl`` / ``record:cpu``: ``glrec.record("plasma", .mkv, codec="mjpeg")`` end to end with
  encoder gl and cpu (the CPU path converts on the GPU and reads YUV back through the PBO ring);
- ``passes_ms``: each GL JPEG pass of one frame: GL timer queries (``gpu``) and wall time to a glFinish.

On software GL (llvmpipe) the GL rows run on the CPU: a correctness path, not a speed claim.

    PYTHONPATH=. python benchmarks/gl_jpeg.py [--sizes 640x360,1280x720] [--frames 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np

import glrec
from glrec.dataset.encode import jpeg_qscale
from glrec.encoders.gl_jpeg.stage import GlJpegStage, _grid
from glrec.gl.context import create_context
from glrec.gl.target import RenderTarget
from glrec.scenes import load_scene

QUALITY = 90


def median_fps(fn: Callable[[], float], repeat: int) -> float:
    fn()  # warm-up: shaders compiled, caches filled
    return statistics.median(fn() for _ in range(repeat))


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def pass_times(stage: GlJpegStage, texture: Any) -> dict[str, dict[str, float]]:
    """Milliseconds of each pass of one frame: ``gpu`` from GL_TIME_ELAPSED queries, ``wall`` to a glFinish.

    On llvmpipe the compute work runs on the CPU threads and the queries do not see all of it;
    the wall times (each pass alone, finished) are the ones to read there.
    """
    import moderngl

    from glrec.gl.fences import dispatch_compute

    ctx, geo = stage.ctx, stage.geometry
    texture.use(0)
    out = stage._outputs[0]
    for binding, buf in enumerate((stage._coef, stage._tables, stage._codes, stage._segments, stage._lengths,
                                   stage._offsets, out)):  # fmt: skip
        buf.bind_to_storage_buffer(binding)
    passes = {
        "dct": (stage._dct, (*_grid(-(-geo.blocks // 64)), 1)),
        "huffman": (stage._huffman, (-(-geo.segments // 64), 1, 1)),
        "scan": (stage._scan, (1, 1, 1)),
        "assemble": (stage._assemble, (geo.segments, 1, 1)),
    }
    gpu, wall = {}, {}
    for name, (shader, groups) in passes.items():
        query = ctx.query(time=True)
        ctx.finish()
        t0 = time.perf_counter()
        with query:
            dispatch_compute(shader.glo, *groups)
            ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT)
        ctx.finish()
        wall[name] = (time.perf_counter() - t0) * 1e3
        gpu[name] = query.elapsed / 1e6
    return {"gpu": gpu, "wall": wall}


def bench_size(size: tuple[int, int], frames: int, repeat: int) -> dict[str, Any]:
    w, h = size
    row: dict[str, Any] = {"size": f"{w}x{h}", "frames": frames}
    with create_context() as gl:
        ctx = gl.mgl
        target = RenderTarget(ctx, size)
        scene = load_scene("plasma")
        scene.setup(ctx, size)
        target.use()
        scene.render(0.5)
        rgb = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1].copy()
        stage = GlJpegStage(ctx, size, quality=QUALITY, depth=3)

        def gl_stage() -> float:
            t0 = time.perf_counter()
            n = 0
            for i in range(frames):
                stage.run(target.colour)
                n += len(stage.submit(i))
            n += len(stage.drain())
            assert n == frames
            return frames / (time.perf_counter() - t0)

        row["stage:gl-jpeg"] = median_fps(gl_stage, repeat)
        row["passes_ms"] = pass_times(stage, target.colour)
        jpeg = stage.encode_now(target.colour)
        row["gl_bytes"] = len(jpeg)
        stage.release()

        def host_path() -> float:
            cc = _mjpeg(w, h)
            t0 = time.perf_counter()
            for _ in range(frames):
                raw = np.frombuffer(target.fbo.read(components=3), np.uint8).reshape(h, w, 3)[::-1]
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(raw), format="rgb24").reformat(
                    format="yuvj420p"
                )
                cc.encode(frame)
            cc.encode(None)
            return frames / (time.perf_counter() - t0)

        row["host:pyav-mjpeg"] = median_fps(host_path, repeat)
        scene.close()
        target.release()

    yuv = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuvj420p")

    def pyav_only() -> float:
        cc = _mjpeg(w, h)
        t0 = time.perf_counter()
        out = []
        for i in range(frames):
            yuv.pts = i  # FFmpeg refuses a frame whose pts does not advance
            out += cc.encode(yuv)
        out += cc.encode(None)
        row["pyav_bytes"] = out[0].size
        return frames / (time.perf_counter() - t0)

    row["stage:pyav-mjpeg"] = median_fps(pyav_only, repeat)
    with tempfile.TemporaryDirectory() as tmp:
        for encoder in ("gl", "cpu"):

            def record(encoder: str = encoder) -> float:
                r = glrec.record("plasma", Path(tmp) / "out.mkv", size=size, fps=30, frames=frames, codec="mjpeg",
                                 encoder=encoder, quality=QUALITY, overwrite=True)  # fmt: skip
                assert r.frames == frames
                return frames / r.wall_seconds

            row[f"record:{encoder}"] = median_fps(record, repeat)
    return row


def _mjpeg(w: int, h: int) -> Any:
    cc = av.CodecContext.create("mjpeg", "w")
    cc.width, cc.height, cc.pix_fmt, cc.color_range = w, h, "yuvj420p", 2
    cc.qmin = cc.qmax = jpeg_qscale(QUALITY)  # glrec's mapping of quality for FFmpeg's encoder
    return cc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="640x360,1280x720,1920x1080")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with create_context() as gl:
        renderer = gl.info.renderer
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "gl": renderer, "av": av.__version__},
        "quality": QUALITY,
        "pix_fmt": "yuv420p",
        "scene": "plasma",
        "rows": [],
    }
    for s in args.sizes.split(","):
        w, h = (int(v) for v in s.split("x"))
        row = bench_size((w, h), args.frames, args.repeat)
        result["rows"].append(row)
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Soak: one long recording of many small frames; does anything grow?

A benchmark, not a test (the CI-sized version is tests/test_soak.py):

    python benchmarks/soak.py [--frames 100000] [--size 64x64] [--json out.json]

Records ``--frames`` frames of the ``plasma`` scene and samples, every
``--every`` frames: resident memory (RSS), live GL objects of the recorder's
context, glrec fences and threads, and free GPU memory where the driver
reports it (NVIDIA's GL_NVX_gpu_memory_info; Mesa has no such query).

Growth is measured after a warm-up (``--warmup`` frames, default 10 %: allocator
pools, encoder lookahead and the muxer's index reach their working size) as
(last RSS - RSS at warm-up) / RSS at warm-up, plus the slope of a least-squares
line through the post-warm-up samples (bytes per 10,000 frames), so one noisy
sample does not decide it. Target: < 2 % growth.

The output index is the one thing that grows with length on purpose: an MP4
or MKV keeps a few bytes per frame for its seek index until the trailer is
written; ``--output`` can point at a raw ``.h264`` to take that out.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GL_GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX = 0x9049


def gpu_free_kb(ctx) -> int | None:
    """Free video memory in KiB on drivers with GL_NVX_gpu_memory_info, else None."""
    from glrec.gl.fences import gl_function

    if "GL_NVX_gpu_memory_info" not in ctx.extensions:
        return None
    value = ctypes.c_int(0)
    gl_function("glGetIntegerv", None, ctypes.c_uint, ctypes.POINTER(ctypes.c_int))(
        GL_GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX, ctypes.byref(value)
    )
    return value.value


def slope(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of y over x."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def _with_current(ctx, query):
    with ctx:  # glrec's context is current only during glrec's calls; a GL query needs it current
        return query(ctx)


def run(frames: int, size: str, every: int, warmup: int, output: Path, scene: str) -> dict:
    import glrec
    from glrec.gl.leaks import snapshot

    samples = []
    started = time.perf_counter()
    with glrec.Recorder(output, size=size, fps=30, encoder="cpu", overwrite=True) as rec:
        ctx = rec.ctx
        for i in range(1, frames + 1):
            rec.render(scene)
            if i % every == 0 or i == 1:
                snap = snapshot(ctx)
                sample = {
                    "frames": i,
                    "seconds": round(time.perf_counter() - started, 2),
                    "rss_mb": round(snap.rss / 2**20, 2),
                    "gl_objects": sum(snap.gl_objects.values()),
                    "fences": snap.fences,
                    "threads": snap.threads,
                    "gpu_free_kb": _with_current(ctx, gpu_free_kb),
                }
                samples.append(sample)
                print(
                    f"{i:>8} frames {sample['seconds']:>8.1f} s  RSS {sample['rss_mb']:>8.2f} MB  "
                    f"GL objects {sample['gl_objects']:>3}  fences {sample['fences']}  threads {sample['threads']}"
                    + (f"  GPU free {sample['gpu_free_kb']} KiB" if sample["gpu_free_kb"] is not None else ""),
                    flush=True,
                )
    result = rec.close()
    after = [s for s in samples if s["frames"] >= warmup]
    base, last = after[0], after[-1]
    rss_slope = slope([(s["frames"], s["rss_mb"] * 2**20) for s in after])
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "size": size,
        "scene": scene,
        "output": output.suffix,
        "frames": result.frames,
        "wall_seconds": round(result.wall_seconds, 1),
        "fps": round(result.fps_achieved, 1),
        "warmup_frames": base["frames"],
        "rss_mb_at_warmup": base["rss_mb"],
        "rss_mb_last": last["rss_mb"],
        "rss_mb_max_after_warmup": max(s["rss_mb"] for s in after),
        "rss_growth_percent": round((last["rss_mb"] - base["rss_mb"]) / base["rss_mb"] * 100, 3),
        "rss_slope_kb_per_10k_frames": round(rss_slope * 10_000 / 1024, 1),
        "gl_objects_min_max": [min(s["gl_objects"] for s in after), max(s["gl_objects"] for s in after)],
        "fences_max": max(s["fences"] for s in after),
        "threads_min_max": [min(s["threads"] for s in after), max(s["threads"] for s in after)],
        "samples": samples,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=100_000)
    p.add_argument("--size", default="64x64")
    p.add_argument("--scene", default="plasma")
    p.add_argument("--every", type=int, default=2_000, help="sample every N frames")
    p.add_argument("--warmup", type=int, help="frames before growth is measured (default 10%% of --frames)")
    p.add_argument("--output", type=Path, help="the recording (default: a temporary .mkv)")
    p.add_argument("--json", type=Path, help="write the results here")
    args = p.parse_args()
    warmup = args.warmup if args.warmup is not None else args.frames // 10
    with tempfile.TemporaryDirectory() as tmp:
        output = args.output or Path(tmp) / "soak.mkv"
        out = run(args.frames, args.size, args.every, warmup, output, args.scene)
    summary = {k: v for k, v in out.items() if k != "samples"}
    print(json.dumps(summary, indent=2))
    verdict = "PASS" if out["rss_growth_percent"] < 2.0 else "FAIL"
    print(f"{verdict}: RSS grew {out['rss_growth_percent']:.2f} % after warm-up (target < 2 %)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

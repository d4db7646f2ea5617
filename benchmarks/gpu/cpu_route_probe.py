"""Where the CPU-encoder route of a batch loses against libx264 alone: one variant per fresh process, side by side.

    python benchmarks/gpu/cpu_route_probe.py [--envs 64] [--size 256] [--steps 300] [--only a,b]

Variants (64 envs x 256x256, H.264 veryfast crf 20, one encoder per env, threads = cores):
  glrec-cuda     BatchRecorder(encoder="cpu") fed a torch CUDA batch each step (the vector_record cpu-h264 row):
                 the default, from 8 cores one encode process per core
  glrec-cuda-w16 the same in 16 encode threads (workers=16: the default before the processes)
  glrec-cuda-si  the threads with sys.setswitchinterval(0.0002) (is the GIL's hand-over the bound?)
  glrec-cuda-w8  the same with 8 encode threads
  glrec-host     the default on the same pictures as numpy arrays made beforehand (no device-to-host copy)
  glrec-host-q16 the same with queue_steps=16 (is the hand-over to the processes the bound?)
  x264-rgb       PyAV alone: one thread per core, each converting RGB to YUV (swscale) then encoding, per frame
  x264-yuv       PyAV alone on frames converted beforehand (vector_record's x264-alone)
Each prints env-frames/s, CPU seconds per frame (process time / frames), and for glrec the share of the wall
time the caller spent inside write().
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from fractions import Fraction
from typing import Any

DEVICE = os.environ.get("PROBE_DEVICE", "cuda")  # "cpu": a smoke test of the script without a GPU
VARIANTS = [
    "glrec-cuda",
    "glrec-cuda-w16",
    "glrec-cuda-si",
    "glrec-cuda-w8",
    "glrec-host-q16",
    "glrec-host",
    "x264-rgb",
    "x264-yuv",
]


def pictures(n: int, size: int, period: int) -> list[Any]:
    import torch

    dev = DEVICE
    coarse = torch.randint(0, 200, (n, size // 16, size // 16, 3), dtype=torch.uint8, device=dev,
                           generator=torch.Generator(dev).manual_seed(0))  # fmt: skip
    base = coarse.repeat_interleave(16, dim=1).repeat_interleave(16, dim=2)
    ramp = (torch.arange(size, device=dev) % 256).to(torch.uint8).view(1, 1, size, 1)
    return [torch.roll(base, shifts=s % size, dims=2) // 2 + ramp // 2 for s in range(period)]


def run(name: str, n: int, size: int, steps: int) -> dict[str, Any]:
    import av
    import torch

    period = min(size, 64)
    batches = pictures(n, size, period)
    cores = os.cpu_count() or 1
    c0 = time.process_time()
    if name.startswith("glrec"):
        import glrec

        if name.endswith("-si"):
            sys.setswitchinterval(0.0002)
        host = [b.cpu().numpy() for b in batches] if name.startswith("glrec-host") else None
        feed = host if host is not None else batches
        kw: dict[str, Any] = {"workers": 8} if name.endswith("-w8") else {}
        if name.endswith(("-w16", "-si")):
            kw["workers"] = 16
        if name.endswith("-q16"):
            kw["queue_steps"] = 16
        with tempfile.TemporaryDirectory() as out:
            rec = glrec.BatchRecorder(out + "/env{env:02d}.mp4", fps=60, encoder="cpu", codec="h264", **kw)
            rec.write(feed[0])
            if DEVICE == "cuda":
                torch.cuda.synchronize()
            c0, t0, inside = time.process_time(), time.perf_counter(), 0.0
            for s in range(1, steps + 1):
                w0 = time.perf_counter()
                rec.write(feed[s % period])
                inside += time.perf_counter() - w0
            result = rec.close()
            wall = time.perf_counter() - t0
        return {"env_frames_per_s": round(n * steps / wall, 1), "cpu_ms_per_frame": round(
            1000 * (time.process_time() - c0) / (n * steps), 3), "in_write": round(inside / wall, 3),
            "summary": result.summary(), "pool": type(rec._pool).__name__}  # fmt: skip
    host = [b.cpu().numpy() for b in batches]
    rgb = [[av.VideoFrame.from_ndarray(h[i], format="rgb24") for i in range(n)] for h in host]
    yuv = [[f.reformat(format="yuv420p") for f in row] for row in rgb] if name == "x264-yuv" else None

    def work(envs: list[int]) -> None:
        ccs = []
        for _ in envs:
            cc = av.CodecContext.create("libx264", "w")
            cc.width = cc.height = size
            cc.pix_fmt, cc.time_base, cc.framerate, cc.thread_count = "yuv420p", Fraction(1, 60), 60, 1
            cc.options = {"preset": "veryfast", "crf": "20"}
            cc.open()
            ccs.append(cc)
        for s in range(steps + 1):
            for cc, env in zip(ccs, envs, strict=True):
                frame = yuv[s % period][env] if yuv is not None else rgb[s % period][env].reformat(format="yuv420p")
                frame.pts = s
                cc.encode(frame)
        for cc in ccs:
            cc.encode(None)

    threads = [threading.Thread(target=work, args=(list(range(w, n, cores)),)) for w in range(min(cores, n))]
    c0, t0 = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    frames = n * (steps + 1)
    return {"env_frames_per_s": round(frames / wall, 1),
            "cpu_ms_per_frame": round(1000 * (time.process_time() - c0) / frames, 3)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--only", default=",".join(VARIANTS))
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.variant:
        print(json.dumps(run(args.variant, args.envs, args.size, args.steps)))
        return
    rows = {}
    for name in args.only.split(","):
        cmd = [sys.executable, __file__, "--variant", name, "--envs", str(args.envs), "--size", str(args.size),
               "--steps", str(args.steps)]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True)
        line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        rows[name] = (
            json.loads(line) if done.returncode == 0 and line.startswith("{") else {"error": done.stderr[-800:]}
        )
        print(name, rows[name], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

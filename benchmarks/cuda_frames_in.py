"""CUDA tensors in (GPU machine): Recorder.write(cuda_tensor) against writing host numpy copies of the same frames.

    PYTHONPATH=. python benchmarks/cuda_frames_in.py --size 1920x1080 --frames 300 --repeat 3

Needs an NVIDIA GPU, cuda-python and PyTorch (nvImageCodec for the nvjpeg rows). For each encoder
(nvjpeg into .mkv, and the CPU encoder (libx264) fed from the CUDA handoff into .mp4), three ways in:
  cuda       rec.write(tensor): the device copy into GL, GL convert, CUDA handoff (never host memory)
  cpu-copy   rec.write(tensor.cpu().numpy()): what one writes without CUDA input, the copy timed with it
  host       rec.write(array) of host frames made beforehand: the host path without the copy
Reported per row: frames/s end to end (file complete), and the mean time inside write() per frame
(for nvjpeg the encoder keeps up, so that is the cost of getting a frame in).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import glrec
from glrec.bench.config import parse_sizes

DISTINCT = 16


def frames(size: tuple[int, int]) -> list[np.ndarray]:
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    return [np.stack([(xx + 7 * i) % 256, (yy + 3 * i) % 256, np.full_like(xx, 16 * i)], -1).astype(np.uint8)
            for i in range(DISTINCT)]  # fmt: skip


def run(path: Path, n: int, source: Any, options: dict[str, Any]) -> dict[str, float]:
    inside = 0.0
    started = time.perf_counter()
    with glrec.Recorder(path, fps=30, overwrite=True, **options) as rec:
        rec.write(source(0))  # builds the recorder: set-up, not timed
        started = time.perf_counter()
        for i in range(1, n):
            frame = source(i)
            t = time.perf_counter()
            rec.write(frame)
            inside += time.perf_counter() - t
    total = time.perf_counter() - started
    result = rec.close()
    assert result.frames == n, result
    return {"fps": (n - 1) / total, "write_us": 1e6 * inside / (n - 1), "encoder": result.encoder}


def main() -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=lambda t: parse_sizes(t)[0], default=(1920, 1080))
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    host = frames(args.size)
    device = [torch.from_numpy(a).cuda() for a in host]
    torch.cuda.synchronize()
    ways = {
        "cuda": lambda i: device[i % DISTINCT],
        "cpu-copy": lambda i: device[i % DISTINCT].cpu().numpy(),
        "host": lambda i: host[i % DISTINCT],
    }
    encoders = {"nvjpeg": ({"codec": "mjpeg", "encoder": "nvjpeg"}, ".mkv"), "cpu": ({}, ".mp4")}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for enc, (options, suffix) in encoders.items():
            figures: dict[str, list[dict[str, float]]] = {w: [] for w in ways}
            for r in range(args.repeat):
                for way, source in ways.items():
                    try:
                        figures[way].append(run(Path(tmp) / f"{enc}-{way}-{r}{suffix}", args.frames, source, options))
                    except glrec.GlrecError as exc:
                        print(f"{enc} {way}: {exc}", file=sys.stderr)
                        break
            for way, runs in figures.items():
                if not runs:
                    continue
                line = {"encoder": enc, "way": way, "size": f"{args.size[0]}x{args.size[1]}",
                        "fps": statistics.median(x["fps"] for x in runs),
                        "write_us": statistics.median(x["write_us"] for x in runs),
                        "glrec_encoder": runs[0]["encoder"]}  # fmt: skip
                rows.append(line)
                print(f"{enc:7} {way:9} {line['fps']:8.1f} fps  {line['write_us']:8.0f} us in write() per frame  "
                      f"({line['glrec_encoder']})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"gpu": torch.cuda.get_device_name(0), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

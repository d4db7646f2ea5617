"""libx264 alone through PyAV: the frames/s no pipeline feeding it the same settings can beat.

    python benchmarks/x264_ceiling.py --sizes 1280x720,1920x1080 --frames 300

Frames are made before the timed loop as yuv420p ``av.VideoFrame`` objects (the
conversion is not timed); the loop is ``encode`` + ``mux`` into a null-ish file, with
glrec's default x264 settings (preset veryfast, crf 20, threads auto). A moving
gradient, 24 distinct pictures cycled, like ``benchmarks/frames_in.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np


def frames(w: int, h: int, n: int = 24) -> list[av.VideoFrame]:
    y, x = np.mgrid[0:h, 0:w]
    out = []
    for i in range(n):
        rgb = np.stack([(x + 8 * i) % 256, (y + 4 * i) % 256, ((x + y) // 2 + 12 * i) % 256], -1).astype(np.uint8)
        out.append(av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p"))
    return out


def run(w: int, h: int, count: int) -> float:
    pics = frames(w, h)
    with tempfile.TemporaryDirectory() as tmp, av.open(str(Path(tmp) / "x.mp4"), "w") as out:
        s = out.add_stream("libx264", rate=30, options={"preset": "veryfast", "crf": "20"})
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.codec_context.thread_type = "FRAME"
        t0 = time.perf_counter()
        for i in range(count):
            f = pics[i % len(pics)]
            f.pts = i
            out.mux(s.encode(f))
        out.mux(s.encode(None))
        return count / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1280x720,1920x1080")
    ap.add_argument("--frames", type=int, default=300)
    args = ap.parse_args()
    for size in args.sizes.split(","):
        w, h = (int(v) for v in size.split("x"))
        print(f"{w}x{h} libx264 alone (veryfast, crf 20, frame threads): {run(w, h, args.frames):7.1f} frames/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

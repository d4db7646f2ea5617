"""Memory over a long transcode: resident set size sampled while glrec re-encodes a long input.

    PYTHONPATH=. python benchmarks/transcode_memory.py --minutes 10 --size 160x90

The input (lavfi testsrc2 with a sine tone, H.264 + AAC, made by the ffmpeg command line) is
transcoded with the Shadertoy overlay examples/grade_overlay.glsl and its audio copied; RSS is
read from /proc every ``--every`` frames. Flat means: the last samples are within a few MB of the
first ones after warm-up. Results: JSON in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--size", default="160x90")
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    from glrec import transcode

    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "long.mp4"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={args.size}:rate=30",
                        "-f", "lavfi", "-i", f"sine=duration={seconds}", "-t", str(seconds), "-c:v", "libx264",
                        "-preset", "ultrafast", "-c:a", "aac", str(src)], check=True)  # fmt: skip
        samples: list[tuple[int, float]] = []

        def progress(n: int) -> None:
            if n % args.every == 0:
                samples.append((n, round(rss_mb(), 1)))

        started = time.perf_counter()
        result = transcode(src, Path(tmp) / "out.mp4", overlay=str(ROOT / "examples" / "grade_overlay.glsl"),
                           progress=progress)  # fmt: skip
        wall = time.perf_counter() - started
    after_warmup = [mb for n, mb in samples if n >= 3 * args.every] or [mb for _, mb in samples]
    out = {
        "what": "RSS during a long transcode with overlay and audio copy",
        "minutes": args.minutes, "size": args.size, "frames": result.frames, "wall_seconds": round(wall, 1),
        "rss_mb": samples, "growth_after_warmup_mb": round(max(after_warmup) - min(after_warmup), 1),
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{time.strftime('%Y-%m-%d')}_{os.cpu_count()}c_transcode-memory_{args.size}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "rss_mb"}), f"saved {path}")


if __name__ == "__main__":
    main()

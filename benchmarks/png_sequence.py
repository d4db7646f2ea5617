"""PNG sequences against the other outputs of the same render, side by side in one run: frames/s and bytes.

    PYTHONPATH=$PWD python benchmarks/png_sequence.py --machine 2c_llvmpipe \\
        --json benchmarks/results/2026-12-05_2c_llvmpipe_png-sequence.json

Each round runs ``glrec record SCENE`` in a fresh process once per output, in turn (the order rotates every
round): ``frames_%06d.png`` (glrec's PNG encoder at its default level 2, and at 9), ``frames_%06d.jpg`` (the
CPU's mjpeg, quality 90) and ``.mp4`` (libx264 at its defaults); frames/s is the recorder's own summary,
bytes the files'. Then, on frames rendered once, the PNG encoder alone against FFmpeg's PNG encoder through
PyAV (what a recorder that handed frames to FFmpeg would use), and against itself on one thread.
Every PNG written is decoded and compared with the others: all levels, and FFmpeg's, hold the same pixels.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import re
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import write_results

OUTPUTS = {
    "png": ("f_%06d.png", []),
    "png9": ("f_%06d.png", ["--png-compression", "9"]),
    "jpg": ("f_%06d.jpg", []),
    "mp4": ("f.mp4", []),
}


def record(scene: str, size: str, frames: int, name: str, work: Path) -> tuple[float, int]:
    """frames/s from the summary line, and the bytes written."""
    target, extra = OUTPUTS[name]
    folder = work / name
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    command = [sys.executable, "-m", "glrec", "record", scene, "-o", str(folder / target), "--size", size, "--frames",
               str(frames), "-y", *extra]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    fps = float(re.search(r"= ([\d.]+) fps", run.stdout).group(1))  # type: ignore[union-attr]
    return fps, sum(p.stat().st_size for p in folder.iterdir())


def rendered(scene: str, size: tuple[int, int], frames: int) -> list[np.ndarray]:
    from glrec.diagnostics.common import reference_rgb

    return reference_rgb(scene, size, frames, 30)


def encoders_alone(frames: list[np.ndarray]) -> dict[str, dict[str, float]]:
    """ms per frame and bytes: glrec's encoder (its pool, and one thread), FFmpeg's png through PyAV."""
    from glrec.encoders.png import encoder as png
    from glrec.encoders.png.options import PngOptions
    from glrec.frame import HostFrame
    from glrec.options import VideoOptions

    h, w = frames[0].shape[:2]
    facts = VideoOptions.create((w, h), 30, codec="png").facts

    def glrec_png() -> list[bytes]:
        enc = png.PngEncoder(facts, PngOptions())
        try:
            packets = [p for i, f in enumerate(frames) for p in enc.encode(HostFrame(i, "rgb24", w, h, f))]
            return [p.data for p in packets + enc.flush()]
        finally:
            enc.close()

    def glrec_png_1() -> list[bytes]:
        cores = png.usable_cores
        png.usable_cores = lambda: 1  # type: ignore[assignment]
        try:
            return glrec_png()
        finally:
            png.usable_cores = cores  # type: ignore[assignment]

    def ffmpeg_png() -> list[bytes]:
        cc = av.CodecContext.create("png", "w")
        cc.width, cc.height, cc.pix_fmt = w, h, "rgb24"
        cc.time_base = Fraction(1, 30)
        out = [bytes(p) for f in frames for p in cc.encode(av.VideoFrame.from_ndarray(f, format="rgb24"))]
        return out + [bytes(p) for p in cc.encode(None)]

    results: dict[str, dict[str, float]] = {}
    for name, fn in [("glrec", glrec_png), ("glrec-1-thread", glrec_png_1), ("ffmpeg-pyav", ffmpeg_png)]:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            files = fn()
            times.append(time.perf_counter() - t0)
        for data, frame in zip(files, frames, strict=True):
            with av.open(io.BytesIO(data)) as c:
                (back,) = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
            assert np.array_equal(back, frame), name
        results[name] = {"ms": 1000 * statistics.median(times) / len(frames), "bytes": sum(map(len, files))}
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="cube")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    names = list(OUTPUTS)
    rows: dict[str, list[tuple[float, int]]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                rows[name].append(record(args.scene, args.size, args.frames, name, Path(tmp)))
    w, h = map(int, args.size.split("x"))
    alone = encoders_alone(rendered(args.scene, (w, h), min(args.frames, 30)))
    mp4 = statistics.median(fps for fps, _ in rows["mp4"])
    print(f"{args.scene} {args.size}, {args.frames} frames, {args.rounds} rounds ({args.machine})")
    for name in names:
        fps = [f for f, _ in rows[name]]
        size = rows[name][0][1]
        print(f"  {name:5} {', '.join(f'{f:.0f}' for f in fps)} frames/s ({statistics.median(fps) / mp4:.2f}x mp4), "
              f"{size / 1e6:.2f} MB ({size / rows['mp4'][0][1]:.1f}x mp4)")  # fmt: skip
    base = alone["ffmpeg-pyav"]
    for name, v in alone.items():
        print(f"  alone: {name:15} {v['ms']:.2f} ms/frame ({base['ms'] / v['ms']:.2f}x FFmpeg's speed), "
              f"{v['bytes'] / 1e6:.2f} MB ({v['bytes'] / base['bytes']:.2f}x)")  # fmt: skip
    doc = {"date": dt.date.today().isoformat(), "machine": args.machine, "args": vars(args), "record": rows,
           "alone": alone}  # fmt: skip
    write_results(doc, Path(args.json) if args.json else None, f"png-sequence-{args.machine}.json")


if __name__ == "__main__":
    main()

"""Many random tiny recordings in one process: does any encoder damage the heap?

A benchmark, not a test. libx265 corrupted the heap at small widths and the
process aborted only 48-326 recordings later, far from the cause; one long
process is where such damage shows. This records ``--count`` random
recordings (every codec, sizes just above each encoder's smallest accepted
size, random containers, pixel formats and frame counts) with
:func:`glrec.record` in a single child process, decodes each with PyAV, and
reports how far the child got and how it ended:

    python benchmarks/tiny_recordings_loop.py [--count 10000] [--seed 1] [--json out.json]

Sizes come from glrec's own limits (:func:`glrec.encoders.cpu.limits.cpu_size_problem`):
for each codec the smallest side it accepts is found, and sides are drawn
from there to 24 pixels above it. Every 20th recording is drawn from just
below, to check those are refused cleanly (ConfigError, no file).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PIX_FMTS = {"h264": ("yuv420p", "nv12", "yuv444p"), "hevc": ("yuv420p", "yuv444p"), "av1": ("yuv420p",),
            "mjpeg": ("yuv420p", "yuv444p")}  # fmt: skip


def smallest_side(codec: str, pix_fmt: str) -> tuple[int, int]:
    """The smallest width (at a height of 64) and height (at a width of 64) glrec accepts for ``codec``."""
    from glrec.encoders.cpu.limits import cpu_size_problem

    step = 2 if pix_fmt in ("yuv420p", "nv12") else 1
    w = next(s for s in range(step, 4096, step) if cpu_size_problem(codec, s, 64) is None)
    h = next(s for s in range(step, 4096, step) if cpu_size_problem(codec, 64, s) is None)
    return w, h


def draw(rng: random.Random, n: int) -> dict:
    from glrec.sinks.registry import OUTPUTS

    codec = rng.choice(["h264", "hevc", "av1", "mjpeg"])
    pix_fmt = rng.choice(PIX_FMTS[codec])
    step = 2 if pix_fmt in ("yuv420p", "nv12") else 1
    min_w, min_h = smallest_side(codec, pix_fmt)
    below = n % 20 == 19 and (min_w > step or min_h > step)  # x264 and mjpeg take the smallest pictures there are
    if below:  # a size glrec must refuse, cleanly: one side under its minimum
        w = max(step, min_w - step * rng.randint(1, 4)) if min_w > step else min_w
        h = max(step, min_h - step * rng.randint(1, 4)) if min_h > step and (w >= min_w or rng.random() < 0.5) else 64
    else:
        w, h = min_w + step * rng.randint(0, 24 // step), min_h + step * rng.randint(0, 24 // step)
    exts = sorted(e for e, k in OUTPUTS.items() if codec in k.codecs and not k.image_sequence)
    return {"codec": codec, "pix_fmt": pix_fmt, "size": (w, h), "ext": rng.choice(exts),
            "frames": rng.randint(1, 3), "fps": rng.choice([24.0, 30.0, 60.0]), "expect_refusal": below}  # fmt: skip


def child(count: int, seed: int) -> None:
    """Record ``count`` random recordings here; print one line per recording."""
    import av

    import glrec

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        for n in range(count):
            case = draw(rng, n)
            path = Path(d) / f"r{n}{case['ext']}"
            options = {k: case[k] for k in ("size", "fps", "frames", "codec", "pix_fmt")}
            try:
                result = glrec.record("bars", path, encoder="cpu", **options)
            except glrec.ConfigError as exc:
                ok = case["expect_refusal"] and not path.exists()
                print(f"{n} refused {'ok' if ok else 'BAD'} {json.dumps(case)} {exc}", flush=True)
                continue
            try:  # a file that an independent reader cannot open is a finding, not the end of the loop
                with av.open(str(path)) as c:
                    decoded: int | str = sum(1 for _ in c.decode(video=0))
            except (OSError, av.FFmpegError) as exc:
                decoded = f"unreadable ({type(exc).__name__}: {exc}; {path.stat().st_size} bytes)"
            ok = decoded == case["frames"] == result.frames and not case["expect_refusal"]
            path.unlink()
            print(f"{n} recorded {'ok' if ok else 'BAD'} {json.dumps(case)} decoded={decoded}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.count, args.seed)
        return
    started = time.time()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, __file__, "--child", "--count", str(args.count), "--seed", str(args.seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    counts = {"recorded": 0, "refused": 0, "bad": 0}
    by_codec: dict[str, int] = {}
    bad: list[str] = []
    bad_kinds: dict[str, int] = {}
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        last = line.strip()
        n, what, verdict, rest = last.split(" ", 3)
        counts[what] += 1
        codec = json.loads(rest[: rest.index("}") + 1])["codec"]
        by_codec[codec] = by_codec.get(codec, 0) + 1
        if verdict != "ok":
            counts["bad"] += 1
            bad.append(last)
            case = json.loads(rest[: rest.index("}") + 1])
            why = rest[rest.index("}") + 1 :].strip().split(";")[0][:60]
            key = f"{what} {case['codec']} {case['ext']} {case['pix_fmt']}: {why}"
            bad_kinds[key] = bad_kinds.get(key, 0) + 1
        if (int(n) + 1) % 500 == 0:
            print(f"  {int(n) + 1} recordings, {counts}", file=sys.stderr, flush=True)
    stderr = proc.stderr.read() if proc.stderr else ""
    rc = proc.wait()
    done = counts["recorded"] + counts["refused"]
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "count": args.count,
        "seed": args.seed,
        "completed": done,
        "exit_status": rc,
        "aborted": rc != 0,
        "seconds": round(time.time() - started),
        **counts,
        "by_codec": by_codec,
        "bad_kinds": bad_kinds,
        "bad_cases": bad[:50],
        "last_line": last,
        "stderr_tail": stderr[-2000:],
    }
    verdict = "no abort" if rc == 0 else f"ENDED WITH STATUS {rc}"
    print(f"{done} of {args.count} recordings in one process, {verdict}; {counts}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Where the Recorder's CPU goes per frame: cProfile in every thread (the caller's and glrec's encode thread).

    python benchmarks/profile_recorder.py --size 1920x1080 --frames 600 --encoder nvjpeg

Prints, per thread, the functions with the most own time (ms per frame), so the
Python a frame costs on each side of the encode queue can be read off directly.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROFILES: dict[str, cProfile.Profile] = {}
_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    prof = PROFILES.setdefault(self.name, cProfile.Profile())
    prof.enable()
    try:
        _run(self)
    finally:
        prof.disable()


def main() -> int:
    import glrec
    from glrec.options import parse_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=(1920, 1080))
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--scene", default="plasma")
    ap.add_argument("--encoder", default="nvjpeg")
    ap.add_argument("--top", type=int, default=22)
    args = ap.parse_args()
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]
    codec = "mjpeg" if args.encoder == "nvjpeg" else "h264"
    with tempfile.TemporaryDirectory() as tmp:
        main_prof = PROFILES.setdefault("MainThread", cProfile.Profile())
        t0 = time.perf_counter()
        main_prof.enable()
        with glrec.Recorder(Path(tmp) / "p.mkv", size=args.size, fps=60, encoder=args.encoder, codec=codec) as rec:
            for _ in range(args.frames):
                rec.render(args.scene)
        main_prof.disable()
        seconds = time.perf_counter() - t0
    print(f"{args.frames} frames {args.size[0]}x{args.size[1]} {args.encoder}: {args.frames / seconds:.1f} frames/s "
          f"(profiled); plan: {rec.plan.describe()}")  # fmt: skip
    for name, prof in PROFILES.items():
        stats = pstats.Stats(prof, stream=io.StringIO())
        total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
        print(f"\n== thread {name}: {1e3 * total / args.frames:.3f} ms own time per frame")
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[: args.top]  # type: ignore[attr-defined]
        for (file, line, func), (_cc, calls, tt, ct, _callers) in rows:
            where = f"{Path(file).name}:{line}({func})"
            print(f"  {1e3 * tt / args.frames:7.3f} ms/f own {1e3 * ct / args.frames:7.3f} cum  {calls:7d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

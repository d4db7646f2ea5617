"""Where the Recorder's CPU goes per frame: a sampling profiler over every thread.

    python benchmarks/profile_recorder.py --size 1920x1080 --frames 600 --encoder nvjpeg

A sampler thread reads every thread's stack (``sys._current_frames``) every
``--interval`` ms and counts, per thread, the innermost function (own) and every
function on the stack (cumulative). cProfile cannot do this: from Python 3.12 it
is one process-wide profiler, so threads cannot be told apart. Printed per
thread: the share of samples and the functions with the most own samples.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class Sampler(threading.Thread):
    def __init__(self, interval: float) -> None:
        super().__init__(name="sampler", daemon=True)
        self.interval = interval
        self.stop = threading.Event()
        self.own: dict[str, Counter[str]] = {}
        self.cum: dict[str, Counter[str]] = {}
        self.samples = 0

    def run(self) -> None:
        names = {}
        while not self.stop.wait(self.interval):
            self.samples += 1
            for ident, frame in sys._current_frames().items():
                if ident == self.ident:
                    continue
                name = names.get(ident)
                if name is None:
                    name = next((t.name for t in threading.enumerate() if t.ident == ident), str(ident))
                    names[ident] = name
                own, cum = self.own.setdefault(name, Counter()), self.cum.setdefault(name, Counter())
                own[_where(frame)] += 1
                seen = set()
                f = frame
                while f is not None:
                    w = _where(f)
                    if w not in seen:
                        cum[w] += 1
                        seen.add(w)
                    f = f.f_back


def _where(frame) -> str:  # type: ignore[no-untyped-def]
    code = frame.f_code
    return f"{Path(code.co_filename).name}:{code.co_firstlineno}({code.co_name})"


def main() -> int:
    import glrec
    from glrec.options import parse_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=(1920, 1080))
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--scene", default="plasma")
    ap.add_argument("--encoder", default="nvjpeg")
    ap.add_argument("--interval", type=float, default=0.5, help="ms between samples (default 0.5)")
    ap.add_argument("--top", type=int, default=22)
    args = ap.parse_args()
    codec = "mjpeg" if args.encoder == "nvjpeg" else "h264"
    sampler = Sampler(args.interval / 1e3)
    with tempfile.TemporaryDirectory() as tmp:
        with glrec.Recorder(Path(tmp) / "p.mkv", size=args.size, fps=60, encoder=args.encoder, codec=codec) as rec:
            for _ in range(30):  # warm up: imports, shader compilation, the encoder's first frames
                rec.render(args.scene)
            sampler.start()
            t0 = time.perf_counter()
            for _ in range(args.frames):
                rec.render(args.scene)
        seconds = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
    print(f"{args.frames} frames {args.size[0]}x{args.size[1]} {args.encoder}: {args.frames / seconds:.1f} frames/s "
          f"while sampled; {sampler.samples} samples; plan: {rec.plan.describe()}")  # fmt: skip
    for name, own in sampler.own.items():
        n = sum(own.values())
        print(f"\n== thread {name}: in {100 * n / max(1, sampler.samples):.0f} % of samples; top own (cum)")
        cum = sampler.cum[name]
        for where, k in own.most_common(args.top):
            print(f"  {100 * k / n:5.1f} % ({100 * cum[where] / n:5.1f} %)  {where}")
        print("  -- top cumulative:")
        for where, k in cum.most_common(args.top):
            print(f"  ({100 * k / n:5.1f} %)  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

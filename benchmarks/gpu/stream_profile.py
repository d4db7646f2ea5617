"""cProfile of the training stream's render thread: where a batch's time goes (own time, top functions).

python benchmarks/gpu/stream_profile.py --device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 4
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from glrec.dataset import DatasetSpec, stream  # noqa: E402
from glrec.options import parse_size  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="128x128")
    ap.add_argument("--passes", default="rgb,depth")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    n = args.batch
    spec = DatasetSpec.load(args.spec).with_(samples=n * args.batches, shard_size=n, size=parse_size(args.size))
    spec = spec.with_(output=replace(spec.output, passes=tuple(args.passes.split(","))))

    def run() -> float:
        started = time.perf_counter()
        with stream(spec, n, device=args.device) as s:
            for _ in s:
                pass
        return time.perf_counter() - started

    print(f"warm-up {spec.samples / run():.0f} samples/s")
    profiles: list[cProfile.Profile] = []
    original = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        p = cProfile.Profile()
        profiles.append(p)
        p.enable()
        try:
            original(self)
        finally:
            p.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    took = run()
    threading.Thread.run = original  # type: ignore[method-assign]
    print(f"profiled {spec.samples / took:.0f} samples/s ({took:.2f} s for {spec.samples})")
    stats = pstats.Stats(profiles[0])
    for p in profiles[1:]:
        stats.add(p)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

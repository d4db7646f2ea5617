"""CPU time of planning a training-stream batch: parameters, layouts and the table's prepared draw, per sample.

What the stream's planning threads do for each chunk (``plan_ahead.ChunkPlanner``):
``plan_samples`` (the spec's parameters and the scene's layouts, drawn for the batch at
once) and the scene's ``prepare_batch`` (the CPU half of its draw). One thread, no GL
work timed (the table's ``setup`` needs a context: made first, on software GL if that is
what the machine has). Prints microseconds a sample, best of ``--repeat`` runs, and a
hash of everything planned, so two trees (``--root``) can be compared for speed and
for the same samples in one run:

    python benchmarks/plan_speed.py --samples 4096 --repeat 5
    python benchmarks/plan_speed.py --root .before --samples 4096 --repeat 5
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the tree whose glrec is timed")
ap.add_argument("--spec", default=str(Path(__file__).resolve().parents[1] / "examples" / "dataset.toml"))
ap.add_argument("--samples", type=int, default=4096, help="samples a batch")
ap.add_argument("--size", default="128x128")
ap.add_argument("--repeat", type=int, default=5)
args = ap.parse_args()
sys.path.insert(0, str(Path(args.root).resolve()))

from glrec.dataset import DatasetSpec  # noqa: E402
from glrec.dataset.rendering.plans import TIME_PARAM, plan_samples  # noqa: E402
from glrec.gl.context import create_context  # noqa: E402
from glrec.options import parse_size  # noqa: E402
from glrec.scenes import load_scene  # noqa: E402


def main() -> None:
    spec = DatasetSpec.load(args.spec).with_(samples=args.samples * 4, size=parse_size(args.size))
    scene = load_scene(spec.scene_ref())
    gl = create_context()
    with gl.active():
        scene.setup(gl.mgl, spec.size)
        best_plan = best_prep = float("inf")
        digest = ""
        for r in range(args.repeat):
            indices = range((r % 4) * args.samples, (r % 4 + 1) * args.samples)
            t0 = time.perf_counter()
            plans = plan_samples(spec, indices, scene)
            t1 = time.perf_counter()
            times = [float(p.params.get(TIME_PARAM, 0.0)) for p in plans]
            prepared = scene.prepare_batch([p.layout for p in plans], times)
            t2 = time.perf_counter()
            best_plan, best_prep = min(best_plan, t1 - t0), min(best_prep, t2 - t1)
            if r == 0:
                h = hashlib.sha256()
                for p in plans:
                    h.update(repr((p.index, p.seed, sorted(p.params.items()), sorted(p.layout.params.items()),
                                   p.layout.objects)).encode())  # fmt: skip
                h.update(pickle.dumps(prepared.__dict__ if hasattr(prepared, "__dict__") else prepared))
                digest = h.hexdigest()[:16]
        scene.close()
    gl.release()
    n = args.samples
    print(f"{args.root}: plan {best_plan / n * 1e6:.2f} us/sample, prepare {best_prep / n * 1e6:.2f} us/sample, "
          f"total {(best_plan + best_prep) / n * 1e6:.2f} us/sample (best of {args.repeat}, {n} a batch); "
          f"samples {digest}")  # fmt: skip


if __name__ == "__main__":
    main()

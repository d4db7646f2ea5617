"""What a planning process's answer costs the stream's parent to read: plans as objects, or packed (PackedPlans).

    python benchmarks/plan_transport.py --chunk 2048 --rounds 5

The planning child (``glrec.dataset.rendering.plan_child``) answers a chunk with its plans, its prepared draw and
its cameras, pickled. The parent's reader thread unpickles that answer holding the interpreter lock, which the
128x128 stream's render thread needs. This measures that unpickle per sample, both ways side by side in one
process, with torch imported (a training process's heap, over which the garbage collector's full passes run)
and the collector on, as in a training process. The table scene at 128x128 (``examples/dataset.toml``).
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunk", type=int, default=2048, help="samples a chunk (the stream's at 128x128: 2048)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true", help="without torch's heap in the process")
    args = ap.parse_args()
    if not args.no_torch:
        import torch  # noqa: F401 - the heap a training process has

    from glrec.dataset import DatasetSpec
    from glrec.dataset.rendering.plans import PackedPlans, chunk_extras, plan_samples
    from glrec.scenes import load_scene
    from glrec.scenes.capabilities import batch_prepared

    spec = DatasetSpec.load(ROOT / "examples" / "dataset.toml").with_(samples=10**6, size=(128, 128))
    scene = load_scene(spec.scene_ref())
    scene.setup_planning(spec.size)
    plans = plan_samples(spec, list(range(args.chunk)), scene)
    extras = chunk_extras(scene, plans, batch_prepared(scene), True)
    answers = {"objects": (plans, *extras), "packed": (PackedPlans(plans), *extras)}
    blobs = {k: pickle.dumps((0, True, v), protocol=pickle.HIGHEST_PROTOCOL) for k, v in answers.items()}
    times: dict[str, list[float]] = {k: [] for k in blobs}
    print(f"garbage collector {'on' if gc.isenabled() else 'off'}; {len(gc.get_objects()):,} objects tracked")
    for r in range(args.rounds):
        for k in blobs if r % 2 == 0 else reversed(blobs):  # ABBA
            t = time.perf_counter()
            for _ in range(4):
                pickle.loads(blobs[k])
            times[k].append((time.perf_counter() - t) / 4 / args.chunk * 1e6)
    for k, ts in times.items():
        print(
            f"{k:8s} {len(blobs[k]):>10,} bytes  unpickle {statistics.median(ts):6.2f} us/sample (median of "
            f"{args.rounds}: {' '.join(f'{x:.2f}' for x in ts)})"
        )
    ratio = statistics.median(times["objects"]) / statistics.median(times["packed"])
    print(f"packed: {ratio:.1f}x less of the parent's time per sample")


if __name__ == "__main__":
    main()

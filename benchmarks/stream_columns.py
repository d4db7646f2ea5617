"""CPU time of a streamed batch's ``boxes``, ``labels`` and ``instances`` columns: made from the layouts' objects
and the GPU's boxes (the table's ``BatchObjects``) against made from the whole metadata, same batch, one thread.

    python benchmarks/stream_columns.py --samples 4096 --size 128x128 --repeat 3

The columns are what a detection loop reads every batch; on a GPU the consumer's thread shares the GIL with
the stream's render and planning threads, so its CPU time per sample comes off the stream's rate.
Prints microseconds a sample for each, and whether the two give the same columns.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "dataset.toml"))
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--size", default="128x128")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from dataclasses import replace

    from glrec.dataset import DatasetSpec, stream
    from glrec.dataset.rendering.deferred_meta import DeferredMetas, _counted_columns, _meta_columns
    from glrec.options import parse_size
    from glrec.scenes import load_scene

    spec = DatasetSpec.load(a.spec)
    spec = spec.with_(samples=a.samples * a.repeat, size=parse_size(a.size),
                      output=replace(spec.output, passes=("rgb", "depth")))  # fmt: skip
    scene = load_scene(spec.scene_ref())
    direct, meta, same = [], [], True
    with stream(spec, a.samples) as s:
        for batch in s:
            metas: DeferredMetas = batch["meta"]
            chunks = metas.chunks
            t0 = time.perf_counter()
            got = _counted_columns(scene, chunks)  # type: ignore[arg-type]
            t1 = time.perf_counter()
            want = _meta_columns(metas)
            t2 = time.perf_counter()
            direct.append((t1 - t0) / len(metas))
            meta.append((t2 - t1) / len(metas))
            same &= all([x.tolist() for x in got[c]] == [x.tolist() for x in want[c]] for c in got)
    print(
        f"{a.size}, {a.samples} a batch: from the objects and the GPU's boxes {min(direct) * 1e6:.1f} us/sample, "
        f"from the metadata {min(meta) * 1e6:.1f} us/sample (best of {len(meta)}); the same columns: {same}"
    )


if __name__ == "__main__":
    main()
